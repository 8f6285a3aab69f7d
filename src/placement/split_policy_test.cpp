#include "placement/split_policy.h"

#include <gtest/gtest.h>

#include <limits>

#include "placement/routing_table.h"
#include "placement/test_util.h"

namespace tessera::placement {
namespace {

using bson::BsonObj;
using test::gen;
using test::obj;
using test::pattern;

int64_t hashOf(const BsonObj& point, const char* field) { return point[field].int64Value(); }

TEST(SplitPolicy, HashedSplitPointsAreEvenAndSymmetric) {
    ShardKeyPattern p = pattern(R"({"h": "hashed"})");
    std::vector<BsonObj> four = calculateHashedSplitPoints(p, 4);
    ASSERT_EQ(four.size(), 3u);
    const int64_t interval = (std::numeric_limits<int64_t>::max() / 4) * 2;
    EXPECT_EQ(hashOf(four[0], "h"), -interval);
    EXPECT_EQ(hashOf(four[1], "h"), 0);
    EXPECT_EQ(hashOf(four[2], "h"), interval);

    std::vector<BsonObj> three = calculateHashedSplitPoints(p, 3);
    ASSERT_EQ(three.size(), 2u);
    const int64_t i3 = (std::numeric_limits<int64_t>::max() / 3) * 2;
    EXPECT_EQ(hashOf(three[0], "h"), -(i3 / 2));
    EXPECT_EQ(hashOf(three[1], "h"), i3 / 2);
    EXPECT_TRUE(calculateHashedSplitPoints(p, 1).empty());

    // {h: "hashed", x: 1}: later fields are MinKey.
    ShardKeyPattern c = pattern(R"({"h": "hashed", "x": 1})");
    BsonObj point = calculateHashedSplitPoints(c, 2)[0];
    EXPECT_EQ(point, obj(R"({"h": {"$numberLong": "0"}, "x": {"$minKey": 1}})"));
}

TEST(SplitPolicy, InitialChunksRoundRobinWithIncreasingMinors) {
    ShardKeyPattern p = pattern(R"({"h": "hashed"})");
    auto chunks = initialChunksForHashedKey(p, gen(), {"s0", "s1", "s2"});
    ASSERT_TRUE(chunks.isOK());
    const auto& c = chunks.getValue();
    ASSERT_EQ(c.size(), 6u);  // 2 per shard by default
    for (size_t i = 0; i < c.size(); ++i) {
        EXPECT_EQ(c[i].shard, "s" + std::to_string(i % 3));
        EXPECT_EQ(c[i].version, ChunkVersion(gen(), 1, static_cast<uint32_t>(i)));
    }
    auto table = RoutingTable::make("db.c", p, gen(), c);
    ASSERT_TRUE(table.isOK());
    EXPECT_EQ(table.getValue()->collectionVersion(), ChunkVersion(gen(), 1, 5));

    EXPECT_EQ(initialChunksForHashedKey(p, gen(), {"s0"}, 5).getValue().size(), 5u);
    EXPECT_FALSE(initialChunksForHashedKey(pattern(R"({"a": 1})"), gen(), {"s0"}).isOK());
    EXPECT_FALSE(initialChunksForHashedKey(p, gen(), {}).isOK());
    EXPECT_FALSE(
        initialChunksForHashedKey(pattern(R"({"a": 1, "h": "hashed"})"), gen(), {"s0"}).isOK());
}

TEST(SplitPolicy, MakeInitialChunksValidatesPoints) {
    ShardKeyPattern p = pattern(R"({"a": 1})");
    auto chunks = makeInitialChunks(
        p, gen(), {obj(R"({"a": 5})"), obj(R"({"a": 1})"), obj(R"({"a": 5.0})")}, {"x", "y"});
    ASSERT_TRUE(chunks.isOK());
    ASSERT_EQ(chunks.getValue().size(), 3u);  // sorted, de-duplicated
    EXPECT_EQ(chunks.getValue()[1].min, obj(R"({"a": 1})"));
    EXPECT_EQ(chunks.getValue()[2].shard, "x");
    EXPECT_FALSE(makeInitialChunks(p, gen(), {obj(R"({"b": 1})")}, {"x"}).isOK());
    EXPECT_FALSE(makeInitialChunks(p, gen(), {p.globalMin()}, {"x"}).isOK());
}

TEST(SplitPolicy, SplitPointsFromKeys) {
    ShardKeyPattern p = pattern(R"({"a": 1})");
    std::vector<BsonObj> keys;
    for (int i = 9; i >= 0; --i) {
        bson::BsonBuilder b;
        b.appendInt32("a", i);
        keys.push_back(b.obj());
    }
    // 100-byte documents, 300-byte chunks: 3 documents per chunk.
    SplitPointsResult r = splitPointsFromKeys(p, keys, 100, 300);
    ASSERT_EQ(r.splitPoints.size(), 3u);
    EXPECT_EQ(r.splitPoints[0], obj(R"({"a": 3})"));
    EXPECT_EQ(r.splitPoints[1], obj(R"({"a": 6})"));
    EXPECT_EQ(r.splitPoints[2], obj(R"({"a": 9})"));
    EXPECT_TRUE(r.unsplittableKeys.empty());

    // Equal keys never straddle a split point; a key too big for a chunk is reported.
    std::vector<BsonObj> dup;
    for (int v : {1, 2, 2, 2, 2, 2, 3, 4}) {
        bson::BsonBuilder b;
        b.appendInt32("a", v);
        dup.push_back(b.obj());
    }
    SplitPointsResult d = splitPointsFromKeys(p, dup, 100, 200);
    ASSERT_EQ(d.splitPoints.size(), 2u);
    EXPECT_EQ(d.splitPoints[0], obj(R"({"a": 2})"));
    EXPECT_EQ(d.splitPoints[1], obj(R"({"a": 3})"));
    ASSERT_EQ(d.unsplittableKeys.size(), 1u);
    EXPECT_EQ(d.unsplittableKeys[0], obj(R"({"a": 2})"));
    EXPECT_TRUE(splitPointsFromKeys(p, {}, 100, 200).splitPoints.empty());
}

}  // namespace
}  // namespace tessera::placement
