#include "query/planner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "bson/bson_builder.h"
#include "bson/compare.h"
#include "keystring/keystring.h"

namespace tessera::query {
namespace {

using bson::BsonObj;
using bson::fromJson;

IndexDescription index(std::string name, const char* keyPattern, bool sparse = false,
                       bool multikey = false, bool unique = false) {
    return IndexDescription{std::move(name), fromJson(keyPattern), unique, sparse, multikey};
}

std::vector<IndexDescription> standardIndexes() {
    return {index("_id_", R"({"_id": 1})"), index("a_1", R"({"a": 1})"),
            index("b_1", R"({"b": 1})"), index("a_1_b_1", R"({"a": 1, "b": 1})")};
}

QueryPlan plan(const char* filter, const std::vector<IndexDescription>& indexes,
               const char* sort = "{}", const char* hint = "{}") {
    auto sw = planQuery(fromJson(filter), fromJson(sort), fromJson(hint), indexes);
    EXPECT_TRUE(sw.isOK()) << sw.getStatus().toString();
    return sw.isOK() ? sw.getValue() : QueryPlan{};
}

std::string showValue(const bson::BsonElement& e) {
    switch (e.type()) {
        case bson::BsonType::MinKey:
            return "MinKey";
        case bson::BsonType::MaxKey:
            return "MaxKey";
        case bson::BsonType::Undefined:
            return "undefined";
        case bson::BsonType::Double:
            if (std::isinf(e.doubleValue())) return e.doubleValue() > 0 ? "inf" : "-inf";
            break;
        case bson::BsonType::Regex:
            return "/" + std::string(e.regexValue().pattern) + "/" +
                   std::string(e.regexValue().options);
        case bson::BsonType::Object:
            if (e.objValue().isEmpty()) return "{}";
            break;
        default:
            break;
    }
    return e.toString(false);
}

std::string show(const Interval& i) {
    return std::string(i.lowInclusive ? "[" : "(") + showValue(i.low.firstElement()) + ", " +
           showValue(i.high.firstElement()) + (i.highInclusive ? "]" : ")");
}

// One field's union as text, e.g. "[1, 1] [2, 2]".
std::string show(const std::vector<Interval>& list) {
    std::string out;
    for (const auto& i : list) out += (out.empty() ? "" : " ") + show(i);
    return out;
}

std::string fieldBounds(const QueryPlan& p, size_t field) {
    if (field >= p.bounds.fields.size()) return "<none>";
    return show(p.bounds.fields[field]);
}

// ---- index choice ----

TEST(Planner, IdEqualityIsIdHack) {
    QueryPlan p = plan(R"({"_id": 5})", standardIndexes());
    EXPECT_TRUE(p.isIdPointLookup);
    EXPECT_FALSE(p.collectionScan);
    EXPECT_EQ(p.summary, "IDHACK");
    EXPECT_EQ(p.indexName, "_id_");
    EXPECT_EQ(fieldBounds(p, 0), "[5, 5]");

    QueryPlan notHack = plan(R"({"_id": 5, "b": 1})", standardIndexes());
    EXPECT_FALSE(notHack.isIdPointLookup);
    QueryPlan range = plan(R"({"_id": {"$gt": 5}})", standardIndexes());
    EXPECT_FALSE(range.isIdPointLookup);
    EXPECT_EQ(range.indexName, "_id_");
    EXPECT_EQ(range.summary, "IXSCAN { _id: 1 }");
    EXPECT_EQ(fieldBounds(range, 0), "(5, inf]");
    EXPECT_FALSE(plan(R"({"_id": {"x": 1}})", standardIndexes()).isIdPointLookup);
}

TEST(Planner, NoPredicateIsCollectionScan) {
    QueryPlan p = plan("{}", standardIndexes());
    EXPECT_TRUE(p.collectionScan);
    EXPECT_EQ(p.summary, "COLLSCAN");
    EXPECT_TRUE(p.providesSort);  // nothing to sort
    QueryPlan unindexed = plan(R"({"c": 1})", standardIndexes(), R"({"c": 1})");
    EXPECT_TRUE(unindexed.collectionScan);
    EXPECT_FALSE(unindexed.providesSort);
}

TEST(Planner, PrefersMostEqualityFields) {
    QueryPlan p = plan(R"({"a": 1, "b": 2})", standardIndexes());
    EXPECT_EQ(p.indexName, "a_1_b_1");
    EXPECT_EQ(fieldBounds(p, 0), "[1, 1]");
    EXPECT_EQ(fieldBounds(p, 1), "[2, 2]");
    // Equality on b beats a range on a.
    QueryPlan q = plan(R"({"a": {"$gt": 1}, "b": 2})", standardIndexes());
    EXPECT_EQ(q.indexName, "b_1");
    // Equality + range on the compound index beats equality alone.
    QueryPlan r = plan(R"({"a": 1, "b": {"$lt": 3}})", standardIndexes());
    EXPECT_EQ(r.indexName, "a_1_b_1");
    EXPECT_EQ(fieldBounds(r, 1), "[-inf, 3)");
    // Equality on a only: the smaller index wins the tie.
    EXPECT_EQ(plan(R"({"a": 1})", standardIndexes()).indexName, "a_1");
    // A unique index fully bound to one point wins.
    auto withUnique = standardIndexes();
    withUnique.push_back(index("c_1", R"({"c": 1})", false, false, true));
    EXPECT_EQ(plan(R"({"a": 1, "b": 2, "c": 3})", withUnique).indexName, "c_1");
}

TEST(Planner, RangesAreTypeBracketed) {
    auto idx = standardIndexes();
    EXPECT_EQ(fieldBounds(plan(R"({"a": {"$gt": 5}})", idx), 0), "(5, inf]");
    EXPECT_EQ(fieldBounds(plan(R"({"a": {"$lte": 5}})", idx), 0), "[-inf, 5]");
    EXPECT_EQ(fieldBounds(plan(R"({"a": {"$lt": "m"}})", idx), 0), R"(["", "m"))");
    EXPECT_EQ(fieldBounds(plan(R"({"a": {"$gte": "m"}})", idx), 0), R"(["m", {}))");
    EXPECT_EQ(fieldBounds(plan(R"({"a": {"$gt": 1, "$lt": 5}})", idx), 0), "(1, 5)");
    EXPECT_EQ(fieldBounds(plan(R"({"$and": [{"a": {"$gte": 1}}, {"a": {"$lte": 3}}]})", idx), 0),
              "[1, 3]");
    // Contradictory predicates: nothing matches, no key range.
    QueryPlan none = plan(R"({"a": {"$gt": 5, "$lt": 3}})", idx);
    EXPECT_EQ(none.indexName, "a_1");
    EXPECT_TRUE(none.bounds.fields[0].empty());
    EXPECT_TRUE(encodeKeyRanges(none.keyPattern, none.bounds).empty());
    // Comparison across types: a number range never includes strings.
    QueryPlan mixed = plan(R"({"a": {"$gt": 5, "$lt": "z"}})", idx);
    EXPECT_TRUE(mixed.bounds.fields[0].empty());
}

TEST(Planner, InIsSortedAndDeduplicated) {
    QueryPlan p = plan(R"({"a": {"$in": [3, 1, 2, 1.0, 3, "x"]}})", standardIndexes());
    EXPECT_EQ(p.indexName, "a_1");
    EXPECT_EQ(fieldBounds(p, 0), R"([1, 1] [2, 2] [3, 3] ["x", "x"])");
    EXPECT_EQ(encodeKeyRanges(p.keyPattern, p.bounds).size(), 4u);
    QueryPlan empty = plan(R"({"a": {"$in": []}})", standardIndexes());
    EXPECT_TRUE(empty.bounds.fields[0].empty());
}

TEST(Planner, MultikeyIndexDoesNotIntersectRanges) {
    std::vector<IndexDescription> idx = {index("_id_", R"({"_id": 1})"),
                                         index("a_1", R"({"a": 1})", false, true)};
    QueryPlan p = plan(R"({"a": {"$gt": 1, "$lt": 5}})", idx);
    EXPECT_EQ(p.indexName, "a_1");
    ASSERT_EQ(p.bounds.fields[0].size(), 1u);
    // One of the two predicates, not their intersection (a: [0, 10] matches).
    std::string b = fieldBounds(p, 0);
    EXPECT_TRUE(b == "(1, inf]" || b == "[-inf, 5)") << b;
    EXPECT_TRUE(p.multikey);
    // An equality is preferred over a range.
    EXPECT_EQ(fieldBounds(plan(R"({"$and": [{"a": {"$gt": 1}}, {"a": 7}]})", idx), 0), "[7, 7]");
    // Non-multikey intersects.
    EXPECT_EQ(fieldBounds(plan(R"({"a": {"$gt": 1, "$lt": 5}})", standardIndexes()), 0), "(1, 5)");
}

TEST(Planner, MultikeyFieldsUnderOneArrayAreNotCompounded) {
    std::vector<IndexDescription> idx = {index("x", R"({"x.a": 1, "x.b": 1})", false, true)};
    QueryPlan p = plan(R"({"x.a": 1, "x.b": 2})", idx);
    EXPECT_EQ(fieldBounds(p, 0), "[1, 1]");
    EXPECT_EQ(fieldBounds(p, 1), "[MinKey, MaxKey]");
    // Different top-level paths compound fine.
    std::vector<IndexDescription> ab = {index("ab", R"({"a": 1, "b": 1})", false, true)};
    EXPECT_EQ(fieldBounds(plan(R"({"a": 1, "b": 2})", ab), 1), "[2, 2]");
}

TEST(Planner, NullEqualityIncludesMissingAndUndefined) {
    QueryPlan p = plan(R"({"a": null})", standardIndexes());
    EXPECT_EQ(p.indexName, "a_1");
    EXPECT_EQ(fieldBounds(p, 0), "[undefined, null]");
    EXPECT_EQ(fieldBounds(plan(R"({"a": {"$in": [null, 2]}})", standardIndexes()), 0),
              "[undefined, null] [2, 2]");
}

TEST(Planner, SparseIndexOnlyWhenPresenceIsProven) {
    std::vector<IndexDescription> idx = {index("_id_", R"({"_id": 1})"),
                                         index("a_1", R"({"a": 1})", true)};
    EXPECT_EQ(plan(R"({"a": 5})", idx).indexName, "a_1");
    EXPECT_EQ(plan(R"({"a": {"$exists": true}})", idx).indexName, "a_1");
    EXPECT_TRUE(plan(R"({"a": null})", idx).collectionScan);
    EXPECT_TRUE(plan(R"({"a": {"$exists": false}})", idx).collectionScan);
    EXPECT_TRUE(plan(R"({"a": {"$in": [1, null]}})", idx).collectionScan);
    EXPECT_TRUE(plan(R"({"a": {"$ne": 1}})", idx).collectionScan);
    // A sort alone cannot use a sparse index (documents without `a` are not in it).
    EXPECT_TRUE(plan("{}", idx, R"({"a": 1})").collectionScan);
    // Compound sparse: a predicate on the second field proves presence.
    std::vector<IndexDescription> ab = {index("ab", R"({"a": 1, "b": 1})", true)};
    QueryPlan q = plan(R"({"a": null, "b": 3})", ab);
    EXPECT_EQ(q.indexName, "ab");
}

TEST(Planner, ArrayEqualityCoversElementsAndTheArray) {
    QueryPlan p = plan(R"({"a": [1, 2]})", standardIndexes());
    EXPECT_EQ(p.indexName, "a_1");
    EXPECT_EQ(fieldBounds(p, 0), "[1, 1] [[ 1, 2 ], [ 1, 2 ]]");
    EXPECT_TRUE(plan(R"({"a": []})", standardIndexes()).collectionScan);
}

TEST(Planner, RegexPrefixBecomesStringRange) {
    auto idx = standardIndexes();
    EXPECT_EQ(
        fieldBounds(
            plan(R"({"a": {"$regularExpression": {"pattern": "^abc", "options": ""}}})", idx), 0),
        R"(["abc", "abd") [/^abc/, /^abc/])");
    EXPECT_EQ(fieldBounds(plan(R"({"a": {"$regex": "^ab.*", "$options": ""}})", idx), 0),
              R"(["ab", "ac") [/^ab.*/, /^ab.*/])");
    // Quantified last literal is optional: ^abc? -> prefix "ab".
    EXPECT_EQ(fieldBounds(plan(R"({"a": {"$regex": "^abc?"}})", idx), 0),
              R"(["ab", "ac") [/^abc?/, /^abc?/])");
    // Unanchored, case-insensitive, alternation: all strings (plus the regex itself).
    for (const char* f :
         {R"({"a": {"$regex": "abc"}})", R"({"a": {"$regex": "^abc", "$options": "i"}})",
          R"({"a": {"$regex": "^a|b"}})"}) {
        std::string b = fieldBounds(plan(f, idx), 0);
        EXPECT_TRUE(b.starts_with(R"(["", {}))")) << f << " -> " << b;
    }
    // $eq with a regex is equality to a regex value.
    EXPECT_EQ(
        fieldBounds(
            plan(R"({"a": {"$eq": {"$regularExpression": {"pattern": "^x", "options": ""}}}})",
                 idx),
            0),
        "[/^x/, /^x/]");
}

TEST(Planner, UnanalysedOperatorsGiveNoBounds) {
    auto idx = standardIndexes();
    for (const char* f : {R"({"$or": [{"a": 1}, {"a": 2}]})", R"({"$nor": [{"a": 1}]})",
                          R"({"a": {"$not": {"$gt": 1}}})", R"({"a": {"$elemMatch": {"$gt": 1}}})",
                          R"({"a": {"$ne": 1}})", R"({"a": {"$nin": [1]}})",
                          R"({"a": {"$type": "string"}})", R"({"a": {"$exists": true}})",
                          R"({"a": {"$size": 2}})", R"({"$expr": {"$eq": ["$a", 1]}})"}) {
        EXPECT_TRUE(plan(f, idx).collectionScan) << f;
    }
    // Still usable when combined with an analysable predicate.
    EXPECT_EQ(fieldBounds(plan(R"({"a": {"$ne": 1, "$gte": 2}})", idx), 0), "[2, inf]");
}

TEST(Planner, DescendingFieldBoundsAreInIndexOrder) {
    std::vector<IndexDescription> idx = {index("a_-1", R"({"a": -1})")};
    QueryPlan p = plan(R"({"a": {"$gt": 5}})", idx);
    EXPECT_EQ(fieldBounds(p, 0), "[inf, 5)");
    QueryPlan in = plan(R"({"a": {"$in": [1, 3, 2]}})", idx);
    EXPECT_EQ(fieldBounds(in, 0), "[3, 3] [2, 2] [1, 1]");
    EXPECT_EQ(in.summary, "IXSCAN { a: -1 }");
}

// ---- sort ----

TEST(Planner, IndexProvidesSort) {
    std::vector<IndexDescription> idx = {index("_id_", R"({"_id": 1})"),
                                         index("a_1_b_-1", R"({"a": 1, "b": -1})")};
    QueryPlan p = plan("{}", idx, R"({"a": 1})");
    EXPECT_EQ(p.indexName, "a_1_b_-1");
    EXPECT_TRUE(p.providesSort);
    EXPECT_TRUE(p.forward);
    QueryPlan back = plan("{}", idx, R"({"a": -1, "b": 1})");
    EXPECT_EQ(back.indexName, "a_1_b_-1");
    EXPECT_TRUE(back.providesSort);
    EXPECT_FALSE(back.forward);
    EXPECT_TRUE(plan("{}", idx, R"({"a": 1, "b": 1})").collectionScan);  // mixed directions
    EXPECT_TRUE(plan("{}", idx, R"({"b": -1})").collectionScan);         // not a prefix
    // Equality on a leading field: the sort may continue after it.
    QueryPlan eq = plan(R"({"a": 5})", idx, R"({"b": 1})");
    EXPECT_TRUE(eq.providesSort);
    EXPECT_FALSE(eq.forward);
    // A sort on the equality field itself is satisfied.
    EXPECT_TRUE(plan(R"({"a": 5})", idx, R"({"a": -1, "b": -1})").providesSort);
    // Several points on `a` break the order on `b` ...
    EXPECT_FALSE(plan(R"({"a": {"$in": [1, 2]}})", idx, R"({"b": -1})").providesSort);
    // ... but not the order on (a, b).
    EXPECT_TRUE(plan(R"({"a": {"$in": [1, 2]}})", idx, R"({"a": 1, "b": -1})").providesSort);
    // A range on a: still sorted by a.
    QueryPlan range = plan(R"({"a": {"$gt": 1}})", idx, R"({"a": -1})");
    EXPECT_TRUE(range.providesSort);
    EXPECT_FALSE(range.forward);
    // $meta sorts are never provided.
    EXPECT_FALSE(plan(R"({"a": 5})", idx, R"({"s": {"$meta": "textScore"}})").providesSort);
}

TEST(Planner, PrefersIndexThatProvidesSortOnTies) {
    std::vector<IndexDescription> idx = {index("a_1_c_1", R"({"a": 1, "c": 1})"),
                                         index("a_1_b_1", R"({"a": 1, "b": 1})")};
    EXPECT_EQ(plan(R"({"a": 1})", idx, R"({"b": 1})").indexName, "a_1_b_1");
    EXPECT_EQ(plan(R"({"a": 1})", idx, R"({"c": 1})").indexName, "a_1_c_1");
}

TEST(Planner, MultikeyIndexNeverProvidesSort) {
    std::vector<IndexDescription> idx = {index("a_1", R"({"a": 1})", false, true)};
    EXPECT_TRUE(plan("{}", idx, R"({"a": 1})").collectionScan);
    QueryPlan p = plan(R"({"a": {"$gt": 1}})", idx, R"({"a": 1})");
    EXPECT_EQ(p.indexName, "a_1");
    EXPECT_FALSE(p.providesSort);
}

// ---- hint ----

TEST(Planner, HintWins) {
    auto idx = standardIndexes();
    QueryPlan byName = plan(R"({"a": 1})", idx, "{}", R"({"": "b_1"})");
    EXPECT_EQ(byName.indexName, "b_1");
    EXPECT_EQ(fieldBounds(byName, 0), "[MinKey, MaxKey]");
    EXPECT_EQ(plan(R"({"a": 1})", idx, "{}", R"({"b": 1})").indexName, "b_1");
    EXPECT_EQ(plan(R"({"a": 1})", idx, "{}", R"({"a": 1.0, "b": 1})").indexName, "a_1_b_1");
    QueryPlan natural = plan(R"({"_id": 1})", idx, "{}", R"({"$natural": -1})");
    EXPECT_TRUE(natural.collectionScan);
    EXPECT_FALSE(natural.forward);
    // A hinted sparse index is used even when it cannot answer the predicate completely.
    std::vector<IndexDescription> sparse = {index("s", R"({"s": 1})", true)};
    EXPECT_EQ(plan(R"({"s": null})", sparse, "{}", R"({"": "s"})").indexName, "s");

    auto bad = planQuery(fromJson(R"({"a": 1})"), fromJson("{}"), fromJson(R"({"": "nope"})"), idx);
    ASSERT_FALSE(bad.isOK());
    EXPECT_EQ(bad.getStatus().code(), 2);
    EXPECT_EQ(bad.getStatus().reason(), "hint provided does not correspond to an existing index");
    EXPECT_FALSE(planQuery(fromJson("{}"), fromJson("{}"), fromJson(R"({"zz": 1})"), idx).isOK());
}

TEST(Planner, SpecialIndexesOnlyWhenHinted) {
    std::vector<IndexDescription> idx = {index("t", R"({"a": "text"})")};
    EXPECT_TRUE(plan(R"({"a": 1})", idx).collectionScan);
    QueryPlan p = plan(R"({"a": 1})", idx, "{}", R"({"a": "text"})");
    EXPECT_EQ(p.indexName, "t");
    EXPECT_EQ(p.summary, R"(IXSCAN { a: "text" })");
    EXPECT_EQ(fieldBounds(p, 0), "[MinKey, MaxKey]");
}

// ---- key ranges ----

std::string key(std::initializer_list<std::pair<const char*, bool>> values) {
    keystring::Builder b;
    for (auto [json, desc] : values) b.append(fromJson(json).firstElement(), desc);
    return b.key();
}

bool inRanges(const std::vector<KeyRangeSpec>& ranges, const std::string& k) {
    for (const auto& r : ranges) {
        bool aboveLow = r.low.empty() || (r.lowInclusive ? k >= r.low : k > r.low);
        bool belowHigh = r.high.empty() || (r.highInclusive ? k <= r.high : k < r.high);
        if (aboveLow && belowHigh) return true;
    }
    return false;
}

TEST(Planner, KeyRangesForCompoundBounds) {
    std::vector<IndexDescription> idx = {index("ab", R"({"a": 1, "b": -1})")};
    QueryPlan p = plan(R"({"a": {"$in": [1, 2]}, "b": {"$gt": 3, "$lte": 7}})", idx);
    auto ranges = encodeKeyRanges(p.keyPattern, p.bounds);
    ASSERT_EQ(ranges.size(), 2u);
    EXPECT_LT(ranges[0].high, ranges[1].low);  // ascending, disjoint
    const std::string rid = "\x01record";
    EXPECT_TRUE(inRanges(ranges, key({{R"({"v": 1})", false}, {R"({"v": 7})", true}})));
    EXPECT_TRUE(inRanges(ranges, key({{R"({"v": 2})", false}, {R"({"v": 4.5})", true}}) + rid));
    EXPECT_FALSE(inRanges(ranges, key({{R"({"v": 1})", false}, {R"({"v": 3})", true}}) + rid));
    EXPECT_FALSE(inRanges(ranges, key({{R"({"v": 1})", false}, {R"({"v": 8})", true}})));
    EXPECT_FALSE(inRanges(ranges, key({{R"({"v": 1.5})", false}, {R"({"v": 5})", true}})));
    EXPECT_FALSE(inRanges(ranges, key({{R"({"v": 3})", false}, {R"({"v": 5})", true}})));
}

TEST(Planner, KeyRangesStopAtTheFirstNonPointField) {
    // a in (1, 5): exclusive ends exclude every key with a == 1 or a == 5, whatever follows.
    std::vector<IndexDescription> idx = {index("ab", R"({"a": 1, "b": 1})")};
    QueryPlan p = plan(R"({"a": {"$gt": 1, "$lt": 5}, "b": 2})", idx);
    auto ranges = encodeKeyRanges(p.keyPattern, p.bounds);
    ASSERT_EQ(ranges.size(), 1u);
    EXPECT_FALSE(
        inRanges(ranges, key({{R"({"v": 1})", false}, {R"({"v": {"$maxKey": 1}})", false}})));
    EXPECT_TRUE(inRanges(ranges, key({{R"({"v": 1.5})", false}, {R"({"v": 9})", false}})));
    EXPECT_FALSE(
        inRanges(ranges, key({{R"({"v": 5})", false}, {R"({"v": {"$minKey": 1}})", false}})));
}

TEST(Planner, KeyRangesAreCapped) {
    std::string in = R"({"a": {"$in": [)";
    for (int i = 0; i < 300; ++i) in += (i ? "," : "") + std::to_string(i);
    in += "]}}";
    std::vector<IndexDescription> idx = {index("a", R"({"a": 1})")};
    QueryPlan p = plan(in.c_str(), idx);
    auto ranges = encodeKeyRanges(p.keyPattern, p.bounds);
    ASSERT_EQ(ranges.size(), 1u);  // widened to [0, 299]
    EXPECT_TRUE(inRanges(ranges, key({{R"({"v": 150.5})", false}})));
    EXPECT_FALSE(inRanges(ranges, key({{R"({"v": 300})", false}})));

    std::string twenty = "[";
    for (int i = 0; i < 20; ++i) twenty += (i ? "," : "") + std::to_string(i);
    twenty += "]";
    std::string f = R"({"a": {"$in": )" + twenty + R"(}, "b": {"$in": )" + twenty + "}}";
    std::vector<IndexDescription> ab = {index("ab", R"({"a": 1, "b": 1})")};
    QueryPlan q = plan(f.c_str(), ab);
    EXPECT_EQ(encodeKeyRanges(q.keyPattern, q.bounds).size(), 20u);  // 400 > 200: b dropped
    EXPECT_EQ(encodeKeyRanges(q.keyPattern, q.bounds, 1000).size(), 400u);
}

// Property: for random scalar values and random predicates, every value the predicate matches
// has its key inside the plan's key ranges (bounds are a superset), for both directions.
TEST(Planner, RangesContainEveryMatchingValue) {
    std::vector<BsonObj> values;
    for (const char* v : {R"({"v": null})",
                          R"({"v": {"$undefined": true}})",
                          R"({"v": {"$minKey": 1}})",
                          R"({"v": {"$maxKey": 1}})",
                          R"({"v": -Infinity})",
                          R"({"v": NaN})",
                          R"({"v": -5})",
                          R"({"v": 0})",
                          R"({"v": 1})",
                          R"({"v": 1.5})",
                          R"({"v": {"$numberLong": "2"}})",
                          R"({"v": {"$numberDecimal": "2.5"}})",
                          R"({"v": 3})",
                          R"({"v": Infinity})",
                          R"({"v": ""})",
                          R"({"v": "a"})",
                          R"({"v": "ab"})",
                          R"({"v": "abc"})",
                          R"({"v": "b"})",
                          R"({"v": {}})",
                          R"({"v": {"x": 1}})",
                          R"({"v": true})",
                          R"({"v": false})",
                          R"({"v": {"$date": {"$numberLong": "5"}}})",
                          R"({"v": {"$oid": "0102030405060708090a0b0c"}})"}) {
        values.push_back(fromJson(v));
    }
    auto matches = [](const bson::BsonElement& v, std::string_view op, const bson::BsonElement& x) {
        if (x.type() == bson::BsonType::Null && (op == "$eq" || op == "$gte" || op == "$lte")) {
            return v.type() == bson::BsonType::Null;
        }
        if (bson::canonicalTypeOrder(v.type()) != bson::canonicalTypeOrder(x.type())) return false;
        int c = bson::compareElementValues(v, x);
        bool vNaN = v.isNumber() && std::isnan(v.numberDouble());
        bool xNaN = x.isNumber() && std::isnan(x.numberDouble());
        if (vNaN != xNaN) return false;  // NaN only equals NaN
        if (op == "$eq") return c == 0;
        if (op == "$gt") return c > 0;
        if (op == "$gte") return c >= 0;
        if (op == "$lt") return c < 0;
        return c <= 0;
    };
    std::mt19937 rng(42);
    const char* ops[] = {"$eq", "$gt", "$gte", "$lt", "$lte"};
    for (int n = 0; n < 3000; ++n) {
        const char* op = ops[rng() % 5];
        const BsonObj& operand = values[rng() % values.size()];
        bson::BsonElement x = operand.firstElement();
        if (x.type() == bson::BsonType::Undefined || x.type() == bson::BsonType::MinKey ||
            x.type() == bson::BsonType::MaxKey) {
            continue;
        }
        bson::BsonBuilder fb;
        fb.startObject("a").appendElementAs(x, op).end();
        BsonObj filter = fb.obj();
        for (bool desc : {false, true}) {
            std::vector<IndexDescription> idx = {index("a", desc ? R"({"a": -1})" : R"({"a": 1})")};
            auto sw = planQuery(filter, fromJson("{}"), fromJson("{}"), idx);
            ASSERT_TRUE(sw.isOK());
            const QueryPlan& p = sw.getValue();
            auto ranges = p.collectionScan ? std::vector<KeyRangeSpec>{KeyRangeSpec{}}
                                           : encodeKeyRanges(p.keyPattern, p.bounds);
            for (const BsonObj& v : values) {
                if (!matches(v.firstElement(), op, x)) continue;
                EXPECT_TRUE(inRanges(ranges, keystring::encodeValue(v.firstElement(), desc)))
                    << filter.toJson() << " must find " << v.toJson() << (desc ? " (desc)" : "");
            }
        }
    }
}

}  // namespace
}  // namespace tessera::query
