// shardCollection, dropCollection and dropDatabase: the placement DDL coordinators of the config
// server (README.md "Placement DDL"). Each is a persisted coordinator (PlacementDdlState) that
// holds writes to its namespace in a critical section on the shards concerned from before it
// reads anything to decide placement until its commit is visible, so that no acknowledged write
// lands under a placement the commit does not keep.
#include <algorithm>
#include <set>

#include "base/log.h"
#include "base/wall_clock.h"
#include "bson/bson_builder.h"
#include "config/chunk_ops.h"
#include "config/config_server_impl.h"
#include "config/shard_requests.h"
#include "placement/split_policy.h"

namespace tessera::config {

TESSERA_FAIL_POINT_DEFINE(shardCollectionHangBeforeCommit);
TESSERA_FAIL_POINT_DEFINE(shardCollectionHangAfterCommit);
TESSERA_FAIL_POINT_DEFINE(dropCollectionHangAfterCatalogDelete);

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

namespace {

BsonObj createIndexesCmd(const std::string& coll, const std::vector<BsonObj>& specs) {
    BsonBuilder b;
    b.appendString("createIndexes", coll);
    b.startArray("indexes");
    for (size_t i = 0; i < specs.size(); ++i) b.appendObject(std::to_string(i), specs[i]);
    b.end();
    return b.obj();
}

// {create: coll, <options of the primary's collection>}: every shard that holds the collection
// has the same options (validator, validationLevel/Action, collation, ...).
BsonObj createLikeCmd(const std::string& coll, BsonView options) {
    BsonBuilder b;
    b.appendString("create", coll);
    for (const bson::BsonElement& e : options) {
        if (e.fieldName() != "uuid") b.appendElement(e);
    }
    return b.obj();
}

// The critical section command of a placement DDL: collection key (`coll:<ns>`) or database key.
BsonObj criticalSectionCmd(const PlacementDdlState& s, bool database, bool enter) {
    BsonBuilder b;
    b.appendString(
         database ? "_shardsvrDatabaseCriticalSection" : "_shardsvrMigrationCriticalSection",
         s.target)
        .appendBool("enter", enter);
    b.startObject("reason").appendString("command", s.type).appendString("ns", s.target).end();
    return b.obj();
}

void logFailure(int id, std::string_view msg, const Status& s) {
    log::warning("SHARDING", id, msg, "{\"error\":\"" + log::jsonEscape(s.toString()) + "\"}");
}

}  // namespace

Status ConfigServerImpl::saveState(const PlacementDdlState& state) {
    coordinatorStep(state.type);
    return _local.update("system.coordinators", oneField("_id", state.id), state.toBson(), true)
        .getStatus();
}

Status ConfigServerImpl::beginPlacementDdl(PlacementDdlState& state) {
    Status inserted = _local.insert("system.coordinators", state.toBson());
    if (inserted.is(ErrorCodes::DuplicateKey)) {
        return Status(ErrorCodes::ConflictingOperationInProgress,
                      "a " + state.type + " of " + state.target + " is already in progress");
    }
    TRY_STATUS(inserted);
    const bool database = state.type == "dropDatabase";
    for (size_t i = 0; i < state.shards.size(); ++i) {
        auto entered = runOnShard(state.shards[i], "admin",
                                  criticalSectionCmd(state, database, /*enter=*/true));
        if (!entered.isOK()) {
            // Leave what was entered (every shard: exit is idempotent) and forget the attempt.
            Status left = endPlacementDdl(state);
            if (!left.isOK()) logFailure(9130, "Could not undo a placement DDL's start", left);
            return entered.getStatus().withContext(state.type + " of " + state.target + ": ");
        }
    }
    return Status::OK();
}

Status ConfigServerImpl::endPlacementDdl(PlacementDdlState& state) {
    const bool database = state.type == "dropDatabase";
    for (const std::string& shard : state.shards) {
        auto exited = runOnShard(shard, "admin", criticalSectionCmd(state, database, false));
        if (!exited.isOK() && !exited.getStatus().is(ErrorCodes::ShardNotFound)) {
            // The document stays: recovery exits the section again.
            return exited.getStatus();
        }
    }
    state.phase = CoordinatorPhase::kCleaned;
    return _local.remove("system.coordinators", oneField("_id", state.id), false).getStatus();
}

// ---- shardCollection --------------------------------------------------------------------

Status ConfigServerImpl::shardCollection(const std::string& ns, BsonView key, bool unique,
                                         int numInitialChunks, bool simpleCollationGiven,
                                         bool implicitlyCreateIndex) {
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
    // The database first (its own exclusive lock), then this collection's lock; a concurrent
    // dropDatabase in between is seen below and retried.
    for (int attempt = 0;; ++attempt) {
        TRY_STATUS(createDatabase(db, std::nullopt).getStatus());
        ASSIGN_OR_RETURN(DdlLockManager::Guard lock,
                         _ddlLocks.lockCollection(ns, "shardCollection " + ns));
        ASSIGN_OR_RETURN(auto dbDoc, _local.findOne("databases", oneField("_id", db)));
        if (!dbDoc) {
            if (attempt < 3) continue;
            return Status(ErrorCodes::ConflictingOperationInProgress,
                          "database " + db + " keeps being dropped; try again");
        }
        ShardCollectionRequest req{ns,
                                   pattern,
                                   unique,
                                   numInitialChunks,
                                   simpleCollationGiven,
                                   implicitlyCreateIndex,
                                   std::string((*dbDoc)["primary"].stringValue())};
        return runCoordinator(placementDdlCoordinatorId("shardCollection", ns), lock,
                              [&] { return shardCollectionLocked(req); });
    }
}

Status ConfigServerImpl::shardCollectionLocked(const ShardCollectionRequest& req) {
    auto [db, collName] = splitNs(req.ns);
    ASSIGN_OR_RETURN(auto existing, _local.findOne("collections", oneField("_id", req.ns)));
    if (existing && !(*existing)["dropped"].trueValue()) {
        BsonView existingKey = (*existing)["key"].objValue();
        if (existingKey.binaryEqual(req.pattern.toBson()) &&
            (*existing)["unique"].trueValue() == req.unique) {
            return Status::OK();  // already sharded the same way: idempotent
        }
        return Status(ErrorCodes::AlreadyInitialized, "sharding already enabled for collection " +
                                                          req.ns + " with options " +
                                                          existing->toJson());
    }

    PlacementDdlState state = PlacementDdlState::start("shardCollection", req.ns, {req.primary});
    // From here until the commit is visible, writes of ns on the primary wait: the emptiness
    // check and the initial chunks decide where documents go.
    TRY_STATUS(beginPlacementDdl(state));
    auto decided = decideShardCollection(req, state);
    if (!decided.isOK()) {
        Status aborted = abortShardCollection(state);
        if (!aborted.isOK()) logFailure(9131, "shardCollection abort incomplete", aborted);
        return decided.getStatus();
    }
    pauseWhileSet(shardCollectionHangBeforeCommit);

    // Commit: chunks first, then the collection entry that makes them visible.
    const ShardCollectionPlan& plan = decided.getValue();
    Status committed = Status::OK();
    for (const ChunkRecord& c : plan.chunks) {
        committed = writeChunk(c, plan.coll.uuid, /*insert=*/true);
        if (!committed.isOK()) break;
    }
    if (committed.isOK()) {
        committed =
            _local
                .update("collections", oneField("_id", req.ns), makeCollectionDoc(plan.coll), true)
                .getStatus();
    }
    if (!committed.isOK()) {
        BsonBuilder q;
        appendUuid(q, "uuid", plan.coll.uuid);
        (void)_local.remove("chunks", q.obj());
        Status aborted = abortShardCollection(state);
        if (!aborted.isOK()) logFailure(9131, "shardCollection abort incomplete", aborted);
        return committed;
    }
    state.phase = CoordinatorPhase::kCommitted;
    TRY_STATUS(saveState(state));
    pauseWhileSet(shardCollectionHangAfterCommit);
    TRY_STATUS(finishShardCollection(state));

    BsonBuilder details;
    details.appendObject("shardKey", req.pattern.toBson())
        .appendString("collection", req.ns)
        .appendString("primary", req.primary)
        .appendInt64("numChunks", static_cast<int64_t>(plan.chunks.size()))
        .appendBool("unique", req.unique);
    logChange("shardCollection.end", req.ns, details.obj());
    return Status::OK();
}

StatusWith<ShardCollectionPlan> ConfigServerImpl::decideShardCollection(
    const ShardCollectionRequest& req, PlacementDdlState& state) {
    auto [db, collName] = splitNs(req.ns);
    const placement::ShardKeyPattern& pattern = req.pattern;
    const std::string& primary = req.primary;
    ASSIGN_OR_RETURN(std::vector<ShardEntry> shards, allShards());

    // 1. What exists on the primary: options and indexes (of the collection created empty if
    //    missing). Nothing else is changed before they are found compatible.
    BsonBuilder lc;
    lc.appendInt32("listCollections", 1);
    lc.startObject("filter").appendString("name", collName).end();
    ASSIGN_OR_RETURN(BsonObj lcReply, runOnShard(primary, db, lc.obj()));
    std::vector<BsonObj> listed = firstBatch(lcReply);
    BsonObj options;
    if (!listed.empty()) {
        if (listed[0]["type"].type() == bson::BsonType::String &&
            listed[0]["type"].stringValue() == "view") {
            return Status(ErrorCodes::CommandNotSupportedOnView,
                          "Namespace " + req.ns + " is a view, not a collection");
        }
        if (listed[0]["options"].isObject()) options = listed[0]["options"].objValue().copy();
    }
    if (!isSimpleCollation(options) && !req.simpleCollationGiven) {
        return Status(ErrorCodes::BadValue,
                      "Collection " + req.ns +
                          " has a default collation that is not simple. Please specify a "
                          "collation: {locale: 'simple'} to shard it; the shard key index must "
                          "use the simple collation");
    }
    if (listed.empty()) {
        auto created = runOnShard(primary, db, oneField("create", collName));
        if (!created.isOK() && !created.getStatus().is(ErrorCodes::NamespaceExists)) {
            return created.getStatus();
        }
    }
    ASSIGN_OR_RETURN(BsonObj listReply, runOnShard(primary, db, oneField("listIndexes", collName)));
    std::vector<BsonObj> specs = indexSpecs(listReply);
    for (const BsonObj& spec : specs) {
        if (!spec["unique"].trueValue()) continue;
        BsonView indexKey = spec["key"].objValue();
        if (!pattern.isUniqueIndexCompatible(indexKey)) {
            return Status(ErrorCodes::InvalidOptions,
                          "can't shard collection '" + req.ns + "' with unique index on " +
                              indexKey.toJson() + " and proposed shard key " +
                              pattern.toBson().toJson() +
                              ". Uniqueness can't be maintained unless shard key is a prefix");
        }
    }

    // 2. The collection clustered by the shard key, and its shard key index, on the primary.
    TRY_STATUS(
        runOnShard(primary, db, clusterCollectionCmd(collName, pattern.toBson())).getStatus());
    ASSIGN_OR_RETURN(BsonObj countReply, runOnShard(primary, db, oneField("count", collName)));
    int64_t numDocs = countReply["n"].numberLong();
    bool haveIndex = false;
    for (const BsonObj& spec : specs) {
        if (!isShardKeyIndexPrefix(pattern.toBson(), spec["key"].objValue())) continue;
        bool specUnique = spec["unique"].trueValue() || spec["name"].stringValue() == "_id_";
        if (req.unique &&
            !(specUnique && spec["key"].objValue().nFields() == pattern.numFields())) {
            continue;
        }
        if (spec.hasField("partialFilterExpression") || spec.hasField("sparse")) continue;
        if (spec["collation"].isObject() && !isSimpleCollation(spec)) continue;
        haveIndex = true;
    }
    if (!haveIndex) {
        if (!req.implicitlyCreateIndex) {
            return Status(ErrorCodes::InvalidOptions,
                          "Please create an index that starts with the proposed shard key " +
                              pattern.toBson().toJson() + " before sharding the collection " +
                              req.ns + " (implicitlyCreateIndex is false)");
        }
        BsonBuilder spec;
        spec.appendObject("key", pattern.toBson())
            .appendString("name", defaultIndexName(pattern.toBson()));
        if (req.unique) spec.appendBool("unique", true);
        if (!isSimpleCollation(options)) {
            spec.startObject("collation").appendString("locale", "simple").end();
        }
        BsonObj newSpec = spec.obj();
        TRY_STATUS(runOnShard(primary, db, createIndexesCmd(collName, {newSpec})).getStatus());
        specs.push_back(newSpec);
    }

    // 3. The initial chunks: an empty collection with a hashed prefix is spread over every
    //    shard; otherwise one chunk on the primary (which holds every document). Decided here,
    //    inside the critical section, so no insert can land between the count and the commit.
    ShardCollectionPlan plan;
    CollectionRecord& coll = plan.coll;
    coll.ns = req.ns;
    coll.gen = {bson::ObjectId::generate(), now()};
    coll.uuid = generateUuid();
    coll.key = pattern.toBson();
    coll.unique = req.unique;
    coll.lastmodMillis = wallClockMillis();

    std::vector<placement::Chunk> initial;
    if (pattern.hasHashedPrefix() && numDocs == 0) {
        std::vector<placement::ShardId> ids;
        // The primary first, so that with one chunk per shard it keeps the first chunk.
        ids.push_back(primary);
        for (const ShardEntry& s : shards) {
            if (s.id != primary && !s.draining) ids.push_back(s.id);  // none onto a draining one
        }
        ASSIGN_OR_RETURN(initial, placement::initialChunksForHashedKey(pattern, coll.gen, ids,
                                                                       req.numInitialChunks));
    } else {
        ASSIGN_OR_RETURN(initial, placement::makeInitialChunks(pattern, coll.gen, {}, {primary}));
    }
    Timestamp validAfter = now();
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
        plan.chunks.push_back(std::move(r));
    }

