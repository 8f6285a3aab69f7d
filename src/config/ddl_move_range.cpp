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

}  // namespace

void MigrationSteps::done(int step) {
    auto now = std::chrono::steady_clock::now();
    millis[step - 1] = std::chrono::duration_cast<std::chrono::milliseconds>(now - last).count();
    last = now;
}

void MigrationSteps::criticalSectionEnded() {
    if (!criticalSectionStarted) return;
    criticalSectionMillis = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::steady_clock::now() - *criticalSectionStarted)
                                .count();
}

namespace {

// MongoDB's moveChunk.from details: {min, max, "step 1 of 6": ms, ..., to, from, note}, plus
// what was cloned and how long writes were held.
BsonObj migrationDetails(const MoveRangeState& s, std::string_view note,
                         std::string_view errmsg = {}, const MigrationSteps* steps = nullptr) {
    BsonBuilder b;
    b.appendObject("min", s.min).appendObject("max", s.max);
    if (steps) {
        for (int i = 0; i < 6; ++i) {
            if (steps->millis[i] >= 0) {
                b.appendInt64("step " + std::to_string(i + 1) + " of 6", steps->millis[i]);
            }
        }
        b.appendInt64("docsCloned", steps->docsCloned)
            .appendInt64("bytesCloned", steps->bytesCloned);
        if (steps->criticalSectionMillis >= 0) {
            b.appendInt64("criticalSectionMs", steps->criticalSectionMillis);
        }
    }
    b.appendString("from", s.from).appendString("to", s.to);
    if (!note.empty()) b.appendString("note", note);
    if (!errmsg.empty()) b.appendString("errmsg", errmsg);
    return b.obj();
}

BsonObj criticalSectionCmd(const MoveRangeState& s, bool enter, std::string_view block = "all") {
    BsonBuilder b;
    b.appendString("_shardsvrMigrationCriticalSection", s.ns).appendBool("enter", enter);
    if (enter) b.appendString("block", block);
    b.startObject("reason")
        .appendString("command", "moveRange")
        .appendObject("min", s.min)
        .appendObject("max", s.max)
        .appendString("to", s.to)
        .end();
    return b.obj();
}

// {<name>: ns, min, max, migrationId, committed?}
BsonObj migrationCmd(std::string_view name, const MoveRangeState& s,
                     std::optional<bool> committed = std::nullopt) {
    BsonBuilder b;
    b.appendString(name, s.ns)
        .appendObject("min", s.min)
        .appendObject("max", s.max)
        .appendString("migrationId", s.migrationId);
    if (committed) b.appendBool("committed", *committed);
    return b.obj();
}

void logFailure(int id, std::string_view msg, const Status& s) {
    log::warning("SHARDING", id, msg, "{\"error\":\"" + log::jsonEscape(s.toString()) + "\"}");
}

}  // namespace

Status ConfigServerImpl::saveState(const MoveRangeState& state) {
    coordinatorStep("moveRange");
    return _local.update("system.coordinators", idQuery(state.id), state.toBson(), true)
        .getStatus();
}

Status ConfigServerImpl::saveState(const MovePrimaryState& state) {
    coordinatorStep("movePrimary");
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
    Timestamp attempt = now();
    state.migrationId =
        state.id + "@" + std::to_string(attempt.secs()) + ":" + std::to_string(attempt.inc());
    Status inserted = _local.insert("system.coordinators", state.toBson());
    if (inserted.is(ErrorCodes::DuplicateKey)) {
        return Status(ErrorCodes::ConflictingOperationInProgress,
                      "a migration of this range is already in progress");
    }
    TRY_STATUS(inserted);
    logChange("moveChunk.start", ns, migrationDetails(state, ""));
    return runCoordinator(state.id, lock, [&] { return runMoveRange(state); });
}

