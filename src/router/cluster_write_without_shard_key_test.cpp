#include "router/cluster_write_without_shard_key.h"

#include <gtest/gtest.h>

#include "placement/hasher.h"
#include "placement/test_util.h"

namespace tessera::router {
namespace {

using placement::test::obj;

// {x: 1} split at 0 and 100 on s0, s1, s2.
std::shared_ptr<const placement::RoutingTable> table3() {
    auto p = placement::test::pattern("{\"x\": 1}");
    auto g = placement::test::gen();
    std::vector<bson::BsonObj> bounds{p.globalMin(), obj("{\"x\": 0}"), obj("{\"x\": 100}"),
                                      p.globalMax()};
    std::vector<placement::Chunk> chunks;
    placement::ChunkVersion v(g, 1, 0);
    for (int i = 0; i < 3; ++i) {
        chunks.push_back({bounds[i], bounds[i + 1], "s" + std::to_string(i), v});
        v = v.incMinor();
    }
    return placement::RoutingTable::make("db.c", p, g, chunks).getValue();
}

TEST(TwoPhaseWrite, ProjectionHasIdKeyAndSortWithoutCollisions) {
    auto p = placement::test::pattern(R"({"a.b": 1, "c": "hashed"})");
    EXPECT_EQ(twoPhaseProjection(p, obj(R"({"a": -1, "d": 1})"), false),
              obj(R"({"_id": 1, "c": 1, "a": 1, "d": 1})"));
    EXPECT_EQ(twoPhaseProjection(p, obj("{}"), false), obj(R"({"_id": 1, "a.b": 1, "c": 1})"));
    EXPECT_TRUE(twoPhaseProjection(p, obj("{}"), true).isEmpty());
}

TEST(TwoPhaseWrite, FindCommand) {
    bson::BsonObj let = obj(R"({"let": {"v": 1}})");
    EXPECT_EQ(twoPhaseFindCommand("c", obj(R"({"y": 1})"), obj(R"({"z": 1})"), obj(R"({"_id": 1})"),
                                  bson::BsonElement(), let.firstElement()),
              obj(R"({"find": "c", "filter": {"y": 1}, "sort": {"z": 1},
                  "projection": {"_id": 1}, "limit": {"$numberLong": "1"},
                  "singleBatch": true, "let": {"v": 1}})"));
}

TEST(TwoPhaseWrite, PicksTheFirstInSortOrderAcrossShards) {
    std::vector<bson::BsonObj> docs{obj(R"({"_id": 1, "z": 5})"), obj(R"({"_id": 2, "z": 9})"),
                                    obj(R"({"_id": 3})"), obj(R"({"_id": 4, "z": 9.0})")};
    EXPECT_EQ(pickFirstMatch(docs, obj(R"({"z": -1})")), std::optional<size_t>(1));
    EXPECT_EQ(pickFirstMatch(docs, obj(R"({"z": 1})")), std::optional<size_t>(2));  // null first
    EXPECT_EQ(pickFirstMatch(docs, obj("{}")), std::optional<size_t>(0));
    EXPECT_EQ(pickFirstMatch({}, obj("{}")), std::nullopt);
}

TEST(TwoPhaseWrite, FilterWithId) {
    bson::BsonObj id = obj(R"({"_id": 7})");
    EXPECT_EQ(filterWithId(obj(R"({"y": 1})"), id["_id"]),
              obj(R"({"_id": {"$eq": 7}, "$and": [{"y": 1}]})"));
}

TEST(TwoPhaseWrite, ShardKeyChangeToAnotherShardIsRefused) {
    auto t = table3();
    bson::BsonObj doc = obj(R"({"_id": 1, "x": 5, "y": 1})");
    bson::BsonObj u1 = obj(R"({"u": {"$set": {"x": 500}}})");
    Status s = checkShardKeyChange(*t, doc, u1["u"], {}, "s1");
    EXPECT_EQ(s.code(), 72) << s.toString();
    bson::BsonObj u2 = obj(R"({"u": {"$set": {"x": 50}}})");  // same chunk
    EXPECT_TRUE(checkShardKeyChange(*t, doc, u2["u"], {}, "s1").isOK());
    bson::BsonObj u3 = obj(R"({"u": {"$inc": {"x": -10}}})");  // into s0's chunk
    EXPECT_EQ(checkShardKeyChange(*t, doc, u3["u"], {}, "s1").code(), 72);
    bson::BsonObj u4 = obj(R"({"u": {"x": 99, "z": 1}})");  // replacement, same shard
    EXPECT_TRUE(checkShardKeyChange(*t, doc, u4["u"], {}, "s1").isOK());
    bson::BsonObj u5 = obj(R"({"u": [{"$set": {"x": {"$add": ["$x", 200]}}}]})");
    EXPECT_EQ(checkShardKeyChange(*t, doc, u5["u"], {}, "s1").code(), 72);
}

TEST(TwoPhaseWrite, UpsertInsertsOnTheShardOfTheNewDocument) {
    auto t = table3();
    bson::BsonObj u = obj(R"({"u": {"$set": {"x": 150}}})");
    auto r = targetUpsertInsert(*t, obj(R"({"y": 3})"), u["u"], {});
    ASSERT_TRUE(r.isOK()) << r.getStatus().toString();
    EXPECT_EQ(r.getValue().shard, "s2");
    EXPECT_EQ(r.getValue().document["y"].numberInt(), 3);
    EXPECT_EQ(r.getValue().document["x"].numberInt(), 150);
    bson::BsonView f = r.getValue().filter;
    ASSERT_TRUE(f["$and"].isArray());
    // Without the key in the document: the null key's chunk.
    bson::BsonObj u2 = obj(R"({"u": {"$set": {"z": 1}}})");
    auto r2 = targetUpsertInsert(*t, obj(R"({"y": 3})"), u2["u"], {});
    ASSERT_TRUE(r2.isOK());
    EXPECT_EQ(r2.getValue().shard, "s0");
}

}  // namespace
}  // namespace tessera::router