    // 4. The collection with the primary's options and indexes on every other shard that got
    //    chunks (recorded first, so that an abort can drop these copies again).
    std::vector<BsonObj> otherSpecs;
    for (const BsonObj& s : specs) {
        if (s["name"].stringValue() != "_id_") otherSpecs.push_back(s);
    }
    for (const std::string& shard : owners) {
        if (shard == primary) continue;
        state.created.push_back(shard);
        TRY_STATUS(saveState(state));
        auto created = runOnShard(shard, db, createLikeCmd(collName, options));
        if (!created.isOK() && !created.getStatus().is(ErrorCodes::NamespaceExists)) {
            return created.getStatus();
        }
        TRY_STATUS(
            runOnShard(shard, db, clusterCollectionCmd(collName, pattern.toBson())).getStatus());
        if (!otherSpecs.empty()) {
            TRY_STATUS(runOnShard(shard, db, createIndexesCmd(collName, otherSpecs)).getStatus());
        }
    }
    return plan;
}

Status ConfigServerImpl::finishShardCollection(PlacementDdlState& state) {
    // Every shard learns the placement before the primary releases the writes it held, so a
    // released write is checked against the committed placement (StaleConfig, then routed).
    ASSIGN_OR_RETURN(std::vector<std::string> all, allShardIds());
    flushRoutingTable(all, state.target);
    return endPlacementDdl(state);
}