Status ConfigServerImpl::runMoveRange(MoveRangeState state) {
    MigrationSteps steps;
    if (state.phase == CoordinatorPhase::kStart) {
        // 1. The donor observes the range's writes and opens the clone's snapshot.
        BsonBuilder start;
        start.appendString("_shardsvrMigrationStart", state.ns)
            .appendObject("min", state.min)
            .appendObject("max", state.max)
            .appendString("migrationId", state.migrationId)
            .appendString("toShard", state.to);
        auto started = runOnShard(state.from, "admin", start.obj());
        if (!started.isOK()) return abortMoveRange(state, started.getStatus());
        pauseWhileSet(moveRangeHangAfterDonorStart);
        state.phase = CoordinatorPhase::kCloning;
        TRY_STATUS(saveState(state));
        steps.done(1);
    }
    if (state.phase == CoordinatorPhase::kCloning) {
        // 2. The recipient clones and catches up while the donor serves the range.
        auto fromHost = shardHost(state.from);
        if (!fromHost.isOK()) return abortMoveRange(state, fromHost.getStatus());
        BsonBuilder receive;
        receive.appendString("_shardsvrReceiveRange", state.ns)
            .appendObject("min", state.min)
            .appendObject("max", state.max)
            .appendString("fromShard", state.from)
            .appendString("fromHost", fromHost.getValue())
            .appendString("migrationId", state.migrationId)
            .appendDouble("p99BudgetFactor", migrationBudgetFactor());
        auto cloned = runOnShard(state.to, "admin", receive.obj(), kCloneTimeout);
        if (!cloned.isOK()) return abortMoveRange(state, cloned.getStatus());
        steps.docsCloned = cloned.getValue()["docsCloned"].numberLong();
        steps.bytesCloned = cloned.getValue()["bytesCloned"].numberLong();
        steps.done(2);
        // 3. The donor holds the range's writes (reads continue) for the last changes.
        steps.criticalSectionStarted = std::chrono::steady_clock::now();
        auto entered = runOnShard(state.from, "admin", criticalSectionCmd(state, true, "writes"));
        if (!entered.isOK()) return abortMoveRange(state, entered.getStatus());
        state.phase = CoordinatorPhase::kCriticalSection;
        TRY_STATUS(saveState(state));
    }
    if (state.phase == CoordinatorPhase::kCriticalSection) {
        if (!steps.criticalSectionStarted) {
            steps.criticalSectionStarted = std::chrono::steady_clock::now();
        }
        auto caught =
            runOnShard(state.to, "admin", migrationCmd("_shardsvrReceiveRangeCatchUp", state));
        if (!caught.isOK()) return abortMoveRange(state, caught.getStatus());
        pauseWhileSet(moveRangeHangInCriticalSection);
        BsonBuilder donation;
        donation.appendString("_shardsvrMigrationRecordDonation", state.ns)
            .appendObject("min", state.min)
            .appendObject("max", state.max)
            .appendString("migrationId", state.migrationId)
            .appendInt64("docs", caught.getValue()["docs"].numberLong())
            .appendInt64("bytes", caught.getValue()["bytes"].numberLong());
        auto recorded = runOnShard(state.from, "admin", donation.obj());
        if (!recorded.isOK()) return abortMoveRange(state, recorded.getStatus());
        // Reads wait too from here until the donor knows the commit: none may read the donor's
        // copy once the recipient may take writes.
        auto all = runOnShard(state.from, "admin", criticalSectionCmd(state, true, "all"));
        if (!all.isOK()) return abortMoveRange(state, all.getStatus());
        steps.done(3);
        pauseWhileSet(moveRangeHangBeforeCommit);
        if (moveRangeFailBeforeCommit.shouldFail()) {
            return abortMoveRange(
                state, Status(ErrorCodes::OperationFailed, "Failpoint moveRangeFailBeforeCommit"));
        }
        // 4. The commit.
        Status committed = commitMoveRange(state);
        if (!committed.isOK()) {
            auto done = moveRangeCommitted(state);
            if (!done.isOK() || !done.getValue()) return abortMoveRange(state, committed);
        }
        state.phase = CoordinatorPhase::kCommitted;
        TRY_STATUS(saveState(state));
        steps.done(4);
        logChange("moveChunk.commit", state.ns, migrationDetails(state, ""));
        pauseWhileSet(moveRangeHangAfterCommit);
    }
    return finishMoveRange(state, &steps);
}

