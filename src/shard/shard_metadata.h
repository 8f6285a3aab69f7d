#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "base/status.h"
#include "bson/bson_obj.h"
#include "cluster/catalog_cache.h"
#include "placement/chunk_version.h"
#include "placement/database_version.h"
#include "placement/routing_table.h"
#include "shard/critical_section.h"
#include "shard/ownership_filter.h"

namespace tessera::shard {

class TrackedRanges;

// Where the shard's copy of its placement comes from: the config server (CatalogPlacementSource)
// or a fake in tests. Every call is a fresh read (no caching here).
//
// `mayUseOwnCopy`: when the config server cannot be reached, a source with a durable copy of the
// shard's placement (PersistedPlacementSource) may answer from it. ShardMetadata allows that only
// for what it does not hold in memory (after a restart): the copy is never newer than memory, and
// answering a reload with it would turn a placement change the shard must learn (a migration's
// commit) into a silent no-op.
class PlacementSource {
  public:
    virtual ~PlacementSource() = default;
    // The routing table of `ns`, or nullptr when the collection is not sharded (or its database
    // does not exist).
    virtual StatusWith<std::shared_ptr<const placement::RoutingTable>> loadCollection(
        std::string_view ns, bool mayUseOwnCopy) = 0;
    // The database entry, or nullopt when the database does not exist.
    virtual StatusWith<std::optional<cluster::DatabaseInfo>> loadDatabase(std::string_view db,
                                                                          bool mayUseOwnCopy) = 0;
};

// PlacementSource over a cluster::CatalogCache (invalidated before every load).
class CatalogPlacementSource final : public PlacementSource {
  public:
    explicit CatalogPlacementSource(cluster::CatalogCache& cache) : _cache(cache) {}
    StatusWith<std::shared_ptr<const placement::RoutingTable>> loadCollection(
        std::string_view ns, bool mayUseOwnCopy) override;
    StatusWith<std::optional<cluster::DatabaseInfo>> loadDatabase(std::string_view db,
                                                                  bool mayUseOwnCopy) override;

  private:
    cluster::CatalogCache& _cache;
};

// The shard's copy of its placement (ARCHITECTURE.md invariant 4) and the version checks of
// routed requests (placement/README.md rule 3). Thread-safe.
//
//  - Per collection: the routing table (nullptr = unsharded), loaded on first use, reloaded by
//    refreshCollection (_flushRoutingTableCacheUpdates, a received version newer than ours, the
//    end of a critical section).
//  - Per database: the database entry; the shard's wanted databaseVersion is its version when
//    this shard is the primary, none otherwise.
//  - Critical sections: a versioned check waits (≤ kCriticalSectionWait, and the op's deadline)
//    for the section's exit, then refreshes and re-checks.
class ShardMetadata {
  public:
    using Clock = std::chrono::steady_clock;
    static constexpr std::chrono::seconds kCriticalSectionWait{30};

    ShardMetadata(placement::ShardId shardId, PlacementSource& source);

    const placement::ShardId& shardId() const { return _shardId; }
    CriticalSections& criticalSections() { return _sections; }

    // Cached placement of ns (loaded when unknown): nullptr = unsharded.
    StatusWith<std::shared_ptr<const placement::RoutingTable>> collection(std::string_view ns);
    // This shard's version of ns: its shard version in the table, UNSHARDED when not sharded,
    // nullopt when the placement cannot be loaded.
    // `mayWait` false (an operation on an io thread): nothing is loaded, an unknown placement is
    // InlineWouldBlock (here: nullopt).
    std::optional<placement::ChunkVersion> shardVersion(std::string_view ns, bool mayWait = true);
    std::optional<placement::DatabaseVersion> databaseVersion(std::string_view db,
                                                              bool mayWait = true);
    Status refreshCollection(std::string_view ns);
    Status refreshDatabase(std::string_view db);

    // The ownership filter of reads and writes of ns: nullptr when unsharded; an error when the
    // placement cannot be loaded (from the source, which falls back to the shard's persisted
    // copy): never unfiltered.
    // With `mayWait` false an unknown placement is InlineWouldBlock (the operation moves to the
    // worker pool, which loads it).
    StatusWith<std::shared_ptr<const command::OwnershipFilter>> ownershipFilter(
        std::string_view ns, bool mayWait = true);