Status ConfigServerImpl::abortShardCollection(PlacementDdlState& state) {
    auto [db, collName] = splitNs(state.target);
    for (const std::string& shard : state.created) {
        // Only an empty copy is dropped: these shards got the collection from this attempt, and
        // nothing could write to them before a commit that did not happen.
        auto counted = runOnShard(shard, db, oneField("count", collName));
        if (counted.isOK() && counted.getValue()["n"].numberLong() == 0) {
            auto dropped = runOnShard(shard, db, oneField("drop", collName));
            if (!dropped.isOK() && !dropped.getStatus().is(ErrorCodes::NamespaceNotFound)) {
                logFailure(9132, "shardCollection abort: could not drop a copy",
                           dropped.getStatus());
            }
        }
    }
    return endPlacementDdl(state);
}

// ---- dropCollection / dropDatabase ------------------------------------------------------

Status ConfigServerImpl::dropShardedCollection(PlacementDdlState& state) {
    auto [db, collName] = splitNs(state.target);
    // Idempotent steps, so that recovery can roll forward from any point: the catalog entries
    // go first (routers and shards then see the collection unsharded), then every shard's copy.
    ASSIGN_OR_RETURN(auto collDoc, _local.findOne("collections", oneField("_id", state.target)));
    if (collDoc) {
        ASSIGN_OR_RETURN(CollectionRecord coll, parseCollectionRecord(*collDoc));
        BsonBuilder q;
        appendUuid(q, "uuid", coll.uuid);
        TRY_STATUS(_local.remove("chunks", q.obj()).getStatus());
        TRY_STATUS(_local.remove("collections", oneField("_id", state.target)).getStatus());
        TRY_STATUS(_local.remove("tags", oneField("ns", state.target)).getStatus());
    }
    pauseWhileSet(dropCollectionHangAfterCatalogDelete);
    for (const std::string& shard : state.shards) {
        auto r = runOnShard(shard, db, oneField("drop", collName));
        if (!r.isOK() && !r.getStatus().is(ErrorCodes::NamespaceNotFound)) return r.getStatus();
    }
    if (state.phase == CoordinatorPhase::kStart) {
        state.phase = CoordinatorPhase::kCommitted;
        TRY_STATUS(saveState(state));
    }
    flushRoutingTable(state.shards, state.target);
    return endPlacementDdl(state);
}

