#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/hlc.h"
#include "base/status.h"
#include "bson/bson_obj.h"
#include "config/catalog_docs.h"
#include "placement/shard_key_pattern.h"

namespace tessera::config {

// The chunk version arithmetic of the config server's commits (src/placement/README.md "Chunk
// version rules"), as pure functions over the collection's config.chunks records: each returns
// the records to write; the caller writes them. All take the collection's complete chunk list.

struct MajorMinor {
    uint32_t major = 0;
    uint32_t minor = 0;
    bool operator==(const MajorMinor&) const = default;
};

// The max version over `chunks` (the collection version), or over the chunks of `shard` only
// (the shard version; 0|0 when it owns none).
MajorMinor maxVersion(const std::vector<ChunkRecord>& chunks,
                      const std::optional<std::string>& shard = std::nullopt);

// Sorts chunks by min in shard key order.
void sortChunks(const placement::ShardKeyPattern& pattern, std::vector<ChunkRecord>& chunks);

// The index of the chunk whose [min, max) holds `key` (the last chunk also holds the global max),
// or nullopt. `key` must be a valid key of the pattern. `chunks` sorted.
std::optional<size_t> findChunkContaining(const placement::ShardKeyPattern& pattern,
                                          const std::vector<ChunkRecord>& chunks,
                                          bson::BsonView key);

// The index of the chunk with exactly these bounds, or nullopt.
std::optional<size_t> findChunkWithBounds(const std::vector<ChunkRecord>& chunks,
                                          bson::BsonView min, bson::BsonView max);

struct SplitResult {
    ChunkRecord updated;                // the split chunk (keeps its _id), now [min, p1)
    std::vector<ChunkRecord> inserted;  // [p1, p2), ..., [pn, max)
};

// Splits chunks[index] at `splitPoints` (each a valid key strictly inside the chunk; sorted and
// de-duplicated here). Versions (MongoDB's commitChunkSplit, SERVER-41480): start from the
// collection version, with the major incremented when the owning shard's version equals the
// collection version; each resulting chunk gets the next minor. BadValue for an invalid point,
// InvalidOptions for a point on or outside the chunk bounds or an empty list.
StatusWith<SplitResult> computeSplit(const placement::ShardKeyPattern& pattern,
                                     const std::vector<ChunkRecord>& chunks, size_t index,
                                     std::vector<bson::BsonObj> splitPoints);

struct MergeResult {
    ChunkRecord merged;                   // the first chunk (keeps its _id), now [min, max)
    std::vector<bson::ObjectId> removed;  // the others
};

// Merges the chunks exactly covering [min, max) (contiguous, all on one shard, at least two) into
// one with version (collection major + 1)|0. IllegalOperation when the bounds do not fall on
// chunk boundaries, the chunks are on several shards or there is only one chunk.
StatusWith<MergeResult> computeMerge(const placement::ShardKeyPattern& pattern,
                                     const std::vector<ChunkRecord>& chunks, bson::BsonView min,
                                     bson::BsonView max, Timestamp now);

struct MoveResult {
    ChunkRecord moved;                   // on the recipient, (collection major + 1)|0
    std::optional<ChunkRecord> control;  // a donor chunk at (major + 1)|1 if the donor keeps any
};

// The commit of a migration of chunks[index] to `toShard` at time `now` (history and
// onCurrentShardSince updated). The control chunk is the donor's chunk with the lowest min.
// Precondition: the chunk is not on `toShard`.
MoveResult computeMoveCommit(const std::vector<ChunkRecord>& chunks, size_t index,
                             const std::string& toShard, Timestamp now);

}  // namespace tessera::config
