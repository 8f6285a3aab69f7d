// The shardCollection coordinator (placement_ddl_coordinator.h).
#include <algorithm>
#include <set>

#include "base/wall_clock.h"
#include "bson/bson_builder.h"
#include "config/chunk_ops.h"
#include "config/config_server_impl.h"
#include "config/placement_ddl_coordinator.h"
#include "config/placement_ddl_util.h"
#include "config/shard_requests.h"
#include "placement/split_policy.h"

namespace tessera::config {

TESSERA_FAIL_POINT_DEFINE(shardCollectionHangBeforeCommit);
TESSERA_FAIL_POINT_DEFINE(shardCollectionHangAfterCommit);

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

// What shardCollection decided, before it is committed.
struct ShardCollectionCoordinator::Plan {
    CollectionRecord coll;
    std::vector<ChunkRecord> chunks;
};

ShardCollectionCoordinator::ShardCollectionCoordinator(ConfigServerImpl& config,
                                                       ShardCollectionRequest request)
    : PlacementDdlCoordinator(
          config, PlacementDdlState::start("shardCollection", request.ns, {request.primary})),
      _request(std::move(request)) {}

Status ShardCollectionCoordinator::run() {
    invariant(_request.has_value());
    const ShardCollectionRequest& req = *_request;
    auto [db, collName] = splitNs(req.ns);
    ASSIGN_OR_RETURN(auto existing,
                     _config.local().findOne("collections", oneField("_id", req.ns)));
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

    // From here until the commit is visible, writes of ns on the primary wait: the emptiness
    // check and the initial chunks decide where documents go.
    TRY_STATUS(begin());
    auto decided = decide();
    if (!decided.isOK()) {
        Status aborted = abort();
        if (!aborted.isOK()) logFailure(9131, "shardCollection abort incomplete", aborted);
        return decided.getStatus();
    }
    _config.pauseWhileSet(shardCollectionHangBeforeCommit);

    // Commit: chunks first, then the collection entry that makes them visible.
    const Plan& plan = decided.getValue();
    Status committed = Status::OK();
    for (const ChunkRecord& c : plan.chunks) {
        committed = _config.writeChunk(c, plan.coll.uuid, /*insert=*/true);
        if (!committed.isOK()) break;
    }
    if (committed.isOK()) {
        committed =
            _config.local()
                .update("collections", oneField("_id", req.ns), makeCollectionDoc(plan.coll), true)
                .getStatus();
    }
    if (!committed.isOK()) {
        BsonBuilder q;
        appendUuid(q, "uuid", plan.coll.uuid);
        (void)_config.local().remove("chunks", q.obj());
        Status aborted = abort();
        if (!aborted.isOK()) logFailure(9131, "shardCollection abort incomplete", aborted);
        return committed;
    }
    _state.phase = CoordinatorPhase::kCommitted;
    TRY_STATUS(saveState());
    _config.pauseWhileSet(shardCollectionHangAfterCommit);
    TRY_STATUS(finish());

    BsonBuilder details;
    details.appendObject("shardKey", req.pattern.toBson())
        .appendString("collection", req.ns)
        .appendString("primary", req.primary)
        .appendInt64("numChunks", static_cast<int64_t>(plan.chunks.size()))
        .appendBool("unique", req.unique);
    _config.logChange("shardCollection.end", req.ns, details.obj());
    return Status::OK();
}

StatusWith<ShardCollectionCoordinator::Plan> ShardCollectionCoordinator::decide() {
    const ShardCollectionRequest& req = *_request;
    PlacementDdlState& state = _state;
    auto [db, collName] = splitNs(req.ns);
    const placement::ShardKeyPattern& pattern = req.pattern;
    const std::string& primary = req.primary;
    ASSIGN_OR_RETURN(std::vector<ShardEntry> shards, _config.allShards());

    // 1. What exists on the primary: options and indexes (of the collection created empty if
    //    missing). Nothing else is changed before they are found compatible.
    BsonBuilder lc;
    lc.appendInt32("listCollections", 1);
    lc.startObject("filter").appendString("name", collName).end();
    ASSIGN_OR_RETURN(BsonObj lcReply, _config.runOnShard(primary, db, lc.obj()));
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
        auto created = _config.runOnShard(primary, db, oneField("create", collName));
        if (!created.isOK() && !created.getStatus().is(ErrorCodes::NamespaceExists)) {
            return created.getStatus();
        }
    }
    ASSIGN_OR_RETURN(BsonObj listReply,
                     _config.runOnShard(primary, db, oneField("listIndexes", collName)));
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
    TRY_STATUS(_config.runOnShard(primary, db, clusterCollectionCmd(collName, pattern.toBson()))
                   .getStatus());
    ASSIGN_OR_RETURN(BsonObj countReply,
                     _config.runOnShard(primary, db, oneField("count", collName)));
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
        TRY_STATUS(
            _config.runOnShard(primary, db, createIndexesCmd(collName, {newSpec})).getStatus());
        specs.push_back(newSpec);
    }

    // 3. The initial chunks: an empty collection with a hashed prefix is spread over every
    //    shard; otherwise one chunk on the primary (which holds every document). Decided here,
    //    inside the critical section, so no insert can land between the count and the commit.
    Plan plan;
    CollectionRecord& coll = plan.coll;
    coll.ns = req.ns;
    coll.gen = {bson::ObjectId::generate(), _config.now()};
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
    Timestamp validAfter = _config.now();
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
        TRY_STATUS(saveState());
        auto created = _config.runOnShard(shard, db, createLikeCmd(collName, options));
        if (!created.isOK() && !created.getStatus().is(ErrorCodes::NamespaceExists)) {
            return created.getStatus();
        }
        TRY_STATUS(_config.runOnShard(shard, db, clusterCollectionCmd(collName, pattern.toBson()))
                       .getStatus());
        if (!otherSpecs.empty()) {
            TRY_STATUS(
                _config.runOnShard(shard, db, createIndexesCmd(collName, otherSpecs)).getStatus());
        }
    }
    return plan;
}

