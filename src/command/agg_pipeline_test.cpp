// Aggregation stages and views, end to end through Command::run against a real engine.

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "command/crud_test_util.h"
#include "command/registry.h"

namespace tessera::command {
void registerCollectionCommands(CommandRegistry& registry);
}

namespace tessera::command::test {
namespace {

class AggFixture : public CrudFixture {
  protected:
    void SetUp() override {
        CrudFixture::SetUp();
        registerCollectionCommands(registry);
    }

    void insert(std::string_view coll, std::string_view docsJson) {
        std::string cmd = "{\"insert\": \"" + std::string(coll) +
                          "\", \"documents\": " + std::string(docsJson) + "}";
        bson::BsonObj r = ok(cmd);
        EXPECT_EQ(r["writeErrors"].eoo(), true) << r.toJson();
    }

    // Runs an aggregate and returns every result (following getMores) as relaxed JSON.
    std::vector<std::string> agg(std::string_view coll, std::string_view pipeline) {
        std::string cmd = "{\"aggregate\": \"" + std::string(coll) +
                          "\", \"pipeline\": " + std::string(pipeline) + ", \"cursor\": {}}";
        CommandResult r = run(cmd);
        EXPECT_TRUE(r.ok()) << pipeline << " -> " << r.status.toString();
        if (!r.ok()) return {};
        return drainCursor(r.reply);
    }

    std::vector<std::string> drainCursor(const bson::BsonObj& reply) {
        std::vector<std::string> out;
        bson::BsonView cursor = reply["cursor"].objValue();
        for (auto d : cursor["firstBatch"].objValue()) out.push_back(d.objValue().toJson());
        int64_t id = cursor["id"].numberLong();
        std::string coll(cursor["ns"].stringValue());
        coll = coll.substr(coll.find('.') + 1);
        while (id != 0) {
            bson::BsonBuilder b;
            b.appendInt64("getMore", id).append("collection", coll);
            CommandResult r = runBody(b.obj());
            EXPECT_TRUE(r.ok()) << r.status.toString();
            if (!r.ok()) break;
            bson::BsonView c = r.reply["cursor"].objValue();
            for (auto d : c["nextBatch"].objValue()) out.push_back(d.objValue().toJson());
            id = c["id"].numberLong();
        }
        return out;
    }

    int aggError(std::string_view coll, std::string_view pipeline) {
        std::string cmd = "{\"aggregate\": \"" + std::string(coll) +
                          "\", \"pipeline\": " + std::string(pipeline) + ", \"cursor\": {}}";
        CommandResult r = run(cmd);
        EXPECT_FALSE(r.ok()) << pipeline;
        return r.status.code();
    }

