#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

#include "base/status.h"

namespace tessera::storage {

// Group commit of the write-ahead log for writes made with sync=false (MongoDB's journal
// flusher): each waiter needs every write it completed before calling wait() to be durable;
// one sync that *starts* after a waiter arrived covers it, so a waiter that finds a sync in
// progress waits for it and then for the next one, which one of the waiters runs for all of
// them. Concurrent waiters therefore share one sync (at most two sync durations of latency),
// instead of queueing one sync each as concurrent DB::SyncWAL calls do. Writers are never
// blocked by a sync (RocksDB's SyncWAL does not stop concurrent writes).
class WalSyncGroup {
  public:
    // `sync` makes everything written so far durable (DB::SyncWAL).
    explicit WalSyncGroup(std::function<Status()> sync) : _sync(std::move(sync)) {}

    // Returns once every write completed before the call is durable, or the sync's error.
    Status wait();

    // Syncs run so far.
    uint64_t syncs() const;
    // Callers inside wait() (tests).
    size_t waiters() const;

  private:
    std::function<Status()> _sync;
    mutable std::mutex _mutex;
    std::condition_variable _done;
    bool _syncing = false;
    size_t _waiters = 0;
    uint64_t _started = 0;     // syncs started; sync n covers writes completed before it started
    uint64_t _finished = 0;    // the newest finished sync
    uint64_t _failedSync = 0;  // the newest sync that failed (0: none) and its error
    Status _failure = Status::OK();
};

}  // namespace tessera::storage
