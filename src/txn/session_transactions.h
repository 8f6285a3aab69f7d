#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/hlc.h"
#include "base/mutex.h"
#include "base/status.h"
#include "bson/bson_builder.h"
#include "bson/bson_obj.h"
#include "storage/transaction.h"
#include "txn/logical_sessions.h"

namespace tessera::storage {
class Engine;
class WriteUnit;
}  // namespace tessera::storage

namespace tessera::txn {

enum class TransactionState { kNone, kInProgress, kPrepared, kCommitted, kAborted };

// One logical session's transaction state (SessionTransactions).
struct TransactionSession {
    std::string lsid;     // lsid.id, 16 bytes
    TimedMutex checkout;  // held by the operation using the session
    Mutex stateMutex;     // guards what the reaper reads and changes below
    int64_t txnNumber = -1;
    TransactionState state = TransactionState::kNone;
    std::string abortReason;
    std::unique_ptr<storage::Transaction> txn;
    std::chrono::steady_clock::time_point started;
    std::chrono::steady_clock::time_point lastUse;
    int32_t opid = 0;  // currentOp's id of the transaction, from its start
    Timestamp commitTs;
    Timestamp prepareTs;  // kPrepared: the storage transaction's prepare timestamp
    // kPrepared: the shard coordinating its commit (prepareTransaction's `coordinator`; empty
    // when it is not known) and when it was prepared, so that a participant whose decision is
    // late asks for it (txn/transaction_coordinator.h, "participant recovery").
    std::string coordinatorShard;
    std::string coordinatorHost;
    std::chrono::steady_clock::time_point preparedAt;
    // kPrepared: its prepare record is known durable (a synced prepare, or a sync after it); a
    // part prepared unsynced (prepareTransaction's notifyCoordinatorWhenDurable, a recovered one)
    // is synced before a synced prepare of it answers again.
    bool prepareSynced = false;
    // A prepared transaction set aside by the session's next transaction or retryable write
    // (SessionTransactions, "set aside"): it is addressed by its txnNumber until its decision,
    // and its commit writes no commit record (the session has moved past it).
    bool setAside = false;
    // The transaction ended because of its statement's error (not abortTransaction): a shard
    // may start it again under the same number (a router retrying a stale first statement).
    bool abortedByStatement = false;
    // Its commit record (kCommittedRecordPrefix) exists: deleted when the session expires.
    bool commitRecorded = false;
    // The transaction's read concern level is local (TransactionArgs::readConcernLocal).
    bool readConcernLocal = true;
};

// The multi-document transactions of one process, per logical session (MongoDB's
// TransactionParticipant on a replica-set member): which txnNumber each session is at, and that
// transaction's state and storage transaction (storage/transaction.h).
//
// A statement checks its session out (one operation of a session at a time; a second one waits),
// so a transaction is used by one thread at a time. Rules (README.md "Transactions"):
// - `startTransaction: true` with a txnNumber greater than the session's begins a transaction
//   (aborting an unfinished older one); an older txnNumber is TransactionTooOld (225), the
//   same one again ConflictingOperationInProgress (117).
// - other statements, commitTransaction and abortTransaction name the session's current
//   txnNumber; anything else is NoSuchTransaction (251). commitTransaction of a committed
//   transaction answers ok again (a retried commit); any command of an aborted one is 251.
// - a statement that fails aborts the transaction (MongoDB's rule): its next statement gets 251.
// - a transaction older than transactionLifetimeLimitSeconds (60) is aborted by a reaper, so
//   that its intents stop holding back other writers.
// - On a shard (participant mode) a router's transaction may also be prepared (two-phase
//   commit, prepareTransaction) and then only committed at its coordinator's commitTimestamp or
//   aborted: a prepared transaction is never aborted by the reaper, endSessions or
//   killSessions; any other statement of it is PreparedTransactionInProgress (267).
// - Set aside: the coordinator acknowledges a commit before it delivers it, so a session's next
//   transaction (or retryable write) may reach a shard that still holds the previous one
//   prepared. It does not wait for that decision: the prepared transaction is set aside (kept by
//   (lsid, txnNumber), its commit, abort and prepare reach it there) and the new one begins
//   beside it. A read of the new one that meets the prepared one's documents waits for its
//   decision as any reader does (storage/docs/protocols/two-phase-commit.md). A
//   transaction a statement error aborted may be started again under the same txnNumber
//   (MongoDB's rule for shards: the router retries a first statement after StaleConfig).
class SessionTransactions {
  public:
    static constexpr std::chrono::seconds kLifetimeLimit{60};