    static std::string js(std::string_view j) { return J(j).toJson(); }
    static std::vector<std::string> jsv(std::vector<std::string_view> v) {
        std::vector<std::string> out;
        for (auto j : v) out.push_back(js(j));
        return out;
    }
};

TEST_F(AggFixture, ProjectInclusionExclusionAndComputed) {
    insert("c", R"([{"_id": 1, "a": 1, "b": {"c": 2, "d": 3}, "e": [{"c": 1, "x": 2}, 5]}])");
    EXPECT_EQ(agg("c", R"([{"$project": {"a": 1, "b.c": 1}}])"),
              jsv({R"({"_id": 1, "a": 1, "b": {"c": 2}})"}));
    EXPECT_EQ(agg("c", R"([{"$project": {"b": 0, "e": 0}}])"), jsv({R"({"_id": 1, "a": 1})"}));
    EXPECT_EQ(agg("c", R"([{"$project": {"_id": 0, "x": "$b.d", "lit": {"$literal": 7}}}])"),
              jsv({R"({"x": 3, "lit": 7})"}));
    EXPECT_EQ(agg("c", R"([{"$project": {"_id": 0, "e.c": 1}}])"), jsv({R"({"e": [{"c": 1}]})"}));
    EXPECT_EQ(agg("c", R"([{"$project": {"_id": 0, "e.x": 0, "b": 0, "a": 0}}])"),
              jsv({R"({"e": [{"c": 1}, 5]})"}));
    EXPECT_EQ(aggError("c", R"([{"$project": {"a": 1, "b": 0}}])"), 31254);
    EXPECT_EQ(aggError("c", R"([{"$project": {"a": 0, "b": 1}}])"), 31253);
    EXPECT_EQ(aggError("c", R"([{"$project": {"a": 0, "b": "$a"}}])"), 31252);
    EXPECT_EQ(aggError("c", R"([{"$project": {}}])"), 51272);
    EXPECT_EQ(aggError("c", R"([{"$project": {"a": 1, "a.b": 1}}])"), 31250);
    EXPECT_EQ(aggError("c", R"([{"$project": 1}])"), 15969);
}

TEST_F(AggFixture, AddFieldsSetUnset) {
    insert("c", R"([{"_id": 1, "a": 1, "b": {"c": 2}}])");
    EXPECT_EQ(agg("c", R"([{"$addFields": {"a": "$b.c", "z": 5, "b.d": "$a"}}])"),
              jsv({R"({"_id": 1, "a": 2, "b": {"c": 2, "d": 1}, "z": 5})"}));
    EXPECT_EQ(agg("c", R"([{"$set": {"n.m": 1}}])"),
              jsv({R"({"_id": 1, "a": 1, "b": {"c": 2}, "n": {"m": 1}})"}));
    EXPECT_EQ(agg("c", R"([{"$unset": ["a", "b.c"]}])"), jsv({R"({"_id": 1, "b": {}})"}));
    EXPECT_EQ(agg("c", R"([{"$unset": "b"}])"), jsv({R"({"_id": 1, "a": 1})"}));
    EXPECT_EQ(aggError("c", R"([{"$unset": 1}])"), 31002);
    EXPECT_EQ(aggError("c", R"([{"$unset": []}])"), 31119);
    EXPECT_EQ(aggError("c", R"([{"$unset": [1]}])"), 31120);
    EXPECT_EQ(aggError("c", R"([{"$addFields": 1}])"), 40272);
}

TEST_F(AggFixture, UnwindFull) {
    insert("c", R"([{"_id": 1, "a": {"b": [1, 2]}}, {"_id": 2, "a": {"b": []}},
                    {"_id": 3, "a": {"b": null}}, {"_id": 4}, {"_id": 5, "a": {"b": 9}}])");
    EXPECT_EQ(agg("c", R"([{"$unwind": "$a.b"}])"),
              jsv({R"({"_id": 1, "a": {"b": 1}})", R"({"_id": 1, "a": {"b": 2}})",
                   R"({"_id": 5, "a": {"b": 9}})"}));
    EXPECT_EQ(
        agg("c", R"([{"$unwind": {"path": "$a.b", "includeArrayIndex": "i",
                                        "preserveNullAndEmptyArrays": true}}])"),
        jsv({R"({"_id": 1, "a": {"b": 1}, "i": {"$numberLong": "0"}})",
             R"({"_id": 1, "a": {"b": 2}, "i": {"$numberLong": "1"}})",
             R"({"_id": 2, "a": {}, "i": null})", R"({"_id": 3, "a": {"b": null}, "i": null})",
             R"({"_id": 4, "i": null})", R"({"_id": 5, "a": {"b": 9}, "i": null})"}));
    EXPECT_EQ(aggError("c", R"([{"$unwind": "a"}])"), 28818);
    EXPECT_EQ(aggError("c", R"([{"$unwind": {"path": "$a", "x": 1}}])"), 28811);
    EXPECT_EQ(aggError("c", R"([{"$unwind": {"path": "$a", "includeArrayIndex": "$i"}}])"), 28822);
}

