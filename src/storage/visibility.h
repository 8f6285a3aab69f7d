#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <set>

#include "base/hlc.h"
#include "base/mutex.h"

namespace tessera::storage {

// Hands out commit timestamps and decides which timestamp a "latest" read may use.
//
// Invariants:
//  1. Commit timestamps are taken from the clock under `_mutex`, so they enter `_inFlight` in
//     increasing order.
//  2. A commit is *visible* once it and every commit with a smaller timestamp has finished its
//     RocksDB write. endCommit() returns only when its commit is visible, so a timestamp a writer
//     hands back to its client is always readable by that client's next "latest" read.
//  3. readTimestamp() returns T such that every commit with ts <= T has finished writing and
//     every later commit gets ts > T. A RocksDB snapshot (or iterator) created after the call
//     therefore sees exactly the commits <= T.
//  4. A pinned timestamp keeps garbage collection from removing the versions it reads
//     (gcHorizon() never exceeds the oldest pin).
class VisibilityTracker {
  public:
    explicit VisibilityTracker(HybridLogicalClock* clock) : _clock(clock) {}

    Timestamp beginCommit();
    // Marks `ts` finished (whether or not its write succeeded) and waits until it is visible.
    void endCommit(Timestamp ts);

    // The newest timestamp at which a read sees only complete commits; pins it when `pin`.
    Timestamp readTimestamp(bool pin);
    // Waits until every commit <= at is finished (making later commits get ts > at), then
    // pins `at` when `pin`.
    void waitUntilVisible(Timestamp at, bool pin);
    void unpin(Timestamp ts);

    // Versions superseded by a newer version <= gcHorizon() may be removed.
    Timestamp gcHorizon(uint32_t historyWindowSeconds) const;
    Timestamp lastVisible() const;
    // A commit another member made, applied here in log order (storage/replication.h): the
    // newest visible commit is at least `ts`. The clock is advanced past it separately.
    void observeApplied(Timestamp ts);
    HybridLogicalClock& clock() const { return *_clock; }

  private:
    struct InFlight {
        uint64_t ts;
        bool done;
    };
    void popFinishedLocked() REQUIRES(_mutex);

    HybridLogicalClock* _clock;
    mutable Mutex _mutex;
    CondVar _cv;
    std::deque<InFlight> _inFlight GUARDED_BY(_mutex);  // ascending ts
    std::multiset<uint64_t> _pins GUARDED_BY(_mutex);
    uint64_t _lastVisible GUARDED_BY(_mutex) = 0;
};

// Releases a pin when destroyed.
class SnapshotPin {
  public:
    SnapshotPin() = default;
    SnapshotPin(VisibilityTracker* tracker, Timestamp ts) : _tracker(tracker), _ts(ts) {}
    SnapshotPin(const SnapshotPin&) = delete;
    SnapshotPin& operator=(const SnapshotPin&) = delete;
    ~SnapshotPin() {
        if (_tracker) _tracker->unpin(_ts);
    }
    Timestamp timestamp() const { return _ts; }

  private:
    VisibilityTracker* _tracker = nullptr;
    Timestamp _ts;
};

}  // namespace tessera::storage
