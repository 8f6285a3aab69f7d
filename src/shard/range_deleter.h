#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "base/mutex.h"
#include "base/status.h"
#include "shard/range_ops.h"
#include "shard/tracked_ranges.h"

namespace tessera::shard {

class ShardingState;
class ShardMetadata;

// Deletes, at once, the documents of every tracked range the shard no longer owns
// (docs/protocols/migration.md, cleanup): a donor's range as soon as the shard knows the commit, a
// recipient's partial clone after an abort or a crash. No hour of orphans: the range is in the
// deleter's queue from the moment its commit is visible, and the tracked range makes it resumable
// after a restart. A query reading at an older snapshot keeps seeing the deleted versions (MVCC)
// until it ends. A range a migration is receiving into is left alone.
class RangeDeleter {
  public:
    explicit RangeDeleter(ShardingState& state) : _state(state) {}
    ~RangeDeleter() { stop(); }

    void start();
    void stop();
    // Looks at the tracked ranges now (a commit became known).
    void notify();

    // Deletes now the tracked ranges of `ns` overlapping `range` that are not owned and not
    // being received, then every other unowned document of `range` (a recipient's purge of its
    // leftovers before cloning: moving back is always allowed, also before the range this shard
    // donated was deleted — `recipientId` names the migration purging, whose own range is not
    // a conflict). Returns how many were deleted.
    StatusWith<int64_t> purge(const std::string& ns, const placement::ShardKeyPattern& pattern,
                              const ShardKeyRange& range, const std::string& recipientId = {});
    // Waits until no tracked range of `ns` overlapping `range` is left (waitForDelete).
    Status waitUntilDeleted(const std::string& ns, const ShardKeyRange& range,
                            std::chrono::steady_clock::time_point deadline);

    int64_t rangesDeleted() const { return _rangesDeleted.load(); }

    // A range whose deletion failed (an error or an exception): retried after a back-off (0.5 s
    // doubling), given up after kMaxAttempts — the range stays tracked, its documents hidden
    // from every read and count, until a restart or a migration of it. For currentOp.
    static constexpr int kMaxAttempts = 5;
    struct Failure {
        int attempts = 0;
        Status lastError;
        std::chrono::steady_clock::time_point notBefore;
        bool gaveUp() const { return attempts >= kMaxAttempts; }
    };
    std::optional<Failure> failureOf(const std::string& recordKey);

  private:
    void run();
    // One pass over the tracked ranges; returns whether something was deleted.
    bool pass();
    bool processRange(const std::shared_ptr<ShardMetadata>& md, const TrackedRange& tracked);
    bool mayTryNow(const std::string& recordKey);
    void noteFailure(const std::string& recordKey, const Status& failure);
    // Whether config.system.coordinators has no document of `migrationId` (false when the
    // config server cannot tell).
    bool coordinatorGone(const std::string& migrationId);
    // Deletes the documents of one unowned tracked range and forgets it.
    Status deleteRange(const TrackedRange& tracked);

    ShardingState& _state;
    Mutex _deleteMutex;  // one deletion at a time (pass or purge)
    Mutex _mutex;
    CondVar _cv;
    bool _stop GUARDED_BY(_mutex) = false;
    bool _notified GUARDED_BY(_mutex) = false;
    std::thread _thread;
    std::atomic<int64_t> _rangesDeleted{0};
    // By tracked range record key.
    std::map<std::string, Failure> _failures GUARDED_BY(_mutex);
};

}  // namespace tessera::shard
