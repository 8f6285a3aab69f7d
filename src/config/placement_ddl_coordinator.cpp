// The placement DDL coordinators' common part (placement_ddl_coordinator.h): the document and the
// critical sections on the shards.
#include "config/placement_ddl_coordinator.h"

#include "base/log.h"
#include "bson/bson_builder.h"
#include "config/config_server_impl.h"
#include "config/placement_ddl_util.h"

namespace tessera::config {

Status PlacementDdlCoordinator::saveState() { return save(_state.toBson()); }

Status PlacementDdlCoordinator::begin() {
    PlacementDdlState& state = _state;
    Status inserted = _config.local().insert("system.coordinators", state.toBson());
    if (inserted.is(ErrorCodes::DuplicateKey)) {
        return Status(ErrorCodes::ConflictingOperationInProgress,
                      "a " + state.type + " of " + state.target + " is already in progress");
    }
    TRY_STATUS(inserted);
    for (size_t i = 0; i < state.shards.size(); ++i) {
        auto entered = _config.runOnShard(state.shards[i], "admin",
                                          criticalSectionCmd(state, database(), /*enter=*/true));
        if (!entered.isOK()) {
            // Leave what was entered (every shard: exit is idempotent) and forget the attempt.
            Status left = end();
            if (!left.isOK()) logFailure(9130, "Could not undo a placement DDL's start", left);
            return entered.getStatus().withContext(state.type + " of " + state.target + ": ");
        }
    }
    return Status::OK();
}

Status PlacementDdlCoordinator::end() {
    PlacementDdlState& state = _state;
    for (const std::string& shard : state.shards) {
        auto exited =
            _config.runOnShard(shard, "admin", criticalSectionCmd(state, database(), false));
        if (!exited.isOK() && !exited.getStatus().is(ErrorCodes::ShardNotFound)) {
            // The document stays: recovery exits the section again.
            return exited.getStatus();
        }
    }
    state.phase = CoordinatorPhase::kCleaned;
    return forget();
}

void PlacementDdlCoordinator::abandon(const BestEffort& step) {
    const PlacementDdlState& state = _state;
    // A drop abandoned midway leaves the catalog as far as it got (a collection the routers no
    // longer see as sharded, copies on some shards): each step is idempotent, so the user's
    // drop, run again, finishes it.
    for (const std::string& shard : state.shards) {
        step("exit the critical section on " + shard, [&] {
            return _config.runOnShard(shard, "admin", criticalSectionCmd(state, database(), false))
                .getStatus();
        });
    }
}

}  // namespace tessera::config
