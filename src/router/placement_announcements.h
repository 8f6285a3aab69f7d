#pragma once

// Placement changes the config service pushes to this router after it commits them (a
// migration, split, merge, movePrimary, drop, refine, shardCollection: config_server's
// RouterNotifier), refreshed in the background so that the next operation finds its routing
// table current instead of learning from a shard's stale error. Fire-and-forget on both sides:
// the shard versioning protocol stays the safety net for a push that is lost or late
// (src/router/README.md "Pushed placement").

#include <set>
#include <string>
#include <thread>

#include "base/mutex.h"
#include "cluster/catalog_cache.h"

namespace tessera::router {

class PlacementAnnouncements {
  public:
    explicit PlacementAnnouncements(cluster::CatalogCache& catalog) : _catalog(catalog) {}
    ~PlacementAnnouncements() { stop(); }
    PlacementAnnouncements(const PlacementAnnouncements&) = delete;
    PlacementAnnouncements& operator=(const PlacementAnnouncements&) = delete;

    // Queues the refreshes (repeated names are one refresh) and returns at once; a thread of
    // its own (started on first use) runs them, databases first.
    void announce(const std::set<std::string>& databases, const std::set<std::string>& collections)
        EXCLUDES(_mutex);
    void stop() EXCLUDES(_mutex);

  private:
    void run() EXCLUDES(_mutex);

    cluster::CatalogCache& _catalog;
    Mutex _mutex;
    CondVar _cv;
    std::set<std::string> _databases GUARDED_BY(_mutex);
    std::set<std::string> _collections GUARDED_BY(_mutex);
    bool _stopping GUARDED_BY(_mutex) = false;
    std::thread _thread GUARDED_BY(_mutex);
};

}  // namespace tessera::router