    using State = TransactionState;
    using Session = TransactionSession;

    // `idleSessionLimit`: how long an unused session is kept (logicalSessionTimeoutMinutes;
    // shorter in tests).
    explicit SessionTransactions(storage::Engine* engine,
                                 std::chrono::milliseconds idleSessionLimit =
                                     std::chrono::minutes(kLogicalSessionTimeoutMinutes));
    ~SessionTransactions();

    // A shard's transactions (see above). `commitObservers` (may be null; must outlive this)
    // are told about every write of a transaction when it commits: the shard's change capture,
    // so that a migration's catch-up sees transactional writes.
    void enableParticipantMode(const storage::WriteUnit* commitObservers) {
        _participant = true;
        _commitObservers = commitObservers;
    }
    bool participantMode() const { return _participant; }
    // Told, after a transaction committed, the side records it added
    // (storage::Transaction::addSideRecord): the shard's records of retryable writes that its
    // router carried out in a transaction of its own. Set before the first transaction.
    using SideRecordsCommitted =
        std::function<void(const std::vector<std::pair<std::string, std::string>>& records)>;
    void onSideRecordsCommitted(SideRecordsCommitted fn) { _sideRecordsCommitted = std::move(fn); }
    // Told, for each prepared transaction recoverPrepared() restores, the side records it
    // added and the transaction itself (to register storage::Transaction::onAbort): the shard
    // holds the retryable writes those records are of as moving until it is decided
    // (txn::TransactionTable::holdMove). Set before recoverPrepared().
    using PreparedSideRecordsRecovered =
        std::function<void(const std::vector<std::pair<std::string, std::string>>& records,
                           storage::Transaction& txn)>;
    void onPreparedSideRecordsRecovered(PreparedSideRecordsRecovered fn) {
        _preparedSideRecordsRecovered = std::move(fn);
    }

    // Told when prepareTransaction {notifyCoordinatorWhenDurable: true} answered a part with
    // writes before it was durable (a router's staged commit without journal, src/txn/README.md
    // "Staged commit"): the callee syncs the WAL and then tells the coordinator, whose decision
    // waits for that. Set by a shard before it serves; where unset such a prepare is refused.
    struct Coordinator;
    using PreparedUnsynced =
        std::function<void(const std::string& lsid, int64_t txnNumber,
                           const Coordinator& coordinator, Timestamp prepareTs)>;
    void onPreparedUnsynced(PreparedUnsynced fn) { _preparedUnsynced = std::move(fn); }
    const PreparedUnsynced& preparedUnsynced() const { return _preparedUnsynced; }

    // A checked-out session: released when destroyed.
    class Checkout {
      public:
        Checkout() = default;
        explicit Checkout(std::shared_ptr<Session> s) : _session(std::move(s)) {
            _lock = std::unique_lock(_session->checkout);
        }
        Checkout(std::shared_ptr<Session> s, std::unique_lock<TimedMutex> held)
            : _session(std::move(s)), _lock(std::move(held)) {}
        Session* operator->() const { return _session.get(); }
        Session& operator*() const { return *_session; }
        explicit operator bool() const { return _session != nullptr; }

      private:
        std::shared_ptr<Session> _session;
        std::unique_lock<TimedMutex> _lock;
    };

