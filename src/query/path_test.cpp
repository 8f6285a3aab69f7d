#include "query/path.h"

#include <gtest/gtest.h>

#include "query/test_util.h"

namespace tessera::query {
namespace {

using test::json;

// Renders what visitPath yields as "value@offset" strings ("-" for missing).
std::vector<std::string> visit(const char* doc, const char* path,
                               LeafArrayBehavior leaf = LeafArrayBehavior::kTraverse) {
    bson::BsonObj d = json(doc);
    std::vector<std::string> out;
    for (const auto& v : collectPathValues(d, FieldPath(path), leaf)) {
        std::string s = v.element.eoo() ? "-" : v.element.toString(false);
        if (!v.arrayOffset.empty()) s += "@" + std::string(v.arrayOffset);
        out.push_back(s);
    }
    return out;
}

using V = std::vector<std::string>;

TEST(FieldPath, Splits) {
    FieldPath p("a.0.bc");
    ASSERT_EQ(p.numParts(), 3u);
    EXPECT_EQ(p.part(2), "bc");
    EXPECT_TRUE(p.isNumericPart(1));
    EXPECT_FALSE(p.isNumericPart(0));
    EXPECT_EQ(p.dotted(), "a.0.bc");
}

TEST(VisitPath, ScalarsAndMissing) {
    EXPECT_EQ(visit(R"({"a": 1})", "a"), V({"1"}));
    EXPECT_EQ(visit(R"({})", "a"), V({"-"}));
    EXPECT_EQ(visit(R"({"a": 5})", "a.b"), V({"-"}));
    EXPECT_EQ(visit(R"({"a": {"b": 2}})", "a.b"), V({"2"}));
}

TEST(VisitPath, LeafArrays) {
    EXPECT_EQ(visit(R"({"a": [1, 2]})", "a"), V({"1@0", "2@1", "[ 1, 2 ]"}));
    EXPECT_EQ(visit(R"({"a": [1, 2]})", "a", LeafArrayBehavior::kNoTraversal), V({"[ 1, 2 ]"}));
    EXPECT_EQ(visit(R"({"a": [1, 2]})", "a", LeafArrayBehavior::kTraverseOmitArray),
              V({"1@0", "2@1"}));
    EXPECT_EQ(visit(R"({"a": [[1]]})", "a"), V({"[ 1 ]@0", "[ [ 1 ] ]"}));
}

TEST(VisitPath, NonLeafArrays) {
    EXPECT_EQ(visit(R"({"a": [{"b": 1}, {"c": 1}, 7]})", "a.b"), V({"1@0", "-@1"}));
    EXPECT_EQ(visit(R"({"a": [1, 2]})", "a.b"), V{});
    // The outermost traversed array's index wins.
    EXPECT_EQ(visit(R"({"a": [{"b": [1, 2]}]})", "a.b"), V({"1@0", "2@0", "[ 1, 2 ]@0"}));
    // Nested arrays are not traversed implicitly.
    EXPECT_EQ(visit(R"({"a": [[{"b": 1}]]})", "a.b"), V{});
}

TEST(VisitPath, NumericComponents) {
    EXPECT_EQ(visit(R"({"a": [5, 6]})", "a.1"), V({"6"}));
    EXPECT_EQ(visit(R"({"a": [{"b": 1}, {"b": 2}]})", "a.1.b"), V({"-@0", "-@1", "2"}));
    EXPECT_EQ(visit(R"({"a": [[1, 2]]})", "a.0.1"), V({"2"}));
    EXPECT_EQ(visit(R"({"a": {"0": 3}})", "a.0"), V({"3"}));
}

TEST(VisitPath, StopsEarly) {
    bson::BsonObj d = json(R"({"a": [1, 2, 3]})");
    int seen = 0;
    bool stopped = visitPath(d, FieldPath("a"), LeafArrayBehavior::kTraverse,
                             [&](const PathValue& v) { return ++seen == 2; });
    EXPECT_TRUE(stopped);
    EXPECT_EQ(seen, 2);
}

TEST(ExtractAllElementsAlongPath, ExpandsArrays) {
    bson::BsonObj d = json(R"({"a": [{"b": [1, 2]}, {"b": 3}, {"c": 4}, 5]})");
    std::vector<bson::BsonElement> out;
    extractAllElementsAlongPath(d, FieldPath("a.b"), true, &out);
    std::vector<std::string> s;
    for (auto& e : out) s.push_back(e.toString(false));
    EXPECT_EQ(s, V({"1", "2", "3"}));
    out.clear();
    extractAllElementsAlongPath(d, FieldPath("a.b"), false, &out);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_TRUE(out[0].isArray());
}

TEST(GetFieldDottedNoArrays, FollowsDocumentsOnly) {
    bson::BsonObj d = json(R"({"a": {"b": 1}, "c": [{"d": 1}]})");
    EXPECT_EQ(getFieldDottedNoArrays(d, FieldPath("a.b")).numberInt(), 1);
    EXPECT_TRUE(getFieldDottedNoArrays(d, FieldPath("c.d")).eoo());
}

}  // namespace
}  // namespace tessera::query
