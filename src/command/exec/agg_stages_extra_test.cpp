// $bucketAuto, $redact and $graphLookup end to end through the aggregate command, with
// MongoDB's semantics (the documentation's examples where they exist).

#include <gtest/gtest.h>

#include "command/crud_test_util.h"
#include "command/exec/stage_extra.h"
#include "command/registry.h"

namespace tessera::command {
void registerCollectionCommands(CommandRegistry& registry);
}

namespace tessera::command::test {
namespace {

using exec::GranularityRounder;
using exec::valuesAtPath;

class AggExtraFixture : public CrudFixture {
  protected:
    void SetUp() override {
        CrudFixture::SetUp();
        registerCollectionCommands(registry);
    }

    void insert(std::string_view coll, std::string_view docsJson) {
        bson::BsonObj r = ok("{\"insert\": \"" + std::string(coll) +
                             "\", \"documents\": " + std::string(docsJson) + "}");
        EXPECT_TRUE(r["writeErrors"].eoo()) << r.toJson();
    }

    // The whole result (the test data fits in the first batch) as relaxed JSON documents.
    std::vector<std::string> agg(std::string_view coll, std::string_view pipeline) {
        CommandResult r = run("{\"aggregate\": \"" + std::string(coll) +
                              "\", \"pipeline\": " + std::string(pipeline) + ", \"cursor\": {}}");
        EXPECT_TRUE(r.ok()) << pipeline << " -> " << r.status.toString();
        std::vector<std::string> out;
        if (!r.ok()) return out;
        bson::BsonView cursor = r.reply["cursor"].objValue();
        EXPECT_EQ(cursor["id"].numberLong(), 0);
        for (auto d : cursor["firstBatch"].objValue()) out.push_back(d.objValue().toJson());
        return out;
    }

    int aggError(std::string_view coll, std::string_view pipeline) {
        CommandResult r = run("{\"aggregate\": \"" + std::string(coll) +
                              "\", \"pipeline\": " + std::string(pipeline) + ", \"cursor\": {}}");
        EXPECT_FALSE(r.ok()) << pipeline;
        return r.status.code();
    }

    static std::vector<std::string> jsv(std::vector<std::string_view> v) {
        std::vector<std::string> out;
        for (auto j : v) out.push_back(J(j).toJson());
        return out;
    }
};

TEST_F(AggExtraFixture, BucketAutoEvenBucketsAndBoundaries) {
    insert("c", R"([{"_id": 1, "v": 1}, {"_id": 2, "v": 2}, {"_id": 3, "v": 3}, {"_id": 4, "v": 4},
                    {"_id": 5, "v": 5}, {"_id": 6, "v": 6}, {"_id": 7, "v": 7}, {"_id": 8, "v": 8},
                    {"_id": 9, "v": 9}, {"_id": 10, "v": 10}])");
    // 10 documents in 3 buckets: about 3 per bucket, the last one takes the rest; a bucket's
    // max is the next bucket's min, the last one's is its largest value.
    EXPECT_EQ(agg("c", R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 3}}])"),
              jsv({R"({"_id": {"min": 1, "max": 4}, "count": 3})",
                   R"({"_id": {"min": 4, "max": 7}, "count": 3})",
                   R"({"_id": {"min": 7, "max": 10}, "count": 4})"}));
    EXPECT_EQ(agg("c", R"([{"$bucketAuto": {"groupBy": {"$multiply": ["$v", 10]}, "buckets": 2,
                                             "output": {"s": {"$sum": "$v"},
                                                        "ids": {"$push": "$_id"}}}}])"),
              jsv({R"({"_id": {"min": 10, "max": 60}, "s": 15, "ids": [1, 2, 3, 4, 5]})",
                   R"({"_id": {"min": 60, "max": 100}, "s": 40, "ids": [6, 7, 8, 9, 10]})"}));
    // More buckets than documents: one document per bucket.
    EXPECT_EQ(agg("c", R"([{"$match": {"v": {"$lte": 2}}},
                          {"$bucketAuto": {"groupBy": "$v", "buckets": 5}}])"),
              jsv({R"({"_id": {"min": 1, "max": 2}, "count": 1})",
                   R"({"_id": {"min": 2, "max": 2}, "count": 1})"}));
    EXPECT_TRUE(agg("empty", R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 2}}])").empty());
}