    // Checks the session out for one statement of transaction `txnNumber` and prepares it:
    // begins it (`start`, reading at `atClusterTime` if given; a prepared transaction of the
    // session is set aside) or verifies it is the session's current transaction or one set
    // aside. On success *txn is the storage transaction to run the statement in (null only for
    // a commit or abort of an already finished transaction).
    StatusWith<Checkout> beginStatement(const std::string& lsid, int64_t txnNumber, bool start,
                                        std::optional<Timestamp> atClusterTime,
                                        std::string_view commandName);

    // Ends the statement: a failed statement (other than commit/abort) aborts the transaction.
    static void abortAfterFailure(Session& session, const Status& status);
    // commitTransaction / abortTransaction of the checked-out session's transaction. A prepared
    // transaction commits at `commitTs` (required for it, refused for any other). The commit is
    // visible when this returns, not yet journaled: the caller syncs when it must.
    StatusWith<Timestamp> commit(Session& session,
                                 std::optional<Timestamp> commitTs = std::nullopt);
    static Status abort(Session& session);
    // prepareTransaction (participant mode): the prepare timestamp; again the same one when
    // retried. The prepared transaction is durable (its record, kPreparedRecordPrefix, which
    // names its coordinator): after a crash recoverPrepared() restores it, prepared.
    struct Coordinator {
        std::string shard;
        std::string host;
    };
    // `synced` false: the record is written to the WAL only (storage::Transaction::prepare).
    static StatusWith<Timestamp> prepare(Session& session, const Coordinator& coordinator = {},
                                         bool synced = true);
    // The transactions prepared here for longer than `age` (their decision is late: the
    // coordinator may have lost its record, see participant recovery in
    // txn/transaction_coordinator.h).
    struct PreparedTransaction {
        std::string lsid;
        int64_t txnNumber = 0;
        Coordinator coordinator;
    };
    std::vector<PreparedTransaction> preparedLongerThan(std::chrono::milliseconds age);
    // A prepared transaction's commit (its coordinator's decision) is acknowledged before it is
    // journaled; whoever calls takeUnsyncedCommits() (the shard's participant-recovery thread,
    // at least every kSyncCommitsWithin) syncs the WAL when it returns true, well before the
    // coordinator may forget the decision.
    static constexpr std::chrono::seconds kSyncCommitsWithin{1};
    void noteUnsyncedCommit() { _unsyncedCommits.store(true, std::memory_order_release); }
    bool takeUnsyncedCommits() { return _unsyncedCommits.exchange(false); }
    // At a shard's startup, before it serves anything: the sessions whose transaction was
    // prepared when the process stopped, prepared again (awaiting their coordinator's decision).
    // Returns how many.
    StatusWith<size_t> recoverPrepared();
    // At startup (a shard, a --replSet node), before it serves anything: each session's newest
    // committed transaction with writes, from its commit record (kCommittedRecordPrefix, written
    // in the commit's own batch), so that a commit retried after a restart — by the driver, or
    // through another router with a recoveryToken — is answered "committed" instead of
    // NoSuchTransaction, which would have the application run the transaction again. Returns how
    // many. One record per session, overwritten by its next commit, deleted when the session
    // expires (logicalSessionTimeoutMinutes without use, as MongoDB's config.transactions).
    StatusWith<size_t> restoreCommitted();
    // The outcome of transaction (lsid, txnNumber) here, for a coordinator asked to recover a
    // decision it never made (a commit retried with a recoveryToken through another router):
    // true if it committed; false if it aborted or is unknown, after aborting it if it was still
    // in progress (so that its router, if alive, can no longer commit it). A prepared one is
    // PreparedTransactionInProgress (its coordinator decides it), a newer transaction of the
    // session TransactionTooOld (the outcome is no longer known).
    StatusWith<bool> committedElseAbort(const std::string& lsid, int64_t txnNumber);
    static constexpr std::string_view kPreparedRecordPrefix = "txn.prepared/";
    static constexpr std::string_view kCommittedRecordPrefix = "txn.committed/";