Status ConfigServerImpl::dropCollectionLocked(const std::string& ns, bool* dropped) {
    auto [db, collName] = splitNs(ns);
    *dropped = false;
    ASSIGN_OR_RETURN(auto collDoc, _local.findOne("collections", oneField("_id", ns)));
    if (collDoc) {
        ASSIGN_OR_RETURN(std::vector<std::string> shards, allShardIds());
        PlacementDdlState state = PlacementDdlState::start("dropCollection", ns, std::move(shards));
        TRY_STATUS(beginPlacementDdl(state));
        TRY_STATUS(dropShardedCollection(state));
        logChange("dropCollection", ns, BsonView());
        *dropped = true;
        return Status::OK();
    }
    // Unsharded: only the primary holds it; a concurrent write recreates it there.
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
    ASSIGN_OR_RETURN(DdlLockManager::Guard lock, _ddlLocks.lockCollection(ns, "drop " + ns));
    bool dropped = false;
    TRY_STATUS(runCoordinator(placementDdlCoordinatorId("dropCollection", ns), lock,
                              [&] { return dropCollectionLocked(ns, &dropped); }));
    if (dropped) reply.appendString("ns", ns);
    return Status::OK();
}

Status ConfigServerImpl::dropDatabaseSteps(PlacementDdlState& state) {
    const std::string& db = state.target;
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
    BsonBuilder cmd;
    cmd.appendInt32("dropDatabase", 1);
    BsonObj dropCmd = cmd.obj();
    for (const std::string& shard : state.shards) {
        TRY_STATUS(runOnShard(shard, db, dropCmd).getStatus());
    }
    TRY_STATUS(_local.remove("databases", oneField("_id", db)).getStatus());
    if (state.phase == CoordinatorPhase::kStart) {
        state.phase = CoordinatorPhase::kCommitted;
        TRY_STATUS(saveState(state));
    }
    flushDatabase(state.shards, db);
    return endPlacementDdl(state);
}

