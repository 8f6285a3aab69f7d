#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/failpoint.h"
#include "base/mutex.h"
#include "base/op_id.h"
#include "base/status.h"
#include "bson/bson_builder.h"
#include "bson/bson_obj.h"
#include "command/command.h"
#include "command/retryable_write_hooks.h"
#include "config/balancer_policy.h"
#include "config/catalog_docs.h"
#include "config/coordinator.h"
#include "config/coordinator_state.h"
#include "config/ddl_lock_manager.h"
#include "config/local_client.h"
#include "config/router_notifier.h"
#include "net/remote_client.h"
#include "placement/shard_key_pattern.h"

namespace tessera::config {

extern FailPoint moveRangeHangAfterDonorStart;
extern FailPoint moveRangeHangInCriticalSection;
extern FailPoint moveRangeHangBeforeCommit;
extern FailPoint moveRangeFailBeforeCommit;
extern FailPoint moveRangeHangAfterCommit;

struct ShardEntry {
    std::string id;
    std::string host;
    bool draining = false;  // config.shards {draining: true}: being emptied for removal
    // config.shards {drainingFailures, drainingLastError}: consecutive drain steps (moving a
    // chunk or a database off it) that failed for a reason other than an unreachable shard; at
    // kMaxCoordinatorAttempts the drain has failed and the balancer stops acting on it until
    // startShardDraining is run again (docs/protocols/ddl-coordinators.md "When a coordinator
    // fails").
    int drainingFailures = 0;
    bool drainFailed() const;
};

// A sharded collection as the config server reads it: its catalog entry and its chunks.
struct ShardedCollection {
    CollectionRecord coll;
    placement::ShardKeyPattern pattern;
    std::vector<ChunkRecord> chunks;  // sorted by min
};

// One zone range of config.tags, its bounds full keys of the collection's shard key.
struct ZoneRange {
    bson::BsonObj min, max;
    std::string lo, hi;  // encoded bounds
    std::string zone;
};

// config.settings {_id: "balancer", mode, roundIntervalMillis, activeWindow: {start, stop},
// imbalanceTolerance} and {_id: "chunksize", value: MB}.
struct BalancerSettings {
    bool enabled = true;
    int64_t chunkSizeBytes = 0;
    int64_t roundIntervalMillis = 0;
    double tolerance = 1.10;  // max/min owned bytes a collection may keep
    std::optional<std::pair<std::string, std::string>> activeWindow;  // "HH:MM" start, stop
    // config.settings {_id: "automerge", enabled (sh.stopAutoMerger), intervalSecs}: the
    // auto-merger runs in one round every interval (MongoDB's autoMergerIntervalSecs, 3600 s),
    // so a split made by hand is not undone at once.
    bool autoMerge = true;
    int64_t mergeIntervalMillis = 3600 * 1000;
    // Whether rounds run now: enabled and inside the active window, if there is one.
    bool runsNow() const;
};

// The state and operations of the config server role. DDL is serialized per namespace by
// `_ddlLocks` (ddl_lock_manager.h: a collection's operations exclude each other, a database's
// exclude every operation in it, independent namespaces run in parallel); each long operation
// is a Coordinator (coordinator.h) run, and resumed, under the same locks.
class ConfigServerImpl {
  public:
    explicit ConfigServerImpl(command::ServiceContext& service);
    ~ConfigServerImpl();

    Status startup();
    void shutdown();
    command::CommandHooks* hooks() { return &_retryableWrites; }

