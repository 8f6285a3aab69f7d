#include "shard/persisted_placement.h"

#include "base/log.h"
#include "bson/bson_builder.h"
#include "shard/direct_client.h"
#include "storage/engine.h"
#include "storage/read_snapshot.h"

namespace tessera::shard {
namespace {

constexpr std::string_view kCacheCollection = "cache.placement";  // in db "config"

std::string collId(std::string_view ns) { return "coll:" + std::string(ns); }
std::string dbId(std::string_view db) { return "db:" + std::string(db); }

Status malformed(bson::BsonView doc) {
    return Status(ErrorCodes::FailedToParse,
                  "malformed persisted placement document: " + doc.toJson());
}

}  // namespace

bson::BsonObj placementDoc(std::string_view ns,
                           const std::shared_ptr<const placement::RoutingTable>& table) {
    bson::BsonBuilder b;
    b.append("_id", collId(ns));
    b.appendBool("sharded", table != nullptr);
    if (!table) return b.obj();
    b.append("key", table->shardKeyPattern().toBson());
    b.appendBool("unique", table->unique());
    b.appendOid("epoch", table->generation().epoch);
    b.appendTimestamp("timestamp", table->generation().timestamp.value);
    b.startArray("chunks");
    const placement::ChunkMap& map = table->chunkMap();
    for (size_t i = 0; i < map.size(); ++i) {
        const placement::Chunk& c = map.chunk(i);
        b.startObject(std::to_string(i))
            .append("min", c.min)
            .append("max", c.max)
            .append("shard", c.shard)
            .appendInt64("major", c.version.majorVersion())
            .appendInt64("minor", c.version.minorVersion())
            .end();
    }
    b.end();
    return b.obj();
}

StatusWith<std::shared_ptr<const placement::RoutingTable>> parsePlacementDoc(bson::BsonView doc) {
    if (doc["_id"].type() != bson::BsonType::String ||
        !doc["_id"].stringValue().starts_with("coll:")) {
        return malformed(doc);
    }
    std::string ns(doc["_id"].stringValue().substr(5));
    if (!doc["sharded"].trueValue()) return std::shared_ptr<const placement::RoutingTable>();
    if (!doc["key"].isObject() || doc["epoch"].type() != bson::BsonType::ObjectId ||
        doc["timestamp"].type() != bson::BsonType::Timestamp || !doc["chunks"].isArray()) {
        return malformed(doc);
    }
    ASSIGN_OR_RETURN(placement::ShardKeyPattern pattern,
                     placement::ShardKeyPattern::parse(doc["key"].objValue()));
    placement::CollectionGeneration gen{doc["epoch"].oidValue(),
                                        Timestamp{doc["timestamp"].timestampValue()}};
    std::vector<placement::Chunk> chunks;
    for (bson::BsonElement e : doc["chunks"].objValue()) {
        if (!e.isObject()) return malformed(doc);
        bson::BsonView c = e.objValue();
        if (!c["min"].isObject() || !c["max"].isObject() ||
            c["shard"].type() != bson::BsonType::String) {
            return malformed(doc);
        }
        placement::Chunk chunk;
        chunk.min = c["min"].objValue().copy();
        chunk.max = c["max"].objValue().copy();
        chunk.shard = std::string(c["shard"].stringValue());
        chunk.version = placement::ChunkVersion(gen, static_cast<uint32_t>(c["major"].numberLong()),
                                                static_cast<uint32_t>(c["minor"].numberLong()));
        chunks.push_back(std::move(chunk));
    }
    return placement::RoutingTable::make(std::move(ns), std::move(pattern), gen, std::move(chunks),
                                         doc["unique"].trueValue());
}

bson::BsonObj databaseDoc(std::string_view db, const std::optional<cluster::DatabaseInfo>& info) {
    bson::BsonBuilder b;
    b.append("_id", dbId(db));
    b.appendBool("exists", info.has_value());
    if (info) {
        b.append("primary", info->primary);
        info->version.appendToBson(b, "version");
    }
    return b.obj();
}

StatusWith<std::optional<cluster::DatabaseInfo>> parseDatabaseDoc(bson::BsonView doc) {
    if (doc["_id"].type() != bson::BsonType::String ||
        !doc["_id"].stringValue().starts_with("db:")) {
        return malformed(doc);
    }
    if (!doc["exists"].trueValue()) return std::optional<cluster::DatabaseInfo>();
    if (doc["primary"].type() != bson::BsonType::String || !doc["version"].isObject()) {
        return malformed(doc);
    }
    cluster::DatabaseInfo info;
    info.name = std::string(doc["_id"].stringValue().substr(3));
    info.primary = std::string(doc["primary"].stringValue());
    ASSIGN_OR_RETURN(info.version, placement::DatabaseVersion::parse(doc["version"].objValue()));
    return std::optional<cluster::DatabaseInfo>(std::move(info));
}

void PersistedPlacementSource::persist(std::string_view id, const bson::BsonObj& doc) {
    bson::BsonBuilder cmd;
    cmd.append("update", kCacheCollection);
    cmd.startArray("updates");
    cmd.startObject("0");
    cmd.startObject("q").append("_id", id).end();
    cmd.append("u", doc);
    cmd.appendBool("upsert", true);
    cmd.end();
    cmd.end();
    cmd.startObject("writeConcern").appendBool("j", true).end();
    auto r = runLocalCommand(_service, "config", cmd.obj());
    if (!r.isOK() || r.getValue().hasField("writeErrors")) {
        log::warning("SHARDING", 22003, "Could not record the placement in this shard's copy",
                     "{\"id\":\"" + log::jsonEscape(id) + "\"}");
    }
}

namespace {

// Logs that `name` (a namespace or a database, as JSON field `field`) is served from the
// persisted copy because the config server could not be reached.
void warnUsingOwnCopy(std::string_view field, std::string_view name, const Status& error) {
    log::warning("SHARDING", 22004,
                 "The config server cannot be reached: using this shard's own copy of the "
                 "placement",
                 "{\"" + std::string(field) + "\":\"" + log::jsonEscape(name) + "\",\"error\":\"" +
                     log::jsonEscape(error.toString()) + "\"}");
}

}  // namespace

namespace {

// Errors that mean "the config server could not be asked", the only ones the copy answers for.
bool configServerUnreachable(const Status& s) {
    return s.is(ErrorCodes::HostUnreachable) || s.is(ErrorCodes::HostNotFound) ||
           s.is(ErrorCodes::NetworkTimeout) || s.is(ErrorCodes::SocketException) ||
           s.is(ErrorCodes::ExceededTimeLimit) || s.is(ErrorCodes::ShutdownInProgress) ||
           s.is(ErrorCodes::InterruptedAtShutdown);
}

}  // namespace

std::optional<bson::BsonObj> PersistedPlacementSource::read(std::string_view id) {
    storage::CollectionPtr coll =
        _service.engine->getCollection("config." + std::string(kCacheCollection));
    if (!coll) return std::nullopt;
    bson::BsonBuilder idb;
    idb.append("_id", id);
    bson::BsonObj idHolder = idb.obj();
    auto rec = _service.engine->snapshot()->findById(*coll, idHolder.firstElement());
    if (!rec) return std::nullopt;
    return rec->doc;
}

StatusWith<std::shared_ptr<const placement::RoutingTable>> PersistedPlacementSource::loadCollection(
    std::string_view ns, bool mayUseOwnCopy) {
    auto loaded = _inner->loadCollection(ns, false);
    if (loaded.isOK()) {
        persist(collId(ns), placementDoc(ns, loaded.getValue()));
        return loaded;
    }
    if (!mayUseOwnCopy || !configServerUnreachable(loaded.getStatus())) return loaded.getStatus();
    std::optional<bson::BsonObj> copy = read(collId(ns));
    if (!copy) return loaded.getStatus();
    warnUsingOwnCopy("ns", ns, loaded.getStatus());
    return parsePlacementDoc(*copy);
}

StatusWith<std::optional<cluster::DatabaseInfo>> PersistedPlacementSource::loadDatabase(
    std::string_view db, bool mayUseOwnCopy) {
    auto loaded = _inner->loadDatabase(db, false);
    if (loaded.isOK()) {
        persist(dbId(db), databaseDoc(db, loaded.getValue()));
        return loaded;
    }
    if (!mayUseOwnCopy || !configServerUnreachable(loaded.getStatus())) return loaded.getStatus();
    std::optional<bson::BsonObj> copy = read(dbId(db));
    if (!copy) return loaded.getStatus();
    warnUsingOwnCopy("db", db, loaded.getStatus());
    return parseDatabaseDoc(*copy);
}

}  // namespace tessera::shard