Status ConfigServerImpl::dropDatabase(const std::string& db, BsonBuilder& reply) {
    if (db == "admin" || db == "config" || db == "local") {
        return Status(ErrorCodes::IllegalOperation, "Cannot drop the '" + db + "' database");
    }
    ASSIGN_OR_RETURN(DdlLockManager::Guard lock, _ddlLocks.lockDatabase(db, "dropDatabase " + db));
    ASSIGN_OR_RETURN(auto dbDoc, _local.findOne("databases", oneField("_id", db)));
    if (!dbDoc) return Status::OK();
    ASSIGN_OR_RETURN(std::vector<std::string> shards, allShardIds());
    PlacementDdlState state = PlacementDdlState::start("dropDatabase", db, std::move(shards));
    TRY_STATUS(runCoordinator(state.id, lock, [&]() -> Status {
        TRY_STATUS(beginPlacementDdl(state));
        return dropDatabaseSteps(state);
    }));
    logChange("dropDatabase", db, BsonView());
    reply.appendString("dropped", db);
    return Status::OK();
}

StatusWith<CoordinatorOutcome> ConfigServerImpl::recoverPlacementDdl(PlacementDdlState& state) {
    if (state.type == "shardCollection") {
        ASSIGN_OR_RETURN(auto coll, _local.findOne("collections", oneField("_id", state.target)));
        bool committed = coll && !(*coll)["dropped"].trueValue();
        switch (recoveryAction(state.phase, committed)) {
            case RecoveryAction::kAbort:
                TRY_STATUS(abortShardCollection(state));
                return CoordinatorOutcome::kAborted;
            case RecoveryAction::kFinishCommit:
                TRY_STATUS(finishShardCollection(state));
                return CoordinatorOutcome::kFinished;
            case RecoveryAction::kForget:
                TRY_STATUS(endPlacementDdl(state));
                return CoordinatorOutcome::kFinished;
        }
        return CoordinatorOutcome::kFinished;
    }
    // Drops roll forward: every step is idempotent, and the caller asked for the drop.
    if (state.type == "dropCollection") {
        TRY_STATUS(dropShardedCollection(state));
    } else {
        TRY_STATUS(dropDatabaseSteps(state));
    }
    return CoordinatorOutcome::kFinished;
}

