#pragma once

#include <condition_variable>
#include <mutex>

#include "base/mutex.h"

namespace tessera::storage {

// A collection's access lock (internal to the storage engine): document writers hold it shared
// (CollectionWriter, for its lifetime), DDL of the collection exclusively (index builds, drops,
// renames, reclustering), so DDL sees no write in flight and writers see stable metadata. A
// waiting exclusive request holds back new shared ones, so a steady stream of writes cannot
// starve DDL. Satisfies SharedMutex (std::shared_lock / std::unique_lock). Not recursive: a
// thread holding it shared must not ask for it again while DDL may be waiting.
class CollectionLock {
  public:
    void lock() {
        UniqueLock lk(_mutex);
        ++_exclusiveWaiting;
        _changed.wait(lk, [&]() REQUIRES(_mutex) { return !_exclusive && _shared == 0; });
        --_exclusiveWaiting;
        _exclusive = true;
    }
    void unlock() {
        {
            MutexLock lk(_mutex);
            _exclusive = false;
        }
        _changed.notify_all();
    }
    void lock_shared() {
        UniqueLock lk(_mutex);
        _changed.wait(lk, [&]() REQUIRES(_mutex) { return !_exclusive && _exclusiveWaiting == 0; });
        ++_shared;
    }
    // Without waiting: false when DDL holds or waits for the lock.
    bool try_lock_shared() {
        MutexLock lk(_mutex);
        if (_exclusive || _exclusiveWaiting > 0) return false;
        ++_shared;
        return true;
    }
    void unlock_shared() {
        bool last;
        {
            MutexLock lk(_mutex);
            last = --_shared == 0;
        }
        if (last) _changed.notify_all();
    }

  private:
    Mutex _mutex;
    CondVar _changed;
    int _shared GUARDED_BY(_mutex) = 0;
    int _exclusiveWaiting GUARDED_BY(_mutex) = 0;
    bool _exclusive GUARDED_BY(_mutex) = false;
};

}  // namespace tessera::storage