TEST_F(AggExtraFixture, BucketAutoEqualKeysStayTogetherAndMissingIsNull) {
    insert("c", R"([{"_id": 1, "v": 1}, {"_id": 2, "v": 1}, {"_id": 3, "v": 1}, {"_id": 4, "v": 2},
                    {"_id": 5, "v": 3}, {"_id": 6}])");
    // Sorted keys: null, 1, 1, 1, 2, 3; about 2 per bucket, but the first bucket ends with a 1
    // and so takes all the 1s, which leaves 2 documents for a second (and last) bucket.
    EXPECT_EQ(agg("c", R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 3,
                                             "output": {"first": {"$first": "$_id"},
                                                        "n": {"$sum": 1}}}}])"),
              jsv({R"({"_id": {"min": null, "max": 2}, "first": 6, "n": 4})",
                   R"({"_id": {"min": 2, "max": 3}, "first": 4, "n": 2})"}));
    EXPECT_EQ(
        agg("c", R"([{"$match": {"v": 1}}, {"$bucketAuto": {"groupBy": "$v", "buckets": 3}}])"),
        jsv({R"({"_id": {"min": 1, "max": 1}, "count": 3})"}));
}

TEST_F(AggExtraFixture, BucketAutoGranularity) {
    insert("c", R"([{"_id": 1, "v": 1}, {"_id": 2, "v": 2}, {"_id": 3, "v": 3}, {"_id": 4, "v": 4},
                    {"_id": 5, "v": 5}, {"_id": 6, "v": 6}, {"_id": 7, "v": 7}, {"_id": 8, "v": 8},
                    {"_id": 9, "v": 9}, {"_id": 10, "v": 10}])");
    EXPECT_EQ(
        agg("c", R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 3, "granularity": "R5"}}])"),
        jsv({R"({"_id": {"min": 0.63, "max": 4.0}, "count": 3})",
             R"({"_id": {"min": 4.0, "max": 6.3}, "count": 3})",
             R"({"_id": {"min": 6.3, "max": 16.0}, "count": 4})"}));
    EXPECT_EQ(
        agg("c", R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 2, "granularity": "1-2-5"}}])"),
        jsv({R"({"_id": {"min": 0.5, "max": 10.0}, "count": 9})",
             R"({"_id": {"min": 10.0, "max": 20.0}, "count": 1})"}));
    EXPECT_EQ(aggError("c", R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 2,
                                                  "granularity": "R3"}}])"),
              40257);
    EXPECT_EQ(aggError("c", R"([{"$bucketAuto": {"groupBy": {"$subtract": ["$v", 5]},
                                                  "buckets": 2, "granularity": "R5"}}])"),
              40260);
    EXPECT_EQ(aggError("c", R"([{"$bucketAuto": {"groupBy": {"$toString": "$v"},
                                                  "buckets": 2, "granularity": "R5"}}])"),
              40258);
}

