#include "placement/stale_info.h"

namespace tessera::placement {

using bson::BsonElement;
using bson::BsonType;
using bson::BsonView;

Status StaleConfigInfo::toStatus() const {
    std::string msg =
        "sharding status of collection " + ns + " is not currently known and needs to be recovered";
    if (wanted) {
        msg = "version mismatch detected for " + ns + ": received " + received.toString() +
              ", wanted " + wanted->toString();
    }
    return Status(ErrorCodes::StaleConfig, msg);
}

void StaleConfigInfo::appendFields(bson::BsonBuilder& b) const {
    b.append("ns", ns);
    received.appendToBson(b, "vReceived");
    if (wanted) wanted->appendToBson(b, "vWanted");
    b.append("shardId", shardId);
}

StatusWith<StaleConfigInfo> StaleConfigInfo::parse(BsonView reply) {
    StaleConfigInfo info;
    BsonElement ns = reply["ns"];
    BsonElement shard = reply["shardId"];
    if (ns.type() != BsonType::String || shard.type() != BsonType::String) {
        return Status(ErrorCodes::BadValue, "StaleConfig info needs string ns and shardId");
    }
    info.ns = std::string(ns.stringValue());
    info.shardId = std::string(shard.stringValue());
    ASSIGN_OR_RETURN(info.received, ChunkVersion::parse(reply["vReceived"]));
    if (BsonElement w = reply["vWanted"]; !w.eoo()) {
        ASSIGN_OR_RETURN(ChunkVersion wanted, ChunkVersion::parse(w));
        info.wanted = wanted;
    }
    return info;
}

Status StaleDbVersionInfo::toStatus() const {
    std::string msg = "database version mismatch for " + db + ": received " + received.toString();
    if (wanted) msg += ", wanted " + wanted->toString();
    return Status(ErrorCodes::StaleDbVersion, msg);
}

void StaleDbVersionInfo::appendFields(bson::BsonBuilder& b) const {
    b.append("db", db);
    received.appendToBson(b, "vReceived");
    if (wanted) wanted->appendToBson(b, "vWanted");
}

StatusWith<StaleDbVersionInfo> StaleDbVersionInfo::parse(BsonView reply) {
    StaleDbVersionInfo info;
    BsonElement db = reply["db"];
    BsonElement received = reply["vReceived"];
    if (db.type() != BsonType::String || received.type() != BsonType::Object) {
        return Status(ErrorCodes::BadValue, "StaleDbVersion info needs db and vReceived");
    }
    info.db = std::string(db.stringValue());
    ASSIGN_OR_RETURN(info.received, DatabaseVersion::parse(received.objValue()));
    if (BsonElement w = reply["vWanted"]; w.type() == BsonType::Object) {
        ASSIGN_OR_RETURN(DatabaseVersion wanted, DatabaseVersion::parse(w.objValue()));
        info.wanted = wanted;
    }
    return info;
}

std::optional<StaleConfigInfo> checkShardVersion(const std::string& ns, const ShardId& shardId,
                                                 const ChunkVersion& received,
                                                 const std::optional<ChunkVersion>& wanted) {
    if (received.isIgnored()) return std::nullopt;
    if (wanted && received.isWriteCompatibleWith(*wanted)) return std::nullopt;
    return StaleConfigInfo{ns, received, wanted, shardId};
}

std::optional<StaleDbVersionInfo> checkDatabaseVersion(
    const std::string& db, const DatabaseVersion& received,
    const std::optional<DatabaseVersion>& wanted) {
    if (wanted && *wanted == received) return std::nullopt;
    return StaleDbVersionInfo{db, received, wanted};
}

}  // namespace tessera::placement
