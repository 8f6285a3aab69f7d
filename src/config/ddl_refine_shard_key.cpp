// refineCollectionShardKey and clearJumboFlag (README.md "Refining a shard key").
//
// Refining {k: 1} to {k: 1, s: 1, ...} keeps every document where it is: each chunk bound gets
// MinKey for the new fields (MaxKey on the global max), which contains exactly the documents the
// old bound did, so nothing moves and no write is held. The new placement is written under a
// new collection uuid and generation: the new chunks first (invisible: readers find chunks by the
// uuid of config.collections), then the one config.collections document that switches readers to
// them, then the old chunks are deleted — a reader in between sees either placement whole. The
// coordinator document (`refineCollectionShardKey-<ns>`) lets recovery finish or undo a commit a
// crash interrupted. Jumbo flags go: a one-value range of the old key is splittable by the new.
//
// Storage: a shard stores a sharded collection clustered by its shard key. A new suffix of
// exactly `_id: 1` keeps that layout (cluster_key.h); any other suffix reclusters the
// collection on every shard first (an O(n) rewrite under the shard's collection write lock, as
// shardCollection of a populated collection).
#include <set>

#include "base/log.h"
#include "base/wall_clock.h"
#include "bson/bson_builder.h"
#include "config/chunk_ops.h"
#include "config/config_server_impl.h"
#include "config/refine_shard_key_coordinator.h"
#include "config/shard_requests.h"