Status ShardCollectionCoordinator::finish() {
    const PlacementDdlState& state = _state;
    // Every shard learns the placement before the primary releases the writes it held, so a
    // released write is checked against the committed placement (StaleConfig, then routed).
    ASSIGN_OR_RETURN(std::vector<std::string> all, _config.allShardIds());
    _config.flushRoutingTable(all, state.target);
    return end();
}

Status ShardCollectionCoordinator::abort() {
    const PlacementDdlState& state = _state;
    auto [db, collName] = splitNs(state.target);
    for (const std::string& shard : state.created) {
        // Only an empty copy is dropped: these shards got the collection from this attempt, and
        // nothing could write to them before a commit that did not happen.
        auto counted = _config.runOnShard(shard, db, oneField("count", collName));
        if (counted.isOK() && counted.getValue()["n"].numberLong() == 0) {
            auto dropped = _config.runOnShard(shard, db, oneField("drop", collName));
            if (!dropped.isOK() && !dropped.getStatus().is(ErrorCodes::NamespaceNotFound)) {
                logFailure(9132, "shardCollection abort: could not drop a copy",
                           dropped.getStatus());
            }
        }
    }
    return end();
}

StatusWith<CoordinatorOutcome> ShardCollectionCoordinator::recover() {
    ASSIGN_OR_RETURN(auto coll,
                     _config.local().findOne("collections", oneField("_id", _state.target)));
    const bool committed = coll && !(*coll)["dropped"].trueValue();
    switch (recoveryAction(_state.phase, committed)) {
        case RecoveryAction::kAbort:
            TRY_STATUS(abort());
            return CoordinatorOutcome::kAborted;
        case RecoveryAction::kFinishCommit:
            TRY_STATUS(finish());
            return CoordinatorOutcome::kFinished;
        case RecoveryAction::kForget:
            TRY_STATUS(end());
            return CoordinatorOutcome::kFinished;
    }
    return CoordinatorOutcome::kFinished;
}

void ShardCollectionCoordinator::abandon(const BestEffort& step) {
    const PlacementDdlState& state = _state;
    if (state.type == "shardCollection") {
        // Not committed: the empty copies it made go (as an abort); committed: they hold chunks.
        step("shardCollection: drop its empty copies unless committed", [&]() -> Status {
            ASSIGN_OR_RETURN(auto coll,
                             _config.local().findOne("collections", oneField("_id", state.target)));
            if (coll && !(*coll)["dropped"].trueValue()) return Status::OK();
            auto [db, collName] = splitNs(state.target);
            for (const std::string& shard : state.created) {
                auto counted = _config.runOnShard(shard, db, oneField("count", collName));
                if (counted.isOK() && counted.getValue()["n"].numberLong() == 0) {
                    (void)_config.runOnShard(shard, db, oneField("drop", collName));
                }
            }
            return Status::OK();
        });
    }
    PlacementDdlCoordinator::abandon(step);
}

}  // namespace tessera::config
