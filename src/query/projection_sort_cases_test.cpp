// Data-driven projection and sort cases: tests/query/projection_cases.json and sort_cases.json.
//   projection: {"doc", "projection", "details"?: "<elemMatchKey>", "expected" | "error": code}
//   sort:       {"sort", "docs": [...], "expected": [_id, ...] | "error": code}
#include <gtest/gtest.h>

#include "bson/compare.h"
#include "query/projection.h"
#include "query/sort.h"
#include "query/test_util.h"

namespace tessera::query {
namespace {

TEST(ProjectionCases, AllPass) {
    auto cases = test::loadCases("projection_cases.json");
    ASSERT_GT(cases.size(), 50u);
    for (size_t i = 0; i < cases.size(); ++i) {
        const auto& c = cases[i];
        SCOPED_TRACE("projection case " + std::to_string(i) + ": " + c.toJson());
        auto parsed = Projection::parse(c["projection"].objValue());
        if (c.hasField("error") && !parsed.isOK()) {
            EXPECT_EQ(parsed.getStatus().code(), c["error"].numberInt())
                << parsed.getStatus().toString();
            continue;
        }
        ASSERT_TRUE(parsed.isOK()) << parsed.getStatus().toString();
        MatchDetails details;
        if (c.hasField("details")) details.elemMatchKey = std::string(c["details"].stringValue());
        auto out = parsed.getValue()->apply(c["doc"].objValue(),
                                            c.hasField("details") ? &details : nullptr);
        if (c.hasField("error")) {
            ASSERT_FALSE(out.isOK()) << "expected error, got " << out.getValue().toJson();
            EXPECT_EQ(out.getStatus().code(), c["error"].numberInt());
            continue;
        }
        ASSERT_TRUE(out.isOK()) << out.getStatus().toString();
        EXPECT_TRUE(out.getValue().binaryEqual(c["expected"].objValue()))
            << "got " << out.getValue().toJson();
    }
}

TEST(SortCases, AllPass) {
    auto cases = test::loadCases("sort_cases.json");
    ASSERT_GT(cases.size(), 15u);
    for (size_t i = 0; i < cases.size(); ++i) {
        const auto& c = cases[i];
        SCOPED_TRACE("sort case " + std::to_string(i) + ": " + c.toJson());
        auto parsed = SortPattern::parse(c["sort"].objValue());
        if (c.hasField("error")) {
            ASSERT_FALSE(parsed.isOK());
            EXPECT_EQ(parsed.getStatus().code(), c["error"].numberInt());
            continue;
        }
        ASSERT_TRUE(parsed.isOK()) << parsed.getStatus().toString();
        std::vector<bson::BsonObj> docs;
        for (bson::BsonElement d : c["docs"].objValue()) docs.push_back(d.objValue().copy());
        std::vector<bson::BsonObj> expected;
        for (bson::BsonElement d : c["docs"].objValue()) expected.push_back(d.objValue().copy());

        auto check = [&](const std::vector<bson::BsonObj>& got, size_t n, const char* what) {
            std::vector<int> ids;
            for (const auto& d : got) ids.push_back(d["_id"].numberInt());
            std::vector<int> want;
            for (bson::BsonElement e : c["expected"].objValue()) {
                if (want.size() < n) want.push_back(e.numberInt());
            }
            EXPECT_EQ(ids, want) << what;
        };
        auto sorted = docs;
        parsed.getValue().sort(&sorted);
        check(sorted, docs.size(), "sort");
        // Top-k agrees with a full sort for every k.
        for (size_t k = 1; k <= docs.size(); ++k) {
            TopKSorter top(parsed.getValue(), k);
            for (const auto& d : docs) top.add(d);
            check(top.finish(), k, "top-k");
        }
    }
}

}  // namespace
}  // namespace tessera::query