    // The check of a request carrying shardVersion `received` for ns. On success the operation
    // is admitted on the collection's critical section key (the caller must call
    // criticalSections().leave(CriticalSections::collectionKey(ns)) when it ends). On failure
    // returns StaleConfig and sets *extraInfo to the StaleConfigInfo fields. With `mayWait`
    // false it never waits or loads: a critical section entered, an unknown placement or one
    // that may need a refresh is InlineWouldBlock, and nothing is admitted.
    // `isWrite` false (a read): only a section that blocks reads (kAll) is waited for, and the
    // admission counts as a read (leave with isWrite false).
    Status checkShardVersion(const std::string& ns, const placement::ChunkVersion& received,
                             std::optional<Clock::time_point> opDeadline, bson::BsonObj* extraInfo,
                             bool mayWait = true, bool isWrite = true);
    // For a write without a shardVersion to a sharded collection (sent to the shard directly):
    // waits while the collection's critical section blocks writes, then admits it as a write,
    // so that no write lands between a migration's last catch-up and its commit. Errors as
    // checkShardVersion's wait (StaleConfig when the section does not end in time).
    Status admitUnversionedWrite(const std::string& ns, std::optional<Clock::time_point> opDeadline,
                                 bool mayWait);
    // The same for databaseVersion (admitted on the database key on success).
    Status checkDatabaseVersion(const std::string& db, const placement::DatabaseVersion& received,
                                std::optional<Clock::time_point> opDeadline,
                                bson::BsonObj* extraInfo, bool mayWait = true);

    // Snapshot floors. A range received by a migration is written here at this shard's
    // timestamps, up to its last catch-up; a read at an older cluster timestamp (a transaction's,
    // or readConcern snapshot's atClusterTime, drawn by a router whose clock has not seen them)
    // would miss the received documents once the range is owned. So once the last catch-up is
    // applied the collection's floor is raised to this shard's latest commit, and a read of it
    // below the floor fails with SnapshotUnavailable (246; in a transaction
    // TransientTransactionError: the client runs it again, and its router, having seen this
    // shard's operationTime, draws a later timestamp). Per collection, in memory.
    void raiseSnapshotFloor(const std::string& ns, Timestamp floor);
    Status checkSnapshotFloor(const std::string& ns, Timestamp readTs) const;

    // Drops everything cached (the next use reloads).
    void clear();
    // The tracked ranges every ownership filter computes owned totals with (tracked_ranges.h).
    void setTrackedRanges(std::shared_ptr<const TrackedRanges> tracked) {
        _tracked = std::move(tracked);
    }

  private:
    struct CollEntry {
        std::shared_ptr<const placement::RoutingTable> table;
        std::shared_ptr<const ChunkOwnershipFilter> filter;
        Clock::time_point loadStarted;
    };
    struct DbEntry {
        std::optional<cluster::DatabaseInfo> info;
        Clock::time_point loadStarted;
    };
    Clock::time_point waitDeadline(std::optional<Clock::time_point> opDeadline) const;
    // Unknown and `mayWait` false: InlineWouldBlock instead of a load.
    StatusWith<CollEntry> getCollEntry(std::string_view ns, bool mayWait = true);
    StatusWith<DbEntry> getDbEntry(std::string_view db, bool mayWait = true);
    // Reloads unless a load that started at or after `notBefore` already installed the entry
    // (many operations released by one critical section exit share one refresh).
    Status refreshCollectionSince(std::string_view ns, Clock::time_point notBefore);
    Status refreshDatabaseSince(std::string_view db, Clock::time_point notBefore);

    placement::ShardId _shardId;
    PlacementSource& _source;
    CriticalSections _sections;
    std::shared_ptr<const TrackedRanges> _tracked;
    Mutex _refreshMutex;  // one load from the source at a time (ordered installs)
    mutable Mutex _floorsMutex;
    std::map<std::string, Timestamp, std::less<>> _snapshotFloors GUARDED_BY(_floorsMutex);
    mutable Mutex _mutex ACQUIRED_AFTER(_refreshMutex);
    std::map<std::string, CollEntry, std::less<>> _colls GUARDED_BY(_mutex);
    std::map<std::string, DbEntry, std::less<>> _dbs GUARDED_BY(_mutex);
};

}  // namespace tessera::shard
