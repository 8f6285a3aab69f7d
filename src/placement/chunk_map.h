#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "placement/chunk_version.h"
#include "placement/shard_key_pattern.h"

namespace tessera::placement {

using ShardId = std::string;

// One chunk of a sharded collection: the shard keys in [min, max) live on `shard`. The chunk
// whose max is the global max also holds the global max key itself (so that every key value,
// MaxKey included, has exactly one chunk).
struct Chunk {
    bson::BsonObj min;
    bson::BsonObj max;
    ShardId shard;
    ChunkVersion version;
    bool jumbo = false;
};

// A range of encoded shard keys (ShardKeyPattern::encodeKey order): `low` inclusive, `high`
// exclusive; an empty `high` means unbounded. Prefixes are fine: a range over the encoding of
// the leading fields covers every key that starts with it.
struct KeyRange {
    std::string low;
    std::string high;
};

// The sorted chunks of one collection (MongoDB's ChunkMap). Invariants, checked by make():
//  1. The chunks cover the whole key space: the first min is the global min, the last max the
//     global max, and each chunk's max is the next chunk's min (no gap, no overlap).
//  2. Every bound is a valid key of the pattern (ShardKeyPattern::validateKey), min < max.
//  3. Every version belongs to the collection's generation and is at least 1|0; every chunk has
//     a shard.
// Lookups work on encoded keys: a binary search, memcmp comparisons.
class ChunkMap {
  public:
    ChunkMap() = default;

    // Sorts `chunks` and checks the invariants: BadValue for a malformed chunk (bad bound, empty
    // range, no shard, unset version), ConflictingOperationInProgress (117) for a gap, an overlap
    // or a version of another generation (the caller should refresh again, in full).
    static StatusWith<ChunkMap> make(const ShardKeyPattern& pattern, CollectionGeneration gen,
                                     std::vector<Chunk> chunks);

    // A new map where `changed` (chunks that were split, merged or moved since this map, e.g.
    // config.chunks entries with lastmod > the cached collection version) replace every chunk
    // they overlap. The result must satisfy the invariants again, otherwise the error of make()
    // (the caller then refreshes in full). A changed chunk of another generation is
    // ConflictingOperationInProgress.
    StatusWith<ChunkMap> makeUpdated(const ShardKeyPattern& pattern,
                                     std::vector<Chunk> changed) const;

    size_t size() const { return _entries.size(); }
    bool empty() const { return _entries.empty(); }
    const Chunk& chunk(size_t i) const { return _entries[i].chunk; }
    const std::string& encodedMin(size_t i) const { return _entries[i].min; }
    const std::string& encodedMax(size_t i) const { return _entries[i].max; }
    const CollectionGeneration& generation() const { return _gen; }

    // The index of the chunk that holds the encoded key (exactly one does). Precondition:
    // non-empty map.
    size_t findChunkIndex(std::string_view encodedKey) const;
    // The indices [first, last) of the chunks that overlap `range` (contiguous, maybe empty).
    std::pair<size_t, size_t> overlappingRange(const KeyRange& range) const;

    // The max version over all chunks (the collection version).
    ChunkVersion maxVersion() const;

  private:
    struct Entry {
        Chunk chunk;
        std::string min;  // encoded bounds
        std::string max;
    };

    CollectionGeneration _gen;
    std::vector<Entry> _entries;
};

}  // namespace tessera::placement