TEST(GranularityRounderTest, SeriesRounding) {
    auto r = GranularityRounder::make("R10");
    ASSERT_TRUE(r.isOK());
    auto up = [&](double d) {
        bson::BsonBuilder b;
        b.appendDouble("", d);
        return r.getValue()->roundUp(b.obj().firstElement()).element().numberDouble();
    };
    auto down = [&](double d) {
        bson::BsonBuilder b;
        b.appendDouble("", d);
        return r.getValue()->roundDown(b.obj().firstElement()).element().numberDouble();
    };
    EXPECT_EQ(up(1.0), 1.25);  // strictly greater
    EXPECT_EQ(up(9.0), 10.0);
    EXPECT_EQ(up(120.0), 125.0);
    EXPECT_EQ(up(0.3), 0.315);
    EXPECT_EQ(down(1.0), 0.8);  // strictly smaller
    EXPECT_EQ(down(130.0), 125.0);
    EXPECT_EQ(up(0.0), 0.0);
    auto p2 = GranularityRounder::make("POWERSOF2");
    ASSERT_TRUE(p2.isOK());
    bson::BsonObj five = J(R"({"": 5})");
    EXPECT_EQ(p2.getValue()->roundUp(five.firstElement()).element().numberLong(), 8);
    EXPECT_EQ(p2.getValue()->roundDown(five.firstElement()).element().numberLong(), 4);
    bson::BsonObj four = J(R"({"": 4})");
    EXPECT_EQ(p2.getValue()->roundUp(four.firstElement()).element().numberLong(), 8);
    EXPECT_EQ(p2.getValue()->roundDown(four.firstElement()).element().numberLong(), 2);
    EXPECT_EQ(GranularityRounder::make("bogus").getStatus().code(), 40257);
}

TEST_F(AggExtraFixture, BucketAutoParseErrors) {
    insert("c", R"([{"_id": 1, "v": 1}])");
    EXPECT_EQ(aggError("c", R"([{"$bucketAuto": 1}])"), 40240);
    EXPECT_EQ(aggError("c", R"([{"$bucketAuto": {"groupBy": "v", "buckets": 2}}])"), 40239);
    EXPECT_EQ(aggError("c", R"([{"$bucketAuto": {"groupBy": "$v", "buckets": "2"}}])"), 40241);
    EXPECT_EQ(aggError("c", R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 2.5}}])"), 40242);
    EXPECT_EQ(aggError("c", R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 0}}])"), 40243);
    EXPECT_EQ(aggError("c", R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 2, "output": 1}}])"),
              40244);
    EXPECT_EQ(aggError("c", R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 2, "x": 1}}])"),
              40245);
    EXPECT_EQ(aggError("c", R"([{"$bucketAuto": {"groupBy": "$v"}}])"), 40246);
    EXPECT_EQ(aggError("c", R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 2,
                                                  "granularity": 1}}])"),
              40261);
}

TEST_F(AggExtraFixture, RedactDescendPruneKeep) {
    // MongoDB's documentation example: keep the sections whose tags intersect the user's access.
    insert("forecasts", R"([{"_id": 1, "title": "123 Department Report", "tags": ["G", "STLW"],
        "year": 2014, "subsections": [
          {"subtitle": "Section 1: Overview", "tags": ["SI", "G"], "content": "Section 1"},
          {"subtitle": "Section 2: Analysis", "tags": ["STLW"], "content": "Section 2"},
          {"subtitle": "Section 3: Budgeting", "tags": ["TK"],
           "content": {"text": "Section 3", "tags": ["HCS"]}}]}])");
    EXPECT_EQ(agg("forecasts", R"([{"$redact": {"$cond": {
                  "if": {"$gt": [{"$size": {"$setIntersection": ["$tags", ["STLW", "G"]]}}, 0]},
                  "then": "$$DESCEND", "else": "$$PRUNE"}}}])"),
              jsv({R"({"_id": 1, "title": "123 Department Report", "tags": ["G", "STLW"],
                  "year": 2014, "subsections": [
                  {"subtitle": "Section 1: Overview", "tags": ["SI", "G"], "content": "Section 1"},
                  {"subtitle": "Section 2: Analysis", "tags": ["STLW"], "content": "Section 2"}]})"}));
    insert("accounts", R"([{"_id": 1, "level": 1, "acct": {"level": 5, "n": 1}, "x": 1,
                           "arr": [{"level": 5}, {"level": 2, "in": [{"level": 5}, 7]}, 3]},
                          {"_id": 2, "level": 5}])");
    EXPECT_EQ(agg("accounts", R"([{"$redact": {"$cond": {"if": {"$eq": ["$level", 5]},
                                                         "then": "$$PRUNE",
                                                         "else": "$$DESCEND"}}}])"),
              jsv({R"({"_id": 1, "level": 1, "x": 1, "arr": [{"level": 2, "in": [7]}, 3]})"}));
    EXPECT_EQ(agg("accounts", R"([{"$redact": {"$cond": [{"$eq": ["$level", 1]}, "$$KEEP",
                                                          "$$PRUNE"]}}])")
                  .size(),
              1u);
    // $$ROOT stays the whole document while $$CURRENT moves down.
    EXPECT_EQ(agg("accounts", R"([{"$match": {"_id": 1}}, {"$redact": {"$cond": [
                  {"$eq": ["$$ROOT.level", 1]}, "$$KEEP", "$$PRUNE"]}}, {"$project": {"x": 1}}])"),
              jsv({R"({"_id": 1, "x": 1})"}));
    EXPECT_EQ(aggError("accounts", R"([{"$redact": "$level"}])"), 17053);
}

