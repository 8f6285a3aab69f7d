#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"
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

class TransactionTable;

// What an attempt that began (TransactionTable::begin) sees of the statements earlier attempts of
// its txnNumber executed: looked up in the table, never copied — a router's batch of n
// statements reaches a shard as up to n sub-commands of one txnNumber, and copying the records
// for each made a bulk insert quadratic. Valid while its table is.
class ExecutedView {
  public:
    ExecutedView(const TransactionTable* table, std::string lsid, int64_t txnNumber)
        : _table(table), _lsid(std::move(lsid)), _txnNumber(txnNumber) {}
    // The result of `stmtId`, or nullopt when no attempt executed it.
    std::optional<bson::BsonObj> find(StmtId stmtId) const;
    bool count(StmtId stmtId) const { return find(stmtId).has_value(); }
    size_t size() const;
    bool empty() const { return size() == 0; }
    // Precondition: count(stmtId).
    bson::BsonObj at(StmtId stmtId) const { return *find(stmtId); }

  private:
    const TransactionTable* _table;
    std::string _lsid;
    int64_t _txnNumber;
};

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
    static constexpr std::chrono::milliseconds kUnclaimedMoveLimit{10'000};

    // `unclaimedMoveLimit`: see claimMove (shorter in tests).
    explicit TransactionTable(Clock::duration unclaimedMoveLimit = kUnclaimedMoveLimit)
        : _unclaimedMoveLimit(unclaimedMoveLimit) {}

    // A record read back at startup: statements of the session's newest txnNumber are kept.
    void restore(const std::string& lsid, int64_t txnNumber, StmtId stmtId, bson::BsonObj result);
    // A record another shard executed (a migration moves the records of its range): adopted,
    // as restore() does, unless this table knows a newer txnNumber of the session; returns
    // whether it was adopted.
    bool adopt(const std::string& lsid, int64_t txnNumber, StmtId stmtId, bson::BsonObj result);

    // `mayWait` false: InlineWouldBlock instead of waiting for a running attempt (or a move,
    // below).
    StatusWith<ExecutedView> begin(const std::string& lsid, int64_t txnNumber,
                                   Clock::time_point deadline, bool mayWait = true);
    // `moving`: the statements this attempt answered with WouldChangeOwningShard (below).
    void finish(const std::string& lsid, int64_t txnNumber, const ExecutedStatements& executed,
                const std::vector<StmtId>& moving = {});

    // ---- Statements whose document a router moves to another shard.
    // A single-document statement that would change its document's owning shard writes nothing
    // here: its router moves the document in a transaction of its own, which records the
    // statement on this node (_shardsvrRecordRetryableWrite, adopted at its commit). Between the
    // answer and that commit the statement is *moving*: a retry of it (begin(), executed())
    // waits — it would otherwise run again, match nothing and answer n 0, or upsert twice —
    // until the record is adopted (the retry is answered from it) or the moving ends without
    // it. It ends when the transaction that claimed it aborts (releaseMove), when no
    // transaction claimed it within kUnclaimedMoveLimit (its router died before sending
    // anything), or when the session starts a newer txnNumber. In memory: a restart aborts
    // every unprepared transaction, and a prepared one restored holds its statements again
    // (holdMove) until it is decided.
    //
    // Claims statement `stmtId` of the session's `txnNumber` for a transaction that records it:
    // a token for releaseMove (0 when the statement was not moving: a restart, or the unclaimed
    // limit passed — nothing to hold). WriteConflict when the statement has been executed or
    // another transaction claimed it (that move wins; this one's router runs the write again
    // and is answered from the record); TransactionTooOld when the session has a newer
    // txnNumber.
    StatusWith<uint64_t> claimMove(const std::string& lsid, int64_t txnNumber, StmtId stmtId);
    // The same for a prepared transaction restored after a restart whose record of the
    // statement will be adopted at its commit: the statement becomes moving, claimed by it —
    // unless the session has a newer txnNumber or the statement is recorded already (0).
    uint64_t holdMove(const std::string& lsid, int64_t txnNumber, StmtId stmtId);
    // The claiming transaction aborted: the statement is no longer moving (its retry runs it).
    void releaseMove(const std::string& lsid, int64_t txnNumber, StmtId stmtId, uint64_t token);

    // Whether the session executed statement `stmtId` of `txnNumber` (waiting while an attempt
    // runs): the router's check, before it picks a shard for a retried write without a shard key,
    // of whether some shard already applied it. TransactionTooOld when the session has a newer
    // txnNumber. Without `mayWait` (an io thread), InlineWouldBlock where it would wait.
    StatusWith<bool> executed(const std::string& lsid, int64_t txnNumber, StmtId stmtId,
                              Clock::time_point deadline, bool mayWait = true);

    // Forgets every session no attempt has used since `idleSince` and none runs: `forget(lsid)`
    // deletes its durable records meanwhile, while the session is expiring — an attempt or an
    // adoption of it waits until it is gone, so none of its new records can be deleted. Returns
    // how many sessions it forgot.
    size_t expireIdle(Clock::time_point idleSince,
                      const std::function<void(const std::string& lsid)>& forget);

    // Each session's newest txnNumber (to order it with the session's transactions after a
    // restart: txn::SessionTransactions::restoreRetryableWrite).
    std::vector<std::pair<std::string, int64_t>> newestTxnNumbers() const;

    size_t size() const;
    // Statements moving now, and retries waiting for one (serverStatus).
    size_t movingStatements() const;
    size_t retriesWaitingForMove() const;

  private:
    friend class ExecutedView;
    // ExecutedView's lookups, under the table's mutex.
    std::optional<bson::BsonObj> executedResult(const std::string& lsid, int64_t txnNumber,
                                                StmtId stmtId) const;
    size_t executedCount(const std::string& lsid, int64_t txnNumber) const;

    struct Moving {
        Clock::time_point unclaimedUntil;
        uint64_t claimedBy = 0;  // claimMove's token; 0: not claimed yet
    };
    struct Session {
        int64_t txnNumber = -1;
        bool running = false;
        bool expiring = false;  // expireIdle is deleting its records: wait, as for `running`
        Clock::time_point lastUse = Clock::now();
        ExecutedStatements statements;    // of txnNumber
        std::map<StmtId, Moving> moving;  // of txnNumber

        // To a newer txnNumber: the older one's statements are forgotten (rule 3).
        void startNumber(int64_t newer) {
            txnNumber = newer;
            statements.clear();
            moving.clear();
        }
    };
    static Status tooOld(int64_t txnNumber, int64_t newest);
    // Whether statement `stmtId` of `s` (any of its statements: nullopt) is moving; forgets the
    // unclaimed ones past their limit and lowers *wakeAt to the soonest limit still ahead.
    static bool isMoving(Session& s, std::optional<StmtId> stmtId, Clock::time_point now,
                         Clock::time_point* wakeAt);

    mutable Mutex _mutex;
    CondVar _finished;
    std::map<std::string, Session> _sessions GUARDED_BY(_mutex);
    const Clock::duration _unclaimedMoveLimit;
    uint64_t _nextMoveToken GUARDED_BY(_mutex) = 1;
    size_t _waitingForMove GUARDED_BY(_mutex) = 0;
};

}  // namespace tessera::txn