    // Commands (arguments parsed by config_commands.cpp). Each appends its reply fields.
    StatusWith<std::string> addShard(const std::string& host, std::optional<std::string> name);
    StatusWith<bson::BsonObj> createDatabase(const std::string& db,
                                             std::optional<std::string> primary);
    Status shardCollection(const std::string& ns, bson::BsonView key, bool unique,
                           int numInitialChunks, bool simpleCollationGiven,
                           bool implicitlyCreateIndex);
    Status splitChunk(const std::string& ns, bson::BsonView cmd);
    // `expected`, when given, are the ids of the chunks the caller decided to merge (the
    // balancer's snapshot): if the range holds other chunks now (a split since), nothing merges.
    Status mergeChunks(const std::string& ns, bson::BsonView min, bson::BsonView max,
                       const std::vector<bson::ObjectId>* expected = nullptr);
    // At startup: the chunks a split or merge interrupted by a crash left enclosed in another
    // chunk are removed (ddl_chunks.cpp).
    Status repairInterruptedChunkOps();
    Status moveRange(const std::string& ns, std::optional<bson::BsonObj> min,
                     std::optional<bson::BsonObj> max, const std::string& toShard,
                     bool waitForDelete);
    Status movePrimary(const std::string& db, const std::string& toShard);
    Status dropCollection(const std::string& ns, bson::BsonBuilder& reply);
    Status dropDatabase(const std::string& db, bson::BsonBuilder& reply);
    Status setBalancerMode(bool enabled);
    StatusWith<bson::BsonObj> balancerStatus();
    // Draining and removing a shard (ddl_shard_removal.cpp, README.md "Draining").
    Status setShardDraining(const std::string& shardId, bool draining);
    StatusWith<bson::BsonObj> shardDrainingStatus(const std::string& shardId);
    Status commitShardRemoval(const std::string& shardId);
    StatusWith<bson::BsonObj> removeShard(const std::string& shardId);
    // Zones (ddl_zones.cpp, README.md "Zones"): addShardToZone (`add`) / removeShardFromZone;
    // updateZoneKeyRange (zone nullopt: remove the range; bounds of a prefix of a sharded
    // collection's key are extended with MinKey).
    Status updateShardZone(const std::string& shardId, const std::string& zone, bool add);
    Status updateZoneKeyRange(const std::string& ns, const bson::BsonObj& min,
                              const bson::BsonObj& max, const std::optional<std::string>& zone);
    // configureCollectionBalancing {chunkSize: MB} (0: back to the cluster's chunk size; kept as
    // MongoDB does in config.collections `maxChunkSizeBytes`) and
    // {enableAutoMerger} (false: config.collections enableAutoMerge false, as mongosh's
    // sh.disableAutoMerger writes it; true unsets it).
    Status configureCollectionBalancing(const std::string& ns, std::optional<int64_t> chunkSizeMB,
                                        std::optional<bool> autoMerge);
    // refineCollectionShardKey / clearJumboFlag (ddl_refine_shard_key.cpp, README.md "Refining a
    // shard key"); clearJumboFlag names its chunk by `find` (a shard key value) or `bounds`.
    Status refineCollectionShardKey(const std::string& ns, bson::BsonView newKey);
    Status clearJumboFlag(const std::string& ns, std::optional<bson::BsonObj> find,
                          std::optional<std::pair<bson::BsonObj, bson::BsonObj>> bounds);
    // balancerCollectionStatus: whether the balancer's policy would act on ns now, and why.
    StatusWith<bson::BsonObj> balancerCollectionStatus(const std::string& ns);

    // currentOp on the config server: every coordinator in progress, with its phase, its
    // attempts and its last error (coordinator_recovery.cpp).
    std::vector<bson::BsonObj> coordinatorCurrentOps();

    // Helpers shared by the ddl_*.cpp files.
    LocalClient& local() { return _local; }
    net::RemoteClient& remote() { return _remote; }
    StatusWith<std::vector<ShardEntry>> allShards();
    StatusWith<std::vector<std::string>> allShardIds();  // allShards()' ids, in order
    StatusWith<std::string> shardHost(const std::string& shardId);
    // Runs `cmd` on `db` of the shard and turns an ok: 0 reply into its Status.
    StatusWith<bson::BsonObj> runOnShard(const std::string& shardId, std::string_view db,
                                         bson::BsonView cmd,
                                         std::chrono::milliseconds timeout = {});
    // After a placement commit: the shards that hold `ns` (or `db`) reload it (best effort: logs
    // failures) and every router is told in the background (RouterNotifier).
    void flushRoutingTable(const std::vector<std::string>& shardIds, const std::string& ns);
    void flushDatabase(const std::vector<std::string>& shardIds, const std::string& db);
    void logChange(std::string_view what, std::string_view ns, bson::BsonView details);
    // One balancer round's record in config.actionlog (balancer_scheduler.cpp).
    void logBalancerRound(int64_t millis, int64_t splits, int64_t migrations,
                          int64_t migrationsFailed, int64_t merges, const std::string& error);
    // NamespaceNotFound when the collection is not in config.collections.
    StatusWith<ShardedCollection> loadCollection(const std::string& ns);
    Status writeChunk(const ChunkRecord& chunk, const placement::Uuid& uuid, bool insert);
    Timestamp now() { return HybridLogicalClock::global().next(); }
    // While `fp` is on (and not shutting down), waits.
    void pauseWhileSet(FailPoint& fp);
    // This process's host:port (changelog entries' `server`).
    std::string serverName() const;
    // How shards and routers reach the config service: this process, or its replica set
    // "name/h1:p1,h2:p2" (sent to shards in their identity).
    std::string connectionString() const;
    // Throws when the failpoint coordinatorStepThrows is on for `type` (data {type}, or none:
    // every type): the test of a coordinator step that fails (README.md "When a coordinator
    // fails"). Coordinators call it before each persisted step.
    void coordinatorStep(std::string_view type);