TEST_F(AggExtraFixture, GraphLookupReportingHierarchy) {
    insert("employees", R"([{"_id": 1, "name": "Dev"},
                           {"_id": 2, "name": "Eliot", "reportsTo": "Dev"},
                           {"_id": 3, "name": "Ron", "reportsTo": "Eliot"},
                           {"_id": 4, "name": "Andrew", "reportsTo": "Eliot"},
                           {"_id": 5, "name": "Asya", "reportsTo": "Ron"},
                           {"_id": 6, "name": "Dan", "reportsTo": "Andrew"}])");
    const char* kStage = R"({"$graphLookup": {"from": "employees", "startWith": "$reportsTo",
        "connectFromField": "reportsTo", "connectToField": "name", "as": "h", "depthField": "d"}})";
    EXPECT_EQ(agg("employees", std::string("[{\"$match\": {\"_id\": {\"$in\": [1, 5]}}}, ") +
                                   kStage + ", {\"$project\": {\"h._id\": 1, \"h.d\": 1}}]"),
              jsv({R"({"_id": 1, "h": []})",
                   R"({"_id": 5, "h": [{"_id": 3, "d": 0}, {"_id": 2, "d": 1},
                                       {"_id": 1, "d": 2}]})"}));
    EXPECT_EQ(agg("employees", R"([{"$match": {"_id": 5}}, {"$graphLookup": {"from": "employees",
                  "startWith": "$reportsTo", "connectFromField": "reportsTo",
                  "connectToField": "name", "as": "h", "maxDepth": 1}},
                  {"$project": {"n": "$h.name"}}])"),
              jsv({R"({"_id": 5, "n": ["Ron", "Eliot"]})"}));
    // A missing `from` collection finds nothing.
    EXPECT_EQ(agg("employees", R"([{"$match": {"_id": 5}}, {"$graphLookup": {"from": "none",
                  "startWith": "$reportsTo", "connectFromField": "a", "connectToField": "b",
                  "as": "h"}}, {"$project": {"h": 1}}])"),
              jsv({R"({"_id": 5, "h": []})"}));
}