TEST_F(AggFixture, GroupSortByCountBucket) {
    insert("c", R"([{"_id": 1, "k": "x", "v": 1}, {"_id": 2, "k": "y", "v": 5},
                    {"_id": 3, "k": "x", "v": 12}, {"_id": 4, "v": 30}])");
    EXPECT_EQ(
        agg("c", R"([{"$group": {"_id": "$k", "s": {"$sum": "$v"}}}, {"$sort": {"_id": 1}}])"),
        jsv({R"({"_id": null, "s": 30})", R"({"_id": "x", "s": 13})", R"({"_id": "y", "s": 5})"}));
    EXPECT_EQ(agg("c", R"([{"$sortByCount": "$k"}, {"$limit": 1}])"),
              jsv({R"({"_id": "x", "count": 2})"}));
    EXPECT_EQ(aggError("c", R"([{"$sortByCount": "k"}])"), 40148);
    EXPECT_EQ(agg("c", R"([{"$bucket": {"groupBy": "$v", "boundaries": [0, 10, 20],
                                        "default": "other"}}])"),
              jsv({R"({"_id": 0, "count": 2})", R"({"_id": 10, "count": 1})",
                   R"({"_id": "other", "count": 1})"}));
    EXPECT_EQ(agg("c", R"([{"$bucket": {"groupBy": "$v", "boundaries": [0, 100],
                                        "output": {"total": {"$sum": "$v"}}}}])"),
              jsv({R"({"_id": 0, "total": 48})"}));
    EXPECT_EQ(aggError("c", R"([{"$bucket": {"groupBy": "$v", "boundaries": [0, 10]}}])"), 40066);
    EXPECT_EQ(aggError("c", R"([{"$bucket": {"groupBy": "$v", "boundaries": [0]}}])"), 40192);
    EXPECT_EQ(aggError("c", R"([{"$bucket": {"groupBy": "$v", "boundaries": [5, 1]}}])"), 40194);
    EXPECT_EQ(aggError("c", R"([{"$bucket": {"groupBy": "$v", "boundaries": [1, "a"]}}])"), 40193);
    EXPECT_EQ(aggError("c", R"([{"$bucket": {"groupBy": "$v", "boundaries": [1, 5],
                                             "default": 3}}])"),
              40199);
    EXPECT_EQ(aggError("c", R"([{"$bucket": {"boundaries": [1, 5]}}])"), 40198);
    EXPECT_EQ(aggError("c", R"([{"$bucket": {"groupBy": "$v", "boundaries": [1, 5], "x": 1}}])"),
              40197);
}

TEST_F(AggFixture, GroupMergeObjectsAndStdDev) {
    insert("c", R"([{"_id": 1, "k": "x", "v": 1, "o": {"a": 1, "b": 1}},
                    {"_id": 2, "k": "x", "v": 3, "o": {"b": 2, "c": 3}},
                    {"_id": 3, "k": "y", "v": 1, "o": null}, {"_id": 4, "k": "y", "v": 3},
                    {"_id": 5, "k": "y", "v": 5, "o": {"d": 4}},
                    {"_id": 6, "k": "z", "v": "str", "o": {}}, {"_id": 7, "k": "w", "v": 7}])");
    // Later fields win in $mergeObjects (null / missing inputs are skipped); $stdDev* ignore
    // non-numbers, $stdDevSamp of one value is null, of no numbers both are null.
    EXPECT_EQ(agg("c", R"([{"$sort": {"_id": 1}},
                           {"$group": {"_id": "$k", "m": {"$mergeObjects": "$o"},
                                       "pop": {"$stdDevPop": "$v"},
                                       "samp": {"$stdDevSamp": "$v"}}},
                           {"$sort": {"_id": 1}}])"),
              jsv({R"({"_id": "w", "m": {}, "pop": 0.0, "samp": null})",
                   R"({"_id": "x", "m": {"a": 1, "b": 2, "c": 3}, "pop": 1.0,
                       "samp": 1.4142135623730951})",
                   R"({"_id": "y", "m": {"d": 4}, "pop": 1.632993161855452, "samp": 2.0})",
                   R"({"_id": "z", "m": {}, "pop": null, "samp": null})"}));
    // The same accumulators in $bucket's output.
    EXPECT_EQ(agg("c", R"([{"$match": {"k": "y"}},
                           {"$bucket": {"groupBy": "$v", "boundaries": [0, 10],
                                        "output": {"samp": {"$stdDevSamp": "$v"}}}}])"),
              jsv({R"({"_id": 0, "samp": 2.0})"}));
    EXPECT_EQ(aggError("c", R"([{"$group": {"_id": null, "m": {"$mergeObjects": "$v"}}}])"), 40400);
    EXPECT_EQ(aggError("c", R"([{"$group": {"_id": null, "m": {"$median": "$v"}}}])"), 15952);
}

