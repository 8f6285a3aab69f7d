// The movePrimary coordinator and the startup recovery of persisted coordinators.
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
    logChange("movePrimary.start", db, primaryDetails(state));
    return runCoordinator(state.id, lock, [&] { return runMovePrimary(state); });
}

Status ConfigServerImpl::runMovePrimary(MovePrimaryState state) {
    if (state.phase == CoordinatorPhase::kStart) {
        auto entered = runOnShard(state.from, "admin", dbCriticalSectionCmd(state.db, true));
        if (!entered.isOK()) {
            (void)abortMovePrimary(state);
            return entered.getStatus();
        }
        state.phase = CoordinatorPhase::kCloning;
        TRY_STATUS(saveState(state));
    }
    if (state.phase == CoordinatorPhase::kCloning) {
        auto fromHost = shardHost(state.from);
        Status cloned = fromHost.getStatus();
        if (cloned.isOK()) {
            BsonBuilder clone;
            clone.appendString("_shardsvrCloneDatabase", state.db)
                .appendString("from", fromHost.getValue());
            cloned = runOnShard(state.to, "admin", clone.obj(), kCloneTimeout).getStatus();
        }
        if (!cloned.isOK()) {
            (void)abortMovePrimary(state);
            return cloned;
        }
        BsonBuilder q;
        q.appendString("_id", state.db).appendString("primary", state.from);
        BsonBuilder u;
        u.startObject("$set").appendString("primary", state.to).end();
        u.startObject("$inc").appendInt32("version.lastMod", 1).end();
        auto updated = _local.update("databases", q.obj(), u.obj());
        if (!updated.isOK()) {
            (void)abortMovePrimary(state);
            return updated.getStatus();
        }
        state.phase = CoordinatorPhase::kCommitted;
        TRY_STATUS(saveState(state));
    }
    return finishMovePrimary(state);
}

Status ConfigServerImpl::finishMovePrimary(MovePrimaryState& state) {
    flushDatabase({state.from, state.to}, state.db);
    TRY_STATUS(runOnShard(state.from, "admin", dropUnshardedCmd(state.db)).getStatus());
    TRY_STATUS(runOnShard(state.from, "admin", dbCriticalSectionCmd(state.db, false)).getStatus());
    logChange("movePrimary.commit", state.db, primaryDetails(state));
    state.phase = CoordinatorPhase::kCleaned;
    TRY_STATUS(saveState(state));
    return _local.remove("system.coordinators", idQuery(state.id), false).getStatus();
}

Status ConfigServerImpl::abortMovePrimary(MovePrimaryState& state) {
    if (state.phase != CoordinatorPhase::kStart) {
        // The recipient is not the primary: its unsharded collections of db are the clones.
        auto dropped = runOnShard(state.to, "admin", dropUnshardedCmd(state.db));
        if (!dropped.isOK()) {
            log::warning("SHARDING", 9120, "movePrimary abort: recipient cleanup failed",
                         "{\"error\":\"" + log::jsonEscape(dropped.getStatus().toString()) + "\"}");
        }
    }
    TRY_STATUS(runOnShard(state.from, "admin", dbCriticalSectionCmd(state.db, false)).getStatus());
    return _local.remove("system.coordinators", idQuery(state.id), false).getStatus();
}

void ConfigServerImpl::abandonMovePrimary(const BsonObj& doc, const BestEffort& step) {
    auto parsed = MovePrimaryState::parse(doc);
    if (!parsed.isOK()) return;
    MovePrimaryState state = std::move(parsed).getValue();
    auto dbDoc = _local.findOne("databases", idQuery(state.db));
    const bool known = dbDoc.isOK();
    const bool committed =
        known && dbDoc.getValue() && (*dbDoc.getValue())["primary"].stringValue() == state.to;
    if (known) {
        // The shard the catalog does not name drops its copies of the unsharded collections.
        step("flush both shards", [&] {
            flushDatabase({state.from, state.to}, state.db);
            return Status::OK();
        });
        step("drop the copies on the shard that is not the primary", [&] {
            return runOnShard(committed ? state.from : state.to, "admin",
                              dropUnshardedCmd(state.db))
                .getStatus();
        });
    }
    step("exit the old primary's critical section", [&] {
        return runOnShard(state.from, "admin", dbCriticalSectionCmd(state.db, false)).getStatus();
    });
}

}  // namespace tessera::config
