// The movePrimary coordinator (README.md "movePrimary", docs/protocols/ddl-coordinators.md): a
// database's unsharded collections from its primary shard to another, under the database's
// critical section on the old primary; and the command that starts it.
#include "config/move_primary_coordinator.h"

#include "base/log.h"
#include "bson/bson_builder.h"
#include "config/config_server_impl.h"

namespace tessera::config {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

namespace {

constexpr std::chrono::milliseconds kCloneTimeout{30 * 60 * 1000};

BsonObj dbCriticalSectionCmd(const std::string& db, bool enter) {
    BsonBuilder b;
    b.appendString("_shardsvrDatabaseCriticalSection", db).appendBool("enter", enter);
    return b.obj();
}

BsonObj dropUnshardedCmd(const std::string& db) {
    BsonBuilder b;
    b.appendString("_shardsvrDropUnshardedCollections", db);
    return b.obj();
}

BsonObj primaryDetails(const MovePrimaryState& s) {
    BsonBuilder b;
    b.appendString("database", s.db).appendString("from", s.from).appendString("to", s.to);
    return b.obj();
}

}  // namespace

Status ConfigServerImpl::movePrimary(const std::string& db, const std::string& toShard) {
    ASSIGN_OR_RETURN(DdlLockManager::Guard lock, _ddlLocks.lockDatabase(db, "movePrimary " + db));
    ASSIGN_OR_RETURN(auto dbDoc, _local.findOne("databases", idQuery(db)));
    if (!dbDoc) return Status(ErrorCodes::NamespaceNotFound, "Database " + db + " not found");
    TRY_STATUS(shardHost(toShard).getStatus());
    MovePrimaryState state;
    state.id = movePrimaryCoordinatorId(db);
    state.db = db;
    state.from = std::string((*dbDoc)["primary"].stringValue());
    state.to = toShard;
    if (state.from == state.to) return Status::OK();
    Status inserted = _local.insert("system.coordinators", state.toBson());
    if (inserted.is(ErrorCodes::DuplicateKey)) {
        return Status(ErrorCodes::ConflictingOperationInProgress,
                      "a movePrimary of " + db + " is already in progress");
    }
    TRY_STATUS(inserted);
    MovePrimaryCoordinator coordinator(*this, std::move(state));
    return runCoordinator(coordinator, lock);
}

Status MovePrimaryCoordinator::saveState() { return save(_state.toBson()); }

Status MovePrimaryCoordinator::run() {
    MovePrimaryState& state = _state;
    if (state.phase == CoordinatorPhase::kStart) {
        _config.logChange("movePrimary.start", state.db, primaryDetails(state));
    }
    if (state.phase == CoordinatorPhase::kStart) {
        auto entered =
            _config.runOnShard(state.from, "admin", dbCriticalSectionCmd(state.db, true));
        if (!entered.isOK()) {
            (void)abort();
            return entered.getStatus();
        }
        state.phase = CoordinatorPhase::kCloning;
        TRY_STATUS(saveState());
    }
    if (state.phase == CoordinatorPhase::kCloning) {
        auto fromHost = _config.shardHost(state.from);
        Status cloned = fromHost.getStatus();
        if (cloned.isOK()) {
            BsonBuilder clone;
            clone.appendString("_shardsvrCloneDatabase", state.db)
                .appendString("from", fromHost.getValue());
            cloned = _config.runOnShard(state.to, "admin", clone.obj(), kCloneTimeout).getStatus();
        }
        if (!cloned.isOK()) {
            (void)abort();
            return cloned;
        }
        BsonBuilder q;
        q.appendString("_id", state.db).appendString("primary", state.from);
        BsonBuilder u;
        u.startObject("$set").appendString("primary", state.to).end();
        u.startObject("$inc").appendInt32("version.lastMod", 1).end();
        auto updated = _config.local().update("databases", q.obj(), u.obj());
        if (!updated.isOK()) {
            (void)abort();
            return updated.getStatus();
        }
        state.phase = CoordinatorPhase::kCommitted;
        TRY_STATUS(saveState());
    }
    return finish();
}

Status MovePrimaryCoordinator::finish() {
    MovePrimaryState& state = _state;
    _config.flushDatabase({state.from, state.to}, state.db);
    TRY_STATUS(_config.runOnShard(state.from, "admin", dropUnshardedCmd(state.db)).getStatus());
    TRY_STATUS(
        _config.runOnShard(state.from, "admin", dbCriticalSectionCmd(state.db, false)).getStatus());
    _config.logChange("movePrimary.commit", state.db, primaryDetails(state));
    state.phase = CoordinatorPhase::kCleaned;
    TRY_STATUS(saveState());
    return forget();
}

Status MovePrimaryCoordinator::abort() {
    const MovePrimaryState& state = _state;
    if (state.phase != CoordinatorPhase::kStart) {
        // The recipient is not the primary: its unsharded collections of db are the clones.
        auto dropped = _config.runOnShard(state.to, "admin", dropUnshardedCmd(state.db));
        if (!dropped.isOK()) {
            log::warning("SHARDING", 9120, "movePrimary abort: recipient cleanup failed",
                         "{\"error\":\"" + log::jsonEscape(dropped.getStatus().toString()) + "\"}");
        }
    }
    TRY_STATUS(
        _config.runOnShard(state.from, "admin", dbCriticalSectionCmd(state.db, false)).getStatus());
    return forget();
}

StatusWith<CoordinatorOutcome> MovePrimaryCoordinator::recover() {
    ASSIGN_OR_RETURN(auto dbDoc, _config.local().findOne("databases", idQuery(_state.db)));
    const bool committed = dbDoc && (*dbDoc)["primary"].stringValue() == _state.to;
    switch (recoveryAction(_state.phase, committed)) {
        case RecoveryAction::kAbort:
            TRY_STATUS(abort());
            return CoordinatorOutcome::kAborted;
        case RecoveryAction::kFinishCommit:
            _state.phase = CoordinatorPhase::kCommitted;
            TRY_STATUS(finish());
            return CoordinatorOutcome::kFinished;
        case RecoveryAction::kForget:
            TRY_STATUS(forget());
            return CoordinatorOutcome::kFinished;
    }
    return CoordinatorOutcome::kFinished;
}

void MovePrimaryCoordinator::abandon(const BestEffort& step) {
    const MovePrimaryState& state = _state;
    auto dbDoc = _config.local().findOne("databases", idQuery(state.db));
    const bool known = dbDoc.isOK();
    const bool committed =
        known && dbDoc.getValue() && (*dbDoc.getValue())["primary"].stringValue() == state.to;
    if (known) {
        // The shard the catalog does not name drops its copies of the unsharded collections.
        step("flush both shards", [&] {
            _config.flushDatabase({state.from, state.to}, state.db);
            return Status::OK();
        });
        step("drop the copies on the shard that is not the primary", [&] {
            return _config
                .runOnShard(committed ? state.from : state.to, "admin", dropUnshardedCmd(state.db))
                .getStatus();
        });
    }
    step("exit the old primary's critical section", [&] {
        return _config.runOnShard(state.from, "admin", dbCriticalSectionCmd(state.db, false))
            .getStatus();
    });
}

}  // namespace tessera::config