TEST_F(AggFixture, ReplaceRootAndCount) {
    insert("c", R"([{"_id": 1, "sub": {"a": 1}}, {"_id": 2, "sub": {"a": 2}}])");
    EXPECT_EQ(agg("c", R"([{"$replaceRoot": {"newRoot": "$sub"}}])"),
              jsv({R"({"a": 1})", R"({"a": 2})"}));
    EXPECT_EQ(agg("c", R"([{"$replaceWith": "$sub"}])"), jsv({R"({"a": 1})", R"({"a": 2})"}));
    EXPECT_EQ(aggError("c", R"([{"$replaceWith": "$nope"}])"), 40228);
    EXPECT_EQ(aggError("c", R"([{"$replaceRoot": {}}])"), 40414);
    EXPECT_EQ(agg("c", R"([{"$count": "n"}])"), jsv({R"({"n": 2})"}));
}

TEST_F(AggFixture, Sample) {
    insert("c", R"([{"_id": 1}, {"_id": 2}, {"_id": 3}, {"_id": 4}])");
    EXPECT_EQ(agg("c", R"([{"$sample": {"size": 2}}])").size(), 2u);
    auto all = agg("c", R"([{"$sample": {"size": 10}}])");
    std::sort(all.begin(), all.end());
    EXPECT_EQ(all, jsv({R"({"_id": 1})", R"({"_id": 2})", R"({"_id": 3})", R"({"_id": 4})"}));
    EXPECT_EQ(aggError("c", R"([{"$sample": {"size": -1}}])"), 28747);
    EXPECT_EQ(aggError("c", R"([{"$sample": {}}])"), 28749);
    EXPECT_EQ(aggError("c", R"([{"$sample": {"size": 1, "x": 1}}])"), 28748);
}

TEST_F(AggFixture, LookupLocalForeign) {
    insert("orders", R"([{"_id": 1, "item": "a"}, {"_id": 2, "item": ["a", "b"]}, {"_id": 3}])");
    insert("items", R"([{"_id": 10, "sku": "a"}, {"_id": 11, "sku": "b"}, {"_id": 12}])");
    EXPECT_EQ(
        agg("orders", R"([{"$lookup": {"from": "items", "localField": "item",
                                            "foreignField": "sku", "as": "m"}},
                                {"$project": {"m._id": 1}}])"),
        jsv({R"({"_id": 1, "m": [{"_id": 10}]})", R"({"_id": 2, "m": [{"_id": 10}, {"_id": 11}]})",
             R"({"_id": 3, "m": [{"_id": 12}]})"}));
    // A missing foreign collection gives empty arrays; `as` may be dotted.
    EXPECT_EQ(agg("orders", R"([{"$match": {"_id": 1}}, {"$lookup": {"from": "none",
                   "localField": "item", "foreignField": "x", "as": "r.s"}}])"),
              jsv({R"({"_id": 1, "item": "a", "r": {"s": []}})"}));
    EXPECT_EQ(aggError("orders", R"([{"$lookup": {"from": "items", "localField": "item",
                                                 "as": "m"}}])"),
              9);
    EXPECT_EQ(aggError("orders", R"([{"$lookup": {"from": "items", "localField": "item",
                                                 "foreignField": "sku"}}])"),
              9);
    EXPECT_EQ(aggError("orders", R"([{"$lookup": {"from": "items", "bad": 1, "as": "x"}}])"), 9);
}

TEST_F(AggFixture, LookupLetPipeline) {
    insert("orders", R"([{"_id": 1, "item": "a", "q": 5}, {"_id": 2, "item": "b", "q": 1}])");
    insert("items", R"([{"_id": 10, "sku": "a", "min": 2}, {"_id": 11, "sku": "b", "min": 3}])");
    // Without $expr support the let variables are still substituted into literal positions.
    EXPECT_EQ(agg("orders", R"([{"$lookup": {"from": "items", "let": {"s": "$item"},
                   "pipeline": [{"$addFields": {"who": "$$s"}}, {"$project": {"_id": 1, "who": 1}}],
                   "as": "m"}}, {"$project": {"m": 1}}])"),
              jsv({R"({"_id": 1, "m": [{"_id": 10, "who": "a"}, {"_id": 11, "who": "a"}]})",
                   R"({"_id": 2, "m": [{"_id": 10, "who": "b"}, {"_id": 11, "who": "b"}]})"}));
    // localField/foreignField combined with a pipeline.
    EXPECT_EQ(agg("orders", R"([{"$lookup": {"from": "items", "localField": "item",
                   "foreignField": "sku", "pipeline": [{"$project": {"_id": 1}}], "as": "m"}},
                   {"$project": {"m": 1}}])"),
              jsv({R"({"_id": 1, "m": [{"_id": 10}]})", R"({"_id": 2, "m": [{"_id": 11}]})"}));
    EXPECT_EQ(aggError("orders", R"([{"$lookup": {"from": "items", "pipeline": [{"$out": "x"}],
                                                 "as": "m"}}])"),
              51047);
    EXPECT_EQ(aggError("orders", R"([{"$lookup": {"from": "items", "let": {"Bad": 1},
                                                 "pipeline": [], "as": "m"}}])"),
              16867);
}