    // One order of txnNumbers per session for its transactions and its retryable writes (the
    // latter run by txn::TransactionTable on shards and --replSet nodes), as MongoDB's one
    // transaction participant per session: called before a retryable write (lsid, txnNumber)
    // begins. An older number than the session's newest transaction is TransactionTooOld (225);
    // the number of a transaction is IncompleteTransactionHistory (217: a retryable write cannot
    // reuse it); a newer one aborts the session's unfinished, unprepared transaction (its later
    // statements are then TransactionTooOld), sets a prepared one aside (its decision follows)
    // and makes a later startTransaction of that number fail (50911) and of an older one
    // TransactionTooOld. With `mayWait` false a busy session is InlineWouldBlock.
    Status beginRetryableWrite(const std::string& lsid, int64_t txnNumber, bool mayWait = true);
    // At startup, after restoreCommitted(): the newest retryable write of a session whose record
    // was restored (txn::TransactionTable::newestTxnNumbers), so the order survives a restart.
    void restoreRetryableWrite(const std::string& lsid, int64_t txnNumber);

    // currentOp (current_op.h): each session's open transaction — in progress or prepared — as
    // MongoDB reports it: type "op" while a statement runs, else "idleSession"; lsid;
    // transaction {parameters {txnNumber, autocommit}, readTimestamp, startWallClockTime,
    // timeOpenMicros, expiryTime (unprepared), prepareTimestamp and coordinator (prepared)}.
    std::vector<bson::BsonObj> currentOps();

    // endSessions / killSessions: aborts their unfinished transactions.
    void endSession(const std::string& lsid);
    void killAll();
    // Aborts the unfinished transactions a placement change doomed
    // (storage::Engine::fenceTransactionWriters), so that they release their documents now; one
    // whose session is busy fails at its next write and is aborted then, or by the reaper.
    // Returns how many were aborted.
    size_t abortDoomed();

  private:
    std::shared_ptr<Session> sessionFor(const std::string& lsid);
    // Every session and every transaction set aside.
    std::vector<std::shared_ptr<Session>> allSessions();
    // The session's transaction `txnNumber` if it was set aside (null if not).
    std::shared_ptr<Session> setAsideFor(const std::string& lsid, int64_t txnNumber);
    // Checks out what a statement of (lsid, txnNumber) other than a start runs in: the
    // transaction set aside under that number, else the session.
    Checkout checkOutFor(const std::shared_ptr<Session>& session, int64_t txnNumber);
    // With `live` checked out and its stateMutex held: moves its prepared transaction into a
    // session object of its own, for setAside() once stateMutex is released (the reaper takes
    // _mutex before a session's stateMutex).
    static std::shared_ptr<Session> takePreparedLocked(Session& live);
    void setAside(std::shared_ptr<Session> prepared);
    // Publishes, when it goes out of scope, what takePreparedLocked set aside meanwhile.
    struct SetAsideOnExit {
        SessionTransactions* self;
        std::shared_ptr<Session>* prepared;
        ~SetAsideOnExit() { self->setAside(std::move(*prepared)); }
    };
    // With the session checked out and its stateMutex held: aborts a doomed transaction.
    static bool abortIfDoomedLocked(Session& session);
    void reapLoop();

    storage::Engine* _engine;
    const std::chrono::milliseconds _idleSessionLimit;
    bool _participant = false;
    std::atomic<bool> _unsyncedCommits{false};
    const storage::WriteUnit* _commitObservers = nullptr;
    SideRecordsCommitted _sideRecordsCommitted;
    PreparedSideRecordsRecovered _preparedSideRecordsRecovered;
    PreparedUnsynced _preparedUnsynced;
    Mutex _mutex;
    std::unordered_map<std::string, std::shared_ptr<Session>> _sessions GUARDED_BY(_mutex);
    // The prepared transactions set aside, by (lsid, txnNumber); dropped by the reaper once
    // decided.
    std::map<std::pair<std::string, int64_t>, std::shared_ptr<Session>> _setAside
        GUARDED_BY(_mutex);
    CondVar _wake;
    bool _stopping GUARDED_BY(_mutex) = false;
    std::thread _reaper;
};

}  // namespace tessera::txn
