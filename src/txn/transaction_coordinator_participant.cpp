// The participant's side of the two-phase commits other shards coordinate
// (transaction_coordinator.h, docs/protocols/two-phase-commit.md): the notice that
// a part prepared unsynced for a staged commit is durable, and participant recovery — asking the
// coordinator of a part whose decision is late, and journaling the commits acknowledged
// unsynced.

#include <chrono>
#include <functional>

#include "base/failpoint.h"
#include "base/log.h"
#include "base/mutex.h"
#include "bson/bson_builder.h"
#include "net/remote_client.h"
#include "storage/engine.h"
#include "txn/session_transactions.h"
#include "txn/transaction_coordinator.h"

namespace tessera::txn {

// Hang a participant's notice that its unsynced prepare is durable, before the sync (tests: the
// client heard the commit, no part is decided; kill -9 there).
TESSERA_FAIL_POINT_DEFINE(hangBeforeNotifyingCoordinator);

namespace {

using bson::BsonBuilder;

// How long a participant waits for its coordinator's answer.
constexpr auto kAskTimeout = std::chrono::seconds(5);

// {_shardsvrCoordinateCommitTransaction: 1, lsid, txnNum, participants: []}: what a
// participant sends its coordinator about transaction (lsid, txnNumber) — alone a request for
// the decision (recoverDecision), with durablePrepare a notice.
void appendCoordinatorRequest(BsonBuilder& b, const std::string& lsid, int64_t txnNumber) {
    b.appendInt32("_shardsvrCoordinateCommitTransaction", 1);
    b.startObject("lsid");
    b.appendBinary("id", 4, lsid);
    b.end();
    b.appendInt64("txnNum", txnNumber);
    b.startArray("participants");
    b.end();
}

}  // namespace

void TransactionCoordinator::notifyWhenDurable(const std::string& lsid, int64_t txnNumber,
                                               const Participant& coordinator,
                                               Timestamp prepareTs) {
    std::function<void()> job = [this, lsid, txnNumber, coordinator, prepareTs] {
        pauseWhileActive(hangBeforeNotifyingCoordinator, "TXN", 22220);
        if (Status synced = _engine.syncWal(); !synced.isOK()) {
            log::warning("TXN", 22244,
                         "Could not sync a prepared transaction; its coordinator resolves it",
                         "{\"error\":\"" + log::jsonEscape(synced.toString()) + "\"}");
            return;
        }
        BsonBuilder b;
        appendCoordinatorRequest(b, lsid, txnNumber);
        b.startObject("durablePrepare");
        b.append("shard", _local ? _local->shardName() : std::string());
        b.appendTimestamp("prepareTimestamp", prepareTs.value);
        b.end();
        auto reply = _client.runCommand(coordinator.host, "admin", b.obj(), kAskTimeout);
        Status st = reply.isOK() ? net::replyStatus(reply.getValue()) : reply.getStatus();
        if (!st.isOK()) {
            log::info("TXN", 22245,
                      "Could not tell a coordinator a prepare is durable; it resolves the commit",
                      "{\"txnNumber\":" + std::to_string(txnNumber) + ",\"coordinator\":\"" +
                          log::jsonEscape(coordinator.host) + "\",\"error\":\"" +
                          log::jsonEscape(st.toString()) + "\"}");
        }
    };
    runOnDeliveryThread(std::move(job));
}

void TransactionCoordinator::participantRecoveryLoop() {
    auto nextAsk = std::chrono::steady_clock::now();
    UniqueLock lk(_mutex);
    while (!_stopping) {
        lk.unlock();
        // Commits acknowledged to their coordinators before they were journaled
        // (SessionTransactions::takeUnsyncedCommits): journaled now.
        if (_local && _local->takeUnsyncedCommits()) {
            if (Status s = _engine.syncWal(); !s.isOK()) {
                log::warning("TXN", 22227, "Could not journal the commits of prepared transactions",
                             "{\"error\":\"" + log::jsonEscape(s.toString()) + "\"}");
                _local->noteUnsyncedCommit();
            }
        }
        // As often as a decision may be late: a coordinator asked is not asked again sooner.
        if (std::chrono::steady_clock::now() >= nextAsk) {
            try {
                askCoordinators();
            } catch (...) {
                log::warning("TXN", 22231, "Asking coordinators for late decisions failed",
                             "{\"error\":\"" +
                                 log::jsonEscape(statusFromCurrentException("").toString()) +
                                 "\"}");
            }
            nextAsk = std::chrono::steady_clock::now() + kAskCoordinatorAfter;
        }
        lk.lock();
        _wake.wait_for(lk, txn::SessionTransactions::kSyncCommitsWithin,
                       [&]() REQUIRES(_mutex) { return _stopping; });
    }
    lk.unlock();
    if (_local && _local->takeUnsyncedCommits()) (void)_engine.syncWal();  // a clean stop
}

void TransactionCoordinator::askCoordinators() {
    if (!_local) return;
    std::string self = _local->shardName();
    for (const auto& w : _local->preparedLongerThan(kAskCoordinatorAfter)) {
        // Without a coordinator recorded (prepared by an older version), or coordinated here
        // (the recovery thread finishes this shard's own records): nobody to ask.
        if (w.coordinator.host.empty() || w.coordinator.shard == self) continue;
        BsonBuilder b;
        appendCoordinatorRequest(b, w.lsid, w.txnNumber);
        auto reply = _client.runCommand(w.coordinator.host, "admin", b.obj(), kAskTimeout);
        Status st = reply.isOK() ? net::replyStatus(reply.getValue()) : reply.getStatus();
        bson::BsonElement ts =
            reply.isOK() ? reply.getValue()["commitTimestamp"] : bson::BsonElement();
        Status applied = Status::OK();
        std::string decision;
        if (st.isOK() && ts.type() == bson::BsonType::Timestamp) {
            decision = "commit";
            applied = _local->commit(w.lsid, w.txnNumber, Timestamp{ts.timestampValue()});
            if (applied.isOK()) applied = _engine.syncWal();
        } else if (st.is(ErrorCodes::NoSuchTransaction)) {
            decision = "abort";
            applied = _local->abort(w.lsid, w.txnNumber);
        } else {
            log::info("TXN", 22225, "A prepared transaction's coordinator has no decision yet",
                      "{\"txnNumber\":" + std::to_string(w.txnNumber) + ",\"coordinator\":\"" +
                          log::jsonEscape(w.coordinator.host) + "\",\"reply\":\"" +
                          log::jsonEscape(st.toString()) + "\"}");
            continue;
        }
        log::info("TXN", 22226, "Applied the decision a prepared transaction's coordinator gave",
                  "{\"txnNumber\":" + std::to_string(w.txnNumber) + ",\"coordinator\":\"" +
                      log::jsonEscape(w.coordinator.host) + "\",\"decision\":\"" + decision +
                      "\",\"applied\":\"" + log::jsonEscape(applied.toString()) + "\"}");
    }
}

}  // namespace tessera::txn