TEST_F(AggFixture, FacetAndUnionWith) {
    insert("c", R"([{"_id": 1, "k": "x"}, {"_id": 2, "k": "y"}, {"_id": 3, "k": "x"}])");
    insert("d", R"([{"_id": 9}])");
    EXPECT_EQ(agg("c", R"([{"$facet": {"n": [{"$count": "n"}],
                                       "xs": [{"$match": {"k": "x"}}, {"$project": {"_id": 1}}]}}])"),
              jsv({R"({"n": [{"n": 3}], "xs": [{"_id": 1}, {"_id": 3}]})"}));
    EXPECT_EQ(aggError("c", R"([{"$facet": {"a": [{"$out": "z"}]}}])"), 40600);
    EXPECT_EQ(aggError("c", R"([{"$facet": {}}])"), 40169);
    EXPECT_EQ(aggError("c", R"([{"$facet": {"a": 1}}])"), 40170);
    EXPECT_EQ(agg("c", R"([{"$match": {"_id": 1}}, {"$project": {"_id": 1}},
                            {"$unionWith": {"coll": "d", "pipeline": [{"$set": {"u": true}}]}}])"),
              jsv({R"({"_id": 1})", R"({"_id": 9, "u": true})"}));
    EXPECT_EQ(agg("c", R"([{"$match": {"_id": 2}}, {"$unionWith": "d"}])"),
              jsv({R"({"_id": 2, "k": "y"})", R"({"_id": 9})"}));
    EXPECT_EQ(aggError("c", R"([{"$unionWith": {"coll": "d", "pipeline": [{"$out": "q"}]}}])"),
              31441);
}

TEST_F(AggFixture, OutReplacesTargetKeepingIndexes) {
    insert("src", R"([{"_id": 1, "a": 1}, {"_id": 2, "a": 2}])");
    insert("dst", R"([{"_id": 7, "old": true}])");
    createIndex("test.dst", R"({"a": 1})", "a_1");
    bson::BsonObj r = ok(R"({"aggregate": "src", "pipeline": [{"$match": {"a": {"$gte": 1}}},
                             {"$out": "dst"}], "cursor": {}})");
    EXPECT_EQ(r["cursor"].objValue()["firstBatch"].objValue().nFields(), 0u);
    EXPECT_EQ(findAll(R"({"find": "dst"})"),
              jsv({R"({"_id": 1, "a": 1})", R"({"_id": 2, "a": 2})"}));
    auto dst = engine->getCollection("test.dst");
    ASSERT_TRUE(dst);
    EXPECT_NE(dst->findIndex("a_1"), nullptr);
    // No temporary collection is left behind.
    for (const auto& c : engine->listCollections("test")) {
        EXPECT_EQ(c->name.find("tmp.agg_out"), std::string::npos) << c->name;
    }
    // Duplicate _id in the output fails and leaves the target unchanged.
    EXPECT_EQ(aggError("src", R"([{"$project": {"_id": {"$literal": 1}}}, {"$out": "dst"}])"),
              11000);
    EXPECT_EQ(findAll(R"({"find": "dst"})").size(), 2u);
    EXPECT_EQ(aggError("src", R"([{"$out": "x"}, {"$match": {}}])"), 40601);
    EXPECT_EQ(aggError("src", R"([{"$out": 5}])"), 16990);
}

