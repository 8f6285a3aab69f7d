// The migration coordinator (src/cluster/README.md "Migration") and the movePrimary coordinator,
// both persisted in config.system.coordinators and resumed at startup.
#include "base/log.h"
#include "bson/bson_builder.h"
#include "config/chunk_ops.h"
#include "config/config_server_impl.h"

namespace tessera::config {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

namespace {

constexpr std::chrono::milliseconds kCloneTimeout{30 * 60 * 1000};

BsonObj idQuery(std::string_view id) {
    BsonBuilder b;
    b.appendString("_id", id);
    return b.obj();
}

BsonObj migrationDetails(const MoveRangeState& s, std::string_view note,
                         std::string_view errmsg = {}) {
    BsonBuilder b;
    b.appendObject("min", s.min)
        .appendObject("max", s.max)
        .appendString("from", s.from)
        .appendString("to", s.to);
    if (!note.empty()) b.appendString("note", note);
    if (!errmsg.empty()) b.appendString("errmsg", errmsg);
    return b.obj();
}

BsonObj criticalSectionCmd(const MoveRangeState& s, bool enter) {
    BsonBuilder b;
    b.appendString("_shardsvrMigrationCriticalSection", s.ns).appendBool("enter", enter);
    b.startObject("reason")
        .appendString("command", "moveRange")
        .appendObject("min", s.min)
        .appendObject("max", s.max)
        .appendString("to", s.to)
        .end();
    return b.obj();
}

BsonObj rangeCmd(std::string_view name, const MoveRangeState& s) {
    BsonBuilder b;
    b.appendString(name, s.ns).appendObject("min", s.min).appendObject("max", s.max);
    return b.obj();
}

void logFailure(int id, std::string_view msg, const Status& s) {
    log::warning("SHARDING", id, msg, "{\"error\":\"" + log::jsonEscape(s.toString()) + "\"}");
}

}  // namespace

Status ConfigServerImpl::saveState(const MoveRangeState& state) {
    return _local.update("system.coordinators", idQuery(state.id), state.toBson(), true)
        .getStatus();
}

Status ConfigServerImpl::saveState(const MovePrimaryState& state) {
    return _local.update("system.coordinators", idQuery(state.id), state.toBson(), true)
        .getStatus();
}

Status ConfigServerImpl::moveRange(const std::string& ns, std::optional<BsonObj> min,
                                   std::optional<BsonObj> max, const std::string& toShard,
                                   bool waitForDelete) {
    if (!min && !max) return Status(ErrorCodes::BadValue, "moveRange needs min or max");
    ASSIGN_OR_RETURN(DdlLockManager::Guard lock, _ddlLocks.lockCollection(ns, "moveRange " + ns));
    ASSIGN_OR_RETURN(ShardedCollection coll, loadCollection(ns));
    TRY_STATUS(shardHost(toShard).getStatus());
    const auto& pattern = coll.pattern;
    if (min) TRY_STATUS(pattern.validateKey(*min));
    if (max) TRY_STATUS(pattern.validateKey(*max));
    if (min && max && pattern.encodeKey(*min) >= pattern.encodeKey(*max)) {
        return Status(ErrorCodes::BadValue, "moveRange: min must be lower than max");
    }

    // Find the chunk to move; a range strictly inside a chunk is first split off.
    size_t index = 0;
    if (min) {
        auto found = findChunkContaining(pattern, coll.chunks, *min);
        if (!found) return Status(ErrorCodes::InternalError, "no chunk holds " + min->toJson());
        index = *found;
        if (pattern.encodeKey(coll.chunks[index].min) != pattern.encodeKey(*min)) {
            TRY_STATUS(splitAt(coll, index, {*min}));
            index = *findChunkContaining(pattern, coll.chunks, *min);
        }
        if (max) {
            std::string chunkMax = pattern.encodeKey(coll.chunks[index].max);
            std::string wanted = pattern.encodeKey(*max);
            if (wanted > chunkMax) {
                return Status(ErrorCodes::InvalidOptions, "moveRange: the range [" + min->toJson() +
                                                              ", " + max->toJson() +
                                                              ") spans more than one chunk");
            }
            if (wanted < chunkMax) TRY_STATUS(splitAt(coll, index, {*max}));
            index = *findChunkContaining(pattern, coll.chunks, *min);
        }
    } else {
        std::string wanted = pattern.encodeKey(*max);
        std::optional<size_t> found;
        for (size_t i = 0; i < coll.chunks.size(); ++i) {
            if (pattern.encodeKey(coll.chunks[i].min) < wanted &&
                wanted <= pattern.encodeKey(coll.chunks[i].max)) {
                found = i;
                break;
            }
        }
        if (!found) return Status(ErrorCodes::InvalidOptions, "no chunk ends at " + max->toJson());
        index = *found;
        if (pattern.encodeKey(coll.chunks[index].max) != wanted) {
            TRY_STATUS(splitAt(coll, index, {*max}));
        }
    }
    const ChunkRecord& chunk = coll.chunks[index];
    if (chunk.shard == toShard) return Status::OK();

    MoveRangeState state;
    state.id = moveRangeCoordinatorId(ns, chunk.min);
    state.ns = ns;
    state.min = chunk.min;
    state.max = chunk.max;
    state.from = chunk.shard;
    state.to = toShard;
    state.waitForDelete = waitForDelete;
    Status inserted = _local.insert("system.coordinators", state.toBson());
    if (inserted.is(ErrorCodes::DuplicateKey)) {
        return Status(ErrorCodes::ConflictingOperationInProgress,
                      "a migration of this range is already in progress");
    }
    TRY_STATUS(inserted);
    logChange("moveChunk.start", ns, migrationDetails(state, ""));
    return runMoveRange(std::move(state));
}

Status ConfigServerImpl::runMoveRange(MoveRangeState state) {
    if (state.phase == CoordinatorPhase::kStart) {
        auto entered = runOnShard(state.from, "admin", criticalSectionCmd(state, true));
        if (!entered.isOK()) return abortMoveRange(state, entered.getStatus());
        pauseWhileSet(moveRangeHangAfterCriticalSection);
        state.phase = CoordinatorPhase::kCloning;
        TRY_STATUS(saveState(state));
    }
    if (state.phase == CoordinatorPhase::kCloning) {
        auto fromHost = shardHost(state.from);
        if (!fromHost.isOK()) return abortMoveRange(state, fromHost.getStatus());
        BsonBuilder receive;
        receive.appendString("_shardsvrReceiveRange", state.ns)
            .appendObject("min", state.min)
            .appendObject("max", state.max)
            .appendString("fromShard", state.from)
            .appendString("fromHost", fromHost.getValue());
        auto cloned = runOnShard(state.to, "admin", receive.obj(), kCloneTimeout);
        if (!cloned.isOK()) return abortMoveRange(state, cloned.getStatus());
        pauseWhileSet(moveRangeHangBeforeCommit);
        if (moveRangeFailBeforeCommit.shouldFail()) {
            return abortMoveRange(
                state, Status(ErrorCodes::OperationFailed, "Failpoint moveRangeFailBeforeCommit"));
        }
        Status committed = commitMoveRange(state);
        if (!committed.isOK()) {
            auto done = moveRangeCommitted(state);
            if (!done.isOK() || !done.getValue()) return abortMoveRange(state, committed);
        }
        state.phase = CoordinatorPhase::kCommitted;
        TRY_STATUS(saveState(state));
        logChange("moveChunk.commit", state.ns, migrationDetails(state, ""));
        pauseWhileSet(moveRangeHangAfterCommit);
    }
    return finishMoveRange(state);
}

Status ConfigServerImpl::commitMoveRange(const MoveRangeState& state) {
    ASSIGN_OR_RETURN(ShardedCollection coll, loadCollection(state.ns));
    auto index = findChunkWithBounds(coll.chunks, state.min, state.max);
    if (!index) {
        return Status(ErrorCodes::ConflictingOperationInProgress,
                      "the chunk being migrated changed: [" + state.min.toJson() + ", " +
                          state.max.toJson() + ") not found");
    }
    if (coll.chunks[*index].shard == state.to) return Status::OK();
    if (coll.chunks[*index].shard != state.from) {
        return Status(ErrorCodes::ConflictingOperationInProgress,
                      "the chunk being migrated is on " + coll.chunks[*index].shard +
                          ", not on the donor " + state.from);
    }
    MoveResult result = computeMoveCommit(coll.chunks, *index, state.to, now());
    TRY_STATUS(writeChunk(result.moved, coll.coll.uuid, false));
    if (result.control) TRY_STATUS(writeChunk(*result.control, coll.coll.uuid, false));
    return Status::OK();
}

StatusWith<bool> ConfigServerImpl::moveRangeCommitted(const MoveRangeState& state) {
    auto coll = loadCollection(state.ns);
    if (!coll.isOK()) {
        if (coll.getStatus().is(ErrorCodes::NamespaceNotSharded)) return false;
        return coll.getStatus();
    }
    auto index = findChunkWithBounds(coll.getValue().chunks, state.min, state.max);
    return index && coll.getValue().chunks[*index].shard == state.to;
}

Status ConfigServerImpl::finishMoveRange(MoveRangeState& state) {
    flushRoutingTable({state.from, state.to}, state.ns);
    TRY_STATUS(runOnShard(state.from, "admin", criticalSectionCmd(state, false)).getStatus());
    auto deleted = runOnShard(state.from, "admin", rangeCmd("_shardsvrDeleteRange", state));
    if (!deleted.isOK()) {
        // Orphans stay invisible (ownership filter); the move itself succeeded.
        logFailure(9110, "Failed to delete the donated range", deleted.getStatus());
    }
    logChange("moveChunk.from", state.ns, migrationDetails(state, "success"));
    state.phase = CoordinatorPhase::kCleaned;
    TRY_STATUS(saveState(state));
    return _local.remove("system.coordinators", idQuery(state.id), false).getStatus();
}

Status ConfigServerImpl::abortMoveRange(MoveRangeState& state, const Status& cause) {
    log::info("SHARDING", 9111, "Aborting migration",
              "{\"id\":\"" + log::jsonEscape(state.id) + "\",\"cause\":\"" +
                  log::jsonEscape(cause.toString()) + "\"}");
    if (state.phase != CoordinatorPhase::kStart) {
        auto deleted = runOnShard(state.to, "admin", rangeCmd("_shardsvrDeleteRange", state));
        if (!deleted.isOK()) logFailure(9112, "Recipient cleanup failed", deleted.getStatus());
    }
    auto exited = runOnShard(state.from, "admin", criticalSectionCmd(state, false));
    if (!exited.isOK()) {
        // Keep the coordinator document: recovery retries the abort.
        logFailure(9113, "Donor failed to exit the critical section", exited.getStatus());
        return exited.getStatus().withContext("migration aborted (" + cause.reason() + "), then: ");
    }
    logChange("moveChunk.from", state.ns, migrationDetails(state, "aborted", cause.reason()));
    Status removed = _local.remove("system.coordinators", idQuery(state.id), false).getStatus();
    if (!removed.isOK()) logFailure(9114, "Failed to remove coordinator document", removed);
    return cause;
}

}  // namespace tessera::config
