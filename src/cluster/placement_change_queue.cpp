#include "cluster/placement_change_queue.h"

namespace tessera::cluster {

void PlacementChangeQueue::add(const PlacementChanges& changes) {
    if (changes.databases.empty() && changes.collections.empty()) return;
    {
        MutexLock lock(_mutex);
        if (_stopping) return;
        _pending.databases.insert(changes.databases.begin(), changes.databases.end());
        _pending.collections.insert(changes.collections.begin(), changes.collections.end());
        if (!_thread.joinable()) _thread = std::thread([this] { run(); });
    }
    _cv.notify_one();
}

void PlacementChangeQueue::stop() {
    std::thread thread;
    {
        MutexLock lock(_mutex);
        _stopping = true;
        thread = std::move(_thread);
    }
    _cv.notify_all();
    if (thread.joinable()) thread.join();
}

void PlacementChangeQueue::run() {
    UniqueLock lock(_mutex);
    while (true) {
        _cv.wait(lock, [this]() REQUIRES(_mutex) {
            return _stopping || !_pending.databases.empty() || !_pending.collections.empty();
        });
        if (_stopping) return;
        PlacementChanges batch = std::move(_pending);
        _pending = PlacementChanges();
        lock.unlock();
        _handler(batch);
        lock.lock();
    }
}

}  // namespace tessera::cluster