TEST_F(AggFixture, MergeModes) {
    insert("src", R"([{"_id": 1, "a": 10}, {"_id": 2, "a": 20}])");
    insert("dst", R"([{"_id": 1, "a": 1, "keep": true}])");
    ok(R"({"aggregate": "src", "pipeline": [{"$merge": {"into": "dst"}}], "cursor": {}})");
    EXPECT_EQ(findAll(R"({"find": "dst"})"),
              jsv({R"({"_id": 1, "a": 10, "keep": true})", R"({"_id": 2, "a": 20})"}));
    ok(R"({"aggregate": "src", "pipeline": [{"$set": {"a": 0}},
           {"$merge": {"into": "dst", "whenMatched": "replace"}}], "cursor": {}})");
    EXPECT_EQ(findAll(R"({"find": "dst"})"),
              jsv({R"({"_id": 1, "a": 0})", R"({"_id": 2, "a": 0})"}));
    ok(R"({"aggregate": "src", "pipeline": [{"$merge": {"into": "dst",
           "whenMatched": [{"$set": {"a": {"$literal": 5}, "n": "$$new.a"}}]}}], "cursor": {}})");
    EXPECT_EQ(findAll(R"({"find": "dst"})"),
              jsv({R"({"_id": 1, "a": 5, "n": 10})", R"({"_id": 2, "a": 5, "n": 20})"}));
    ok(R"({"aggregate": "src", "pipeline": [{"$merge": {"into": "dst",
           "whenMatched": "keepExisting"}}], "cursor": {}})");
    EXPECT_EQ(findAll(R"({"find": "dst"})").size(), 2u);
    EXPECT_EQ(aggError("src", R"([{"$merge": {"into": "dst", "whenMatched": "fail"}}])"), 11000);
    EXPECT_EQ(aggError("src", R"([{"$merge": {"into": "fresh", "whenNotMatched": "fail"}}])"),
              13113);
    ok(R"({"aggregate": "src", "pipeline": [{"$merge": {"into": "fresh2",
           "whenNotMatched": "discard"}}], "cursor": {}})");
    EXPECT_TRUE(findAll(R"({"find": "fresh2"})").empty());
    EXPECT_EQ(aggError("src", R"([{"$merge": {"into": "dst", "on": "a"}}])"), 51183);
    createIndex("test.byA", R"({"a": 1})", "a_1", true);
    for (int round = 0; round < 2; ++round) {
        ok(R"({"aggregate": "src", "pipeline": [{"$project": {"_id": 0, "a": 1,
               "z": {"$literal": 1}}}, {"$merge": {"into": "byA", "on": "a"}}], "cursor": {}})");
    }
    EXPECT_EQ(findAll(R"({"find": "byA", "filter": {"z": 1}})").size(), 2u);
    EXPECT_EQ(aggError("src", R"([{"$project": {"a": 0}}, {"$merge": {"into": "byA",
                                                                       "on": "a"}}])"),
              51132);
    EXPECT_EQ(aggError("src", R"([{"$merge": {"into": "dst", "whenMatched": "bogus"}}])"), 2);
    EXPECT_EQ(aggError("src", R"([{"$merge": {"into": "dst", "whenMatched": "merge",
                                              "let": {"x": 1}}}])"),
              51199);
    EXPECT_EQ(aggError("src", R"([{"$merge": 1}])"), 51182);
    EXPECT_EQ(aggError("src", R"([{"$merge": {}}])"), 40414);
}

TEST_F(AggFixture, CollectionlessDocumentsAndStats) {
    bson::BsonObj r = ok(R"({"aggregate": 1, "pipeline": [{"$documents": [{"a": 1}, {"a": 2}]},
                              {"$match": {"a": 2}}], "cursor": {}})");
    EXPECT_EQ(drainCursor(r), jsv({R"({"a": 2})"}));
    CommandResult bad = run(R"({"aggregate": 1, "pipeline": [{"$match": {}}], "cursor": {}})");
    EXPECT_EQ(bad.status.code(), static_cast<int>(ErrorCodes::InvalidNamespace));
    bson::BsonObj s =
        ok(R"({"aggregate": 1, "pipeline": [{"$listLocalSessions": {}}], "cursor": {}})");
    EXPECT_TRUE(drainCursor(s).empty());
    insert("c", R"([{"_id": 1}])");
    auto stats = agg("c", R"([{"$indexStats": {}}])");
    ASSERT_EQ(stats.size(), 1u);
    EXPECT_NE(stats[0].find("\"_id_\""), std::string::npos);
    EXPECT_EQ(aggError("c", R"([{"$match": {}}, {"$indexStats": {}}])"), 40602);
    EXPECT_EQ(aggError("c", R"([{"$documents": [{"a": 1}]}])"),
              static_cast<int>(ErrorCodes::InvalidNamespace));
}

