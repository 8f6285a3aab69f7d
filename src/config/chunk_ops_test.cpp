#include "config/chunk_ops.h"

#include <gtest/gtest.h>

#include <random>

#include "bson/bson_builder.h"
#include "placement/chunk_map.h"

namespace tessera::config {
namespace {

using bson::BsonObj;
using bson::fromJson;
using placement::ShardKeyPattern;

ShardKeyPattern pattern(const char* json) {
    auto p = ShardKeyPattern::parse(fromJson(json));
    EXPECT_TRUE(p.isOK());
    return std::move(p).getValue();
}

BsonObj key(int64_t v) {
    bson::BsonBuilder b;
    b.appendInt64("a", v);
    return b.obj();
}

ChunkRecord chunk(BsonObj min, BsonObj max, std::string shard, uint32_t major, uint32_t minor) {
    ChunkRecord c;
    c.id = bson::ObjectId::generate();
    c.min = std::move(min);
    c.max = std::move(max);
    c.shard = std::move(shard);
    c.major = major;
    c.minor = minor;
    return c;
}

const BsonObj kMin = fromJson(R"({"a": {"$minKey": 1}})");
const BsonObj kMax = fromJson(R"({"a": {"$maxKey": 1}})");

// [MinKey, 0) s0 1|0, [0, 100) s1 1|1, [100, MaxKey) s0 1|2
std::vector<ChunkRecord> threeChunks() {
    return {chunk(kMin, key(0), "s0", 1, 0), chunk(key(0), key(100), "s1", 1, 1),
            chunk(key(100), kMax, "s0", 1, 2)};
}

placement::CollectionGeneration gen() {
    placement::CollectionGeneration g;
    g.epoch.bytes[11] = 7;
    g.timestamp = Timestamp::fromParts(100, 1);
    return g;
}

// The chunks must form a valid routing table (no gap, overlap, malformed bound).
Status validate(const ShardKeyPattern& p, const std::vector<ChunkRecord>& chunks) {
    std::vector<placement::Chunk> out;
    for (const ChunkRecord& c : chunks) {
        out.push_back({c.min, c.max, c.shard, placement::ChunkVersion(gen(), c.major, c.minor)});
    }
    return placement::ChunkMap::make(p, gen(), out).getStatus();
}

TEST(ChunkOps, MaxVersionOfCollectionAndShard) {
    auto chunks = threeChunks();
    EXPECT_EQ(maxVersion(chunks), (MajorMinor{1, 2}));
    EXPECT_EQ(maxVersion(chunks, std::string("s1")), (MajorMinor{1, 1}));
    EXPECT_EQ(maxVersion(chunks, std::string("s9")), (MajorMinor{0, 0}));
}

TEST(ChunkOps, SplitOnShardBelowCollectionVersionBumpsMinorFromCollectionVersion) {
    ShardKeyPattern p = pattern(R"({"a": 1})");
    auto chunks = threeChunks();
    auto r = computeSplit(p, chunks, 1, {key(50), key(20)});
    ASSERT_TRUE(r.isOK()) << r.getStatus().toString();
    const SplitResult& s = r.getValue();
    EXPECT_EQ(s.updated.id, chunks[1].id);
    EXPECT_TRUE(s.updated.max.binaryEqual(key(20)));
    EXPECT_EQ(s.updated.major, 1u);
    EXPECT_EQ(s.updated.minor, 3u);
    ASSERT_EQ(s.inserted.size(), 2u);
    EXPECT_TRUE(s.inserted[0].min.binaryEqual(key(20)));
    EXPECT_TRUE(s.inserted[1].max.binaryEqual(key(100)));
    EXPECT_EQ(s.inserted[0].minor, 4u);
    EXPECT_EQ(s.inserted[1].minor, 5u);
    EXPECT_EQ(s.inserted[1].shard, "s1");
    EXPECT_NE(s.inserted[0].id, chunks[1].id);
}

TEST(ChunkOps, SplitOnShardAtCollectionVersionBumpsMajor) {
    // SERVER-41480: s0 owns the collection version 1|2, so the split starts at 2|0.
    ShardKeyPattern p = pattern(R"({"a": 1})");
    auto chunks = threeChunks();
    auto r = computeSplit(p, chunks, 0, {key(-5)});
    ASSERT_TRUE(r.isOK());
    EXPECT_EQ(r.getValue().updated.major, 2u);
    EXPECT_EQ(r.getValue().updated.minor, 1u);
    EXPECT_EQ(r.getValue().inserted[0].major, 2u);
    EXPECT_EQ(r.getValue().inserted[0].minor, 2u);
}

TEST(ChunkOps, SplitRejectsPointsOnOrOutsideTheBounds) {
    ShardKeyPattern p = pattern(R"({"a": 1})");
    auto chunks = threeChunks();
    EXPECT_EQ(computeSplit(p, chunks, 1, {key(0)}).getStatus().code(),
              static_cast<int>(ErrorCodes::InvalidOptions));
    EXPECT_EQ(computeSplit(p, chunks, 1, {key(100)}).getStatus().code(),
              static_cast<int>(ErrorCodes::InvalidOptions));
    EXPECT_EQ(computeSplit(p, chunks, 1, {key(500)}).getStatus().code(),
              static_cast<int>(ErrorCodes::InvalidOptions));
    EXPECT_EQ(computeSplit(p, chunks, 1, {}).getStatus().code(),
              static_cast<int>(ErrorCodes::InvalidOptions));
    EXPECT_EQ(computeSplit(p, chunks, 1, {fromJson(R"({"b": 1})")}).getStatus().code(),
              static_cast<int>(ErrorCodes::BadValue));
    // Duplicates collapse to one point.
    auto r = computeSplit(p, chunks, 1, {key(10), key(10)});
    ASSERT_TRUE(r.isOK());
    EXPECT_EQ(r.getValue().inserted.size(), 1u);
}

TEST(ChunkOps, MergeGivesCollectionMajorPlusOne) {
    ShardKeyPattern p = pattern(R"({"a": 1})");
    std::vector<ChunkRecord> chunks = {
        chunk(kMin, key(0), "s0", 1, 0), chunk(key(0), key(10), "s1", 3, 1),
        chunk(key(10), key(20), "s1", 2, 4), chunk(key(20), kMax, "s0", 1, 2)};
    auto r = computeMerge(p, chunks, key(0), key(20), Timestamp::fromParts(5, 0));
    ASSERT_TRUE(r.isOK()) << r.getStatus().toString();
    EXPECT_EQ(r.getValue().merged.id, chunks[1].id);
    EXPECT_TRUE(r.getValue().merged.max.binaryEqual(key(20)));
    EXPECT_EQ(r.getValue().merged.major, 4u);
    EXPECT_EQ(r.getValue().merged.minor, 0u);
    ASSERT_EQ(r.getValue().removed.size(), 1u);
    EXPECT_EQ(r.getValue().removed[0], chunks[2].id);
}

TEST(ChunkOps, MergeRejectsBadRanges) {
    ShardKeyPattern p = pattern(R"({"a": 1})");
    auto chunks = threeChunks();
    auto now = Timestamp::fromParts(5, 0);
    // Not on chunk boundaries.
    EXPECT_EQ(computeMerge(p, chunks, key(0), key(50), now).getStatus().code(),
              static_cast<int>(ErrorCodes::IllegalOperation));
    // Chunks on two shards.
    EXPECT_EQ(computeMerge(p, chunks, kMin, key(100), now).getStatus().code(),
              static_cast<int>(ErrorCodes::IllegalOperation));
    // A single chunk.
    EXPECT_EQ(computeMerge(p, chunks, key(0), key(100), now).getStatus().code(),
              static_cast<int>(ErrorCodes::IllegalOperation));
    EXPECT_EQ(computeMerge(p, chunks, key(100), key(0), now).getStatus().code(),
              static_cast<int>(ErrorCodes::BadValue));
}

TEST(ChunkOps, MoveCommitBumpsMovedAndControlChunk) {
    auto chunks = threeChunks();
    Timestamp now = Timestamp::fromParts(9, 0);
    MoveResult r = computeMoveCommit(chunks, 2, "s1", now);
    EXPECT_EQ(r.moved.id, chunks[2].id);
    EXPECT_EQ(r.moved.shard, "s1");
    EXPECT_EQ(r.moved.major, 2u);
    EXPECT_EQ(r.moved.minor, 0u);
    EXPECT_EQ(r.moved.onCurrentShardSince, now);
    ASSERT_FALSE(r.moved.history.empty());
    EXPECT_EQ(r.moved.history.front().second, "s1");
    ASSERT_TRUE(r.control.has_value());
    EXPECT_EQ(r.control->id, chunks[0].id);  // the donor's other chunk
    EXPECT_EQ(r.control->shard, "s0");
    EXPECT_EQ(r.control->major, 2u);
    EXPECT_EQ(r.control->minor, 1u);
}

TEST(ChunkOps, MoveOfTheDonorsLastChunkHasNoControlChunk) {
    auto chunks = threeChunks();
    MoveResult r = computeMoveCommit(chunks, 1, "s0", Timestamp::fromParts(9, 0));
    EXPECT_FALSE(r.control.has_value());
    EXPECT_EQ(r.moved.major, 2u);
    EXPECT_EQ(r.moved.minor, 0u);
}

TEST(ChunkOps, FindChunkContainingAndWithBounds) {
    ShardKeyPattern p = pattern(R"({"a": 1})");
    auto chunks = threeChunks();
    EXPECT_EQ(findChunkContaining(p, chunks, key(-3)), 0u);
    EXPECT_EQ(findChunkContaining(p, chunks, key(0)), 1u);
    EXPECT_EQ(findChunkContaining(p, chunks, key(99)), 1u);
    EXPECT_EQ(findChunkContaining(p, chunks, kMax), 2u);  // the last chunk holds the global max
    EXPECT_EQ(findChunkWithBounds(chunks, key(0), key(100)), 1u);
    EXPECT_FALSE(findChunkWithBounds(chunks, key(0), key(50)).has_value());
}

std::vector<ChunkRecord> applyChange(std::vector<ChunkRecord> chunks, const ChunkRecord& changed) {
    for (ChunkRecord& c : chunks) {
        if (c.id == changed.id) c = changed;
    }
    return chunks;
}

// Random splits, merges and moves: the chunks always form a valid routing table, versions
// never repeat, and after a move a router's cached donor/recipient version is no longer
// write-compatible (so the shard answers StaleConfig instead of serving the moved range).
TEST(ChunkOps, RandomOperationsKeepTheInvariants) {
    ShardKeyPattern p = pattern(R"({"a": 1})");
    std::mt19937 rng(42);
    std::vector<ChunkRecord> chunks = {chunk(kMin, kMax, "s0", 1, 0)};
    const std::vector<std::string> shards = {"s0", "s1", "s2"};
    for (int step = 0; step < 400; ++step) {
        sortChunks(p, chunks);
        ASSERT_TRUE(validate(p, chunks).isOK()) << validate(p, chunks).toString();
        MajorMinor collBefore = maxVersion(chunks);
        size_t i = rng() % chunks.size();
        int op = rng() % 3;
        if (op == 0) {
            int64_t point = static_cast<int64_t>(rng() % 2000) - 1000;
            auto r = computeSplit(p, chunks, i, {key(point)});
            if (!r.isOK()) continue;  // point outside the chunk
            chunks = applyChange(chunks, r.getValue().updated);
            for (const auto& c : r.getValue().inserted) chunks.push_back(c);
            MajorMinor after = maxVersion(chunks);
            EXPECT_TRUE(after.major > collBefore.major ||
                        (after.major == collBefore.major && after.minor > collBefore.minor));
        } else if (op == 1 && i + 1 < chunks.size() && chunks[i].shard == chunks[i + 1].shard) {
            auto r = computeMerge(p, chunks, chunks[i].min, chunks[i + 1].max,
                                  Timestamp::fromParts(step, 0));
            ASSERT_TRUE(r.isOK()) << r.getStatus().toString();
            bson::ObjectId removed = r.getValue().removed[0];
            chunks = applyChange(chunks, r.getValue().merged);
            std::erase_if(chunks, [&](const ChunkRecord& c) { return c.id == removed; });
            EXPECT_EQ(maxVersion(chunks).major, collBefore.major + 1);
        } else if (op == 2) {
            std::string to = shards[rng() % shards.size()];
            if (to == chunks[i].shard) continue;
            std::string donor = chunks[i].shard;
            MajorMinor donorBefore = maxVersion(chunks, donor);
            MajorMinor recipientBefore = maxVersion(chunks, to);
            MoveResult r = computeMoveCommit(chunks, i, to, Timestamp::fromParts(step, 0));
            chunks = applyChange(chunks, r.moved);
            if (r.control) chunks = applyChange(chunks, *r.control);
            MajorMinor donorAfter = maxVersion(chunks, donor);
            MajorMinor recipientAfter = maxVersion(chunks, to);
            EXPECT_EQ(recipientAfter, (MajorMinor{collBefore.major + 1, 0}));
            EXPECT_NE(recipientAfter.major, recipientBefore.major);
            if (r.control) {
                EXPECT_EQ(donorAfter, (MajorMinor{collBefore.major + 1, 1}));
                EXPECT_NE(donorAfter.major, donorBefore.major);
            } else {
                EXPECT_EQ(donorAfter, (MajorMinor{0, 0}));
            }
        }
        // Versions are unique within the collection.
        for (size_t a = 0; a < chunks.size(); ++a) {
            for (size_t b = a + 1; b < chunks.size(); ++b) {
                EXPECT_FALSE(chunks[a].major == chunks[b].major &&
                             chunks[a].minor == chunks[b].minor);
            }
        }
    }
}

}  // namespace
}  // namespace tessera::config
