// Resuming the coordinators of config.system.coordinators after a restart of the config server
// (README.md "Coordinators"): each document is resumed under the DDL locks its operation takes,
// so recovery runs next to new DDL on other namespaces.
#include <set>

#include "base/log.h"
#include "bson/bson_builder.h"
#include "config/config_server_impl.h"

namespace tessera::config {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

namespace {

// A busy lock means a live operation holds the namespace: its document is not orphaned (or will
// be looked at again in the next round).
constexpr std::chrono::seconds kLockWait{1};

}  // namespace

Status ConfigServerImpl::recoverCoordinator(const BsonObj& listed) {
    std::string_view type = listed["type"].stringValue();
    std::string id(listed["_id"].stringValue());
    // The locks first, then the document again: a live operation may have finished (and removed
    // it) while we waited.
    DdlLockManager::Guard lock;
    if (type == "moveRange" || type == "shardCollection" || type == "dropCollection" ||
        type == "refineCollectionShardKey") {
        std::string ns(type == "moveRange" || type == "refineCollectionShardKey"
                           ? listed["ns"].stringValue()
                           : listed["target"].stringValue());
        ASSIGN_OR_RETURN(lock, _ddlLocks.lockCollection(ns, "recovery of " + id, kLockWait));
    } else if (type == "movePrimary" || type == "dropDatabase") {
        std::string db(type == "movePrimary" ? listed["db"].stringValue()
                                             : listed["target"].stringValue());
        ASSIGN_OR_RETURN(lock, _ddlLocks.lockDatabase(db, "recovery of " + id, kLockWait));
    } else {
        log::warning("SHARDING", 9122, "Unknown coordinator type; left in place",
                     "{\"id\":\"" + log::jsonEscape(id) + "\"}");
        return Status::OK();
    }
    ASSIGN_OR_RETURN(auto current, _local.findOne("system.coordinators", idQuery(id)));
    if (!current) return Status::OK();
    const BsonObj& doc = *current;
    log::info("SHARDING", 9123, "Resuming an interrupted coordinator",
              "{\"id\":\"" + log::jsonEscape(id) + "\"}");

    if (type == "moveRange") {
        ASSIGN_OR_RETURN(MoveRangeState st, MoveRangeState::parse(doc));
        ASSIGN_OR_RETURN(bool committed, moveRangeCommitted(st));
        switch (recoveryAction(st.phase, committed)) {
            case RecoveryAction::kAbort: {
                Status s =
                    abortMoveRange(st, Status(ErrorCodes::Interrupted,
                                              "migration interrupted by a config server restart"));
                return s.is(ErrorCodes::Interrupted) ? Status::OK() : s;
            }
            case RecoveryAction::kFinishCommit:
                st.phase = CoordinatorPhase::kCommitted;
                return finishMoveRange(st);
            case RecoveryAction::kForget:
                return _local.remove("system.coordinators", idQuery(st.id), false).getStatus();
        }
        return Status::OK();
    }
    if (type == "refineCollectionShardKey") return finishRefine(doc);
    if (type == "movePrimary") {
        ASSIGN_OR_RETURN(MovePrimaryState st, MovePrimaryState::parse(doc));
        ASSIGN_OR_RETURN(auto dbDoc, _local.findOne("databases", idQuery(st.db)));
        bool committed = dbDoc && (*dbDoc)["primary"].stringValue() == st.to;
        switch (recoveryAction(st.phase, committed)) {
            case RecoveryAction::kAbort:
                return abortMovePrimary(st);
            case RecoveryAction::kFinishCommit:
                st.phase = CoordinatorPhase::kCommitted;
                return finishMovePrimary(st);
            case RecoveryAction::kForget:
                return _local.remove("system.coordinators", idQuery(st.id), false).getStatus();
        }
        return Status::OK();
    }
    ASSIGN_OR_RETURN(PlacementDdlState st, PlacementDdlState::parse(doc));
    return recoverPlacementDdl(st);
}

void ConfigServerImpl::recoverCoordinators() {
    // Every coordinator document is inserted by its operation under that operation's DDL locks
    // and removed before they are released, so a document found under those locks has no live
    // operation: it was interrupted (a crash, or a shard that failed during an abort or cleanup).
    // Looked for at startup and every 10 s (2 s while some fail, e.g. a shard not up yet).
    auto sleepFor = [this](std::chrono::milliseconds total) {
        auto until = std::chrono::steady_clock::now() + total;
        while (!_shutdown.load() && std::chrono::steady_clock::now() < until) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    };
    while (!_shutdown.load()) {
        bool failed = false;
        auto docs = _local.find("system.coordinators", BsonView());
        if (!docs.isOK()) failed = true;
        for (const BsonObj& doc : docs.isOK() ? docs.getValue() : std::vector<BsonObj>{}) {
            if (_shutdown.load()) return;
            Status s = recoverCoordinator(doc);
            if (s.is(ErrorCodes::LockBusy)) continue;
            if (!s.isOK()) {
                failed = true;
                log::warning("SHARDING", 9121, "Coordinator recovery failed, will retry",
                             "{\"id\":\"" + log::jsonEscape(doc["_id"].toString(false)) +
                                 "\",\"error\":\"" + log::jsonEscape(s.toString()) + "\"}");
            }
        }
        sleepFor(std::chrono::milliseconds(failed ? 2000 : 10000));
    }
}

}  // namespace tessera::config
