#include "router/placement_announcements.h"

#include "base/failpoint.h"

namespace tessera::router {

// A router that misses every push (tests: the shard's stale error must still correct it).
TESSERA_FAIL_POINT_DEFINE(routerIgnorePlacementAnnouncements);

void PlacementAnnouncements::announce(const std::set<std::string>& databases,
                                      const std::set<std::string>& collections) {
    if (routerIgnorePlacementAnnouncements.shouldFail()) return;
    {
        MutexLock lock(_mutex);
        if (_stopping) return;
        _databases.insert(databases.begin(), databases.end());
        _collections.insert(collections.begin(), collections.end());
        if (!_thread.joinable()) _thread = std::thread([this] { run(); });
    }
    _cv.notify_one();
}

void PlacementAnnouncements::stop() {
    std::thread thread;
    {
        MutexLock lock(_mutex);
        _stopping = true;
        thread = std::move(_thread);
    }
    _cv.notify_all();
    if (thread.joinable()) thread.join();
}

void PlacementAnnouncements::run() {
    UniqueLock lock(_mutex);
    while (true) {
        _cv.wait(lock, [this]() REQUIRES(_mutex) {
            return _stopping || !_databases.empty() || !_collections.empty();
        });
        if (_stopping) return;
        std::set<std::string> databases = std::move(_databases);
        std::set<std::string> collections = std::move(_collections);
        _databases.clear();
        _collections.clear();
        lock.unlock();
        // A failed refresh leaves the cached entry as it was: the next stale error corrects it.
        for (const std::string& db : databases) _catalog.refreshAnnouncedDatabase(db);
        for (const std::string& ns : collections) _catalog.refreshAnnouncedCollection(ns);
        lock.lock();
    }
}

}  // namespace tessera::router