namespace tessera::config {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

namespace {

std::string refineCoordinatorId(const std::string& ns) {
    return std::string(RefineShardKeyCoordinator::kType) + "-" + ns;
}

}  // namespace

Status ConfigServerImpl::refineCollectionShardKey(const std::string& ns, BsonView newKey) {
    auto parsed = placement::ShardKeyPattern::parse(newKey);
    if (!parsed.isOK()) {
        return Status(ErrorCodes::InvalidOptions,
                      "refineCollectionShardKey: " + parsed.getStatus().reason());
    }
    const placement::ShardKeyPattern& newPattern = parsed.getValue();
    ASSIGN_OR_RETURN(DdlLockManager::Guard lock,
                     _ddlLocks.lockCollection(ns, "refineCollectionShardKey " + ns));
    ASSIGN_OR_RETURN(ShardedCollection coll, loadCollection(ns));
    const BsonObj& oldKey = coll.coll.key;
    if (!isShardKeyIndexPrefix(oldKey, newKey) ||
        newPattern.numFields() <= coll.pattern.numFields()) {
        return Status(ErrorCodes::InvalidOptions,
                      "refineCollectionShardKey: the new shard key " + newKey.toJson() +
                          " must extend the current one " + oldKey.toJson() +
                          " by at least one field (the current fields first, in order)");
    }
    BsonBuilder suffixBuilder;
    size_t i = 0;
    for (const bson::BsonElement& e : newKey) {
        if (i++ >= coll.pattern.numFields()) suffixBuilder.appendElement(e);
    }
    const BsonObj suffix = suffixBuilder.obj();
    const bool layoutKept = suffix.nFields() == 1 && suffix.firstElement().fieldName() == "_id" &&
                            suffix.firstElement().isNumber() &&
                            suffix.firstElement().numberDouble() == 1.0;

    // Every shard that holds the collection: the chunks' shards and the database's primary.
    auto [db, collName] = splitNs(ns);
    std::set<std::string> holders;
    for (const ChunkRecord& c : coll.chunks) holders.insert(c.shard);
    if (auto dbDoc = _local.findOne("databases", idQuery(db)); dbDoc.isOK() && dbDoc.getValue()) {
        holders.insert(std::string((*dbDoc.getValue())["primary"].stringValue()));
    }
    // 1. An index that can serve the new key, on each of them.
    for (const std::string& shard : holders) {
        ASSIGN_OR_RETURN(BsonObj reply, runOnShard(shard, db, oneField("listIndexes", collName)));
        bool found = false;
        for (const BsonObj& spec : indexSpecs(reply)) {
            found = found || canServeShardKey(newKey, spec);
        }
        if (!found) {
            return Status(ErrorCodes::InvalidOptions,
                          "refineCollectionShardKey: no index of " + ns + " on shard " + shard +
                              " starts with the new shard key " + newKey.toJson() +
                              " (and is neither sparse nor partial, with the simple collation); "
                              "create one first: db." +
                              collName + ".createIndex(" + newKey.toJson() + ")");
        }
    }
    // 2. The layout of the new key on each of them (idempotent; a crash here leaves the old key
    //    in force over data clustered by the new one: correct, and the next attempt goes on).
    if (!layoutKept) {
        for (const std::string& shard : holders) {
            TRY_STATUS(
                runOnShard(shard, db, clusterCollectionCmd(collName, newKey))
                    .getStatus()
                    .withContext("refineCollectionShardKey: reclustering on " + shard + ": "));
        }
    }
    // 3. The commit: coordinator, new chunks, the collection entry, old chunks and zones.
    CollectionRecord next = coll.coll;
    next.key = newKey.copy();
    next.gen = {bson::ObjectId::generate(), now()};
    next.uuid = generateUuid();
    next.lastmodMillis = wallClockMillis();
    BsonBuilder state;
    state.appendString("_id", refineCoordinatorId(ns))
        .appendString("type", RefineShardKeyCoordinator::kType)
        .appendString("ns", ns);
    appendUuid(state, "oldUuid", coll.coll.uuid);
    appendUuid(state, "newUuid", next.uuid);
    state.appendObject("suffix", suffix);
    const BsonObj stateDoc = state.obj();
    TRY_STATUS(_local.insert("system.coordinators", stateDoc));
    RefineShardKeyCoordinator coordinator(
        *this, stateDoc,
        RefineShardKeyCoordinator::Live{std::move(coll.chunks), std::move(next), newPattern});
    TRY_STATUS(runCoordinator(coordinator, lock));
    flushRoutingTable(std::vector<std::string>(holders.begin(), holders.end()), ns);
    BsonBuilder details;
    details.appendObject("oldKey", oldKey)
        .appendObject("newKey", newKey)
        .appendBool("dataRewritten", !layoutKept);
    logChange("refineCollectionShardKey.end", ns, details.obj());
    log::info("SHARDING", 9150, "Refined a shard key",
              "{\"ns\":\"" + log::jsonEscape(ns) + "\",\"key\":" + newKey.toJson() + "}");
    return Status::OK();
}

Status ConfigServerImpl::clearJumboFlag(const std::string& ns, std::optional<BsonObj> find,
                                        std::optional<std::pair<BsonObj, BsonObj>> bounds) {
    ASSIGN_OR_RETURN(DdlLockManager::Guard lock,
                     _ddlLocks.lockCollection(ns, "clearJumboFlag " + ns));
    ASSIGN_OR_RETURN(ShardedCollection coll, loadCollection(ns));
    std::optional<size_t> index;
    if (bounds) {
        TRY_STATUS(coll.pattern.validateKey(bounds->first).withContext("clearJumboFlag bounds: "));
        TRY_STATUS(coll.pattern.validateKey(bounds->second).withContext("clearJumboFlag bounds: "));
        index = findChunkWithBounds(coll.chunks, bounds->first, bounds->second);
        if (!index) {
            return Status(ErrorCodes::BadValue, "clearJumboFlag: no chunk of " + ns +
                                                    " has the bounds " + bounds->first.toJson() +
                                                    " – " + bounds->second.toJson());
        }
    } else if (find) {
        auto key = coll.pattern.extractShardKeyFromQuery(*find);
        if (!key.isOK()) {
            return Status(ErrorCodes::ShardKeyNotFound,
                          "clearJumboFlag: find must give the full shard key " +
                              coll.pattern.toString() + ": " + key.getStatus().reason());
        }
        index = findChunkContaining(coll.pattern, coll.chunks, key.getValue());
        if (!index) return Status(ErrorCodes::InternalError, "no chunk contains the key");
    } else {
        return Status(ErrorCodes::BadValue, "clearJumboFlag needs find or bounds");
    }
    ChunkRecord chunk = coll.chunks[*index];
    if (!chunk.jumbo) return Status::OK();
    // A version bump, as MongoDB does, so that the cached routing tables see a change.
    chunk.jumbo = false;
    MajorMinor collectionVersion = maxVersion(coll.chunks);
    chunk.major = collectionVersion.major;
    chunk.minor = collectionVersion.minor + 1;
    TRY_STATUS(writeChunk(chunk, coll.coll.uuid, false));
    BsonBuilder details;
    details.appendObject("min", chunk.min).appendObject("max", chunk.max);
    logChange("clearJumboFlag", ns, details.obj());
    return Status::OK();
}

}  // namespace tessera::config
