#include "placement/chunk_map.h"

#include <gtest/gtest.h>

#include <random>

#include "placement/routing_table.h"
#include "placement/test_util.h"

namespace tessera::placement {
namespace {

using bson::BsonObj;
using test::gen;
using test::obj;
using test::pattern;

Chunk chunk(const char* min, const char* max, const char* shard, uint32_t major, uint32_t minor) {
    return Chunk{obj(min), obj(max), shard, ChunkVersion(gen(), major, minor)};
}

constexpr const char* kMin = R"({"a": {"$minKey": 1}})";
constexpr const char* kMax = R"({"a": {"$maxKey": 1}})";

std::shared_ptr<const RoutingTable> threeChunks() {
    auto t = RoutingTable::make(
        "db.c", pattern(R"({"a": 1})"), gen(),
        {chunk(R"({"a": 10})", R"({"a": 20})", "s1", 1, 1), chunk(kMin, R"({"a": 10})", "s0", 1, 0),
         chunk(R"({"a": 20})", kMax, "s0", 2, 0)});
    EXPECT_TRUE(t.isOK()) << t.getStatus().toString();
    return t.getValue();
}

TEST(ChunkMap, FindsChunksAndVersions) {
    auto t = threeChunks();
    ASSERT_EQ(t->numChunks(), 3u);
    EXPECT_EQ(t->chunkMap().chunk(0).min, obj(kMin));  // sorted
    EXPECT_EQ(t->findChunk(obj(R"({"a": 5})")).shard, "s0");
    EXPECT_EQ(t->findChunk(obj(R"({"a": 10})")).shard, "s1");  // min inclusive
    EXPECT_EQ(t->findChunk(obj(R"({"a": 19.5})")).shard, "s1");
    EXPECT_EQ(t->findChunk(obj(R"({"a": 20})")).shard, "s0");  // max exclusive
    EXPECT_EQ(t->findChunk(obj(R"({"a": "str"})")).max, obj(kMax));
    EXPECT_EQ(t->findChunk(obj(kMax)).max, obj(kMax));  // the global max has a chunk too
    EXPECT_EQ(t->findChunk(obj(kMin)).min, obj(kMin));

    EXPECT_EQ(t->collectionVersion(), ChunkVersion(gen(), 2, 0));
    EXPECT_EQ(t->shardVersion("s0"), ChunkVersion(gen(), 2, 0));
    EXPECT_EQ(t->shardVersion("s1"), ChunkVersion(gen(), 1, 1));
    EXPECT_EQ(t->shardVersion("s9"), ChunkVersion(gen(), 0, 0));
    EXPECT_EQ(t->shards(), (std::vector<ShardId>{"s0", "s1"}));

    auto overlap = t->chunksOverlapping(obj(R"({"a": 15})"), obj(R"({"a": 25})"));
    ASSERT_EQ(overlap.size(), 2u);
    EXPECT_EQ(overlap[0]->shard, "s1");
    EXPECT_EQ(t->chunksOverlapping(obj(R"({"a": 10})"), obj(R"({"a": 20})")).size(), 1u);
    EXPECT_EQ(t->chunksOverlapping(obj(kMin), obj(kMax)).size(), 3u);
}

TEST(ChunkMap, RejectsGapsOverlapsAndBadChunks) {
    ShardKeyPattern p = pattern(R"({"a": 1})");
    auto code = [&](std::vector<Chunk> chunks) {
        return ChunkMap::make(p, gen(), std::move(chunks)).getStatus().code();
    };
    constexpr int kConflict = 117;
    EXPECT_EQ(
        code({chunk(kMin, R"({"a": 10})", "s0", 1, 0), chunk(R"({"a": 11})", kMax, "s0", 1, 1)}),
        kConflict);  // gap
    EXPECT_EQ(
        code({chunk(kMin, R"({"a": 10})", "s0", 1, 0), chunk(R"({"a": 9})", kMax, "s0", 1, 1)}),
        kConflict);                                                        // overlap
    EXPECT_EQ(code({chunk(R"({"a": 0})", kMax, "s0", 1, 0)}), kConflict);  // no MinKey
    EXPECT_EQ(code({chunk(kMin, R"({"a": 0})", "s0", 1, 0)}), kConflict);  // no MaxKey
    EXPECT_EQ(code({}), 2);
    EXPECT_EQ(code({chunk(kMin, kMin, "s0", 1, 0)}), 2);           // empty range
    EXPECT_EQ(code({chunk(kMin, kMax, "", 1, 0)}), 2);             // no shard
    EXPECT_EQ(code({chunk(kMin, kMax, "s0", 0, 0)}), 2);           // unset version
    EXPECT_EQ(code({chunk(kMin, R"({"b": 1})", "s0", 1, 0)}), 2);  // not a key
    EXPECT_EQ(code({Chunk{obj(kMin), obj(kMax), "s0", ChunkVersion(gen(5), 1, 0)}}), kConflict);
    EXPECT_EQ(code({chunk(kMin, kMax, "s0", 1, 0)}), 0);
}

TEST(ChunkMap, IncrementalRefreshReplacesOnlyWhatChanged) {
    auto t = threeChunks();
    // Split [10, 20) at 15 (minor bump) and move [15, 20) to s2 (major bump).
    auto updated = t->makeUpdated({chunk(R"({"a": 10})", R"({"a": 15})", "s1", 2, 1),
                                   chunk(R"({"a": 15})", R"({"a": 20})", "s2", 3, 0)});
    ASSERT_TRUE(updated.isOK()) << updated.getStatus().toString();
    auto u = updated.getValue();
    EXPECT_EQ(t->numChunks(), 3u);  // the old table is untouched
    EXPECT_EQ(u->numChunks(), 4u);
    EXPECT_EQ(u->findChunk(obj(R"({"a": 17})")).shard, "s2");
    EXPECT_EQ(u->findChunk(obj(R"({"a": 12})")).shard, "s1");
    EXPECT_EQ(u->findChunk(obj(R"({"a": 50})")).version, ChunkVersion(gen(), 2, 0));
    EXPECT_EQ(u->collectionVersion(), ChunkVersion(gen(), 3, 0));
    EXPECT_EQ(u->shardVersion("s2"), ChunkVersion(gen(), 3, 0));
    EXPECT_EQ(u->shards(), (std::vector<ShardId>{"s0", "s1", "s2"}));

    // Merge everything into one chunk.
    auto merged = u->makeUpdated({chunk(kMin, kMax, "s0", 4, 0)});
    ASSERT_TRUE(merged.isOK());
    EXPECT_EQ(merged.getValue()->numChunks(), 1u);

    // A partial update that leaves a gap, or another generation: full refresh needed.
    EXPECT_EQ(
        t->makeUpdated({chunk(R"({"a": 10})", R"({"a": 15})", "s1", 2, 1)}).getStatus().code(),
        117);
    EXPECT_EQ(t->makeUpdated({Chunk{obj(kMin), obj(kMax), "s0", ChunkVersion(gen(9), 1, 0)}})
                  .getStatus()
                  .code(),
              117);
}

// Property: in random chunk maps every key lands in exactly one chunk, the one findChunk names.
TEST(ChunkMap, PropertyEveryKeyInExactlyOneChunk) {
    std::mt19937 rng(20240601);
    for (const char* pat : {R"({"a": 1})", R"({"a": 1, "b": 1})"}) {
        ShardKeyPattern p = pattern(pat);
        for (int round = 0; round < 40; ++round) {
            std::vector<BsonObj> points;
            std::set<std::string> seen;
            int n = static_cast<int>(rng() % 12);
            while (static_cast<int>(points.size()) < n) {
                bson::BsonBuilder b;
                for (size_t f = 0; f < p.numFields(); ++f) {
                    test::appendRandomValue(b, p.fieldPath(f), rng);
                }
                BsonObj k = b.obj();
                if (seen.insert(p.encodeKey(k)).second) points.push_back(k);
            }
            auto map = ChunkMap::make(p, gen(), test::chunksAt(p, points, 3, rng));
            ASSERT_TRUE(map.isOK()) << map.getStatus().toString();
            const ChunkMap& m = map.getValue();
            for (int probe = 0; probe < 200; ++probe) {
                bson::BsonBuilder b;
                for (size_t f = 0; f < p.numFields(); ++f) {
                    test::appendRandomValue(b, p.fieldPath(f), rng);
                }
                std::string key = p.encodeKey(b.obj());
                int containing = 0;
                size_t which = 0;
                for (size_t i = 0; i < m.size(); ++i) {
                    bool last = i + 1 == m.size();
                    if (m.encodedMin(i) <= key && (key < m.encodedMax(i) || last)) {
                        ++containing;
                        which = i;
                    }
                }
                ASSERT_EQ(containing, 1);
                ASSERT_EQ(m.findChunkIndex(key), which);
            }
        }
    }
}

}  // namespace
}  // namespace tessera::placement
