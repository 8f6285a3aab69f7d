#pragma once

// The databases and collections whose placement changed, handed to a thread of the queue's own
// that processes them in batches: names added while a batch is processed go together in the
// next, and a name added twice before its batch is processed once. The one home of the
// config service's push to routers (config/router_notifier.h) and of a router's refreshes after
// a push (router/placement_announcements.h). Thread-safe; the thread starts with the first
// names and stops with stop() (or the destructor), which waits for the batch in progress.

#include <functional>
#include <set>
#include <string>
#include <thread>

#include "base/mutex.h"

namespace tessera::cluster {

struct PlacementChanges {
    std::set<std::string> databases;
    std::set<std::string> collections;  // "db.coll"
};

class PlacementChangeQueue {
  public:
    using Handler = std::function<void(const PlacementChanges&)>;
    explicit PlacementChangeQueue(Handler handler) : _handler(std::move(handler)) {}
    ~PlacementChangeQueue() { stop(); }
    PlacementChangeQueue(const PlacementChangeQueue&) = delete;
    PlacementChangeQueue& operator=(const PlacementChangeQueue&) = delete;

    // Queues the names and returns at once (nothing after stop()).
    void add(const PlacementChanges& changes) EXCLUDES(_mutex);
    void stop() EXCLUDES(_mutex);

  private:
    void run() EXCLUDES(_mutex);

    const Handler _handler;
    Mutex _mutex;
    CondVar _cv;
    PlacementChanges _pending GUARDED_BY(_mutex);
    bool _stopping GUARDED_BY(_mutex) = false;
    std::thread _thread GUARDED_BY(_mutex);
};

}  // namespace tessera::cluster
