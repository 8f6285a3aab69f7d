// shardCollection, dropCollection and dropDatabase coordinators of the config server.
#include <algorithm>
#include <set>

#include "base/log.h"
#include "base/wall_clock.h"
#include "bson/bson_builder.h"
#include "config/chunk_ops.h"
#include "config/config_server_impl.h"
#include "placement/split_policy.h"

namespace tessera::config {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

namespace {

std::pair<std::string, std::string> splitNs(const std::string& ns) {
    size_t dot = ns.find('.');
    if (dot == std::string::npos) return {ns, ""};
    return {ns.substr(0, dot), ns.substr(dot + 1)};
}

BsonObj oneField(std::string_view name, std::string_view value) {
    BsonBuilder b;
    b.appendString(name, value);
    return b.obj();
}

// The index specs of a listIndexes reply, `v`/`ns` removed (createIndexes input).
std::vector<BsonObj> indexSpecs(BsonView reply) {
    std::vector<BsonObj> specs;
    BsonView cursor = reply["cursor"].objValue();
    if (!cursor["firstBatch"].isArray()) return specs;
    for (const bson::BsonElement& e : cursor["firstBatch"].objValue()) {
        BsonBuilder b;
        for (const bson::BsonElement& f : e.objValue()) {
            if (f.fieldName() == "v" || f.fieldName() == "ns") continue;
            b.appendElement(f);
        }
        specs.push_back(b.obj());
    }
    return specs;
}

// {_shardsvrClusterCollection: coll, key}: the shard stores the collection clustered by the
// shard key (src/cluster/README.md), so that a chunk is a contiguous range of its records.
BsonObj clusterCollectionCmd(const std::string& coll, BsonView key) {
    BsonBuilder b;
    b.appendString("_shardsvrClusterCollection", coll);
    b.appendObject("key", key);
    return b.obj();
}

BsonObj createIndexesCmd(const std::string& coll, const std::vector<BsonObj>& specs) {
    BsonBuilder b;
    b.appendString("createIndexes", coll);
    b.startArray("indexes");
    for (size_t i = 0; i < specs.size(); ++i) b.appendObject(std::to_string(i), specs[i]);
    b.end();
    return b.obj();
}

}  // namespace

Status ConfigServerImpl::shardCollection(const std::string& ns, BsonView key, bool unique,
                                         int numInitialChunks) {
    auto [db, collName] = splitNs(ns);
    if (db.empty() || collName.empty()) {
        return Status(ErrorCodes::InvalidNamespace, "Invalid namespace: '" + ns + "'");
    }
    if (db == "admin" || db == "config" || db == "local") {
        return Status(ErrorCodes::IllegalOperation, "can't shard " + ns);
    }
    ASSIGN_OR_RETURN(placement::ShardKeyPattern pattern, placement::ShardKeyPattern::parse(key));
    if (unique && pattern.isHashed()) {
        return Status(ErrorCodes::InvalidOptions,
                      "hashed shard keys cannot be declared unique. It's possible to ensure "
                      "uniqueness on the hashed field by declaring an additional (non-hashed) "
                      "unique index on the field.");
    }
    if (numInitialChunks < 0) {
        return Status(ErrorCodes::InvalidOptions, "numInitialChunks cannot be negative");
    }
    std::lock_guard lock(_ddlMutex);

    ASSIGN_OR_RETURN(auto existing, _local.findOne("collections", oneField("_id", ns)));
    if (existing && !(*existing)["dropped"].trueValue()) {
        BsonView existingKey = (*existing)["key"].objValue();
        if (existingKey.binaryEqual(pattern.toBson()) &&
            (*existing)["unique"].trueValue() == unique) {
            return Status::OK();  // already sharded the same way: idempotent
        }
        return Status(ErrorCodes::AlreadyInitialized, "sharding already enabled for collection " +
                                                          ns + " with options " +
                                                          existing->toJson());
    }
    ASSIGN_OR_RETURN(BsonObj dbDoc, createDatabaseLocked(db, std::nullopt));
    std::string primary(dbDoc["primary"].stringValue());
    ASSIGN_OR_RETURN(std::vector<ShardEntry> shards, allShards());

    // 1. The collection, clustered by the shard key, and its shard key index on the primary.
    {
        auto created = runOnShard(primary, db, oneField("create", collName));
        if (!created.isOK() && !created.getStatus().is(ErrorCodes::NamespaceExists)) {
            return created.getStatus();
        }
    }
    TRY_STATUS(
        runOnShard(primary, db, clusterCollectionCmd(collName, pattern.toBson())).getStatus());
    ASSIGN_OR_RETURN(BsonObj countReply, runOnShard(primary, db, oneField("count", collName)));
    int64_t numDocs = countReply["n"].numberLong();
    ASSIGN_OR_RETURN(BsonObj listReply, runOnShard(primary, db, oneField("listIndexes", collName)));
    std::vector<BsonObj> specs = indexSpecs(listReply);
    bool haveIndex = false;
    for (const BsonObj& spec : specs) {
        if (!isShardKeyIndexPrefix(pattern.toBson(), spec["key"].objValue())) continue;
        bool specUnique = spec["unique"].trueValue() || spec["name"].stringValue() == "_id_";
        if (unique && !(specUnique && spec["key"].objValue().nFields() == pattern.numFields())) {
            continue;
        }
        if (spec.hasField("partialFilterExpression") || spec.hasField("sparse")) continue;
        haveIndex = true;
    }
    if (!haveIndex) {
        BsonBuilder spec;
        spec.appendObject("key", pattern.toBson())
            .appendString("name", defaultIndexName(pattern.toBson()));
        if (unique) spec.appendBool("unique", true);
        BsonObj newSpec = spec.obj();
        auto r = runOnShard(primary, db, createIndexesCmd(collName, {newSpec}));
        if (!r.isOK()) return r.getStatus();
        specs.push_back(newSpec);
    }

    // 2. The initial chunks.
    CollectionRecord coll;
    coll.ns = ns;
    coll.gen = {bson::ObjectId::generate(), now()};
    coll.uuid = generateUuid();
    coll.key = pattern.toBson();
    coll.unique = unique;
    coll.lastmodMillis = wallClockMillis();

    std::vector<placement::Chunk> initial;
    if (pattern.hasHashedPrefix() && numDocs == 0) {
        std::vector<placement::ShardId> ids;
        // The primary first, so that with one chunk per shard it keeps the first chunk.
        ids.push_back(primary);
        for (const ShardEntry& s : shards) {
            if (s.id != primary) ids.push_back(s.id);
        }
        ASSIGN_OR_RETURN(initial, placement::initialChunksForHashedKey(pattern, coll.gen, ids,
                                                                       numInitialChunks));
    } else {
        ASSIGN_OR_RETURN(initial, placement::makeInitialChunks(pattern, coll.gen, {}, {primary}));
    }
    Timestamp validAfter = now();
    std::vector<ChunkRecord> chunks;
    std::set<std::string> owners;
    for (const placement::Chunk& c : initial) {
        ChunkRecord r;
        r.id = bson::ObjectId::generate();
        r.min = c.min;
        r.max = c.max;
        r.shard = c.shard;
        r.major = c.version.majorVersion();
        r.minor = c.version.minorVersion();
        r.onCurrentShardSince = validAfter;
        r.history = {{validAfter, c.shard}};
        owners.insert(c.shard);
        chunks.push_back(std::move(r));
    }

    // 3. The collection with the same indexes on every other shard that got chunks.
    std::vector<BsonObj> otherSpecs;
    for (const BsonObj& s : specs) {
        if (s["name"].stringValue() != "_id_") otherSpecs.push_back(s);
    }
    for (const std::string& shard : owners) {
        if (shard == primary) continue;
        auto created = runOnShard(shard, db, oneField("create", collName));
        if (!created.isOK() && !created.getStatus().is(ErrorCodes::NamespaceExists)) {
            return created.getStatus();
        }
        TRY_STATUS(
            runOnShard(shard, db, clusterCollectionCmd(collName, pattern.toBson())).getStatus());
        if (!otherSpecs.empty()) {
            TRY_STATUS(runOnShard(shard, db, createIndexesCmd(collName, otherSpecs)).getStatus());
        }
    }

    // 4. Commit: chunks first, then the collection entry that makes them visible.
    for (const ChunkRecord& c : chunks) TRY_STATUS(writeChunk(c, coll.uuid, /*insert=*/true));
    TRY_STATUS(_local.update("collections", oneField("_id", ns), makeCollectionDoc(coll), true)
                   .getStatus());

    // 5. Every shard refreshes its placement of ns.
    std::vector<std::string> all;
    for (const ShardEntry& s : shards) all.push_back(s.id);
    flushRoutingTable(all, ns);

    BsonBuilder details;
    details.appendObject("shardKey", pattern.toBson())
        .appendString("collection", ns)
        .appendString("primary", primary)
        .appendInt64("numChunks", static_cast<int64_t>(chunks.size()))
        .appendBool("unique", unique);
    logChange("shardCollection.end", ns, details.obj());
    return Status::OK();
}

Status ConfigServerImpl::dropCollectionLocked(const std::string& ns, bool* dropped) {
    auto [db, collName] = splitNs(ns);
    *dropped = false;
    ASSIGN_OR_RETURN(auto collDoc, _local.findOne("collections", oneField("_id", ns)));
    ASSIGN_OR_RETURN(std::vector<ShardEntry> shards, allShards());
    if (collDoc) {
        ASSIGN_OR_RETURN(CollectionRecord coll, parseCollectionRecord(*collDoc));
        BsonBuilder q;
        appendUuid(q, "uuid", coll.uuid);
        TRY_STATUS(_local.remove("chunks", q.obj()).getStatus());
        TRY_STATUS(_local.remove("collections", oneField("_id", ns)).getStatus());
        TRY_STATUS(_local.remove("tags", oneField("ns", ns)).getStatus());
        std::vector<std::string> all;
        for (const ShardEntry& s : shards) {
            all.push_back(s.id);
            auto r = runOnShard(s.id, db, oneField("drop", collName));
            if (!r.isOK() && !r.getStatus().is(ErrorCodes::NamespaceNotFound)) {
                return r.getStatus();
            }
        }
        flushRoutingTable(all, ns);
        logChange("dropCollection", ns, BsonView());
        *dropped = true;
        return Status::OK();
    }
    ASSIGN_OR_RETURN(auto dbDoc, _local.findOne("databases", oneField("_id", db)));
    if (!dbDoc) return Status::OK();
    auto r =
        runOnShard(std::string((*dbDoc)["primary"].stringValue()), db, oneField("drop", collName));
    if (r.isOK()) {
        *dropped = true;
        return Status::OK();
    }
    if (r.getStatus().is(ErrorCodes::NamespaceNotFound)) return Status::OK();
    return r.getStatus();
}

Status ConfigServerImpl::dropCollection(const std::string& ns, BsonBuilder& reply) {
    std::lock_guard lock(_ddlMutex);
    bool dropped = false;
    TRY_STATUS(dropCollectionLocked(ns, &dropped));
    if (dropped) reply.appendString("ns", ns);
    return Status::OK();
}

Status ConfigServerImpl::dropDatabase(const std::string& db, BsonBuilder& reply) {
    if (db == "admin" || db == "config" || db == "local") {
        return Status(ErrorCodes::IllegalOperation, "Cannot drop the '" + db + "' database");
    }
    std::lock_guard lock(_ddlMutex);
    ASSIGN_OR_RETURN(auto dbDoc, _local.findOne("databases", oneField("_id", db)));
    if (!dbDoc) return Status::OK();
    std::string escaped;
    for (char c : db) {
        if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) escaped += '\\';
        escaped += c;
    }
    BsonBuilder q;
    q.appendRegex("_id", "^" + escaped + "\\.", "");
    ASSIGN_OR_RETURN(std::vector<BsonObj> colls, _local.find("collections", q.obj()));
    for (const BsonObj& c : colls) {
        bool dropped = false;
        TRY_STATUS(dropCollectionLocked(std::string(c["_id"].stringValue()), &dropped));
    }
    ASSIGN_OR_RETURN(std::vector<ShardEntry> shards, allShards());
    std::vector<std::string> all;
    BsonBuilder cmd;
    cmd.appendInt32("dropDatabase", 1);
    BsonObj dropCmd = cmd.obj();
    for (const ShardEntry& s : shards) {
        all.push_back(s.id);
        TRY_STATUS(runOnShard(s.id, db, dropCmd).getStatus());
    }
    TRY_STATUS(_local.remove("databases", oneField("_id", db)).getStatus());
    flushDatabase(all, db);
    logChange("dropDatabase", db, BsonView());
    reply.appendString("dropped", db);
    return Status::OK();
}

}  // namespace tessera::config
