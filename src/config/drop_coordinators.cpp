// The dropCollection and dropDatabase coordinators (placement_ddl_coordinator.h): every step is
// idempotent, so a resumed drop rolls forward — the caller asked for the drop.
#include "bson/bson_builder.h"
#include "config/config_server_impl.h"
#include "config/placement_ddl_coordinator.h"
#include "config/placement_ddl_util.h"
#include "config/shard_requests.h"

namespace tessera::config {

TESSERA_FAIL_POINT_DEFINE(dropCollectionHangAfterCatalogDelete);

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

DropCollectionCoordinator::DropCollectionCoordinator(ConfigServerImpl& config,
                                                     const std::string& ns)
    : PlacementDdlCoordinator(config, PlacementDdlState::start("dropCollection", ns, {})) {}

Status DropCollectionCoordinator::run() {
    const std::string ns = _state.target;
    auto [db, collName] = splitNs(ns);
    _dropped = false;
    ASSIGN_OR_RETURN(auto collDoc, _config.local().findOne("collections", oneField("_id", ns)));
    if (collDoc) {
        ASSIGN_OR_RETURN(std::vector<std::string> shards, _config.allShardIds());
        _state.shards = std::move(shards);
        TRY_STATUS(begin());
        TRY_STATUS(dropSharded());
        _config.logChange("dropCollection", ns, BsonView());
        _dropped = true;
        return Status::OK();
    }
    // Unsharded: only the primary holds it; a concurrent write recreates it there.
    ASSIGN_OR_RETURN(auto dbDoc, _config.local().findOne("databases", oneField("_id", db)));
    if (!dbDoc) return Status::OK();
    auto r = _config.runOnShard(std::string((*dbDoc)["primary"].stringValue()), db,
                                oneField("drop", collName));
    if (r.isOK()) {
        _dropped = true;
        return Status::OK();
    }
    if (r.getStatus().is(ErrorCodes::NamespaceNotFound)) return Status::OK();
    return r.getStatus();
}

Status DropCollectionCoordinator::dropSharded() {
    PlacementDdlState& state = _state;
    auto [db, collName] = splitNs(state.target);
    // Idempotent steps, so that recovery can roll forward from any point: the catalog entries
    // go first (routers and shards then see the collection unsharded), then every shard's copy.
    ASSIGN_OR_RETURN(auto collDoc,
                     _config.local().findOne("collections", oneField("_id", state.target)));
    if (collDoc) {
        ASSIGN_OR_RETURN(CollectionRecord coll, parseCollectionRecord(*collDoc));
        BsonBuilder q;
        appendUuid(q, "uuid", coll.uuid);
        TRY_STATUS(_config.local().remove("chunks", q.obj()).getStatus());
        TRY_STATUS(
            _config.local().remove("collections", oneField("_id", state.target)).getStatus());
        TRY_STATUS(_config.local().remove("tags", oneField("ns", state.target)).getStatus());
    }
    _config.pauseWhileSet(dropCollectionHangAfterCatalogDelete);
    for (const std::string& shard : state.shards) {
        auto r = _config.runOnShard(shard, db, oneField("drop", collName));
        if (!r.isOK() && !r.getStatus().is(ErrorCodes::NamespaceNotFound)) return r.getStatus();
    }
    if (state.phase == CoordinatorPhase::kStart) {
        state.phase = CoordinatorPhase::kCommitted;
        TRY_STATUS(saveState());
    }
    _config.flushRoutingTable(state.shards, state.target);
    return end();
}

StatusWith<CoordinatorOutcome> DropCollectionCoordinator::recover() {
    TRY_STATUS(dropSharded());
    return CoordinatorOutcome::kFinished;
}

DropDatabaseCoordinator::DropDatabaseCoordinator(ConfigServerImpl& config, const std::string& db,
                                                 std::vector<std::string> shards)
    : PlacementDdlCoordinator(config,
                              PlacementDdlState::start("dropDatabase", db, std::move(shards))) {}

Status DropDatabaseCoordinator::run() {
    TRY_STATUS(begin());
    return steps();
}

StatusWith<CoordinatorOutcome> DropDatabaseCoordinator::recover() {
    TRY_STATUS(steps());
    return CoordinatorOutcome::kFinished;
}

Status DropDatabaseCoordinator::steps() {
    PlacementDdlState& state = _state;
    const std::string& db = state.target;
    std::string escaped;
    for (char c : db) {
        if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) escaped += '\\';
        escaped += c;
    }
    BsonBuilder q;
    q.appendRegex("_id", "^" + escaped + "\\.", "");
    ASSIGN_OR_RETURN(std::vector<BsonObj> colls, _config.local().find("collections", q.obj()));
    for (const BsonObj& c : colls) {
        DropCollectionCoordinator drop(_config, std::string(c["_id"].stringValue()));
        TRY_STATUS(drop.run());
    }
    BsonBuilder cmd;
    cmd.appendInt32("dropDatabase", 1);
    BsonObj dropCmd = cmd.obj();
    for (const std::string& shard : state.shards) {
        TRY_STATUS(_config.runOnShard(shard, db, dropCmd).getStatus());
    }
    TRY_STATUS(_config.local().remove("databases", oneField("_id", db)).getStatus());
    if (state.phase == CoordinatorPhase::kStart) {
        state.phase = CoordinatorPhase::kCommitted;
        TRY_STATUS(saveState());
    }
    _config.flushDatabase(state.shards, db);
    return end();
}

}  // namespace tessera::config
