#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"

namespace tessera::txn {

// A statement of a retryable write, as MongoDB's stmtId: the index of an insert/update/delete
// statement in the client's command (a router passes the client's indexes in `stmtIds` of each
// sub-command, so every sub-command of one client command has ids of its own). Commands recorded
// as a whole — findAndModify, a node's bulkWrite, the config server's catalog writes — use
// kWholeCommand, with their whole reply as the result.
using StmtId = int32_t;
inline constexpr StmtId kWholeCommand = -1;

// What a node executed of a (lsid, txnNumber): per statement, the result a retry is answered with.
using ExecutedStatements = std::map<StmtId, bson::BsonObj>;

// At-most-once execution of retryable writes, per statement (MongoDB's session catalog and
// transaction participant, for retryable writes only): per logical session (`lsid.id` bytes) the
// newest txnNumber and the statements of it this node executed.
//
//  - begin() with a txnNumber older than the session's newest → TransactionTooOld (225); while
//    another attempt of the session runs (a retry after a network error, a second router) it
//    waits for it (≤ deadline); then it returns the statements already executed of that
//    txnNumber (empty for a new one, which forgets the older txnNumber's). The caller skips
//    those (replays their results) and executes the others;
//  - finish() adds what the attempt executed and ends it. Making the results durable is the
//    caller's: a shard writes each statement's record in the statement's own write batch
//    (src/shard/README.md), the config server writes config.transactions after the command.
// A statement that failed records nothing, so its retry executes it again.
//
// Records expire with their session, as MongoDB's config.transactions entries do when the session
// does: expireIdle() forgets the sessions unused for logicalSessionTimeoutMinutes (a driver never
// retries that late; a write of an expired session is a new one). Thread-safe.
class TransactionTable {
  public:
    using Clock = std::chrono::steady_clock;

    // A record read back at startup: statements of the session's newest txnNumber are kept.
    void restore(const std::string& lsid, int64_t txnNumber, StmtId stmtId, bson::BsonObj result);
    // A record another shard executed (a migration moves the records of its range): adopted,
    // as restore() does, unless this table knows a newer txnNumber of the session; returns
    // whether it was adopted.
    bool adopt(const std::string& lsid, int64_t txnNumber, StmtId stmtId, bson::BsonObj result);

    // `mayWait` false: InlineWouldBlock instead of waiting for a running attempt.
    StatusWith<ExecutedStatements> begin(const std::string& lsid, int64_t txnNumber,
                                         Clock::time_point deadline, bool mayWait = true);
    void finish(const std::string& lsid, int64_t txnNumber, const ExecutedStatements& executed);

    // Whether the session executed statement `stmtId` of `txnNumber` (waiting while an attempt
    // runs): the router's check, before it picks a shard for a retried write without a shard key,
    // of whether some shard already applied it. TransactionTooOld when the session has a newer
    // txnNumber.
    StatusWith<bool> executed(const std::string& lsid, int64_t txnNumber, StmtId stmtId,
                              Clock::time_point deadline);

    // Forgets every session no attempt has used since `idleSince` and none runs: `forget(lsid)`
    // deletes its durable records meanwhile, while the session is expiring — an attempt or an
    // adoption of it waits until it is gone, so none of its new records can be deleted. Returns
    // how many sessions it forgot.
    size_t expireIdle(Clock::time_point idleSince,
                      const std::function<void(const std::string& lsid)>& forget);

    // Each session's newest txnNumber (to order it with the session's transactions after a
    // restart: command::SessionTransactions::restoreRetryableWrite).
    std::vector<std::pair<std::string, int64_t>> newestTxnNumbers() const;

    size_t size() const;

  private:
    struct Session {
        int64_t txnNumber = -1;
        bool running = false;
        bool expiring = false;  // expireIdle is deleting its records: wait, as for `running`
        Clock::time_point lastUse = Clock::now();
        ExecutedStatements statements;  // of txnNumber
    };
    static Status tooOld(int64_t txnNumber, int64_t newest);

    mutable std::mutex _mutex;
    std::condition_variable _finished;
    std::map<std::string, Session> _sessions;
};

}  // namespace tessera::txn
