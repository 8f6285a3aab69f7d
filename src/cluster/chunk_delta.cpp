#include "cluster/chunk_delta.h"

#include "cluster/catalog_cache.h"

namespace tessera::cluster {

void appendChangedChunks(const placement::RoutingTable& table, const placement::ChunkVersion& since,
                         bson::BsonBuilder& b) {
    if (!since.isSameGeneration(table.collectionVersion()) ||
        !since.isOlderThan(table.collectionVersion())) {
        return;
    }
    std::vector<const placement::Chunk*> changed;
    const placement::ChunkMap& map = table.chunkMap();
    for (size_t i = 0; i < map.size(); ++i) {
        const placement::Chunk& c = map.chunk(i);
        if (!since.isOlderThan(c.version)) continue;
        if (changed.size() == kMaxChangedChunks) return;
        changed.push_back(&c);
    }
    bson::BsonArrayBuilder arr;
    for (const placement::Chunk* c : changed) {
        bson::BsonBuilder doc;
        doc.appendObject("min", c->min)
            .appendObject("max", c->max)
            .appendString("shard", c->shard)
            .appendTimestamp("lastmod", c->version.placement().value);
        arr.append(doc.obj());
    }
    b.appendArray(kChangedChunksField, arr.arr());
}

std::optional<std::vector<placement::Chunk>> parseChangedChunks(
    bson::BsonView errorReply, const placement::CollectionGeneration& gen) {
    bson::BsonElement field = errorReply[kChangedChunksField];
    if (!field.isArray()) return std::nullopt;
    std::vector<placement::Chunk> chunks;
    for (bson::BsonElement e : field.objValue()) {
        if (!e.isObject()) return std::nullopt;
        auto chunk = parseChunkDoc(e.objValue(), gen);
        if (!chunk.isOK()) return std::nullopt;
        chunks.push_back(std::move(chunk.getValue()));
    }
    return chunks;
}

}  // namespace tessera::cluster
