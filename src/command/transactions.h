#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "base/hlc.h"
#include "base/status.h"
#include "bson/bson_obj.h"
#include "storage/transaction.h"

namespace tessera::storage {
class Engine;
}

namespace tessera::command {

struct CommandRequest;

enum class TransactionState { kNone, kInProgress, kCommitted, kAborted };

// One logical session's transaction state (SessionTransactions).
struct TransactionSession {
    std::mutex checkout;    // held by the operation using the session
    std::mutex stateMutex;  // guards what the reaper reads and changes below
    int64_t txnNumber = -1;
    TransactionState state = TransactionState::kNone;
    std::string abortReason;
    std::unique_ptr<storage::Transaction> txn;
    std::chrono::steady_clock::time_point started;
    std::chrono::steady_clock::time_point lastUse;
    Timestamp commitTs;
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
class SessionTransactions {
  public:
    static constexpr std::chrono::seconds kLifetimeLimit{60};

    using State = TransactionState;
    using Session = TransactionSession;

    explicit SessionTransactions(storage::Engine* engine);
    ~SessionTransactions();

    // A checked-out session: released when destroyed.
    class Checkout {
      public:
        Checkout() = default;
        explicit Checkout(std::shared_ptr<Session> s) : _session(std::move(s)) {
            _lock = std::unique_lock(_session->checkout);
        }
        Session* operator->() const { return _session.get(); }
        Session& operator*() const { return *_session; }
        explicit operator bool() const { return _session != nullptr; }

      private:
        std::shared_ptr<Session> _session;
        std::unique_lock<std::mutex> _lock;
    };

    // Checks the session out for one statement of transaction `txnNumber` and prepares it:
    // begins it (`start`, reading at `atClusterTime` if given) or verifies it is the session's
    // current transaction. On success *txn is the storage transaction to run the statement in
    // (null only for a commit or abort of an already finished transaction).
    StatusWith<Checkout> beginStatement(const std::string& lsid, int64_t txnNumber, bool start,
                                        std::optional<Timestamp> atClusterTime,
                                        std::string_view commandName);

    // Ends the statement: a failed statement (other than commit/abort) aborts the transaction.
    static void abortAfterFailure(Session& session, const Status& status);
    // commitTransaction / abortTransaction of the checked-out session's transaction.
    static StatusWith<Timestamp> commit(Session& session, bool sync);
    static Status abort(Session& session);

    // endSessions / killSessions: aborts their unfinished transactions.
    void endSession(const std::string& lsid);
    void killAll();

  private:
    std::shared_ptr<Session> sessionFor(const std::string& lsid);
    void reapLoop();

    storage::Engine* _engine;
    std::mutex _mutex;
    std::unordered_map<std::string, std::shared_ptr<Session>> _sessions;
    std::condition_variable _wake;
    bool _stopping = false;
    std::thread _reaper;
};

// Whether `commandName` may run inside a multi-document transaction (MongoDB's list, less what
// Tessera refuses: DDL inside a transaction).
bool allowedInTransaction(std::string_view commandName);

}  // namespace tessera::command
