#include "txn/transaction_table.h"

#include "base/log.h"

namespace tessera::txn {

void TransactionTable::setPersister(Persister persister) {
    std::lock_guard lk(_mutex);
    _persister = std::move(persister);
}

void TransactionTable::restore(const std::string& lsid, int64_t txnNumber, bson::BsonObj reply) {
    std::lock_guard lk(_mutex);
    Session& s = _sessions[lsid];
    if (txnNumber < s.txnNumber) return;
    s.txnNumber = txnNumber;
    s.running = false;
    s.executed = true;
    s.reply = reply;
    s.lastExecutedTxn = txnNumber;
    s.lastReply = std::move(reply);
}

StatusWith<std::optional<bson::BsonObj>> TransactionTable::begin(const std::string& lsid,
                                                                 int64_t txnNumber,
                                                                 Clock::time_point deadline) {
    std::unique_lock lk(_mutex);
    for (;;) {
        Session& s = _sessions[lsid];
        if (txnNumber < s.txnNumber) {
            return Status(ErrorCodes::TransactionTooOld,
                          "Cannot start transaction " + std::to_string(txnNumber) +
                              " on session because a newer transaction " +
                              std::to_string(s.txnNumber) + " has already started");
        }
        if (txnNumber == s.txnNumber) {
            if (s.executed) return std::optional<bson::BsonObj>(s.reply);
            if (s.running) {
                // The same write is executing on another connection (a retry after a network
                // error): wait for its outcome.
                if (_finished.wait_until(lk, deadline) == std::cv_status::timeout) {
                    return Status(ErrorCodes::MaxTimeMSExpired,
                                  "timed out waiting for a concurrent execution of the same "
                                  "retryable write");
                }
                continue;  // the map may have changed: look again
            }
        }
        if (s.running && txnNumber > s.txnNumber) {
            // A newer txnNumber while an older one still runs: the older one's outcome no
            // longer matters to the client; wait for it anyway so that records stay ordered.
            if (_finished.wait_until(lk, deadline) == std::cv_status::timeout) {
                return Status(ErrorCodes::MaxTimeMSExpired,
                              "timed out waiting for the session's previous write");
            }
            continue;
        }
        s.txnNumber = txnNumber;
        s.running = true;
        s.executed = false;
        s.reply = bson::BsonObj();
        return std::optional<bson::BsonObj>();
    }
}

void TransactionTable::finish(const std::string& lsid, int64_t txnNumber,
                              const bson::BsonObj* reply, bool persist) {
    Persister persister;
    {
        std::lock_guard lk(_mutex);
        auto it = _sessions.find(lsid);
        if (it == _sessions.end() || it->second.txnNumber != txnNumber) return;
        Session& s = it->second;
        s.running = false;
        if (reply) {
            s.executed = true;
            s.reply = *reply;
            s.lastExecutedTxn = txnNumber;
            s.lastReply = *reply;
            if (persist) persister = _persister;
        } else if (s.lastExecutedTxn >= 0) {
            // Back to the last executed write: its replay stays available; the failed attempt
            // may be retried with the same txnNumber (it is newer).
            s.txnNumber = s.lastExecutedTxn;
            s.executed = true;
            s.reply = s.lastReply;
        } else {
            _sessions.erase(it);
        }
        _finished.notify_all();
    }
    if (persister && reply) {
        Status st = persister(lsid, txnNumber, *reply);
        if (!st.isOK()) {
            log::warning("SHARDING", 22010, "Failed to persist a retryable write record",
                         "{\"error\":\"" + log::jsonEscape(st.toString()) + "\"}");
        }
    }
}

StatusWith<bool> TransactionTable::executed(const std::string& lsid, int64_t txnNumber,
                                            Clock::time_point deadline) {
    std::unique_lock lk(_mutex);
    for (;;) {
        auto it = _sessions.find(lsid);
        if (it == _sessions.end()) return false;
        const Session& s = it->second;
        if (txnNumber < s.txnNumber) {
            return Status(ErrorCodes::TransactionTooOld,
                          "Cannot start transaction " + std::to_string(txnNumber) +
                              " on session because a newer transaction " +
                              std::to_string(s.txnNumber) + " has already started");
        }
        if (txnNumber > s.txnNumber) return false;
        if (!s.running) return s.executed;
        if (_finished.wait_until(lk, deadline) == std::cv_status::timeout) {
            return Status(ErrorCodes::MaxTimeMSExpired,
                          "timed out waiting for a concurrent execution of the same retryable "
                          "write");
        }
    }
}

size_t TransactionTable::size() const {
    std::lock_guard lk(_mutex);
    return _sessions.size();
}

}  // namespace tessera::txn
