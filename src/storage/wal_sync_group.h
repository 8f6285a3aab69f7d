#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

#include "base/mutex.h"
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
    mutable Mutex _mutex;
    CondVar _done;
    bool _syncing GUARDED_BY(_mutex) = false;
    size_t _waiters GUARDED_BY(_mutex) = 0;
    // Syncs started; sync n covers writes completed before it started.
    uint64_t _started GUARDED_BY(_mutex) = 0;
    uint64_t _finished GUARDED_BY(_mutex) = 0;  // the newest finished sync
    // The newest sync that failed (0: none) and its error.
    uint64_t _failedSync GUARDED_BY(_mutex) = 0;
    Status _failure GUARDED_BY(_mutex) = Status::OK();
};

}  // namespace tessera::storage