TEST_F(AggFixture, LetVariablesAndExplain) {
    insert("c", R"([{"_id": 1}, {"_id": 2}])");
    bson::BsonObj r = ok(R"({"aggregate": "c", "pipeline": [{"$set": {"v": "$$x"}}],
                             "let": {"x": 4}, "cursor": {}})");
    EXPECT_EQ(drainCursor(r), jsv({R"({"_id": 1, "v": 4})", R"({"_id": 2, "v": 4})"}));
    bson::BsonObj e = ok(R"({"aggregate": "c", "pipeline": [{"$group": {"_id": null}}],
                             "explain": true})");
    ASSERT_TRUE(e["stages"].isArray()) << e.toJson();
    EXPECT_EQ(e["stages"].objValue().nFields(), 2u);
    CommandResult bad = run(R"({"aggregate": "c", "pipeline": [], "allowDiskUse": "x",
                                "cursor": {}})");
    EXPECT_EQ(bad.status.code(), static_cast<int>(ErrorCodes::TypeMismatch));
}

TEST_F(AggFixture, Views) {
    insert("c", R"([{"_id": 1, "a": 1}, {"_id": 2, "a": 2}, {"_id": 3, "a": 3}])");
    ok(R"({"create": "v", "viewOn": "c", "pipeline": [{"$match": {"a": {"$gte": 2}}}]})");
    ok(R"({"create": "vv", "viewOn": "v", "pipeline": [{"$set": {"b": 1}}]})");
    EXPECT_EQ(findAll(R"({"find": "v"})"), jsv({R"({"_id": 2, "a": 2})", R"({"_id": 3, "a": 3})"}));
    EXPECT_EQ(findAll(R"({"find": "vv", "filter": {"a": 3}, "projection": {"a": 0}})"),
              jsv({R"({"_id": 3, "b": 1})"}));
    EXPECT_EQ(findAll(R"({"find": "v", "sort": {"a": -1}, "limit": 1})"),
              jsv({R"({"_id": 3, "a": 3})"}));
    EXPECT_EQ(findAll(R"({"find": "v", "batchSize": 1})").size(), 2u);
    EXPECT_EQ(agg("vv", R"([{"$count": "n"}])"), jsv({R"({"n": 2})"}));
    EXPECT_EQ(ok(R"({"count": "v"})")["n"].numberLong(), 2);
    EXPECT_EQ(ok(R"({"count": "v", "query": {"a": 3}})")["n"].numberLong(), 1);
    EXPECT_EQ(ok(R"({"distinct": "vv", "key": "a"})")["values"].objValue().toJson(),
              js(R"({"0": 2, "1": 3})"));
    // listCollections shows the view with its definition.
    bson::BsonObj lc = ok(R"({"listCollections": 1, "filter": {"name": "v"}})");
    bson::BsonView entry =
        lc["cursor"].objValue()["firstBatch"].objValue().firstElement().objValue();
    EXPECT_EQ(entry["type"].stringValue(), "view");
    EXPECT_EQ(entry["options"].objValue().toJson(),
              js(R"({"viewOn": "c", "pipeline": [{"$match": {"a": {"$gte": 2}}}]})"));
    // Definition errors.
    EXPECT_EQ(run(R"({"create": "w", "viewOn": "c", "pipeline": [{"$out": "x"}]})").status.code(),
              static_cast<int>(ErrorCodes::OptionNotSupportedOnView));
    EXPECT_EQ(run(R"({"create": "w", "pipeline": []})").status.code(),
              static_cast<int>(ErrorCodes::BadValue));
    EXPECT_EQ(run(R"({"create": "w", "viewOn": 1})").status.code(),
              static_cast<int>(ErrorCodes::TypeMismatch));
    EXPECT_EQ(run(R"({"create": "w", "viewOn": "c", "capped": true})").status.code(),
              static_cast<int>(ErrorCodes::InvalidOptions));
    EXPECT_EQ(run(R"({"create": "v", "viewOn": "c"})").status.code(),
              static_cast<int>(ErrorCodes::NamespaceExists));
    // $lookup from a view applies its pipeline.
    EXPECT_EQ(agg("c", R"([{"$match": {"_id": 1}}, {"$lookup": {"from": "v", "pipeline": [],
                           "as": "m"}}, {"$project": {"m._id": 1}}])"),
              jsv({R"({"_id": 1, "m": [{"_id": 2}, {"_id": 3}]})"}));
    // Writes to a view fail.
    EXPECT_EQ(run(R"({"insert": "v", "documents": [{"a": 1}]})").status.code(),
              static_cast<int>(ErrorCodes::CommandNotSupportedOnView));
    for (const char* write :
         {R"({"update": "v", "updates": [{"q": {}, "u": {"$set": {"x": 1}}}]})",
          R"({"delete": "v", "deletes": [{"q": {}, "limit": 0}]})",
          R"({"findAndModify": "v", "query": {}, "update": {"$set": {"x": 1}}})",
          R"({"findAndModify": "v", "query": {}, "remove": true})"}) {
        EXPECT_EQ(run(write).status.code(), static_cast<int>(ErrorCodes::CommandNotSupportedOnView))
            << write;
    }
    // The view's backing collection is untouched.
    EXPECT_EQ(engine->stats(*engine->getCollection("test.c")).count, 3);
    // Drop of a view.
    ok(R"({"drop": "vv"})");
    EXPECT_EQ(engine->getCollection("test.vv"), nullptr);
}

