#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "base/status.h"
#include "shard/range_ops.h"
#include "shard/tracked_ranges.h"

namespace tessera::shard {

class ShardingState;

// Deletes, at once, the documents of every tracked range the shard no longer owns (README.md
// "Migration", cleanup): a donor's range as soon as the shard knows the commit, a recipient's
// partial clone after an abort or a crash. No hour of orphans: the range is in the deleter's
// queue from the moment its commit is visible, and the tracked range makes it resumable after a
// restart. A query reading at an older snapshot keeps seeing the deleted versions (MVCC) until
// it ends. A range a migration is receiving into is left alone.
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
    // leftovers before cloning: moving back is always allowed). Returns how many were deleted.
    StatusWith<int64_t> purge(const std::string& ns, const placement::ShardKeyPattern& pattern,
                              const ShardKeyRange& range);
    // Waits until no tracked range of `ns` overlapping `range` is left (waitForDelete).
    Status waitUntilDeleted(const std::string& ns, const ShardKeyRange& range,
                            std::chrono::steady_clock::time_point deadline);

    int64_t rangesDeleted() const { return _rangesDeleted.load(); }

  private:
    void run();
    // One pass over the tracked ranges; returns whether something was deleted.
    bool pass();
    // Whether config.system.coordinators has no document of `migrationId` (false when the
    // config server cannot tell).
    bool coordinatorGone(const std::string& migrationId);
    // Deletes the documents of one unowned tracked range and forgets it.
    Status deleteRange(const TrackedRange& tracked);

    ShardingState& _state;
    std::mutex _deleteMutex;  // one deletion at a time (pass or purge)
    std::mutex _mutex;
    std::condition_variable _cv;
    bool _stop = false;
    bool _notified = false;
    std::thread _thread;
    std::atomic<int64_t> _rangesDeleted{0};
};

}  // namespace tessera::shard
