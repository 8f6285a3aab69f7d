#include "txn/transaction_table.h"

#include <algorithm>
#include <vector>

#include "base/mutex.h"

namespace tessera::txn {

Status TransactionTable::tooOld(int64_t txnNumber, int64_t newest) {
    return Status(ErrorCodes::TransactionTooOld,
                  "Cannot start transaction " + std::to_string(txnNumber) +
                      " on session because a newer transaction " + std::to_string(newest) +
                      " has already started");
}

void TransactionTable::restore(const std::string& lsid, int64_t txnNumber, StmtId stmtId,
                               bson::BsonObj result) {
    MutexLock lk(_mutex);
    Session& s = _sessions[lsid];
    if (txnNumber < s.txnNumber) return;
    if (txnNumber > s.txnNumber) s.startNumber(txnNumber);
    s.statements[stmtId] = std::move(result);
}

bool TransactionTable::adopt(const std::string& lsid, int64_t txnNumber, StmtId stmtId,
                             bson::BsonObj result) {
    UniqueLock lk(_mutex);
    // An expiring session's records are being deleted: adopted after, so that they stay.
    _finished.wait(lk, [&]() REQUIRES(_mutex) {
        auto it = _sessions.find(lsid);
        return it == _sessions.end() || !it->second.expiring;
    });
    Session& s = _sessions[lsid];
    s.lastUse = Clock::now();
    if (txnNumber < s.txnNumber) return false;
    if (txnNumber > s.txnNumber) s.startNumber(txnNumber);
    s.statements[stmtId] = std::move(result);
    // A moved statement's record: its waiting retry is answered from it.
    if (s.moving.erase(stmtId) > 0) _finished.notify_all();
    return true;
}

bool TransactionTable::isMoving(Session& s, std::optional<StmtId> stmtId, Clock::time_point now,
                                Clock::time_point* wakeAt) {
    bool moving = false;
    for (auto it = s.moving.begin(); it != s.moving.end();) {
        const Moving& m = it->second;
        if (m.claimedBy == 0 && now >= m.unclaimedUntil) {
            it = s.moving.erase(it);  // its router never claimed it: it moved nothing
            continue;
        }
        if (!stmtId || *stmtId == it->first) {
            moving = true;
            if (m.claimedBy == 0) *wakeAt = std::min(*wakeAt, m.unclaimedUntil);
        }
        ++it;
    }
    return moving;
}

std::optional<bson::BsonObj> ExecutedView::find(StmtId stmtId) const {
    return _table->executedResult(_lsid, _txnNumber, stmtId);
}

size_t ExecutedView::size() const { return _table->executedCount(_lsid, _txnNumber); }

std::optional<bson::BsonObj> TransactionTable::executedResult(const std::string& lsid,
                                                              int64_t txnNumber,
                                                              StmtId stmtId) const {
    MutexLock lk(_mutex);
    auto it = _sessions.find(lsid);
    if (it == _sessions.end() || it->second.txnNumber != txnNumber) return std::nullopt;
    auto st = it->second.statements.find(stmtId);
    if (st == it->second.statements.end()) return std::nullopt;
    return st->second;
}

size_t TransactionTable::executedCount(const std::string& lsid, int64_t txnNumber) const {
    MutexLock lk(_mutex);
    auto it = _sessions.find(lsid);
    if (it == _sessions.end() || it->second.txnNumber != txnNumber) return 0;
    return it->second.statements.size();
}

StatusWith<ExecutedView> TransactionTable::begin(const std::string& lsid, int64_t txnNumber,
                                                 Clock::time_point deadline, bool mayWait) {
    UniqueLock lk(_mutex);
    for (;;) {
        Session& s = _sessions[lsid];
        if (txnNumber < s.txnNumber) return tooOld(txnNumber, s.txnNumber);
        const Clock::time_point now = Clock::now();
        Clock::time_point wakeAt = deadline;
        // A newer txnNumber does not wait for the older one's moves: their records, adopted
        // later, are of a write the client gave up on.
        const bool moving = txnNumber == s.txnNumber && isMoving(s, std::nullopt, now, &wakeAt);
        const bool busy = s.running || s.expiring || moving;
        if (busy && !mayWait) {
            return Status(ErrorCodes::InlineWouldBlock, "another attempt of the session runs");
        }
        if (busy) {
            // The same txnNumber on another connection (a retry after a network error), or a
            // newer one while the older still runs: one attempt of a session at a time, so
            // that its records stay ordered and a retry sees what the first attempt did.
            if (now >= deadline) {
                return Status(ErrorCodes::MaxTimeMSExpired,
                              moving ? "timed out waiting for the transaction that moves the "
                                       "retryable write's document to another shard"
                                     : "timed out waiting for a concurrent execution of the "
                                       "session's retryable write");
            }
            if (moving) ++_waitingForMove;
            _finished.wait_until(lk, wakeAt);
            if (moving) --_waitingForMove;
            continue;  // the map may have changed: look again
        }
        if (txnNumber > s.txnNumber) s.startNumber(txnNumber);
        s.running = true;
        s.lastUse = Clock::now();
        return ExecutedView(this, lsid, txnNumber);
    }
}

void TransactionTable::finish(const std::string& lsid, int64_t txnNumber,
                              const ExecutedStatements& executed,
                              const std::vector<StmtId>& moving) {
    MutexLock lk(_mutex);
    auto it = _sessions.find(lsid);
    if (it == _sessions.end() || it->second.txnNumber != txnNumber) return;
    Session& s = it->second;
    s.running = false;
    s.lastUse = Clock::now();
    for (const auto& [stmtId, result] : executed) s.statements[stmtId] = result;
    for (StmtId stmtId : moving) {
        // A claimed one stays claimed: this attempt ran again while another's move was in
        // flight (begin() lets it only after that move ended, so not in practice).
        Moving& m = s.moving[stmtId];
        if (m.claimedBy == 0) m.unclaimedUntil = s.lastUse + _unclaimedMoveLimit;
    }
    _finished.notify_all();
}

StatusWith<uint64_t> TransactionTable::claimMove(const std::string& lsid, int64_t txnNumber,
                                                 StmtId stmtId) {
    MutexLock lk(_mutex);
    auto it = _sessions.find(lsid);
    if (it == _sessions.end()) return uint64_t{0};
    Session& s = it->second;
    if (txnNumber < s.txnNumber) return tooOld(txnNumber, s.txnNumber);
    if (txnNumber > s.txnNumber) return uint64_t{0};
    if (s.statements.count(stmtId) > 0) {
        return Status(ErrorCodes::WriteConflict,
                      "the retryable write has been carried out already; run it again to get "
                      "its result");
    }
    Clock::time_point wakeAt = Clock::time_point::max();
    if (!isMoving(s, stmtId, Clock::now(), &wakeAt)) return uint64_t{0};
    Moving& m = s.moving.at(stmtId);
    if (m.claimedBy != 0) {
        return Status(ErrorCodes::WriteConflict,
                      "another transaction is moving the retryable write's document");
    }
    m.claimedBy = _nextMoveToken++;
    return m.claimedBy;
}

uint64_t TransactionTable::holdMove(const std::string& lsid, int64_t txnNumber, StmtId stmtId) {
    MutexLock lk(_mutex);
    Session& s = _sessions[lsid];
    if (txnNumber < s.txnNumber) return 0;
    if (txnNumber > s.txnNumber) s.startNumber(txnNumber);
    if (s.statements.count(stmtId) > 0) return 0;
    s.lastUse = Clock::now();
    Moving& m = s.moving[stmtId];
    m.claimedBy = _nextMoveToken++;
    return m.claimedBy;
}

void TransactionTable::releaseMove(const std::string& lsid, int64_t txnNumber, StmtId stmtId,
                                   uint64_t token) {
    if (token == 0) return;
    MutexLock lk(_mutex);
    auto it = _sessions.find(lsid);
    if (it == _sessions.end() || it->second.txnNumber != txnNumber) return;
    auto m = it->second.moving.find(stmtId);
    if (m == it->second.moving.end() || m->second.claimedBy != token) return;
    it->second.moving.erase(m);
    _finished.notify_all();
}

StatusWith<bool> TransactionTable::executed(const std::string& lsid, int64_t txnNumber,
                                            StmtId stmtId, Clock::time_point deadline,
                                            bool mayWait) {
    UniqueLock lk(_mutex);
    for (;;) {
        auto it = _sessions.find(lsid);
        if (it == _sessions.end()) return false;
        const Session& s = it->second;
        if (txnNumber < s.txnNumber) return tooOld(txnNumber, s.txnNumber);
        if (txnNumber > s.txnNumber) return false;
        const Clock::time_point now = Clock::now();
        Clock::time_point wakeAt = deadline;
        const bool moving = isMoving(it->second, stmtId, now, &wakeAt);
        if (!s.running && !s.expiring && !moving) return s.statements.count(stmtId) > 0;
        if (!mayWait) {
            return Status(ErrorCodes::InlineWouldBlock, "an attempt of the statement runs");
        }
        if (now >= deadline) {
            return Status(ErrorCodes::MaxTimeMSExpired,
                          "timed out waiting for a concurrent execution of the same retryable "
                          "write");
        }
        if (moving) ++_waitingForMove;
        _finished.wait_until(lk, wakeAt);
        if (moving) --_waitingForMove;
    }
}

size_t TransactionTable::expireIdle(Clock::time_point idleSince,
                                    const std::function<void(const std::string&)>& forget) {
    std::vector<std::string> idle;
    {
        MutexLock lk(_mutex);
        for (auto& [lsid, s] : _sessions) {
            if (s.running || s.expiring || !s.moving.empty() || s.lastUse >= idleSince) continue;
            s.expiring = true;
            idle.push_back(lsid);
        }
    }
    // Outside the mutex: other sessions go on while the records are deleted.
    for (const std::string& lsid : idle) forget(lsid);
    MutexLock lk(_mutex);
    for (const std::string& lsid : idle) _sessions.erase(lsid);
    if (!idle.empty()) _finished.notify_all();
    return idle.size();
}

std::vector<std::pair<std::string, int64_t>> TransactionTable::newestTxnNumbers() const {
    MutexLock lk(_mutex);
    std::vector<std::pair<std::string, int64_t>> out;
    out.reserve(_sessions.size());
    for (const auto& [lsid, s] : _sessions) {
        if (s.txnNumber >= 0) out.emplace_back(lsid, s.txnNumber);
    }
    return out;
}

size_t TransactionTable::size() const {
    MutexLock lk(_mutex);
    return _sessions.size();
}

size_t TransactionTable::movingStatements() const {
    MutexLock lk(_mutex);
    size_t n = 0;
    for (const auto& [lsid, s] : _sessions) n += s.moving.size();
    return n;
}

size_t TransactionTable::retriesWaitingForMove() const {
    MutexLock lk(_mutex);
    return _waitingForMove;
}

}  // namespace tessera::txn
