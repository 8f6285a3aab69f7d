#include "txn/session_transactions.h"

#include "base/log.h"
#include "base/op_id.h"
#include "storage/engine.h"

namespace tessera::txn {

namespace {

// The side record of a prepared transaction, keyed by the lsid's bytes and the txnNumber: a
// session may hold several, one set aside by the next (records of earlier versions, keyed by
// the lsid alone, are recovered alike: recoverPrepared reads the lsid and txnNumber from the
// record).
std::string preparedRecordKey(const std::string& lsid, int64_t txnNumber) {
    return std::string(SessionTransactions::kPreparedRecordPrefix) + lsid + "/" +
           std::to_string(txnNumber);
}

// The side record of a session's newest committed transaction with writes, {txnNumber}: written
// in the commit's own batch (durable exactly when the commit is), overwritten by the session's
// next commit; restoreCommitted() reads them back at startup.
std::string committedRecordKey(const std::string& lsid) {
    return std::string(SessionTransactions::kCommittedRecordPrefix) + lsid;
}

std::vector<std::pair<std::string, std::string>> commitRecordOf(const std::string& lsid,
                                                                int64_t txnNumber) {
    bson::BsonBuilder b;
    b.appendInt64("txnNumber", txnNumber);
    return {{committedRecordKey(lsid), std::string(b.obj().bytes())}};
}

}  // namespace

SessionTransactions::SessionTransactions(storage::Engine* engine,
                                         std::chrono::milliseconds idleSessionLimit)
    : _engine(engine), _idleSessionLimit(idleSessionLimit), _reaper([this] { reapLoop(); }) {}

SessionTransactions::~SessionTransactions() {
    {
        MutexLock lk(_mutex);
        _stopping = true;
    }
    _wake.notify_all();
    _reaper.join();
}

std::shared_ptr<SessionTransactions::Session> SessionTransactions::sessionFor(
    const std::string& lsid) {
    MutexLock lk(_mutex);
    auto& s = _sessions[lsid];
    if (!s) {
        s = std::make_shared<Session>();
        s->lsid = lsid;
    }
    return s;
}

std::shared_ptr<SessionTransactions::Session> SessionTransactions::setAsideFor(
    const std::string& lsid, int64_t txnNumber) {
    MutexLock lk(_mutex);
    auto it = _setAside.find({lsid, txnNumber});
    return it == _setAside.end() ? nullptr : it->second;
}

SessionTransactions::Checkout SessionTransactions::checkOutFor(
    const std::shared_ptr<Session>& session, int64_t txnNumber) {
    // The session may be busy with its next transaction's statement, which may wait for this
    // prepared one's decision (a read meeting its documents): whoever sets a transaction aside
    // holds the session, so the commit delivering that decision looks again for the
    // transaction set aside instead of waiting for the session.
    for (;;) {
        if (std::shared_ptr<Session> aside = setAsideFor(session->lsid, txnNumber)) {
            return Checkout(std::move(aside));
        }
        std::unique_lock held(session->checkout, std::defer_lock);
        if (held.try_lock_for(std::chrono::milliseconds(1))) {
            // Set aside while this waited: it was inserted before the session was released.
            std::shared_ptr<Session> aside = setAsideFor(session->lsid, txnNumber);
            if (!aside) return Checkout(session, std::move(held));
            held.unlock();
            return Checkout(std::move(aside));
        }
    }
}

std::shared_ptr<SessionTransactions::Session> SessionTransactions::takePreparedLocked(
    Session& live) {
    auto prepared = std::make_shared<Session>();
    MutexLock lk(prepared->stateMutex);
    prepared->lsid = live.lsid;
    prepared->txnNumber = live.txnNumber;
    prepared->state = live.state;
    prepared->txn = std::move(live.txn);
    prepared->started = live.started;
    prepared->opid = live.opid;
    prepared->lastUse = live.lastUse;
    prepared->prepareTs = live.prepareTs;
    prepared->coordinatorShard = std::move(live.coordinatorShard);
    prepared->coordinatorHost = std::move(live.coordinatorHost);
    prepared->preparedAt = live.preparedAt;
    prepared->prepareSynced = live.prepareSynced;
    prepared->readConcernLocal = live.readConcernLocal;
    prepared->setAside = true;
    live.state = State::kNone;
    live.coordinatorShard.clear();
    live.coordinatorHost.clear();
    return prepared;
}

void SessionTransactions::setAside(std::shared_ptr<Session> prepared) {
    if (!prepared) return;
    MutexLock lk(_mutex);
    _setAside[{prepared->lsid, prepared->txnNumber}] = std::move(prepared);
}

StatusWith<SessionTransactions::Checkout> SessionTransactions::beginStatement(
    const std::string& lsid, int64_t txnNumber, bool start, std::optional<Timestamp> atClusterTime,
    std::string_view commandName) {
    std::shared_ptr<Session> shared = sessionFor(lsid);
    Checkout session = start ? Checkout(shared) : checkOutFor(shared, txnNumber);
    // Between the checkout and the state lock: a prepared transaction this start sets aside is
    // published once that lock is released, before the session is.
    std::shared_ptr<Session> setAsideNow;
    SetAsideOnExit publish{this, &setAsideNow};
    UniqueLock lk(session->stateMutex);
    session->lastUse = std::chrono::steady_clock::now();
    std::string number = std::to_string(txnNumber);
    if (txnNumber < session->txnNumber) {
        return Status(ErrorCodes::TransactionTooOld,
                      "Cannot start transaction " + number + " on session because a newer " +
                          (session->state == State::kNone ? "retryable write " : "transaction ") +
                          std::to_string(session->txnNumber) + " has already started");
    }
    if (start) {
        bool restart = _participant && txnNumber == session->txnNumber &&
                       session->state == State::kAborted && session->abortedByStatement;
        if (txnNumber == session->txnNumber && session->state == State::kNone) {
            return Status(ErrorCodes::Location50911,
                          "Cannot start a transaction with transaction number " + number +
                              " on session because a retryable write with the same transaction "
                              "number has run on it");
        }
        if (txnNumber == session->txnNumber && !restart) {
            return Status(ErrorCodes::ConflictingOperationInProgress,
                          "Cannot start transaction " + number +
                              " on session: a transaction with the same number was started "
                              "already");
        }
        ASSIGN_OR_RETURN(auto txn, _engine->beginTransaction(atClusterTime, _commitObservers));
        if (session->state == State::kPrepared) {
            // Its commit was acknowledged before its delivery (two-phase commit): it goes on
            // beside this one until its decision.
            setAsideNow = takePreparedLocked(*session);
        }
        if (session->txn) session->txn->abort();
        session->txn = std::move(txn);
        session->txnNumber = txnNumber;
        session->state = State::kInProgress;
        session->abortedByStatement = false;
        session->abortReason.clear();
        session->started = session->lastUse;
        session->opid = nextOpId();
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
        case State::kPrepared:
            if (commandName == "commitTransaction" || commandName == "abortTransaction" ||
                commandName == "prepareTransaction") {
                return session;
            }
            return Status(ErrorCodes::PreparedTransactionInProgress,
                          "Transaction " + number +
                              " is prepared: only commitTransaction or abortTransaction may "
                              "follow");
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

Status SessionTransactions::beginRetryableWrite(const std::string& lsid, int64_t txnNumber,
                                                bool mayWait) {
    std::shared_ptr<Session> shared = sessionFor(lsid);
    Session& s = *shared;
    std::unique_lock checkout(s.checkout, std::defer_lock);
    if (mayWait) {
        checkout.lock();
    } else if (!checkout.try_lock()) {
        return Status(ErrorCodes::InlineWouldBlock, "a statement of the session runs");
    }
    std::shared_ptr<Session> setAsideNow;  // published after the state lock, before the session
    SetAsideOnExit publish{this, &setAsideNow};
    UniqueLock lk(s.stateMutex);
    std::string number = std::to_string(txnNumber);
    if (txnNumber < s.txnNumber) {
        return Status(ErrorCodes::TransactionTooOld,
                      "Retryable write with txnNumber " + number +
                          " is prohibited on session because a newer " +
                          (s.state == State::kNone ? "retryable write" : "transaction") +
                          " with txnNumber " + std::to_string(s.txnNumber) +
                          " has already started on this session.");
    }
    if (txnNumber == s.txnNumber) {
        if (s.state == State::kNone) return Status::OK();  // a retry, or another sub-command
        return Status(ErrorCodes::IncompleteTransactionHistory,
                      "Cannot retry a retryable write that has been converted into a "
                      "transaction: txnNumber " +
                          number + " of the session is a transaction");
    }
    if (s.state == State::kPrepared) {
        // Its commit was acknowledged before its delivery (two-phase commit): it goes on beside
        // the write until its decision.
        setAsideNow = takePreparedLocked(s);
    }
    if (s.txn) s.txn->abort();  // an unfinished transaction of an older number
    s.txn.reset();
    s.txnNumber = txnNumber;
    s.state = State::kNone;
    s.abortedByStatement = false;
    s.abortReason.clear();
    s.lastUse = std::chrono::steady_clock::now();
    return Status::OK();
}

void SessionTransactions::restoreRetryableWrite(const std::string& lsid, int64_t txnNumber) {
    std::shared_ptr<Session> s = sessionFor(lsid);
    MutexLock lk(s->stateMutex);
    if (txnNumber <= s->txnNumber || s->state == State::kPrepared) return;
    s->txnNumber = txnNumber;
    s->state = State::kNone;
    s->lastUse = std::chrono::steady_clock::now();
}

StatusWith<size_t> SessionTransactions::recoverPrepared() {
    ASSIGN_OR_RETURN(auto recovered,
                     _engine->recoverPreparedTransactions(kPreparedRecordPrefix, _commitObservers));
    for (storage::Engine::RecoveredTransaction& r : recovered) {
        bson::BsonElement lsid = r.meta["lsid"];
        if (lsid.type() != bson::BsonType::BinData) {
            return Status(ErrorCodes::InternalError, "a prepare record without its session");
        }
        std::shared_ptr<Session> live = sessionFor(std::string(lsid.binaryValue().data));
        std::shared_ptr<Session> s = live;
        int64_t txnNumber = r.meta["txnNumber"].numberLong();
        {
            // A session may have held several, all but its newest set aside.
            std::unique_lock held(live->checkout);
            std::shared_ptr<Session> older;
            {
                MutexLock lk(live->stateMutex);
                if (live->state == State::kPrepared) {
                    if (live->txnNumber > txnNumber) {
                        s = std::make_shared<Session>();
                        s->lsid = live->lsid;
                        s->setAside = true;
                        older = s;
                    } else {
                        older = takePreparedLocked(*live);
                    }
                }
            }
            setAside(std::move(older));
        }
        MutexLock lk(s->stateMutex);
        s->txnNumber = txnNumber;
        s->state = State::kPrepared;
        s->prepareTs = r.prepareTs;
        s->txn = std::move(r.txn);
        s->started = s->lastUse = s->preparedAt = std::chrono::steady_clock::now();
        s->opid = nextOpId();
        if (_preparedSideRecordsRecovered && !s->txn->addedSideRecords().empty()) {
            _preparedSideRecordsRecovered(s->txn->addedSideRecords(), *s->txn);
        }
        for (auto [field, into] : {std::pair{"coordinatorShard", &s->coordinatorShard},
                                   std::pair{"coordinatorHost", &s->coordinatorHost}}) {
            bson::BsonElement e = r.meta[field];
            if (e.type() == bson::BsonType::String) *into = std::string(e.stringValue());
        }
        log::info("TXN", 22211, "Restored a prepared transaction",
                  "{\"txnNumber\":" + std::to_string(s->txnNumber) +
                      ",\"prepareTimestamp\":{\"t\":" + std::to_string(r.prepareTs.secs()) +
                      ",\"i\":" + std::to_string(r.prepareTs.inc()) + "}}");
    }
    return recovered.size();
}

StatusWith<size_t> SessionTransactions::restoreCommitted() {
    size_t restored = 0;
    for (const auto& [key, value] : _engine->sideRecords(kCommittedRecordPrefix)) {
        bson::BsonView record(value.data());
        bson::BsonElement number = record["txnNumber"];
        if (key.size() <= kCommittedRecordPrefix.size() || !number.isNumber()) {
            return Status(ErrorCodes::InternalError, "a malformed transaction commit record");
        }
        std::shared_ptr<Session> s = sessionFor(key.substr(kCommittedRecordPrefix.size()));
        MutexLock lk(s->stateMutex);
        // A newer transaction or retryable write of the session (restored first) wins; the
        // record is still deleted when the session expires.
        s->commitRecorded = true;
        if (s->txnNumber >= number.numberLong()) continue;
        s->txnNumber = number.numberLong();
        s->state = State::kCommitted;
        s->started = s->lastUse = std::chrono::steady_clock::now();
        ++restored;
    }
    return restored;
}

void SessionTransactions::abortAfterFailure(Session& session, const Status& status) {
    MutexLock lk(session.stateMutex);
    if (session.state != State::kInProgress) return;
    if (session.txn) session.txn->abort();
    session.txn.reset();
    session.state = State::kAborted;
    session.abortedByStatement = true;
    session.abortReason = "a statement failed with " + status.toString();
}

StatusWith<Timestamp> SessionTransactions::commit(Session& session,
                                                  std::optional<Timestamp> commitTs) {
    MutexLock lk(session.stateMutex);
    if (session.state == State::kCommitted) return session.commitTs;
    if (session.state == State::kPrepared && !commitTs) {
        return Status(ErrorCodes::InvalidOptions,
                      "commitTimestamp must be provided to commit a prepared transaction");
    }
    if (session.state == State::kInProgress && commitTs) {
        return Status(ErrorCodes::InvalidOptions,
                      "commitTimestamp cannot be provided for a transaction that is not "
                      "prepared");
    }
    if ((session.state != State::kInProgress && session.state != State::kPrepared) ||
        !session.txn) {
        return Status(ErrorCodes::NoSuchTransaction,
                      "Transaction " + std::to_string(session.txnNumber) + " has been aborted.");
    }
    storage::WriteOptions opts;
    // Only a transaction that wrote is recorded: a read-only one stays a commit without a write,
    // and running it again after a restart changes nothing. Nor one set aside: the session's
    // record belongs to its newer transactions (this one's outcome is its coordinator's).
    const auto record = session.txn->hasWrites() && !session.setAside
                            ? commitRecordOf(session.lsid, session.txnNumber)
                            : std::vector<std::pair<std::string, std::string>>{};
    std::vector<std::pair<std::string, std::string>> added = session.txn->addedSideRecords();
    StatusWith<Timestamp> ts = commitTs ? session.txn->commitPrepared(*commitTs, record, opts)
                                        : session.txn->commit(record, opts);
    session.txn.reset();
    if (ts.isOK() && !added.empty() && _sideRecordsCommitted) _sideRecordsCommitted(added);
    if (!ts.isOK()) {
        session.state = State::kAborted;
        session.abortReason = "its commit failed with " + ts.getStatus().toString();
        return ts.getStatus();
    }
    session.state = State::kCommitted;
    session.commitTs = ts.getValue();
    session.commitRecorded = session.commitRecorded || !record.empty();
    return ts;
}

Status SessionTransactions::abort(Session& session) {
    MutexLock lk(session.stateMutex);
    if (session.state == State::kCommitted) {
        return Status(ErrorCodes::TransactionCommitted, "Cannot abort transaction " +
                                                            std::to_string(session.txnNumber) +
                                                            ": it has been committed.");
    }
    if (session.state != State::kInProgress && session.state != State::kPrepared) {
        return Status(ErrorCodes::NoSuchTransaction,
                      "Transaction " + std::to_string(session.txnNumber) + " has been aborted.");
    }
    if (session.txn) session.txn->abort();
    session.txn.reset();
    session.state = State::kAborted;
    session.abortedByStatement = false;
    session.abortReason = "abortTransaction";
    return Status::OK();
}

StatusWith<bool> SessionTransactions::committedElseAbort(const std::string& lsid,
                                                         int64_t txnNumber) {
    auto checkout = beginStatement(lsid, txnNumber, false, std::nullopt, "abortTransaction");
    if (!checkout.isOK()) {
        const Status& st = checkout.getStatus();
        if (st.is(ErrorCodes::TransactionCommitted)) return true;
        if (st.is(ErrorCodes::NoSuchTransaction)) return false;
        return st;
    }
    Session& session = *checkout.getValue();
    {
        MutexLock lk(session.stateMutex);
        if (session.state == State::kPrepared) {
            return Status(ErrorCodes::PreparedTransactionInProgress,
                          "Transaction " + std::to_string(txnNumber) +
                              " is prepared: its coordinator decides it");
        }
    }
    Status aborted = abort(session);
    if (aborted.is(ErrorCodes::TransactionCommitted)) return true;
    if (!aborted.isOK() && !aborted.is(ErrorCodes::NoSuchTransaction)) return aborted;
    return false;
}

StatusWith<Timestamp> SessionTransactions::prepare(Session& session, const Coordinator& coordinator,
                                                   bool synced) {
    MutexLock lk(session.stateMutex);
    if (session.state == State::kPrepared) return session.prepareTs;
    if (session.state != State::kInProgress || !session.txn) {
        return Status(ErrorCodes::NoSuchTransaction,
                      "Transaction " + std::to_string(session.txnNumber) + " has been aborted.");
    }
    bson::BsonBuilder meta;
    meta.appendBinary("lsid", 4, session.lsid);
    meta.appendInt64("txnNumber", session.txnNumber);
    meta.append("coordinatorShard", coordinator.shard);
    meta.append("coordinatorHost", coordinator.host);
    StatusWith<Timestamp> ts = session.txn->prepare(
        preparedRecordKey(session.lsid, session.txnNumber), meta.obj(), synced);
    if (!ts.isOK()) {
        session.txn->abort();
        session.txn.reset();
        session.state = State::kAborted;
        session.abortReason = "its prepare failed with " + ts.getStatus().toString();
        return ts.getStatus();
    }
    // A read-only participant has nothing to commit: it is done (committed) at once, so the
    // coordinator's commitTransaction later finds it committed.
    if (!session.txn->isPrepared()) {
        session.txn->abort();
        session.txn.reset();
        session.state = State::kCommitted;
        session.commitTs = ts.getValue();
        return ts;
    }
    session.state = State::kPrepared;
    session.prepareTs = ts.getValue();
    session.coordinatorShard = coordinator.shard;
    session.coordinatorHost = coordinator.host;
    session.preparedAt = std::chrono::steady_clock::now();
    session.prepareSynced = synced;
    return ts;
}

std::vector<std::shared_ptr<SessionTransactions::Session>> SessionTransactions::allSessions() {
    MutexLock lk(_mutex);
    std::vector<std::shared_ptr<Session>> sessions;
    sessions.reserve(_sessions.size() + _setAside.size());
    for (const auto& [lsid, s] : _sessions) sessions.push_back(s);
    for (const auto& [key, s] : _setAside) sessions.push_back(s);
    return sessions;
}

std::vector<SessionTransactions::PreparedTransaction> SessionTransactions::preparedLongerThan(
    std::chrono::milliseconds age) {
    std::vector<std::shared_ptr<Session>> sessions = allSessions();
    auto before = std::chrono::steady_clock::now() - age;
    std::vector<PreparedTransaction> out;
    for (const std::shared_ptr<Session>& s : sessions) {
        MutexLock lk(s->stateMutex);
        if (s->state != State::kPrepared || s->preparedAt > before) continue;
        out.push_back({s->lsid, s->txnNumber, {s->coordinatorShard, s->coordinatorHost}});
    }
    return out;
}

void SessionTransactions::endSession(const std::string& lsid) {
    std::shared_ptr<Session> s;
    {
        MutexLock lk(_mutex);
        auto it = _sessions.find(lsid);
        if (it == _sessions.end()) return;
        s = it->second;
    }
    Checkout session(s);  // waits for an operation still running in it
    MutexLock lk(session->stateMutex);
    // Only its coordinator's decision ends a prepared transaction: the session stays.
    if (session->state == State::kPrepared) return;
    {
        MutexLock all(_mutex);
        auto it = _sessions.find(lsid);
        if (it != _sessions.end() && it->second == s) _sessions.erase(it);
    }
    if (session->txn) session->txn->abort();
    session->txn.reset();
    if (session->state == State::kInProgress) session->state = State::kAborted;
}

void SessionTransactions::killAll() {
    std::vector<std::string> ids;
    {
        MutexLock lk(_mutex);
        for (const auto& [id, s] : _sessions) ids.push_back(id);
    }
    for (const std::string& id : ids) endSession(id);
}

bool SessionTransactions::abortIfDoomedLocked(Session& s) {
    if (s.state != State::kInProgress || !s.txn) return false;
    std::optional<std::string> why = s.txn->doomedBecause();
    if (!why) return false;
    s.txn->abort();
    s.txn.reset();
    s.state = State::kAborted;
    s.abortReason = *why;
    return true;
}

size_t SessionTransactions::abortDoomed() {
    std::vector<std::shared_ptr<Session>> sessions;
    {
        MutexLock lk(_mutex);
        for (const auto& [id, s] : _sessions) sessions.push_back(s);
    }
    size_t aborted = 0;
    for (const auto& s : sessions) {
        std::unique_lock busy(s->checkout, std::try_to_lock);
        if (!busy) continue;  // its statement fails at its next write, the reaper ends it after
        MutexLock state(s->stateMutex);
        if (abortIfDoomedLocked(*s)) ++aborted;
    }
    return aborted;
}

void SessionTransactions::reapLoop() {
    UniqueLock lk(_mutex);
    while (!_stopping) {
        _wake.wait_for(lk, std::chrono::milliseconds(500));
        if (_stopping) break;
        auto now = std::chrono::steady_clock::now();
        for (auto it = _setAside.begin(); it != _setAside.end();) {
            Session& s = *it->second;
            std::unique_lock busy(s.checkout, std::try_to_lock);
            bool decided = false;
            if (busy) {
                MutexLock state(s.stateMutex);
                decided = s.state != State::kPrepared;
            }
            it = decided ? _setAside.erase(it) : std::next(it);
        }
        std::vector<std::pair<std::string, std::string>> forget;  // commit records to delete
        for (auto it = _sessions.begin(); it != _sessions.end();) {
            Session& s = *it->second;
            std::unique_lock busy(s.checkout, std::try_to_lock);
            if (!busy) {  // an operation runs in it: it is alive
                ++it;
                continue;
            }
            bool expired = false;
            bool recorded = false;
            {
                MutexLock state(s.stateMutex);
                abortIfDoomedLocked(s);
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
                expired = s.state != State::kInProgress && s.state != State::kPrepared &&
                          now - s.lastUse > _idleSessionLimit;
                recorded = s.commitRecorded;
            }
            busy.unlock();
            if (expired) {
                if (recorded) forget.emplace_back(committedRecordKey(it->first), "");
                it = _sessions.erase(it);  // an expired session (logicalSessionTimeoutMinutes)
                continue;
            }
            ++it;
        }
        // Written under _mutex: a new session of one of these lsids cannot commit (and write its
        // own record) before the deletes are in the log. Unsynced: a delete lost in a crash
        // only brings back a record the next expiry deletes again.
        if (!forget.empty()) (void)_engine->writeSideRecords(forget, false);
    }
}

}  // namespace tessera::txn
