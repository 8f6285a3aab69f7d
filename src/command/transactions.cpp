#include "command/transactions.h"

#include <array>

#include "base/log.h"
#include "command/server_info.h"
#include "storage/engine.h"

namespace tessera::command {

bool allowedInTransaction(std::string_view name) {
    static constexpr std::array<std::string_view, 13> kAllowed = {
        "find",
        "getMore",
        "killCursors",
        "aggregate",
        "distinct",
        "insert",
        "update",
        "delete",
        "findAndModify",
        "findandmodify",
        "commitTransaction",
        "abortTransaction",
        "bulkWrite",
    };
    for (std::string_view n : kAllowed) {
        if (n == name) return true;
    }
    return false;
}

SessionTransactions::SessionTransactions(storage::Engine* engine)
    : _engine(engine), _reaper([this] { reapLoop(); }) {}

SessionTransactions::~SessionTransactions() {
    {
        std::lock_guard lk(_mutex);
        _stopping = true;
    }
    _wake.notify_all();
    _reaper.join();
}

std::shared_ptr<SessionTransactions::Session> SessionTransactions::sessionFor(
    const std::string& lsid) {
    std::lock_guard lk(_mutex);
    auto& s = _sessions[lsid];
    if (!s) s = std::make_shared<Session>();
    return s;
}

StatusWith<SessionTransactions::Checkout> SessionTransactions::beginStatement(
    const std::string& lsid, int64_t txnNumber, bool start, std::optional<Timestamp> atClusterTime,
    std::string_view commandName) {
    Checkout session(sessionFor(lsid));
    std::lock_guard lk(session->stateMutex);
    session->lastUse = std::chrono::steady_clock::now();
    std::string number = std::to_string(txnNumber);
    if (txnNumber < session->txnNumber) {
        return Status(ErrorCodes::TransactionTooOld, "Cannot start transaction " + number +
                                                         " on session because a newer "
                                                         "transaction " +
                                                         std::to_string(session->txnNumber) +
                                                         " has already started");
    }
    if (start) {
        if (txnNumber == session->txnNumber) {
            return Status(ErrorCodes::ConflictingOperationInProgress,
                          "Cannot start transaction " + number +
                              " on session: a transaction with the same number was started "
                              "already");
        }
        if (session->txn) session->txn->abort();
        session->txn.reset();
        ASSIGN_OR_RETURN(session->txn, _engine->beginTransaction(atClusterTime, nullptr));
        session->txnNumber = txnNumber;
        session->state = State::kInProgress;
        session->abortReason.clear();
        session->started = session->lastUse;
        return session;
    }
    if (txnNumber > session->txnNumber || session->state == State::kNone) {
        return Status(ErrorCodes::NoSuchTransaction,
                      "Given transaction number " + number +
                          " does not match any in-progress transactions. The active transaction "
                          "number is " +
                          std::to_string(session->txnNumber));
    }
    switch (session->state) {
        case State::kInProgress:
            return session;
        case State::kCommitted:
            if (commandName == "commitTransaction") return session;  // a retried commit
            return Status(ErrorCodes::TransactionCommitted,
                          "Transaction " + number + " has been committed.");
        case State::kAborted:
        case State::kNone:
            break;
    }
    return Status(ErrorCodes::NoSuchTransaction,
                  "Transaction " + number + " has been aborted" +
                      (session->abortReason.empty() ? "." : ": " + session->abortReason));
}

void SessionTransactions::abortAfterFailure(Session& session, const Status& status) {
    std::lock_guard lk(session.stateMutex);
    if (session.state != State::kInProgress) return;
    if (session.txn) session.txn->abort();
    session.txn.reset();
    session.state = State::kAborted;
    session.abortReason = "a statement failed with " + status.toString();
}

StatusWith<Timestamp> SessionTransactions::commit(Session& session, bool sync) {
    std::lock_guard lk(session.stateMutex);
    if (session.state == State::kCommitted) return session.commitTs;
    if (session.state != State::kInProgress || !session.txn) {
        return Status(ErrorCodes::NoSuchTransaction,
                      "Transaction " + std::to_string(session.txnNumber) + " has been aborted.");
    }
    storage::WriteOptions opts;
    opts.sync = sync;
    StatusWith<Timestamp> ts = session.txn->commit({}, opts);
    session.txn.reset();
    if (!ts.isOK()) {
        session.state = State::kAborted;
        session.abortReason = "its commit failed with " + ts.getStatus().toString();
        return ts.getStatus();
    }
    session.state = State::kCommitted;
    session.commitTs = ts.getValue();
    return ts;
}

Status SessionTransactions::abort(Session& session) {
    std::lock_guard lk(session.stateMutex);
    if (session.state == State::kCommitted) {
        return Status(ErrorCodes::TransactionCommitted, "Cannot abort transaction " +
                                                            std::to_string(session.txnNumber) +
                                                            ": it has been committed.");
    }
    if (session.state != State::kInProgress) {
        return Status(ErrorCodes::NoSuchTransaction,
                      "Transaction " + std::to_string(session.txnNumber) + " has been aborted.");
    }
    if (session.txn) session.txn->abort();
    session.txn.reset();
    session.state = State::kAborted;
    session.abortReason = "abortTransaction";
    return Status::OK();
}

void SessionTransactions::endSession(const std::string& lsid) {
    std::shared_ptr<Session> s;
    {
        std::lock_guard lk(_mutex);
        auto it = _sessions.find(lsid);
        if (it == _sessions.end()) return;
        s = it->second;
        _sessions.erase(it);
    }
    Checkout session(std::move(s));  // waits for an operation still running in it
    std::lock_guard lk(session->stateMutex);
    if (session->txn) session->txn->abort();
    session->txn.reset();
    if (session->state == State::kInProgress) session->state = State::kAborted;
}

void SessionTransactions::killAll() {
    std::vector<std::string> ids;
    {
        std::lock_guard lk(_mutex);
        for (const auto& [id, s] : _sessions) ids.push_back(id);
    }
    for (const std::string& id : ids) endSession(id);
}

void SessionTransactions::reapLoop() {
    const auto idleSessionLimit = std::chrono::minutes(kLogicalSessionTimeoutMinutes);
    std::unique_lock lk(_mutex);
    while (!_stopping) {
        _wake.wait_for(lk, std::chrono::milliseconds(500));
        if (_stopping) break;
        auto now = std::chrono::steady_clock::now();
        for (auto it = _sessions.begin(); it != _sessions.end();) {
            Session& s = *it->second;
            std::unique_lock busy(s.checkout, std::try_to_lock);
            if (!busy) {  // an operation runs in it: it is alive
                ++it;
                continue;
            }
            bool expired = false;
            {
                std::lock_guard state(s.stateMutex);
                if (s.state == State::kInProgress && now - s.started > kLifetimeLimit) {
                    log::info("TXN", 5611901, "Aborting a transaction that exceeded its lifetime",
                              "{\"txnNumber\":" + std::to_string(s.txnNumber) +
                                  ",\"transactionLifetimeLimitSeconds\":" +
                                  std::to_string(kLifetimeLimit.count()) + "}");
                    if (s.txn) s.txn->abort();
                    s.txn.reset();
                    s.state = State::kAborted;
                    s.abortReason = "it exceeded transactionLifetimeLimitSeconds (" +
                                    std::to_string(kLifetimeLimit.count()) + ")";
                }
                expired = s.state != State::kInProgress && now - s.lastUse > idleSessionLimit;
            }
            busy.unlock();
            if (expired) {
                it = _sessions.erase(it);  // an expired session (logicalSessionTimeoutMinutes)
                continue;
            }
            ++it;
        }
    }
}

}  // namespace tessera::command