  private:
    StatusWith<bson::BsonObj> createDatabaseLocked(const std::string& db,
                                                   std::optional<std::string> primary);

    // ---- Coordinators that fail (coordinator_recovery.cpp, README.md "When a coordinator
    // fails").
    // One coordinator document, resumed under the locks its operation takes, its attempt
    // counted first; abandoned once it has failed kMaxCoordinatorAttempts times. LockBusy when
    // a live operation holds it.
    StatusWith<CoordinatorOutcome> recoverCoordinator(const bson::BsonObj& doc);
    // Releases what a coordinator holds (Coordinator::abandon), leaves its placement old or
    // new, records its failure in config.changelog (`<type>.abandoned`) and removes its
    // document.
    void abandonCoordinator(const bson::BsonObj& doc, const Status& why, int attempts);
    // The live run of `coordinator` (started under `lock`, its document written or about to
    // be): an exception becomes its status; when it fails midway (its document is still there)
    // the locks are released and it is retried as recovery retries it, with back-off, and the
    // reply is its final outcome.
    Status runCoordinator(Coordinator& coordinator, DdlLockManager::Guard& lock);
    // Sleeps `total` unless the process shuts down first (then false).
    bool sleepUnlessShutdown(std::chrono::milliseconds total);
    Status splitAt(ShardedCollection& coll, size_t index, std::vector<bson::BsonObj> points);
    StatusWith<bson::BsonObj> medianKey(const ShardedCollection& coll, size_t index);

    void recoverCoordinators();

    // The balancer (balancer_scheduler.cpp).
    BalancerSettings balancerSettings();
    StatusWith<balancer::Collection> balancerSnapshot(const ShardedCollection& coll,
                                                      int64_t chunkSizeBytes);
    // `forBalance`: the policy splits to even out bytes (else: the chunk looked too large).
    // Whether it changed config.chunks (split, or flagged jumbo).
    StatusWith<bool> balancerSplit(const std::string& ns, const bson::BsonObj& min,
                                   const bson::BsonObj& max, bool forBalance,
                                   int64_t chunkSizeBytes);
    // One round; true when it split, moved or merged something without an error.
    bool balancerRound(const BalancerSettings& settings);
    // Moves the primary of every database on a draining shard (one per round).
    void drainDatabases(const std::vector<ShardEntry>& shards);
    // A drain step on `shardId` ended: a failure (not transient) is counted in config.shards,
    // a success resets the count.
    void noteDrainStep(const std::string& shardId, const Status& outcome);
    void runBalancer();
    // The zone ranges of a collection (bounds extended to the full key, encoded), the shards of
    // each zone, the chunks' zones in a snapshot, and splits of chunks a zone's bound cuts
    // through.
    StatusWith<std::vector<ZoneRange>> zoneRanges(const ShardedCollection& coll);
    std::vector<std::pair<std::string, std::set<std::string>>> zoneShards();
    void assignZones(const ShardedCollection& coll, balancer::Collection& snapshot);
    Status splitAtZoneBounds(const std::string& ns);

    command::ServiceContext& _service;
    LocalClient _local;
    net::RemoteClient _remote;
    RouterNotifier _routerNotifier{_local};
    command::RetryableWriteHooks _retryableWrites;
    DdlLockManager _ddlLocks;
    Mutex _shardsMutex;  // addShard: one registration at a time
    std::atomic<bool> _shutdown{false};
    std::thread _recovery;
    std::thread _balancer;
    std::atomic<bool> _inBalancerRound{false};
    std::atomic<int64_t> _balancerRounds{0};
    // When the auto-merger last ran (the balancer thread's own; every mergeIntervalMillis).
    std::chrono::steady_clock::time_point _lastMergePass = std::chrono::steady_clock::now();
    bson::ObjectId _clusterId;
    KeyedOpIds _coordinatorOpIds;  // currentOp's ids of the coordinator documents
};

// {_id: id}: the query of one catalog document.
inline bson::BsonObj idQuery(std::string_view id) {
    bson::BsonBuilder b;
    b.appendString("_id", id);
    return b.obj();
}

// The impl behind opCtx.service->roleState; IllegalOperation when this is not a config server.
StatusWith<ConfigServerImpl*> configServerImpl(command::OperationContext& opCtx);

}  // namespace tessera::config