double ConfigServerImpl::migrationBudgetFactor() {
    auto doc = _local.findOne("settings", idQuery("migration"));
    if (doc.isOK() && doc.getValue()) {
        bson::BsonElement f = (*doc.getValue())["foregroundP99Factor"];
        if (f.isNumber() && f.numberDouble() >= 1) return f.numberDouble();
    }
    return 3.0;
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

Status ConfigServerImpl::finishMoveRange(MoveRangeState& state, MigrationSteps* steps) {
    MigrationSteps none;
    if (!steps) steps = &none;
    // 5. Both shards learn the commit; the donor leaves its critical section (reloading first).
    flushRoutingTable({state.from, state.to}, state.ns);
    TRY_STATUS(runOnShard(state.to, "admin", migrationCmd("_shardsvrReceiveRangeEnd", state, true))
                   .getStatus());
    TRY_STATUS(runOnShard(state.from, "admin", criticalSectionCmd(state, false)).getStatus());
    steps->criticalSectionEnded();
    steps->done(5);
    // 6. The donor deletes the range at once (waited for with waitForDelete).
    BsonBuilder end;
    for (bson::BsonElement e : migrationCmd("_shardsvrMigrationEnd", state, true)) {
        end.appendElement(e);
    }
    end.appendBool("waitForDelete", state.waitForDelete);
    auto ended = runOnShard(state.from, "admin", end.obj(), kCloneTimeout);
    if (!ended.isOK()) {
        // The range deleter finds the range anyway (it is tracked); the move itself succeeded.
        logFailure(9110, "Failed to end the migration on the donor", ended.getStatus());
    }
    steps->done(6);
    logChange("moveChunk.from", state.ns, migrationDetails(state, "success", {}, steps));
    log::info("SHARDING", 9115, "Migration finished",
              "{\"ns\":\"" + log::jsonEscape(state.ns) +
                  "\",\"details\":" + migrationDetails(state, "success", {}, steps).toJson() + "}");
    state.phase = CoordinatorPhase::kCleaned;
    TRY_STATUS(saveState(state));
    return _local.remove("system.coordinators", idQuery(state.id), false).getStatus();
}

Status ConfigServerImpl::abortMoveRange(MoveRangeState& state, const Status& cause) {
    log::info("SHARDING", 9111, "Aborting migration",
              "{\"id\":\"" + log::jsonEscape(state.id) + "\",\"cause\":\"" +
                  log::jsonEscape(cause.toString()) + "\"}");
    if (state.phase != CoordinatorPhase::kStart) {
        auto ended =
            runOnShard(state.to, "admin", migrationCmd("_shardsvrReceiveRangeEnd", state, false));
        if (!ended.isOK()) {
            // Keep the coordinator document: recovery retries the abort.
            logFailure(9112, "Recipient cleanup failed", ended.getStatus());
            return ended.getStatus().withContext("migration aborted (" + cause.reason() +
                                                 "), then: ");
        }
    }
    // Before the section's exit: the donation recorded for the commit is forgotten while the
    // range's writes are still held.
    auto ended =
        runOnShard(state.from, "admin", migrationCmd("_shardsvrMigrationEnd", state, false));
    Status exited = ended.getStatus();
    if (exited.isOK()) {
        exited = runOnShard(state.from, "admin", criticalSectionCmd(state, false)).getStatus();
    }
    if (!exited.isOK()) {
        // Keep the coordinator document: recovery retries the abort.
        logFailure(9113, "Donor failed to end the migration", exited);
        return exited.withContext("migration aborted (" + cause.reason() + "), then: ");
    }
    logChange("moveChunk.from", state.ns, migrationDetails(state, "aborted", cause.reason()));
    Status removed = _local.remove("system.coordinators", idQuery(state.id), false).getStatus();
    if (!removed.isOK()) logFailure(9114, "Failed to remove coordinator document", removed);
    return cause;
}

void ConfigServerImpl::abandonMoveRange(const BsonObj& doc, const BestEffort& step) {
    auto parsed = MoveRangeState::parse(doc);
    if (!parsed.isOK()) return;
    MoveRangeState state = std::move(parsed).getValue();
    // The catalog decides which copy is owned; a copy is deleted only when that is known.
    auto committed = moveRangeCommitted(state);
    if (committed.isOK() && committed.getValue()) {
        step("flush both shards", [&] {
            flushRoutingTable({state.from, state.to}, state.ns);
            return Status::OK();
        });
        step("end the migration on the recipient", [&] {
            return runOnShard(state.to, "admin",
                              migrationCmd("_shardsvrReceiveRangeEnd", state, true))
                .getStatus();
        });
    } else if (committed.isOK()) {
        step("end the migration on the recipient (aborted)", [&] {
            return runOnShard(state.to, "admin",
                              migrationCmd("_shardsvrReceiveRangeEnd", state, false))
                .getStatus();
        });
    }
    step("end the migration on the donor", [&] {
        const bool done = committed.isOK() && committed.getValue();
        return runOnShard(state.from, "admin", migrationCmd("_shardsvrMigrationEnd", state, done))
            .getStatus();
    });
    step("exit the donor's critical section", [&] {
        return runOnShard(state.from, "admin", criticalSectionCmd(state, false)).getStatus();
    });
}

}  // namespace tessera::config