TEST_F(AggFixture, ExpressionsInStages) {
    insert("c", R"([{"_id": 1, "a": 2, "b": 3}, {"_id": 2, "a": 5, "b": 1}])");
    EXPECT_EQ(agg("c", R"([{"$project": {"s": {"$add": ["$a", "$b"]}}}])"),
              jsv({R"({"_id": 1, "s": 5})", R"({"_id": 2, "s": 6})"}));
    EXPECT_EQ(agg("c", R"([{"$group": {"_id": {"$gt": ["$a", 3]}, "n": {"$sum": "$b"}}},
                            {"$sort": {"_id": 1}}])"),
              jsv({R"({"_id": false, "n": 3})", R"({"_id": true, "n": 1})"}));
    EXPECT_EQ(
        agg("c", R"([{"$match": {"$expr": {"$lt": ["$a", "$b"]}}}, {"$project": {"_id": 1}}])"),
        jsv({R"({"_id": 1})"}));
    EXPECT_EQ(agg("c", R"([{"$replaceWith": {"x": {"$multiply": ["$a", 10]}}}])"),
              jsv({R"({"x": 20})", R"({"x": 50})"}));
    EXPECT_EQ(agg("c", R"([{"$set": {"a": "$$REMOVE"}}, {"$match": {"_id": 1}}])"),
              jsv({R"({"_id": 1, "b": 3})"}));
    EXPECT_EQ(aggError("c", R"([{"$project": {"x": {"$nope": 1}}}])"), 168);
}

TEST_F(AggFixture, LookupLetWithExpr) {
    insert("orders", R"([{"_id": 1, "item": "a", "q": 5}, {"_id": 2, "item": "b", "q": 1}])");
    insert("items", R"([{"_id": 10, "sku": "a", "min": 2}, {"_id": 11, "sku": "b", "min": 3}])");
    EXPECT_EQ(agg("orders", R"([{"$lookup": {"from": "items", "let": {"s": "$item", "q": "$q"},
                   "pipeline": [{"$match": {"$expr": {"$and": [{"$eq": ["$sku", "$$s"]},
                                                               {"$lte": ["$min", "$$q"]}]}}},
                                {"$project": {"_id": 1}}],
                   "as": "m"}}, {"$project": {"m": 1}}])"),
              jsv({R"({"_id": 1, "m": [{"_id": 10}]})", R"({"_id": 2, "m": []})"}));
}

}  // namespace
}  // namespace tessera::command::test
