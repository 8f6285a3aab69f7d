#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "bson/bson_obj.h"
#include "cluster/catalog_cache.h"
#include "command/command.h"
#include "net/remote_client.h"

namespace tessera::router {

using cluster::CollectionRoutingInfo;
using placement::ShardId;

class PlacementAnnouncements;
class RouterCursorManager;
class TransactionRouter;

// The state of a router process (ServiceContext::roleState). Owned by main.
class Router final : public command::RoleState {
  public:
    Router(std::string configHost, std::string selfHost);
    ~Router();

    net::RemoteClient& client() { return _client; }
    cluster::ShardRegistry& shards() { return _shards; }
    cluster::CatalogCache& catalog() { return _catalog; }
    RouterCursorManager& cursors() { return *_cursors; }
    TransactionRouter& transactions() { return *_transactions; }
    PlacementAnnouncements& announcements() { return *_announcements; }
    const std::string& configHost() const { return _shards.configHost(); }
    const std::string& selfHost() const { return _selfHost; }

    // The router of the process running `opCtx` (its roleState).
    static Router& get(command::OperationContext& opCtx);

    // serverStatus.shardingStatistics.catalogCache: MongoDB's refresh counters, plus
    // countStaleChunkDeltasApplied (stale errors resolved from the shard's reply, chunk_delta.h).
    void appendServerStatus(bson::BsonBuilder& b) const;

    // Registers this router in config.mongos and pings it every 10 s (MongoDB's uptime
    // reporter) until stopBackgroundTasks().
    void startBackgroundTasks();
    void stopBackgroundTasks();

  private:
    net::RemoteClient _client;
    cluster::ShardRegistry _shards;
    cluster::CatalogCache _catalog;
    std::unique_ptr<RouterCursorManager> _cursors;
    std::unique_ptr<TransactionRouter> _transactions;
    std::unique_ptr<PlacementAnnouncements> _announcements;
    std::string _selfHost;

    // The config.mongos pinger (startBackgroundTasks).
    void pingLoop();
    Status pingOnce();
    std::chrono::system_clock::time_point _startTime = std::chrono::system_clock::now();
    Mutex _bgMutex;
    CondVar _bgCv;
    bool _bgStopping GUARDED_BY(_bgMutex) = false;
    std::thread _pinger;
};

// One command for one shard, and what came back.
struct ShardRequest {
    ShardId shard;
    bson::BsonObj cmd;  // without $db; versions already attached (attachVersion)
};
struct ShardResponse {
    ShardId shard;
    std::string host;
    // The exchange's status (network errors). When OK, `reply` is the shard's reply as sent,
    // `ok: 0` included.
    Status status;
    bson::BsonObj reply;
};

// `cmd` plus the placement version for `shard` (the README's versioning contract): a sharded
// collection gets `shardVersion` (the shard's version in `info.table`); an unsharded one gets
// `shardVersion` UNSHARDED and `databaseVersion`; `config`/`admin` namespaces get nothing.
// Existing shardVersion/databaseVersion fields of `cmd` are replaced.
bson::BsonObj attachVersion(bson::BsonView cmd, const CollectionRoutingInfo& info,
                            const ShardId& shard);
// The version fields attachVersion appends (nothing for admin/config/local).
void appendPlacementVersion(bson::BsonBuilder& b, const CollectionRoutingInfo& info,
                            const ShardId& shard);

// Sends the requests of `opCtx` concurrently (RemoteClient::runCommands) on `db`. Never fails as a
// whole: each response carries its own status. When the operation is a transaction's statement
// each request joins the transaction (transaction_router.h); every reply's operationTime
// advances the router's clock.
std::vector<ShardResponse> sendToShards(const command::OperationContext& opCtx, Router& router,
                                        std::string_view db,
                                        const std::vector<ShardRequest>& requests);

// If `reply` (or one of its writeErrors) is StaleConfig/StaleDbVersion, tells the catalog cache
// (onStaleShardVersion / onStaleDatabaseVersion with vWanted) and returns true.
bool noteStaleError(Router& router, bson::BsonView reply);

// The retry loop every routed command shares (MongoDB's kMaxNumStaleVersionRetries = 10):
//   1. info = catalog.getCollectionRoutingInfo(ns, createDbIfMissing)
//   2. requests = makeRequests(info)   (targeting + per-shard commands, versions attached)
//   3. responses = sendToShards(...)
//   4. if any reply is a stale error: note it, refresh, and go to 1 — but only when
//      `retryOnStale(responses)` allows (a write batch may have partly applied; the write path
//      retries only the stale items itself and passes a predicate returning false).
// Returns the responses of the last round. Stale errors left after 10 rounds are returned as
// they are (they then reach the client, as in MongoDB).
//
// A round whose replies are SnapshotUnavailable (a shard received a migrated range after the
// round's read time) runs again when the time may move: a transaction's first statement (the
// router restarts it at a later time), or a read whose time this router chose for the round
// (`readTimeChosenByRouter` true: makeRequests draws a later one next round). Outside a
// transaction, the cursors a discarded round opened on the other shards are killed.
struct RoutedOptions {
    bool createDbIfMissing = false;
    std::function<bool(const std::vector<ShardResponse>&)> retryOnStale;  // null: always retry
    std::function<bool()> readTimeChosenByRouter;                         // null: never
};
StatusWith<std::vector<ShardResponse>> runRouted(
    command::OperationContext& opCtx, Router& router, std::string_view ns,
    const std::function<StatusWith<std::vector<ShardRequest>>(const CollectionRoutingInfo&)>&
        makeRequests,
    const RoutedOptions& options = {});

// Commands of a router process: handshake (isdbgrid), diagnostics, CRUD routing, DDL, sharding
// admin commands and the config.* passthrough. Each family registers itself.
void registerRouterCommands(command::CommandRegistry& registry);

}  // namespace tessera::router
