// The migration coordinator (docs/protocols/migration.md):
// one range of a sharded collection from its donor to its recipient, six steps, persisted in
// config.system.coordinators.
#include "config/move_range_coordinator.h"

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

Status MoveRangeCoordinator::saveState() { return save(_state.toBson()); }

Status MoveRangeCoordinator::run() {
    MoveRangeState& state = _state;
    if (state.phase == CoordinatorPhase::kStart) {
        _config.logChange("moveChunk.start", state.ns, migrationDetails(state, ""));
    }
    MigrationSteps steps;
    if (state.phase == CoordinatorPhase::kStart) {
        // 1. The donor observes the range's writes and opens the clone's snapshot.
        BsonBuilder start;
        start.appendString("_shardsvrMigrationStart", state.ns)
            .appendObject("min", state.min)
            .appendObject("max", state.max)
            .appendString("migrationId", state.migrationId)
            .appendString("toShard", state.to);
        auto started = _config.runOnShard(state.from, "admin", start.obj());
        if (!started.isOK()) return abort(started.getStatus());
        _config.pauseWhileSet(moveRangeHangAfterDonorStart);
        state.phase = CoordinatorPhase::kCloning;
        TRY_STATUS(saveState());
        steps.done(1);
    }
    if (state.phase == CoordinatorPhase::kCloning) {
        // 2. The recipient clones and catches up while the donor serves the range.
        auto fromHost = _config.shardHost(state.from);
        if (!fromHost.isOK()) return abort(fromHost.getStatus());
        BsonBuilder receive;
        receive.appendString("_shardsvrReceiveRange", state.ns)
            .appendObject("min", state.min)
            .appendObject("max", state.max)
            .appendString("fromShard", state.from)
            .appendString("fromHost", fromHost.getValue())
            .appendString("migrationId", state.migrationId)
            .appendDouble("p99BudgetFactor", budgetFactor());
        auto cloned = _config.runOnShard(state.to, "admin", receive.obj(), kCloneTimeout);
        if (!cloned.isOK()) return abort(cloned.getStatus());
        steps.docsCloned = cloned.getValue()["docsCloned"].numberLong();
        steps.bytesCloned = cloned.getValue()["bytesCloned"].numberLong();
        steps.done(2);
        // 3. The donor holds the range's writes (reads continue) for the last changes.
        steps.criticalSectionStarted = std::chrono::steady_clock::now();
        auto entered =
            _config.runOnShard(state.from, "admin", criticalSectionCmd(state, true, "writes"));
        if (!entered.isOK()) return abort(entered.getStatus());
        state.phase = CoordinatorPhase::kCriticalSection;
        TRY_STATUS(saveState());
    }
    if (state.phase == CoordinatorPhase::kCriticalSection) {
        if (!steps.criticalSectionStarted) {
            steps.criticalSectionStarted = std::chrono::steady_clock::now();
        }
        auto caught = _config.runOnShard(state.to, "admin",
                                         migrationCmd("_shardsvrReceiveRangeCatchUp", state));
        if (!caught.isOK()) return abort(caught.getStatus());
        _config.pauseWhileSet(moveRangeHangInCriticalSection);
        BsonBuilder donation;
        donation.appendString("_shardsvrMigrationRecordDonation", state.ns)
            .appendObject("min", state.min)
            .appendObject("max", state.max)
            .appendString("migrationId", state.migrationId)
            .appendInt64("docs", caught.getValue()["docs"].numberLong())
            .appendInt64("bytes", caught.getValue()["bytes"].numberLong());
        auto recorded = _config.runOnShard(state.from, "admin", donation.obj());
        if (!recorded.isOK()) return abort(recorded.getStatus());
        // Reads wait too from here until the donor knows the commit: none may read the donor's
        // copy once the recipient may take writes.
        auto all = _config.runOnShard(state.from, "admin", criticalSectionCmd(state, true, "all"));
        if (!all.isOK()) return abort(all.getStatus());
        steps.done(3);
        _config.pauseWhileSet(moveRangeHangBeforeCommit);
        if (moveRangeFailBeforeCommit.shouldFail()) {
            return abort(
                Status(ErrorCodes::OperationFailed, "Failpoint moveRangeFailBeforeCommit"));
        }
        // 4. The commit.
        Status committed = commit();
        if (!committed.isOK()) {
            auto done = isCommitted();
            if (!done.isOK() || !done.getValue()) return abort(committed);
        }
        state.phase = CoordinatorPhase::kCommitted;
        TRY_STATUS(saveState());
        steps.done(4);
        _config.logChange("moveChunk.commit", state.ns, migrationDetails(state, ""));
        _config.pauseWhileSet(moveRangeHangAfterCommit);
    }
    return finish(&steps);
}

