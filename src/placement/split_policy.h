#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "placement/chunk_map.h"
#include "placement/shard_key_pattern.h"

namespace tessera::placement {

// MongoDB's default number of initial chunks for shardCollection on an empty collection with a
// hashed key when numInitialChunks is 0: 2 per shard (InitialSplitPolicy, <= 6.x; 7.0+ creates
// one chunk per shard by default).
constexpr int kDefaultInitialChunksPerShard = 2;
// MongoDB's bounds on numInitialChunks: at most 8192 per shard and 1,000,000 in all.
constexpr int64_t kMaxInitialChunksPerShard = 8192;
constexpr int64_t kMaxInitialChunksTotal = 1'000'000;
// InvalidOptions (72) with MongoDB's message when `n` is negative or above those bounds for
// `numShards` shards (numShards 0: only the total is checked).
Status checkNumInitialChunks(int64_t n, size_t numShards);

// Split points that divide the int64 hash space into `numInitialChunks` chunks of equal width,
// symmetric around 0 (MongoDB's calculateHashedSplitPoints): for an even count 0 is a split
// point. Each point is a key of `pattern`: `prefix` values for the fields before the hashed one
// (precondition: their count matches), the NumberLong point, then MinKey for the later fields.
// Sorted. Precondition: pattern.isHashed(), numInitialChunks >= 1.
std::vector<bson::BsonObj> calculateHashedSplitPoints(const ShardKeyPattern& pattern,
                                                      int numInitialChunks,
                                                      bson::BsonView prefix = bson::BsonView());

// The chunks [globalMin, p1), [p1, p2), ..., [pn, globalMax) assigned round-robin to `shards`
// (chunk i on shards[i % n]) with versions 1|0, 1|1, 1|2, ... of `gen` (MongoDB's
// generateShardCollectionInitialChunks). Split points are sorted and de-duplicated; BadValue for
// a point that is not a valid key, or for an empty shard list.
StatusWith<std::vector<Chunk>> makeInitialChunks(const ShardKeyPattern& pattern,
                                                 CollectionGeneration gen,
                                                 std::vector<bson::BsonObj> splitPoints,
                                                 const std::vector<ShardId>& shards);

// shardCollection's chunks for an empty collection with a hashed key: numInitialChunks (0 means
// kDefaultInitialChunksPerShard per shard) evenly spaced over the hash space, round-robin.
// InvalidOptions for a pattern without a hashed field; BadValue for a ranged field before the
// hashed one ({a: 1, b: "hashed"}: MongoDB pre-splits those only with presplitHashedZones).
StatusWith<std::vector<Chunk>> initialChunksForHashedKey(const ShardKeyPattern& pattern,
                                                         CollectionGeneration gen,
                                                         const std::vector<ShardId>& shards,
                                                         int numInitialChunks = 0);

struct SplitPointsResult {
    std::vector<bson::BsonObj> splitPoints;  // sorted, strictly increasing
    // Key values that alone exceed maxChunkBytes (one key cannot be split: a jumbo range).
    std::vector<bson::BsonObj> unsplittableKeys;
};

// Split points for a non-empty collection (or one chunk) from the shard keys of its documents,
// e.g. a scan of the shard key index (hashed fields already hashed): a chunk closes once it holds
// maxChunkBytes / avgDocBytes documents, at the next key change (equal keys never straddle a
// split point); a key with more documents than that gets a chunk of its own and is reported. `keys`
// need not be sorted; they are sorted by the key order. A split point never equals the first key
// (no empty chunk).
SplitPointsResult splitPointsFromKeys(const ShardKeyPattern& pattern,
                                      std::vector<bson::BsonObj> keys, int64_t avgDocBytes,
                                      int64_t maxChunkBytes);

}  // namespace tessera::placement
