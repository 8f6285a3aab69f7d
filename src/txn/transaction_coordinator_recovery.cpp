// The coordinator's recovery thread and currentOp (docs/protocols/two-phase-commit.md
// "Recovery"): what a crash left, coordinations that keep failing retried with back-off, done
// records forgotten, and what is in flight listed.
#include "base/log.h"
#include "base/wall_clock.h"
#include "storage/engine.h"
#include "txn/transaction_coordinator.h"
#include "txn/transaction_coordinator_record.h"

namespace tessera::txn {
namespace {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

}  // namespace

void TransactionCoordinator::recoveryLoop() {
    auto nextScan = std::chrono::steady_clock::now();  // at startup: what a crash left
    UniqueLock lk(_mutex);
    while (!_stopping) {
        bool scan = std::chrono::steady_clock::now() >= nextScan;
        std::vector<std::string> pending(_pending.begin(), _pending.end());
        // Notices whose stage never came here, or whose record a resolution decided: stale.
        std::erase_if(_votes, [now = std::chrono::steady_clock::now()](const auto& v) {
            return now - v.second.since > 10 * kResolveStagedAfter;
        });
        lk.unlock();
        try {
            writeDone();
            if (scan) {
                recoverAll();
                nextScan = std::chrono::steady_clock::now() + kFullScanInterval;
            } else {
                for (const std::string& key : pending) recoverRecord(key);
            }
        } catch (...) {
            // recoverRecord guards each record; this is a scan or a write that threw: the next
            // round tries again, the thread goes on.
            log::warning("TXN", 22230, "A transaction coordinator recovery round failed",
                         "{\"error\":\"" +
                             log::jsonEscape(statusFromCurrentException("recovery").toString()) +
                             "\"}");
        }
        lk.lock();
        _wake.wait_for(lk, kRecoveryInterval, [&]() REQUIRES(_mutex) { return _stopping; });
    }
}

void TransactionCoordinator::markDone(const Record& record) {
    MutexLock lk(_mutex);
    _failures.erase(record.key);
    _doneToWrite.emplace_back(record.key, std::string(record.toBson().bytes()));
    _pending.erase(record.key);
}

void TransactionCoordinator::writeDone() {
    std::vector<std::pair<std::string, std::string>> done;
    {
        MutexLock lk(_mutex);
        done.swap(_doneToWrite);
    }
    // Only answers retries and lets the records be forgotten: if it is lost, a full scan
    // delivers the decisions again, which the participants acknowledge again.
    if (!done.empty()) (void)_engine.writeSideRecords(done, false);
}

bool TransactionCoordinator::doneUnwritten(const std::string& key) {
    MutexLock lk(_mutex);
    for (const auto& [k, v] : _doneToWrite) {
        if (k == key) return true;
    }
    return false;
}

std::vector<BsonObj> TransactionCoordinator::currentOps() {
    std::vector<std::string> keys;
    {
        MutexLock lk(_mutex);
        keys.assign(_pending.begin(), _pending.end());
    }
    std::vector<BsonObj> ops;
    for (const std::string& key : keys) {
        StatusWith<std::optional<Record>> loaded = load(key);
        if (!loaded.isOK() || !loaded.getValue() || loaded.getValue()->done) continue;
        const Record& r = *loaded.getValue();
        BsonBuilder b;
        b.append("type", "op").appendInt32("opid", _opIds.idFor(key));
        b.append("desc", "transaction coordinator").appendBool("active", true);
        b.startObject("twoPhaseCommitCoordinator");
        b.startObject("lsid").appendBinary("id", 4, r.lsid).end();
        b.appendInt64("txnNumber", r.txnNumber);
        b.appendInt32("numParticipants", static_cast<int32_t>(r.participants.size()));
        b.startArray("participants");
        for (size_t i = 0; i < r.participants.size(); ++i) {
            b.append(std::to_string(i), r.participants[i].shard);
        }
        b.end();
        b.append("state",
                 r.decision == Decision::kNone ? "waitingForVotes" : "waitingForDecisionAcks");
        b.appendBool("staged", r.staged);
        {
            MutexLock lk(_mutex);
            if (auto f = _failures.find(key); f != _failures.end()) {
                b.appendInt32("attempts", f->second.attempts);
                b.startObject("lastError")
                    .appendInt32("code", f->second.lastError.code())
                    .append("codeName", f->second.lastError.codeName())
                    .append("errmsg", f->second.lastError.reason())
                    .end();
            }
        }
        if (r.decision != Decision::kNone) {
            b.startObject("decision");
            b.append("decision", r.decision == Decision::kCommit ? "commit" : "abort");
            if (r.decision == Decision::kCommit)
                b.appendTimestamp("commitTimestamp", r.commitTs.value);
            b.end();
        }
        b.end();
        ops.push_back(b.obj());
    }
    _opIds.retainOnly(keys);
    return ops;
}

void TransactionCoordinator::settle(const std::string& key) {
    MutexLock lk(_mutex);
    _failures.erase(key);
    _pending.erase(key);
}

void TransactionCoordinator::recoverAll() {
    int64_t now = wallClockMillis();
    for (const auto& [key, value] : _engine.sideRecords(kRecordPrefix)) {
        BsonView doc(value.data());
        if (!doc["done"].trueValue()) {
            recoverRecord(key);
        } else if (now - doc["updatedAt"].dateValue() > kForgetDoneAfterMs) {
            (void)_engine.writeSideRecords({{key, std::string()}});
        }
    }
}

void TransactionCoordinator::recoverRecord(const std::string& key) {
    if (!mayRetryNow(key)) return;
    bool owner = false;
    std::shared_ptr<Coordination> c = claim(key, &owner);
    if (!owner) return;  // coordinate() is at it
    try {
        recoverClaimed(key, c);
    } catch (...) {
        Status failed = statusFromCurrentException("recovering a transaction coordination");
        noteStepFailed(key, failed);
        release(key, c, failed, Timestamp());
    }
}

void TransactionCoordinator::noteStepFailed(const std::string& key, const Status& failure) {
    MutexLock lk(_mutex);
    StepFailures& f = _failures[key];
    ++f.attempts;
    f.lastError = failure;
    // 250 ms doubling, at most 10 s: a commit decision is delivered as soon as it can be.
    const int doublings = std::min(f.attempts - 1, 6);
    f.notBefore = std::chrono::steady_clock::now() +
                  std::min(std::chrono::milliseconds(10000),
                           std::chrono::milliseconds(250) * (int64_t{1} << doublings));
    log::warning("TXN", 22229, "A transaction coordinator step failed; it is retried",
                 "{\"attempts\":" + std::to_string(f.attempts) + ",\"error\":\"" +
                     log::jsonEscape(failure.toString()) + "\"}");
}

bool TransactionCoordinator::mayRetryNow(const std::string& key) {
    MutexLock lk(_mutex);
    auto it = _failures.find(key);
    return it == _failures.end() || std::chrono::steady_clock::now() >= it->second.notBefore;
}

void TransactionCoordinator::recoverClaimed(const std::string& key,
                                            const std::shared_ptr<Coordination>& c) {
    // Read under the claim: a coordination that held it may have decided since.
    StatusWith<std::optional<Record>> loaded = load(key);
    if (!loaded.isOK()) {
        release(key, c, loaded.getStatus(), Timestamp());
        return;
    }
    if (!loaded.getValue()) {
        settle(key);
        release(key, c, Status(ErrorCodes::NoSuchTransaction, "forgotten"), Timestamp());
        return;
    }
    Record& record = *loaded.getValue();
    if (!record.done && doneUnwritten(key)) {
        // Delivered while the scan read it: its `done` is queued for the next writeDone().
        release(key, c, record.outcome(), record.commitTs);
        return;
    }
    if (record.staged && record.decision == Decision::kNone) {
        bool young = false;
        {
            MutexLock lk(_mutex);
            auto it = _stagedAt.find(key);
            young = it != _stagedAt.end() &&
                    std::chrono::steady_clock::now() - it->second < kResolveStagedAfter;
        }
        if (young) {  // its router's decision is on its way
            unclaim(key, c);
            return;
        }
        log::info("TXN", 22228, "Resolving a staged commit whose router sent no decision",
                  "{\"txnNumber\":" + std::to_string(record.txnNumber) + "}");
    }
    Status decided = record.decision != Decision::kNone ? Status::OK()
                     : record.staged                    ? decide(record)
                                                        : abortUndecided(record);
    if (!decided.isOK()) {
        release(key, c, decided, Timestamp());
        return;
    }
    {
        MutexLock lk(_mutex);
        _stagedAt.erase(key);
        _votes.erase(key);
    }
    // Read back after a restart, the decision may be in the WAL's unsynced tail: durable
    // before anyone hears it.
    if (!record.done && _engine.syncWal().isOK() && deliver(record)) {
        record.done = true;
        (void)write(record);
        log::info("TXN", 22222, "Delivered the decision of an interrupted coordination",
                  "{\"txnNumber\":" + std::to_string(record.txnNumber) + ",\"decision\":\"" +
                      (record.decision == Decision::kCommit ? "commit" : "abort") + "\"}");
    }
    if (record.done) settle(key);
    release(key, c, record.outcome(), record.commitTs);
}

}  // namespace tessera::txn
