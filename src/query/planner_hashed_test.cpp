// Planning with hashed indexes: equality/$in become points on the hashes; ranges and sorts never
// use the hash order.

#include <gtest/gtest.h>

#include <algorithm>

#include "bson/bson_builder.h"
#include "bson/element_hash.h"
#include "keystring/keystring.h"
#include "query/planner.h"
#include "query/planner_bounds.h"

namespace tessera::query {
namespace {

using bson::BsonObj;
using bson::fromJson;

IndexDescription hashedIndex(std::string name, const char* keyPattern) {
    return IndexDescription{std::move(name), fromJson(keyPattern), false, false, false};
}

std::vector<IndexDescription> indexes() {
    return {hashedIndex("_id_", R"({"_id": 1})"), hashedIndex("a_hashed", R"({"a": "hashed"})")};
}

QueryPlan plan(const char* filter, const std::vector<IndexDescription>& idx,
               const char* sort = "{}", const char* hint = "{}") {
    auto sw = planQuery(fromJson(filter), fromJson(sort), fromJson(hint), idx);
    EXPECT_TRUE(sw.isOK()) << sw.getStatus().toString();
    return sw.isOK() ? sw.getValue() : QueryPlan{};
}

int64_t hashOf(const char* valueJson) {
    return bson::hashElement(fromJson(std::string("{\"v\": ") + valueJson + "}").firstElement());
}

// The points of one field's bounds as int64 (they must all be NumberLong points).
std::vector<int64_t> hashPoints(const std::vector<Interval>& list) {
    std::vector<int64_t> out;
    for (const Interval& i : list) {
        EXPECT_EQ(i.low.firstElement().type(), bson::BsonType::Int64);
        EXPECT_TRUE(i.lowInclusive && i.highInclusive);
        EXPECT_EQ(i.low.firstElement().int64Value(), i.high.firstElement().int64Value());
        out.push_back(i.low.firstElement().int64Value());
    }
    return out;
}

std::vector<int64_t> sortedHashes(std::initializer_list<const char*> values) {
    std::vector<int64_t> out;
    for (const char* v : values) out.push_back(hashOf(v));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

bool isFullBounds(const std::vector<Interval>& list) { return planner_detail::isFull(list); }

TEST(PlannerHashed, EqualityUsesTheHashedIndex) {
    QueryPlan p = plan(R"({"a": 5})", indexes());
    ASSERT_FALSE(p.collectionScan);
    EXPECT_EQ(p.indexName, "a_hashed");
    EXPECT_EQ(p.summary, R"(IXSCAN { a: "hashed" })");
    EXPECT_EQ(p.keyPattern.toJson(), R"({ "a" : "hashed" })");
    ASSERT_EQ(p.bounds.fields.size(), 1u);
    EXPECT_EQ(hashPoints(p.bounds.fields[0]), sortedHashes({"5"}));
    EXPECT_FALSE(p.multikey);
    // $eq, and a string / document value.
    EXPECT_EQ(hashPoints(plan(R"({"a": {"$eq": "x"}})", indexes()).bounds.fields[0]),
              sortedHashes({R"("x")"}));
    EXPECT_EQ(hashPoints(plan(R"({"a": {"b": 1}, "c": 2})", indexes()).bounds.fields[0]),
              sortedHashes({R"({"b": 1})"}));
}

TEST(PlannerHashed, InBecomesSortedDistinctHashes) {
    QueryPlan p = plan(R"({"a": {"$in": [3, "x", 3.0, {"$numberLong": "3"}]}})", indexes());
    EXPECT_EQ(p.indexName, "a_hashed");
    EXPECT_EQ(hashPoints(p.bounds.fields[0]), sortedHashes({"3", R"("x")"}));
    // Nothing can match: empty bounds.
    EXPECT_TRUE(plan(R"({"a": {"$in": []}})", indexes()).bounds.fields[0].empty());
}

TEST(PlannerHashed, NullCoversMissingAndUndefined) {
    QueryPlan p = plan(R"({"a": null})", indexes());
    EXPECT_EQ(p.indexName, "a_hashed");
    EXPECT_EQ(hashPoints(p.bounds.fields[0]), sortedHashes({"null", R"({"$undefined": true})"}));
}

TEST(PlannerHashed, NonIntegralNumbersCoverEveryTypesSquash) {
    // 2.5 as a double squashes to 2 (truncation), as a decimal to 2 (half even); 1.5 -> 1 / 2.
    QueryPlan p = plan(R"({"a": 1.5})", indexes());
    std::vector<int64_t> points = hashPoints(p.bounds.fields[0]);
    for (const char* v : {"1", "2", R"({"$numberDecimal": "1.5"})"}) {
        EXPECT_NE(std::find(points.begin(), points.end(), hashOf(v)), points.end()) << v;
    }
    p = plan(R"({"a": {"$numberDecimal": "-2.7"}})", indexes());
    points = hashPoints(p.bounds.fields[0]);
    for (const char* v : {"-2", "-3", "-2.7"}) {
        EXPECT_NE(std::find(points.begin(), points.end(), hashOf(v)), points.end()) << v;
    }
}

TEST(PlannerHashed, RangesAndRegexesDoNotUseTheHashedIndex) {
    for (const char* filter : {R"({"a": {"$gt": 5}})", R"({"a": {"$lte": "x"}})",
                               R"({"a": {"$regex": "^ab"}})", R"({"a": {"$exists": true}})",
                               R"({"a": {"$ne": 1}})", R"({"a": {"$in": [1, {"$regex": "x"}]}})"}) {
        EXPECT_TRUE(plan(filter, indexes()).collectionScan) << filter;
    }
    // Hinted: the whole index, the filter decides.
    QueryPlan p = plan(R"({"a": {"$gt": 5}})", indexes(), "{}", R"({"a": "hashed"})");
    EXPECT_EQ(p.indexName, "a_hashed");
    EXPECT_TRUE(isFullBounds(p.bounds.fields[0]));
}

TEST(PlannerHashed, NeverProvidesSortOnTheHashedField) {
    EXPECT_TRUE(plan("{}", indexes(), R"({"a": 1})").collectionScan);
    QueryPlan p = plan(R"({"a": 5})", indexes(), R"({"a": 1})");
    EXPECT_EQ(p.indexName, "a_hashed");
    EXPECT_FALSE(p.providesSort);
    p = plan("{}", indexes(), R"({"a": -1})", R"({"a": "hashed"})");
    EXPECT_FALSE(p.providesSort);
    // A regular index provides the sort instead.
    std::vector<IndexDescription> both = indexes();
    both.push_back(hashedIndex("a_1", R"({"a": 1})"));
    p = plan(R"({"a": {"$gt": 1}})", both, R"({"a": 1})");
    EXPECT_EQ(p.indexName, "a_1");
    EXPECT_TRUE(p.providesSort);
}

TEST(PlannerHashed, CompoundWithOneHashedField) {
    std::vector<IndexDescription> idx = {hashedIndex("x_1_a_hashed", R"({"x": 1, "a": "hashed"})")};
    QueryPlan p = plan(R"({"x": {"$gte": 1, "$lt": 9}, "a": 4})", idx);
    ASSERT_FALSE(p.collectionScan);
    ASSERT_EQ(p.bounds.fields.size(), 2u);
    ASSERT_EQ(p.bounds.fields[0].size(), 1u);
    EXPECT_EQ(p.bounds.fields[0][0].low.firstElement().numberLong(), 1);
    EXPECT_EQ(p.bounds.fields[0][0].high.firstElement().numberLong(), 9);
    EXPECT_EQ(hashPoints(p.bounds.fields[1]), sortedHashes({"4"}));
    // The regular prefix still gives ranges and its sort; the hashed field neither.
    p = plan(R"({"x": {"$gt": 1}})", idx, R"({"x": -1})");
    EXPECT_FALSE(p.collectionScan);
    EXPECT_TRUE(p.providesSort);
    EXPECT_FALSE(p.forward);
    p = plan(R"({"x": 2})", idx, R"({"a": 1})");
    EXPECT_FALSE(p.providesSort);
    // Only the hashed field bound: the leading field is unbound, so not chosen.
    EXPECT_TRUE(plan(R"({"a": 4})", idx).collectionScan);
    // Hashed leading field followed by a regular one.
    std::vector<IndexDescription> idx2 = {
        hashedIndex("a_hashed_y_1", R"({"a": "hashed", "y": 1})")};
    p = plan(R"({"a": 4, "y": {"$lt": 3}})", idx2, R"({"y": 1})");
    EXPECT_EQ(p.indexName, "a_hashed_y_1");
    EXPECT_EQ(hashPoints(p.bounds.fields[0]), sortedHashes({"4"}));
    EXPECT_FALSE(isFullBounds(p.bounds.fields[1]));
    EXPECT_FALSE(p.providesSort);
}

TEST(PlannerHashed, KeyRangesHoldTheHashedKeys) {
    QueryPlan p = plan(R"({"a": {"$in": ["u", 7]}})", indexes());
    auto ranges = encodeKeyRanges(p.keyPattern, p.bounds);
    ASSERT_EQ(ranges.size(), 2u);
    auto keyOf = [](int64_t h) {
        BsonObj o = bson::BsonBuilder().appendInt64("", h).obj();
        keystring::Builder b;
        b.append(o.firstElement(), false);
        return b.key();
    };
    auto inRanges = [&](const std::string& k) {
        for (const auto& r : ranges) {
            if (k >= r.low && (r.high.empty() || k < r.high)) return true;
        }
        return false;
    };
    EXPECT_TRUE(inRanges(keyOf(hashOf(R"("u")"))));
    EXPECT_TRUE(inRanges(keyOf(hashOf("7"))));
    EXPECT_FALSE(inRanges(keyOf(hashOf("8"))));
}

TEST(PlannerHashed, HashedBoundsOfRangesAreFull) {
    using namespace planner_detail;
    BsonObj v = fromJson(R"({"lo": 1, "hi": 5})");
    IntervalList range = {makeInterval(v["lo"], true, v["hi"], true)};
    EXPECT_TRUE(isFull(hashedBounds(range)));
    EXPECT_TRUE(isFull(hashedBounds({fullInterval()})));
    EXPECT_TRUE(hashedBounds({}).empty());
}

}  // namespace
}  // namespace tessera::query
