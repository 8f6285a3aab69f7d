#pragma once

// After a placement commit (a migration, split, merge, movePrimary, drop, refine,
// shardCollection) the config service tells every router registered in config.mongos — pinged
// within the last minute — which databases and collections changed (`_routerPlacementChanged`),
// so that each refreshes them before its next operation there (router/placement_announcements.h).
// Fire-and-forget from a thread of its own (cluster::PlacementChangeQueue): a commit never waits
// for a router, announcements made while a round is out are sent together in the next, and a
// router that is down, slow or misses one is corrected by the shards' stale errors as before
// (src/config/README.md "Pushed placement").

#include <string>

#include "cluster/placement_change_queue.h"
#include "config/local_client.h"
#include "net/remote_client.h"

namespace tessera::config {

class RouterNotifier {
  public:
    explicit RouterNotifier(LocalClient& local);

    void collectionChanged(const std::string& ns) { _queue.add({{}, {ns}}); }
    void databaseChanged(const std::string& db) { _queue.add({{db}, {}}); }
    void stop() { _queue.stop(); }

  private:
    void send(const cluster::PlacementChanges& changes);

    LocalClient& _local;
    net::RemoteClient _remote;  // short timeouts: a stopped router delays only the next round
    cluster::PlacementChangeQueue _queue;  // last: its thread uses the members above
};

}  // namespace tessera::config
