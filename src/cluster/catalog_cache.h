#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "net/remote_client.h"
#include "placement/chunk_version.h"
#include "placement/database_version.h"
#include "placement/routing_table.h"

namespace tessera::cluster {

using placement::ShardId;

struct ShardInfo {
    ShardId id;
    std::string host;  // "host:port", or a replica set "name/h1:p1,h2:p2" (reached at its primary)
    bool draining = false;
};

// How a process reads the config service's catalog (catalog_refresh.h findCommand): a shard at
// its primary only; a router preferring the primary, else at a member that answers.
enum class ConfigReads { kPrimary, kPrimaryPreferred };

// config.shards, cached: shard id → host. Thread-safe.
class ShardRegistry {
  public:
    ShardRegistry(net::RemoteClient& client, std::string configHost,
                  ConfigReads reads = ConfigReads::kPrimary);

    const std::string& configHost() const { return _configHost; }
    bool primaryPreferred() const { return _reads == ConfigReads::kPrimaryPreferred; }
    // The host of `shard`; reloads config.shards once when unknown (ShardNotFound 70 then).
    StatusWith<std::string> hostOf(const ShardId& shard);
    // The host of `shard` if it is cached; never loads (for callers that must not block).
    std::optional<std::string> cachedHostOf(const ShardId& shard);
    // Every shard, sorted by id (reloaded from config.shards when `reload` or never loaded).
    StatusWith<std::vector<ShardInfo>> allShards(bool reload = false);
    void invalidate();

  private:
    Status reload() REQUIRES(_mutex);

    net::RemoteClient& _client;
    const ConfigReads _reads;
    std::string _configHost;
    Mutex _mutex;
    bool _loaded GUARDED_BY(_mutex) = false;
    std::vector<ShardInfo> _shards GUARDED_BY(_mutex);
};

// config.databases entry.
struct DatabaseInfo {
    std::string name;
    ShardId primary;
    placement::DatabaseVersion version;
};

// What is known about one namespace: its database, and its routing table when sharded.
struct CollectionRoutingInfo {
    DatabaseInfo db;
    std::shared_ptr<const placement::RoutingTable> table;  // null: unsharded, on db.primary

    bool isSharded() const { return table != nullptr; }
};

// The router's (and a shard's) cache of placement, read from the config service's config.*
// collections (MongoDB's CatalogCache). Entries are loaded on first use and refreshed after a
// stale error: a collection incrementally (config.chunks with lastmod > cached collection
// version, RoutingTable::makeUpdated), in full on a new generation or a conflict. Thread-safe;
// returned tables are immutable snapshots.
class CatalogCache {
  public:
    CatalogCache(net::RemoteClient& client, ShardRegistry& shards);

    // The database's placement. With `createIfMissing` a missing database is created by the
    // config service (`_configsvrCreateDatabase`), as a write to a new database does through
    // mongos; otherwise NamespaceNotFound (26).
    StatusWith<DatabaseInfo> getDatabase(std::string_view db, bool createIfMissing = false);
    // `ns` is "db.coll". The database must exist (or be created, as above).
    StatusWith<CollectionRoutingInfo> getCollectionRoutingInfo(std::string_view ns,
                                                               bool createDbIfMissing = false);

    // What getCollectionRoutingInfo would return without loading anything, or nullopt when the
    // database or the collection is not cached or is marked stale (for callers that must not
    // block; they take the blocking path then). Never for admin/config/local.
    std::optional<CollectionRoutingInfo> cachedCollectionRoutingInfo(std::string_view ns);

    // After StaleConfig for `ns`: the next lookup refreshes (skipped when the cache already holds
    // `wanted` or newer).
    void onStaleShardVersion(std::string_view ns,
                             const std::optional<placement::ChunkVersion>& wanted);
    // After StaleConfig for `ns` from `shard` that carried the chunks changed since the router's
    // version (chunk_delta.h): installs the cached table updated with them when the result gives
    // `shard` exactly `wanted` and no refresh is running, and returns true (no refresh needed);
    // otherwise returns false and changes nothing (call onStaleShardVersion).
    bool applyChangedChunks(std::string_view ns, const ShardId& shard,
                            const placement::ChunkVersion& wanted,
                            std::vector<placement::Chunk> changed);
    // After StaleDbVersion for `db`.
    void onStaleDatabaseVersion(std::string_view db,
                                const std::optional<placement::DatabaseVersion>& wanted);
    // A placement change the config service announced (pushed to routers after its commit):
    // the cached entry of `ns` (or of `db`) is read again from the config service now, by the
    // caller, while lookups go on with the cached one until the new one is installed — the
    // next operation finds it current instead of learning from a shard's stale error. Nothing
    // when the entry was never looked up here.
    void refreshAnnouncedCollection(std::string_view ns);
    void refreshAnnouncedDatabase(std::string_view db);
    void invalidateDatabase(std::string_view db);    // and its collections
    void invalidateCollection(std::string_view ns);  // full reload next time
    void invalidateAll();                            // flushRouterConfig: 1

    // Counters for serverStatus/bench: refreshes done (full and incremental).
    struct Stats {
        int64_t databaseRefreshes = 0;
        int64_t fullCollectionRefreshes = 0;
        int64_t incrementalCollectionRefreshes = 0;
        int64_t changedChunksApplied = 0;  // stale errors resolved without the config service
        int64_t announcedRefreshes = 0;    // refreshes after a pushed placement change
        int64_t numDatabaseEntries = 0;    // cached now
        int64_t numCollectionEntries = 0;
        // Wall-clock millis of the newest placement read from the config service (0: never).
        int64_t lastRefreshMillis = 0;
    };
    Stats stats() const;

  private:
    struct DbEntry;
    struct CollEntry;
    // Read from the config service and installed; the caller holds the entry's refreshMutex.
    StatusWith<DatabaseInfo> refreshDatabase(std::string_view db, DbEntry& entry,
                                             bool createIfMissing);
    StatusWith<std::shared_ptr<const placement::RoutingTable>> refreshCollection(
        std::string_view ns, CollEntry& entry);
    net::RemoteClient& _client;
    ShardRegistry& _shards;
    mutable Mutex _mutex;
    std::map<std::string, std::shared_ptr<DbEntry>, std::less<>> _dbs GUARDED_BY(_mutex);
    std::map<std::string, std::shared_ptr<CollEntry>, std::less<>> _colls GUARDED_BY(_mutex);
    Stats _stats;
};

// Parsers of config.* documents (shared by the cache, the shard's placement copy and the config
// service). Errors are FailedToParse/NoSuchKey with the offending document in the message.
StatusWith<ShardInfo> parseShardDoc(bson::BsonView doc);
StatusWith<DatabaseInfo> parseDatabaseDoc(bson::BsonView doc);
// config.chunks document → Chunk (version's generation from `gen`).
StatusWith<placement::Chunk> parseChunkDoc(bson::BsonView doc,
                                           const placement::CollectionGeneration& gen);

}  // namespace tessera::cluster
