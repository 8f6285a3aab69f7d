#pragma once

// After a placement commit (a migration, split, merge, movePrimary, drop, refine,
// shardCollection) the config service tells every router registered in config.mongos — pinged
// within the last minute — which databases and collections changed (`_routerPlacementChanged`),
// so that each refreshes them before its next operation there (router/placement_announcements.h).
// Fire-and-forget from a thread of its own: a commit never waits for a router, announcements
// made while a round is out are sent together in the next, and a router that is down, slow or
// misses one is corrected by the shards' stale errors as before (src/config/README.md "Pushed
// placement").

#include <set>
#include <string>
#include <thread>

#include "base/mutex.h"
#include "config/local_client.h"
#include "net/remote_client.h"

namespace tessera::config {

class RouterNotifier {
  public:
    explicit RouterNotifier(LocalClient& local);
    ~RouterNotifier() { stop(); }
    RouterNotifier(const RouterNotifier&) = delete;
    RouterNotifier& operator=(const RouterNotifier&) = delete;

    void collectionChanged(const std::string& ns) EXCLUDES(_mutex);
    void databaseChanged(const std::string& db) EXCLUDES(_mutex);
    void stop() EXCLUDES(_mutex);

  private:
    void wake() EXCLUDES(_mutex);
    void run() EXCLUDES(_mutex);
    void send(const std::set<std::string>& databases, const std::set<std::string>& collections);

    LocalClient& _local;
    net::RemoteClient _remote;  // short timeouts: a stopped router delays only the next round
    Mutex _mutex;
    CondVar _cv;
    std::set<std::string> _databases GUARDED_BY(_mutex);
    std::set<std::string> _collections GUARDED_BY(_mutex);
    bool _stopping GUARDED_BY(_mutex) = false;
    std::thread _thread GUARDED_BY(_mutex);
};

}  // namespace tessera::config