double MoveRangeCoordinator::budgetFactor() {
    auto doc = _config.local().findOne("settings", idQuery("migration"));
    if (doc.isOK() && doc.getValue()) {
        bson::BsonElement f = (*doc.getValue())["foregroundP99Factor"];
        if (f.isNumber() && f.numberDouble() >= 1) return f.numberDouble();
    }
    return 3.0;
}

Status MoveRangeCoordinator::commit() {
    const MoveRangeState& state = _state;
    ASSIGN_OR_RETURN(ShardedCollection coll, _config.loadCollection(state.ns));
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
    MoveResult result = computeMoveCommit(coll.chunks, *index, state.to, _config.now());
    TRY_STATUS(_config.writeChunk(result.moved, coll.coll.uuid, false));
    if (result.control) TRY_STATUS(_config.writeChunk(*result.control, coll.coll.uuid, false));
    return Status::OK();
}

StatusWith<bool> MoveRangeCoordinator::isCommitted() {
    const MoveRangeState& state = _state;
    auto coll = _config.loadCollection(state.ns);
    if (!coll.isOK()) {
        if (coll.getStatus().is(ErrorCodes::NamespaceNotSharded)) return false;
        return coll.getStatus();
    }
    auto index = findChunkWithBounds(coll.getValue().chunks, state.min, state.max);
    return index && coll.getValue().chunks[*index].shard == state.to;
}

Status MoveRangeCoordinator::finish(MigrationSteps* steps) {
    MoveRangeState& state = _state;
    MigrationSteps none;
    if (!steps) steps = &none;
    // 5. Both shards learn the commit; the donor leaves its critical section (reloading first).
    _config.flushRoutingTable({state.from, state.to}, state.ns);
    TRY_STATUS(
        _config.runOnShard(state.to, "admin", migrationCmd("_shardsvrReceiveRangeEnd", state, true))
            .getStatus());
    TRY_STATUS(
        _config.runOnShard(state.from, "admin", criticalSectionCmd(state, false)).getStatus());
    steps->criticalSectionEnded();
    steps->done(5);
    // 6. The donor deletes the range at once (waited for with waitForDelete).
    BsonBuilder end;
    for (bson::BsonElement e : migrationCmd("_shardsvrMigrationEnd", state, true)) {
        end.appendElement(e);
    }
    end.appendBool("waitForDelete", state.waitForDelete);
    auto ended = _config.runOnShard(state.from, "admin", end.obj(), kCloneTimeout);
    if (!ended.isOK()) {
        // The range deleter finds the range anyway (it is tracked); the move itself succeeded.
        logFailure(9110, "Failed to end the migration on the donor", ended.getStatus());
    }
    steps->done(6);
    _config.logChange("moveChunk.from", state.ns, migrationDetails(state, "success", {}, steps));
    log::info("SHARDING", 9115, "Migration finished",
              "{\"ns\":\"" + log::jsonEscape(state.ns) +
                  "\",\"details\":" + migrationDetails(state, "success", {}, steps).toJson() + "}");
    state.phase = CoordinatorPhase::kCleaned;
    TRY_STATUS(saveState());
    return forget();
}

