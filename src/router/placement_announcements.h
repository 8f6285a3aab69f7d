#pragma once

// Placement changes the config service pushes to this router after it commits them (a
// migration, split, merge, movePrimary, drop, refine, shardCollection: config's
// RouterNotifier), refreshed in the background so that the next operation finds its routing
// table current instead of learning from a shard's stale error. Fire-and-forget on both sides:
// the shard versioning protocol stays the safety net for a push that is lost or late
// (src/router/README.md "Pushed placement").

#include "cluster/catalog_cache.h"
#include "cluster/placement_change_queue.h"

namespace tessera::router {

class PlacementAnnouncements {
  public:
    explicit PlacementAnnouncements(cluster::CatalogCache& catalog);

    // Queues the refreshes and returns at once; databases are refreshed before collections.
    void announce(const cluster::PlacementChanges& changes);
    void stop() { _queue.stop(); }

  private:
    cluster::CatalogCache& _catalog;
    cluster::PlacementChangeQueue _queue;
};

}  // namespace tessera::router
