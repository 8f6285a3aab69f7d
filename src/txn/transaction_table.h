#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "base/status.h"
#include "bson/bson_obj.h"

namespace tessera::txn {

// At-most-once execution of retryable writes (a simple version of MongoDB's session catalog,
// without per-statement ids): per logical session (`lsid.id` bytes) the last txnNumber and the
// reply it produced.
//
//  - begin() with a txnNumber older than the session's last → TransactionTooOld (225);
//  - with the same txnNumber, once executed → the stored reply (the write is not run again);
//    while it is still executing → waits for it (≤ deadline), then replays;
//  - with a newer txnNumber → the caller executes and then calls finish().
// finish() stores the reply in memory and hands it to the persister (config.transactions), so
// replays survive a restart (restore() at startup). Thread-safe.
class TransactionTable {
  public:
    using Clock = std::chrono::steady_clock;
    using Persister =
        std::function<Status(const std::string& lsid, int64_t txnNumber, const bson::BsonObj&)>;

    void setPersister(Persister persister);
    // A record read back at startup (the newest txnNumber wins).
    void restore(const std::string& lsid, int64_t txnNumber, bson::BsonObj reply);

    // nullopt: execute the write (the session is now marked as running txnNumber); a reply:
    // return it without executing.
    StatusWith<std::optional<bson::BsonObj>> begin(const std::string& lsid, int64_t txnNumber,
                                                   Clock::time_point deadline);
    // Ends the execution begun by begin(): with a reply, records it (and persists it); without
    // (the command failed as a whole, nothing was written), forgets the attempt so that a retry
    // executes again.
    // `persist`: hand the reply to the persister (false when the caller made the record durable
    // otherwise).
    void finish(const std::string& lsid, int64_t txnNumber, const bson::BsonObj* reply,
                bool persist = true);

    // Whether the session executed `txnNumber` (waiting while it runs): the router's check,
    // before it picks a shard for a retried write without a shard key, of whether some shard
    // already applied it. TransactionTooOld when the session has a newer txnNumber.
    StatusWith<bool> executed(const std::string& lsid, int64_t txnNumber,
                              Clock::time_point deadline);

    size_t size() const;

  private:
    struct Session {
        int64_t txnNumber = -1;
        bool running = false;
        bool executed = false;
        bson::BsonObj reply;
        // The last completed execution, kept while a newer one runs (so a failed newer attempt
        // does not lose it).
        int64_t lastExecutedTxn = -1;
        bson::BsonObj lastReply;
    };

    mutable std::mutex _mutex;
    std::condition_variable _finished;
    std::map<std::string, Session> _sessions;
    Persister _persister;
};

}  // namespace tessera::txn
