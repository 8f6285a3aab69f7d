#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/hlc.h"
#include "base/status.h"
#include "bson/bson_builder.h"
#include "bson/bson_obj.h"
#include "placement/chunk_version.h"
#include "placement/database_version.h"

namespace tessera::config {

// Builders and parsers of the config.* documents the config server writes (shapes of
// src/cluster/README.md "Catalog" and mongodb-surface.md §2.3). Pure: no storage, no clock
// (callers pass times in).

// A fresh random (version 4) UUID.
placement::Uuid generateUuid();
void appendUuid(bson::BsonBuilder& b, std::string_view name, const placement::Uuid& uuid);
// The UUID of a BinData subtype 4 element; TypeMismatch otherwise.
StatusWith<placement::Uuid> uuidFromElement(const bson::BsonElement& e);

// One config.chunks document.
struct ChunkRecord {
    bson::ObjectId id;
    bson::BsonObj min;
    bson::BsonObj max;
    std::string shard;
    uint32_t major = 0;
    uint32_t minor = 0;
    Timestamp onCurrentShardSince;
    // history: [{validAfter, shard}], newest first.
    std::vector<std::pair<Timestamp, std::string>> history;
    bool jumbo = false;

    Timestamp lastmod() const { return Timestamp::fromParts(major, minor); }
    // major|minor ordering (within one generation).
    bool versionLess(const ChunkRecord& o) const {
        return major < o.major || (major == o.major && minor < o.minor);
    }
};

// {_id, uuid, min, max, shard, lastmod: Timestamp(major, minor), onCurrentShardSince, history,
// jumbo?}
bson::BsonObj makeChunkDoc(const ChunkRecord& chunk, const placement::Uuid& uuid);
StatusWith<ChunkRecord> parseChunkRecord(bson::BsonView doc);

// config.collections entry.
struct CollectionRecord {
    std::string ns;
    placement::CollectionGeneration gen;  // lastmodEpoch, timestamp
    placement::Uuid uuid{};
    bson::BsonObj key;
    bool unique = false;
    int64_t lastmodMillis = 0;  // `lastmod` Date
};
bson::BsonObj makeCollectionDoc(const CollectionRecord& coll);
StatusWith<CollectionRecord> parseCollectionRecord(bson::BsonView doc);

// {_id: name, host, state: 1, topologyTime}
bson::BsonObj makeShardDoc(std::string_view name, std::string_view host, Timestamp topologyTime);
// {_id: db, primary, version: {uuid, timestamp, lastMod}}
bson::BsonObj makeDatabaseDoc(std::string_view db, std::string_view primary,
                              const placement::DatabaseVersion& version);

// {_id: "<server>-<time>-<oid>", server, shard: "config", clientAddr: "", time: Date, what, ns,
// details}
bson::BsonObj makeChangelogDoc(std::string_view server, std::string_view what, std::string_view ns,
                               bson::BsonView details, int64_t timeMillis);

// "shard<N>": the first default shard name not in `taken`.
std::string defaultShardName(const std::vector<std::string>& taken);

// The default index name of a key pattern, as MongoDB names it: {a: 1, b: "hashed"} →
// "a_1_b_hashed".
std::string defaultIndexName(bson::BsonView keyPattern);

// Whether an index with key pattern `indexKey` can serve as the shard key index of `shardKey`:
// the shard key's fields are a prefix of the index's, with equal values (1 for ranged, "hashed"
// for the hashed field).
bool isShardKeyIndexPrefix(bson::BsonView shardKey, bson::BsonView indexKey);

}  // namespace tessera::config
