#include "placement/routing_table.h"

namespace tessera::placement {

RoutingTable::RoutingTable(Passkey, std::string ns, ShardKeyPattern pattern, ChunkMap map,
                           bool unique)
    : _ns(std::move(ns)), _pattern(std::move(pattern)), _map(std::move(map)), _unique(unique) {
    _collectionVersion = _map.maxVersion();
    for (size_t i = 0; i < _map.size(); ++i) {
        const Chunk& c = _map.chunk(i);
        auto [it, inserted] = _shardVersions.emplace(c.shard, c.version);
        if (!inserted && it->second.isOlderThan(c.version)) it->second = c.version;
    }
}

StatusWith<std::shared_ptr<const RoutingTable>> RoutingTable::make(std::string ns,
                                                                   ShardKeyPattern pattern,
                                                                   CollectionGeneration gen,
                                                                   std::vector<Chunk> chunks,
                                                                   bool unique) {
    ASSIGN_OR_RETURN(ChunkMap map, ChunkMap::make(pattern, gen, std::move(chunks)));
    return std::shared_ptr<const RoutingTable>(std::make_shared<RoutingTable>(
        Passkey{}, std::move(ns), std::move(pattern), std::move(map), unique));
}

StatusWith<std::shared_ptr<const RoutingTable>> RoutingTable::makeUpdated(
    std::vector<Chunk> changed) const {
    ASSIGN_OR_RETURN(ChunkMap map, _map.makeUpdated(_pattern, std::move(changed)));
    return std::shared_ptr<const RoutingTable>(
        std::make_shared<RoutingTable>(Passkey{}, _ns, _pattern, std::move(map), _unique));
}

ChunkVersion RoutingTable::shardVersion(const ShardId& shard) const {
    auto it = _shardVersions.find(shard);
    if (it == _shardVersions.end()) return ChunkVersion(generation(), 0, 0);
    return it->second;
}

std::vector<ShardId> RoutingTable::shards() const {
    std::vector<ShardId> out;
    for (const auto& [shard, version] : _shardVersions) out.push_back(shard);
    return out;
}

const Chunk& RoutingTable::findChunk(bson::BsonView shardKey) const {
    return _map.chunk(_map.findChunkIndex(_pattern.encodeKey(shardKey)));
}

std::vector<const Chunk*> RoutingTable::chunksOverlapping(const KeyRange& range) const {
    auto [first, last] = _map.overlappingRange(range);
    std::vector<const Chunk*> out;
    for (size_t i = first; i < last; ++i) out.push_back(&_map.chunk(i));
    return out;
}

std::vector<const Chunk*> RoutingTable::chunksOverlapping(bson::BsonView min,
                                                          bson::BsonView max) const {
    return chunksOverlapping(KeyRange{_pattern.encodeKey(min), _pattern.encodeKey(max)});
}

}  // namespace tessera::placement
