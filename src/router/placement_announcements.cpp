#include "router/placement_announcements.h"

#include "base/failpoint.h"

namespace tessera::router {

// A router that misses every push (tests: the shard's stale error must still correct it).
TESSERA_FAIL_POINT_DEFINE(routerIgnorePlacementAnnouncements);

PlacementAnnouncements::PlacementAnnouncements(cluster::CatalogCache& catalog)
    : _catalog(catalog), _queue([this](const cluster::PlacementChanges& batch) {
          // A failed refresh leaves the cached entry as it was: the next stale error corrects it.
          for (const std::string& db : batch.databases) _catalog.refreshAnnouncedDatabase(db);
          for (const std::string& ns : batch.collections) _catalog.refreshAnnouncedCollection(ns);
      }) {}

void PlacementAnnouncements::announce(const cluster::PlacementChanges& changes) {
    if (routerIgnorePlacementAnnouncements.shouldFail()) return;
    _queue.add(changes);
}

}  // namespace tessera::router