Status MoveRangeCoordinator::abort(const Status& cause) {
    MoveRangeState& state = _state;
    log::info("SHARDING", 9111, "Aborting migration",
              "{\"id\":\"" + log::jsonEscape(state.id) + "\",\"cause\":\"" +
                  log::jsonEscape(cause.toString()) + "\"}");
    if (state.phase != CoordinatorPhase::kStart) {
        auto ended = _config.runOnShard(state.to, "admin",
                                        migrationCmd("_shardsvrReceiveRangeEnd", state, false));
        if (!ended.isOK()) {
            // Keep the coordinator document: recovery retries the abort.
            logFailure(9112, "Recipient cleanup failed", ended.getStatus());
            return ended.getStatus().withContext("migration aborted (" + cause.reason() +
                                                 "), then: ");
        }
    }
    // Before the section's exit: the donation recorded for the commit is forgotten while the
    // range's writes are still held.
    auto ended = _config.runOnShard(state.from, "admin",
                                    migrationCmd("_shardsvrMigrationEnd", state, false));
    Status exited = ended.getStatus();
    if (exited.isOK()) {
        exited =
            _config.runOnShard(state.from, "admin", criticalSectionCmd(state, false)).getStatus();
    }
    if (!exited.isOK()) {
        // Keep the coordinator document: recovery retries the abort.
        logFailure(9113, "Donor failed to end the migration", exited);
        return exited.withContext("migration aborted (" + cause.reason() + "), then: ");
    }
    _config.logChange("moveChunk.from", state.ns,
                      migrationDetails(state, "aborted", cause.reason()));
    Status removed = forget();
    if (!removed.isOK()) logFailure(9114, "Failed to remove coordinator document", removed);
    return cause;
}

StatusWith<CoordinatorOutcome> MoveRangeCoordinator::recover() {
    ASSIGN_OR_RETURN(bool committed, isCommitted());
    switch (recoveryAction(_state.phase, committed)) {
        case RecoveryAction::kAbort: {
            Status s = abort(Status(ErrorCodes::Interrupted,
                                    "migration interrupted by a config server restart"));
            if (!s.is(ErrorCodes::Interrupted)) return s;
            return CoordinatorOutcome::kAborted;
        }
        case RecoveryAction::kFinishCommit:
            _state.phase = CoordinatorPhase::kCommitted;
            TRY_STATUS(finish(nullptr));
            return CoordinatorOutcome::kFinished;
        case RecoveryAction::kForget:
            TRY_STATUS(forget());
            return CoordinatorOutcome::kFinished;
    }
    return CoordinatorOutcome::kFinished;
}

void MoveRangeCoordinator::abandon(const BestEffort& step) {
    const MoveRangeState& state = _state;
    // The catalog decides which copy is owned; a copy is deleted only when that is known.
    auto committed = isCommitted();
    if (committed.isOK() && committed.getValue()) {
        step("flush both shards", [&] {
            _config.flushRoutingTable({state.from, state.to}, state.ns);
            return Status::OK();
        });
        step("end the migration on the recipient", [&] {
            return _config
                .runOnShard(state.to, "admin",
                            migrationCmd("_shardsvrReceiveRangeEnd", state, true))
                .getStatus();
        });
    } else if (committed.isOK()) {
        step("end the migration on the recipient (aborted)", [&] {
            return _config
                .runOnShard(state.to, "admin",
                            migrationCmd("_shardsvrReceiveRangeEnd", state, false))
                .getStatus();
        });
    }
    step("end the migration on the donor", [&] {
        const bool done = committed.isOK() && committed.getValue();
        return _config
            .runOnShard(state.from, "admin", migrationCmd("_shardsvrMigrationEnd", state, done))
            .getStatus();
    });
    step("exit the donor's critical section", [&] {
        return _config.runOnShard(state.from, "admin", criticalSectionCmd(state, false))
            .getStatus();
    });
}

}  // namespace tessera::config
