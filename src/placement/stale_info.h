#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "bson/bson_builder.h"
#include "placement/chunk_map.h"
#include "placement/chunk_version.h"
#include "placement/database_version.h"

namespace tessera::placement {

// The extra info of a StaleConfig (13388) error, flattened into the error reply (and into each
// writeErrors[i] of a write batch): {ns, vReceived: {e,t,v}, vWanted?: {e,t,v}, shardId}.
struct StaleConfigInfo {
    std::string ns;
    ChunkVersion received;
    std::optional<ChunkVersion> wanted;  // absent when the shard does not know its own version
    ShardId shardId;

    Status toStatus() const;  // StaleConfig with MongoDB's message
    void appendFields(bson::BsonBuilder& b) const;
    static StatusWith<StaleConfigInfo> parse(bson::BsonView errorReply);
};

// The extra info of a StaleDbVersion (249) error: {db, vReceived: {uuid,timestamp,lastMod},
// vWanted?: {...}}.
struct StaleDbVersionInfo {
    std::string db;
    DatabaseVersion received;
    std::optional<DatabaseVersion> wanted;

    Status toStatus() const;
    void appendFields(bson::BsonBuilder& b) const;
    static StatusWith<StaleDbVersionInfo> parse(bson::BsonView errorReply);
};

// The shard-side check of a routed request (versioning protocol rule 2): the request's
// `received` shardVersion must be write-compatible with the shard's own `wanted` version (same
// generation, same major). IGNORED passes; UNSHARDED passes only if the shard also considers the
// collection unsharded. Returns the StaleConfig info to send back, or nothing when the request
// may run. `wanted` is nullopt when the shard's filtering metadata is unknown (it must refresh
// and the router must retry).
std::optional<StaleConfigInfo> checkShardVersion(const std::string& ns, const ShardId& shardId,
                                                 const ChunkVersion& received,
                                                 const std::optional<ChunkVersion>& wanted);

// The same for databaseVersion: the received version must equal the shard's (a shard that is
// not the primary of `db` has no version: wanted nullopt, which is stale too).
std::optional<StaleDbVersionInfo> checkDatabaseVersion(
    const std::string& db, const DatabaseVersion& received,
    const std::optional<DatabaseVersion>& wanted);

}  // namespace tessera::placement
