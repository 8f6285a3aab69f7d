#include "storage/wal_sync_group.h"

#include "base/mutex.h"

namespace tessera::storage {

Status WalSyncGroup::wait() {
    UniqueLock lock(_mutex);
    ++_waiters;
    // The first sync to start from now on covers this waiter's writes.
    const uint64_t needed = _started + 1;
    while (_finished < needed) {
        if (_syncing) {
            _done.wait(lock);
            continue;
        }
        _syncing = true;
        const uint64_t mine = ++_started;
        lock.unlock();
        Status s = _sync();
        lock.lock();
        _syncing = false;
        _finished = mine;
        if (!s.isOK()) {
            _failedSync = mine;
            _failure = s;
        }
        _done.notify_all();
    }
    --_waiters;
    // Syncs finish in order, so the one that covered this waiter is `needed` or a later one;
    // a failure of any of them leaves the writes' durability unknown.
    if (_failedSync >= needed) return _failure;
    return Status::OK();
}

size_t WalSyncGroup::waiters() const {
    MutexLock lock(_mutex);
    return _waiters;
}

uint64_t WalSyncGroup::syncs() const {
    MutexLock lock(_mutex);
    return _finished;
}

}  // namespace tessera::storage