void ConfigServerImpl::abandonPlacementDdl(const BsonObj& doc, const BestEffort& step) {
    auto parsed = PlacementDdlState::parse(doc);
    if (!parsed.isOK()) return;
    PlacementDdlState state = std::move(parsed).getValue();
    const bool database = state.type == "dropDatabase";
    if (state.type == "shardCollection") {
        // Not committed: the empty copies it made go (as an abort); committed: they hold chunks.
        step("shardCollection: drop its empty copies unless committed", [&]() -> Status {
            ASSIGN_OR_RETURN(auto coll,
                             _local.findOne("collections", oneField("_id", state.target)));
            if (coll && !(*coll)["dropped"].trueValue()) return Status::OK();
            auto [db, collName] = splitNs(state.target);
            for (const std::string& shard : state.created) {
                auto counted = runOnShard(shard, db, oneField("count", collName));
                if (counted.isOK() && counted.getValue()["n"].numberLong() == 0) {
                    (void)runOnShard(shard, db, oneField("drop", collName));
                }
            }
            return Status::OK();
        });
    }
    // A drop abandoned midway leaves the catalog as far as it got (a collection the routers no
    // longer see as sharded, copies on some shards): each step is idempotent, so the user's
    // drop, run again, finishes it.
    for (const std::string& shard : state.shards) {
        step("exit the critical section on " + shard, [&] {
            return runOnShard(shard, "admin", criticalSectionCmd(state, database, false))
                .getStatus();
        });
    }
}

}  // namespace tessera::config