TEST_F(AggExtraFixture, GraphLookupArraysCyclesAndRestrictions) {
    insert("airports", R"([{"_id": 0, "airport": "JFK", "connects": ["BOS", "ORD"]},
                          {"_id": 1, "airport": "BOS", "connects": ["JFK", "PWM"]},
                          {"_id": 2, "airport": "ORD", "connects": ["JFK"]},
                          {"_id": 3, "airport": "PWM", "connects": ["BOS", "LHR"]},
                          {"_id": 4, "airport": "LHR", "connects": ["PWM"]}])");
    insert("travelers", R"([{"_id": 1, "nearestAirport": "JFK"}])");
    EXPECT_EQ(agg("travelers", R"([{"$graphLookup": {"from": "airports",
                  "startWith": "$nearestAirport", "connectFromField": "connects",
                  "connectToField": "airport", "maxDepth": 2, "depthField": "n",
                  "as": "dest"}}, {"$project": {"a": "$dest.airport", "n": "$dest.n"}}])"),
              jsv({R"({"_id": 1, "a": ["JFK", "BOS", "ORD", "PWM"], "n": [0, 1, 1, 2]})"}));
    // Without maxDepth the search ends once no new document is found (the graph has cycles).
    EXPECT_EQ(agg("travelers", R"([{"$graphLookup": {"from": "airports",
                  "startWith": "$nearestAirport", "connectFromField": "connects",
                  "connectToField": "airport", "as": "dest"}},
                  {"$project": {"a": "$dest.airport"}}])"),
              jsv({R"({"_id": 1, "a": ["JFK", "BOS", "ORD", "PWM", "LHR"]})"}));
    EXPECT_EQ(agg("travelers", R"([{"$graphLookup": {"from": "airports",
                  "startWith": ["$nearestAirport", "LHR"], "connectFromField": "connects",
                  "connectToField": "airport", "as": "dest", "maxDepth": 0,
                  "restrictSearchWithMatch": {"airport": {"$ne": "JFK"}}}},
                  {"$project": {"a": "$dest.airport"}}])"),
              jsv({R"({"_id": 1, "a": ["LHR"]})"}));
    // null looks for null values, not for missing fields.
    insert("nulls", R"([{"_id": 1, "p": null}, {"_id": 2}])");
    EXPECT_EQ(agg("travelers", R"([{"$graphLookup": {"from": "nulls", "startWith": null,
                  "connectFromField": "q", "connectToField": "p", "as": "r"}},
                  {"$project": {"r": 1}}])"),
              jsv({R"({"_id": 1, "r": [{"_id": 1, "p": null}]})"}));
}

TEST_F(AggExtraFixture, GraphLookupParseErrors) {
    insert("c", R"([{"_id": 1}])");
    EXPECT_EQ(aggError("c", R"([{"$graphLookup": 1}])"), 9);
    EXPECT_EQ(aggError("c", R"([{"$graphLookup": {"from": "c", "as": "x"}}])"), 40105);
    EXPECT_EQ(aggError("c", R"([{"$graphLookup": {"from": "c", "as": "x", "startWith": 1,
        "connectFromField": "a", "connectToField": "b", "bogus": 1}}])"),
              40104);
    EXPECT_EQ(aggError("c", R"([{"$graphLookup": {"from": "c", "as": 1, "startWith": 1,
        "connectFromField": "a", "connectToField": "b"}}])"),
              40103);
    EXPECT_EQ(aggError("c", R"([{"$graphLookup": {"from": "c", "as": "x", "startWith": 1,
        "connectFromField": "a", "connectToField": "b", "maxDepth": "1"}}])"),
              40100);
    EXPECT_EQ(aggError("c", R"([{"$graphLookup": {"from": "c", "as": "x", "startWith": 1,
        "connectFromField": "a", "connectToField": "b", "maxDepth": -1}}])"),
              40101);
    EXPECT_EQ(aggError("c", R"([{"$graphLookup": {"from": "c", "as": "x", "startWith": 1,
        "connectFromField": "a", "connectToField": "b", "restrictSearchWithMatch": 1}}])"),
              40185);
    EXPECT_EQ(aggError("c", R"([{"$graphLookup": {"from": "c", "as": "x", "startWith": 1,
        "connectFromField": "$a", "connectToField": "b"}}])"),
              16410);
}

TEST(ValuesAtPathTest, TraversesArrays) {
    bson::BsonObj doc = J(R"({"a": [{"b": 1}, {"b": [2, 3]}, 4], "c": {"d": 5}})");
    auto vals = valuesAtPath(doc, "a.b");
    ASSERT_EQ(vals.size(), 3u);
    EXPECT_EQ(vals[0].element().numberLong(), 1);
    EXPECT_EQ(vals[2].element().numberLong(), 3);
    EXPECT_EQ(valuesAtPath(doc, "c.d").size(), 1u);
    EXPECT_TRUE(valuesAtPath(doc, "x.y").empty());
}

}  // namespace
}  // namespace tessera::command::test
