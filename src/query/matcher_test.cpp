#include "query/matcher.h"

#include <gtest/gtest.h>

#include "query/projection.h"
#include "query/test_util.h"

namespace tessera::query {
namespace {

using test::json;

TEST(Matcher, TreeAccessorsForPlanners) {
    auto m = Matcher::parse(json(R"({"a": 1, "b": {"$gt": 2, "$lt": 5}, "$or": [{"c": 1}]})"));
    ASSERT_TRUE(m.isOK());
    const MatchExpression* root = m.getValue()->root();
    ASSERT_EQ(root->matchType(), MatchType::kAnd);
    ASSERT_EQ(root->numChildren(), 4u);
    EXPECT_EQ(root->child(0)->matchType(), MatchType::kEq);
    EXPECT_EQ(root->child(0)->path(), "a");
    auto* gt = static_cast<const ComparisonMatchExpression*>(root->child(1));
    EXPECT_EQ(gt->matchType(), MatchType::kGt);
    EXPECT_EQ(gt->path(), "b");
    EXPECT_EQ(gt->rhs().numberInt(), 2);
    EXPECT_EQ(root->child(2)->matchType(), MatchType::kLt);
    EXPECT_EQ(root->child(3)->matchType(), MatchType::kOr);
}

TEST(Matcher, SingleFieldFilterIsNotWrapped) {
    auto m = Matcher::parse(json(R"({"a": {"$in": [3, 1, 2, 1]}})"));
    ASSERT_TRUE(m.isOK());
    auto* in = static_cast<const InMatchExpression*>(m.getValue()->root());
    ASSERT_EQ(in->matchType(), MatchType::kIn);
    ASSERT_EQ(in->equalities().size(), 3u);  // sorted, de-duplicated
    EXPECT_EQ(in->equalities().front().numberInt(), 1);
}

TEST(Matcher, FilterIsCopied) {
    std::unique_ptr<Matcher> m;
    {
        bson::BsonObj f = json(R"({"a": "xyz"})");
        m = std::move(Matcher::parse(f).getValue());
    }
    EXPECT_TRUE(m->matches(json(R"({"a": "xyz"})")));
}

TEST(Matcher, DetailsAreResetBetweenCalls) {
    auto m = std::move(Matcher::parse(json(R"({"a": 2})")).getValue());
    MatchDetails d;
    EXPECT_TRUE(m->matches(json(R"({"a": [1, 2]})"), &d));
    EXPECT_EQ(d.elemMatchKey, "1");
    EXPECT_TRUE(m->matches(json(R"({"a": 2})"), &d));
    EXPECT_FALSE(d.elemMatchKey.has_value());
}

TEST(CollectEqualities, TopLevelAndAnd) {
    auto eq = Matcher::collectEqualities(json(
        R"({"a": 1, "b.c": "x", "$and": [{"d": 3}], "e": {"$eq": 4}, "f": {"$in": [5]},
            "g": {"$gt": 1}, "$or": [{"h": 1}], "i": {"$in": [1, 2]}, "j": {"k": 1}})"));
    ASSERT_TRUE(eq.isOK()) << eq.getStatus().toString();
    EXPECT_EQ(eq.getValue().toJson(),
              json(R"({"a": 1, "b.c": "x", "d": 3, "e": 4, "f": 5, "j": {"k": 1}})").toJson());
}

TEST(CollectEqualities, Conflicts) {
    auto twice = Matcher::collectEqualities(json(R"({"a": 1, "$and": [{"a": 2}]})"));
    ASSERT_FALSE(twice.isOK());
    EXPECT_EQ(twice.getStatus().code(), 54);
    auto prefix = Matcher::collectEqualities(json(R"({"a": {"b": 1}, "a.b": 1})"));
    ASSERT_FALSE(prefix.isOK());
    EXPECT_EQ(prefix.getStatus().code(), 54);
    auto bad = Matcher::collectEqualities(json(R"({"a": {"$foo": 1}})"));
    EXPECT_EQ(bad.getStatus().code(), 2);
}

TEST(Projection, PositionalUsesMatcherDetails) {
    auto m = std::move(Matcher::parse(json(R"({"a.b": {"$gt": 1}})")).getValue());
    auto p = std::move(Projection::parse(json(R"({"a.$": 1, "_id": 0})")).getValue());
    EXPECT_TRUE(p->requiresMatchDetails());
    bson::BsonObj doc = json(R"({"_id": 1, "a": [{"b": 1}, {"b": 5}, {"b": 7}]})");
    MatchDetails d;
    ASSERT_TRUE(m->matches(doc, &d));
    auto out = p->apply(doc, &d);
    ASSERT_TRUE(out.isOK());
    EXPECT_EQ(out.getValue().toJson(), json(R"({"a": [{"b": 5}]})").toJson());
}

}  // namespace
}  // namespace tessera::query
