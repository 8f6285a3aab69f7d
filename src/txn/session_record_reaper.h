#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string_view>
#include <thread>

#include "base/mutex.h"
#include "base/status.h"
#include "bson/bson_obj.h"
#include "txn/logical_sessions.h"
#include "txn/transaction_table.h"

namespace tessera::storage {
class Engine;
}

namespace tessera::txn {

// Retryable-write records expire with their session (issue 14, point 5), as MongoDB reaps
// config.transactions entries whose session left config.system.sessions: every `sweepEvery` the
// sessions of `table` no write used for `idleLimit` (logicalSessionTimeoutMinutes) are forgotten
// — in memory, their statement records (side records) and their config.transactions document.
// A session's transactions expire the same way in txn::SessionTransactions; both use the
// same limit, which hello announces as logicalSessionTimeoutMinutes. Without this, a process
// kept a record per statement id of every session it ever saw, in memory and on disk.
class SessionRecordReaper {
  public:
    // `runLocal(db, cmd)` runs a command on this node (the delete of the config.transactions
    // document).
    using RunLocal = std::function<Status(std::string_view db, const bson::BsonObj& cmd)>;

    SessionRecordReaper(TransactionTable& table, storage::Engine& engine, RunLocal runLocal,
                        std::chrono::milliseconds idleLimit = kLogicalSessionTimeout,
                        std::chrono::milliseconds sweepEvery = std::chrono::minutes(1));
    ~SessionRecordReaper();  // stops the thread

    // Starts sweeping in the background (after the records were restored).
    void start();
    void stop();

    // One sweep now: forgets the sessions idle for longer than idleLimit; returns how many.
    size_t sweep() { return sweepAt(TransactionTable::Clock::now()); }
    // The same sweep as if the time were `now` (tests age sessions without sleeping).
    size_t sweepAt(TransactionTable::Clock::time_point now);

  private:
    void forget(const std::string& lsid);

    TransactionTable& _table;
    storage::Engine& _engine;
    RunLocal _runLocal;
    const std::chrono::milliseconds _idleLimit;
    const std::chrono::milliseconds _sweepEvery;
    Mutex _mutex;
    CondVar _wake;
    bool _stopping GUARDED_BY(_mutex) = false;
    std::thread _thread;
};

}  // namespace tessera::txn
