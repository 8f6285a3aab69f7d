#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "placement/chunk_map.h"
#include "placement/chunk_version.h"
#include "placement/shard_key_pattern.h"

namespace tessera::placement {

// The routing information of one sharded collection (MongoDB's RoutingTableHistory /
// ChunkManager): key pattern, generation and chunk map, plus the derived collection version and
// per-shard versions. Immutable and published as shared_ptr<const RoutingTable>: a router swaps
// the pointer on refresh while requests in flight keep the table they targeted with.
class RoutingTable {
    struct Passkey {};

  public:
    // Builds a table from a full read of config.chunks. Errors as ChunkMap::make.
    static StatusWith<std::shared_ptr<const RoutingTable>> make(std::string ns,
                                                                ShardKeyPattern pattern,
                                                                CollectionGeneration gen,
                                                                std::vector<Chunk> chunks,
                                                                bool unique = false);

    // An incremental refresh: `changed` are the chunks whose version is newer than this table's
    // collection version (config.chunks with lastmod > collectionVersion). Returns a new table;
    // this one is unchanged. A changed chunk of another generation, or a result with a gap or
    // overlap, is ConflictingOperationInProgress: the caller must reload in full.
    StatusWith<std::shared_ptr<const RoutingTable>> makeUpdated(std::vector<Chunk> changed) const;

    const std::string& ns() const { return _ns; }
    const ShardKeyPattern& shardKeyPattern() const { return _pattern; }
    const CollectionGeneration& generation() const { return _map.generation(); }
    bool unique() const { return _unique; }
    const ChunkMap& chunkMap() const { return _map; }
    size_t numChunks() const { return _map.size(); }

    // The max chunk version (what getShardVersion on a router reports).
    const ChunkVersion& collectionVersion() const { return _collectionVersion; }
    // The max version of the chunks `shard` owns; 0|0 of this generation when it owns none (the
    // version a shard reports after donating its last chunk).
    ChunkVersion shardVersion(const ShardId& shard) const;
    // Shards that own at least one chunk, sorted.
    std::vector<ShardId> shards() const;

    // The chunk holding a shard key. Precondition: shardKeyPattern().validateKey(shardKey) is OK
    // (extractShardKeyFromDoc's result always is).
    const Chunk& findChunk(bson::BsonView shardKey) const;
    // Chunks overlapping an encoded key range, in key order.
    std::vector<const Chunk*> chunksOverlapping(const KeyRange& range) const;
    // Chunks overlapping the shard key range [min, max) (both valid keys).
    std::vector<const Chunk*> chunksOverlapping(bson::BsonView min, bson::BsonView max) const;

    RoutingTable(Passkey, std::string ns, ShardKeyPattern pattern, ChunkMap map, bool unique);

  private:
    std::string _ns;
    ShardKeyPattern _pattern;
    ChunkMap _map;
    bool _unique;
    ChunkVersion _collectionVersion;
    std::map<ShardId, ChunkVersion> _shardVersions;
};

}  // namespace tessera::placement
