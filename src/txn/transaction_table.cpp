#include "txn/transaction_table.h"

#include <vector>

namespace tessera::txn {

Status TransactionTable::tooOld(int64_t txnNumber, int64_t newest) {
    return Status(ErrorCodes::TransactionTooOld,
                  "Cannot start transaction " + std::to_string(txnNumber) +
                      " on session because a newer transaction " + std::to_string(newest) +
                      " has already started");
}

void TransactionTable::restore(const std::string& lsid, int64_t txnNumber, StmtId stmtId,
                               bson::BsonObj result) {
    std::lock_guard lk(_mutex);
    Session& s = _sessions[lsid];
    if (txnNumber < s.txnNumber) return;
    if (txnNumber > s.txnNumber) {
        s.txnNumber = txnNumber;
        s.statements.clear();
    }
    s.statements[stmtId] = std::move(result);
}

bool TransactionTable::adopt(const std::string& lsid, int64_t txnNumber, StmtId stmtId,
                             bson::BsonObj result) {
    std::unique_lock lk(_mutex);
    // An expiring session's records are being deleted: adopted after, so that they stay.
    _finished.wait(lk, [&] {
        auto it = _sessions.find(lsid);
        return it == _sessions.end() || !it->second.expiring;
    });
    Session& s = _sessions[lsid];
    s.lastUse = Clock::now();
    if (txnNumber < s.txnNumber) return false;
    if (txnNumber > s.txnNumber) {
        s.txnNumber = txnNumber;
        s.statements.clear();
    }
    s.statements[stmtId] = std::move(result);
    return true;
}

StatusWith<ExecutedStatements> TransactionTable::begin(const std::string& lsid, int64_t txnNumber,
                                                       Clock::time_point deadline, bool mayWait) {
    std::unique_lock lk(_mutex);
    for (;;) {
        Session& s = _sessions[lsid];
        if (txnNumber < s.txnNumber) return tooOld(txnNumber, s.txnNumber);
        const bool busy = s.running || s.expiring;
        if (busy && !mayWait) {
            return Status(ErrorCodes::InlineWouldBlock, "another attempt of the session runs");
        }
        if (busy) {
            // The same txnNumber on another connection (a retry after a network error), or a
            // newer one while the older still runs: one attempt of a session at a time, so
            // that its records stay ordered and a retry sees what the first attempt did.
            if (_finished.wait_until(lk, deadline) == std::cv_status::timeout) {
                return Status(ErrorCodes::MaxTimeMSExpired,
                              "timed out waiting for a concurrent execution of the session's "
                              "retryable write");
            }
            continue;  // the map may have changed: look again
        }
        if (txnNumber > s.txnNumber) {
            s.txnNumber = txnNumber;
            s.statements.clear();
        }
        s.running = true;
        s.lastUse = Clock::now();
        return s.statements;
    }
}

void TransactionTable::finish(const std::string& lsid, int64_t txnNumber,
                              const ExecutedStatements& executed) {
    std::lock_guard lk(_mutex);
    auto it = _sessions.find(lsid);
    if (it == _sessions.end() || it->second.txnNumber != txnNumber) return;
    Session& s = it->second;
    s.running = false;
    s.lastUse = Clock::now();
    for (const auto& [stmtId, result] : executed) s.statements[stmtId] = result;
    _finished.notify_all();
}

StatusWith<bool> TransactionTable::executed(const std::string& lsid, int64_t txnNumber,
                                            StmtId stmtId, Clock::time_point deadline) {
    std::unique_lock lk(_mutex);
    for (;;) {
        auto it = _sessions.find(lsid);
        if (it == _sessions.end()) return false;
        const Session& s = it->second;
        if (txnNumber < s.txnNumber) return tooOld(txnNumber, s.txnNumber);
        if (txnNumber > s.txnNumber) return false;
        if (!s.running && !s.expiring) return s.statements.count(stmtId) > 0;
        if (_finished.wait_until(lk, deadline) == std::cv_status::timeout) {
            return Status(ErrorCodes::MaxTimeMSExpired,
                          "timed out waiting for a concurrent execution of the same retryable "
                          "write");
        }
    }
}

size_t TransactionTable::expireIdle(Clock::time_point idleSince,
                                    const std::function<void(const std::string&)>& forget) {
    std::vector<std::string> idle;
    {
        std::lock_guard lk(_mutex);
        for (auto& [lsid, s] : _sessions) {
            if (s.running || s.expiring || s.lastUse >= idleSince) continue;
            s.expiring = true;
            idle.push_back(lsid);
        }
    }
    // Outside the mutex: other sessions go on while the records are deleted.
    for (const std::string& lsid : idle) forget(lsid);
    std::lock_guard lk(_mutex);
    for (const std::string& lsid : idle) _sessions.erase(lsid);
    if (!idle.empty()) _finished.notify_all();
    return idle.size();
}

std::vector<std::pair<std::string, int64_t>> TransactionTable::newestTxnNumbers() const {
    std::lock_guard lk(_mutex);
    std::vector<std::pair<std::string, int64_t>> out;
    out.reserve(_sessions.size());
    for (const auto& [lsid, s] : _sessions) {
        if (s.txnNumber >= 0) out.emplace_back(lsid, s.txnNumber);
    }
    return out;
}

size_t TransactionTable::size() const {
    std::lock_guard lk(_mutex);
    return _sessions.size();
}

}  // namespace tessera::txn
