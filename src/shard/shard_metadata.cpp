#include "shard/shard_metadata.h"

#include "base/log.h"
#include "base/mutex.h"
#include "cluster/chunk_delta.h"
#include "placement/stale_info.h"

namespace tessera::shard {

using placement::ChunkVersion;
using placement::DatabaseVersion;
using placement::RoutingTable;

StatusWith<std::shared_ptr<const RoutingTable>> CatalogPlacementSource::loadCollection(
    std::string_view ns, bool /*mayUseOwnCopy*/) {
    // Stale, not invalidated: the cache then refreshes incrementally when the generation is
    // unchanged (the collection entry and the changed chunks in one config round trip) and in
    // full otherwise, instead of always re-reading every chunk in two round trips.
    _cache.onStaleShardVersion(ns, std::nullopt);
    auto info = _cache.getCollectionRoutingInfo(ns);
    if (info.getStatus().is(ErrorCodes::NamespaceNotFound)) {
        return std::shared_ptr<const RoutingTable>();
    }
    if (!info.isOK()) return info.getStatus();
    return info.getValue().table;
}

StatusWith<std::optional<cluster::DatabaseInfo>> CatalogPlacementSource::loadDatabase(
    std::string_view db, bool /*mayUseOwnCopy*/) {
    _cache.invalidateDatabase(db);
    auto info = _cache.getDatabase(db);
    if (info.getStatus().is(ErrorCodes::NamespaceNotFound)) {
        return std::optional<cluster::DatabaseInfo>();
    }
    if (!info.isOK()) return info.getStatus();
    return std::optional<cluster::DatabaseInfo>(std::move(info.getValue()));
}

ShardMetadata::ShardMetadata(placement::ShardId shardId, PlacementSource& source)
    : _shardId(std::move(shardId)), _source(source) {}

ShardMetadata::Clock::time_point ShardMetadata::waitDeadline(
    std::optional<Clock::time_point> opDeadline) const {
    auto limit = Clock::now() + kCriticalSectionWait;
    return opDeadline && *opDeadline < limit ? *opDeadline : limit;
}

Status ShardMetadata::refreshCollectionSince(std::string_view ns, Clock::time_point notBefore) {
    MutexLock refresh(_refreshMutex);
    {
        MutexLock lk(_mutex);
        auto it = _colls.find(ns);
        if (it != _colls.end() && it->second.loadStarted >= notBefore) return Status::OK();
    }
    bool known;
    {
        MutexLock lk(_mutex);
        known = _colls.find(ns) != _colls.end();
    }
    auto started = Clock::now();
    // What memory holds is at least as new as the shard's durable copy: a failed reload keeps it
    // (and says so) rather than answering from the copy.
    auto table = _source.loadCollection(ns, /*mayUseOwnCopy=*/!known);
    if (!table.isOK()) {
        log::warning("SHARDING", 22001, "Failed to refresh the placement of a collection",
                     "{\"ns\":\"" + log::jsonEscape(ns) + "\",\"error\":\"" +
                         log::jsonEscape(table.getStatus().toString()) + "\"}");
        return table.getStatus();
    }
    CollEntry entry;
    entry.table = std::move(table.getValue());
    if (entry.table) {
        auto filter = std::make_shared<ChunkOwnershipFilter>(entry.table, _shardId);
        filter->setTrackedRanges(_tracked);
        entry.filter = std::move(filter);
    }
    entry.loadStarted = started;
    MutexLock lk(_mutex);
    _colls.insert_or_assign(std::string(ns), std::move(entry));
    return Status::OK();
}

Status ShardMetadata::refreshDatabaseSince(std::string_view db, Clock::time_point notBefore) {
    MutexLock refresh(_refreshMutex);
    {
        MutexLock lk(_mutex);
        auto it = _dbs.find(db);
        if (it != _dbs.end() && it->second.loadStarted >= notBefore) return Status::OK();
    }
    bool known;
    {
        MutexLock lk(_mutex);
        known = _dbs.find(db) != _dbs.end();
    }
    auto started = Clock::now();
    auto info = _source.loadDatabase(db, /*mayUseOwnCopy=*/!known);
    if (!info.isOK()) return info.getStatus();
    MutexLock lk(_mutex);
    _dbs.insert_or_assign(std::string(db), DbEntry{std::move(info.getValue()), started});
    return Status::OK();
}

Status ShardMetadata::refreshCollection(std::string_view ns) {
    return refreshCollectionSince(ns, Clock::now());
}

Status ShardMetadata::refreshDatabase(std::string_view db) {
    return refreshDatabaseSince(db, Clock::now());
}

namespace {

Status wouldBlock(std::string_view what) {
    return Status(ErrorCodes::InlineWouldBlock, std::string(what));
}

}  // namespace

StatusWith<ShardMetadata::CollEntry> ShardMetadata::getCollEntry(std::string_view ns,
                                                                 bool mayWait) {
    {
        MutexLock lk(_mutex);
        auto it = _colls.find(ns);
        if (it != _colls.end()) return it->second;
    }
    if (!mayWait) return wouldBlock("the placement must be loaded");
    // Unknown: load (a concurrent first use may have loaded it meanwhile: any load counts).
    TRY_STATUS(refreshCollectionSince(ns, Clock::time_point::min()));
    MutexLock lk(_mutex);
    auto it = _colls.find(ns);
    if (it == _colls.end()) return Status(ErrorCodes::InternalError, "placement vanished");
    return it->second;
}

StatusWith<ShardMetadata::DbEntry> ShardMetadata::getDbEntry(std::string_view db, bool mayWait) {
    {
        MutexLock lk(_mutex);
        auto it = _dbs.find(db);
        if (it != _dbs.end()) return it->second;
    }
    if (!mayWait) return wouldBlock("the database placement must be loaded");
    TRY_STATUS(refreshDatabaseSince(db, Clock::time_point::min()));
    MutexLock lk(_mutex);
    auto it = _dbs.find(db);
    if (it == _dbs.end()) return Status(ErrorCodes::InternalError, "placement vanished");
    return it->second;
}

StatusWith<std::shared_ptr<const RoutingTable>> ShardMetadata::collection(std::string_view ns) {
    ASSIGN_OR_RETURN(CollEntry entry, getCollEntry(ns));
    return entry.table;
}

std::optional<ChunkVersion> ShardMetadata::shardVersion(std::string_view ns, bool mayWait) {
    auto entry = getCollEntry(ns, mayWait);
    if (!entry.isOK()) return std::nullopt;
    if (!entry.getValue().table) return ChunkVersion::unsharded();
    return entry.getValue().table->shardVersion(_shardId);
}

std::optional<DatabaseVersion> ShardMetadata::databaseVersion(std::string_view db, bool mayWait) {
    auto entry = getDbEntry(db, mayWait);
    if (!entry.isOK() || !entry.getValue().info) return std::nullopt;
    const cluster::DatabaseInfo& info = *entry.getValue().info;
    if (info.primary != _shardId) return std::nullopt;
    return info.version;
}

StatusWith<std::shared_ptr<const command::OwnershipFilter>> ShardMetadata::ownershipFilter(
    std::string_view ns, bool mayWait) {
    auto entry = getCollEntry(ns, mayWait);
    if (entry.getStatus().is(ErrorCodes::InlineWouldBlock)) return entry.getStatus();
    if (!entry.isOK()) {
        // Never "no filter": a read of a sharded collection without one would show orphans.
        return entry.getStatus().withContext(
            "the placement of " + std::string(ns) +
            " is unknown on this shard (neither the config server nor the shard's own copy "
            "could be read), so it cannot tell which documents it owns: ");
    }
    return std::shared_ptr<const command::OwnershipFilter>(entry.getValue().filter);
}

namespace {

// Whether a failed check may pass after reloading our placement: not when the request's version
// is plainly older than ours (its router is stale, not us).
bool mayBeOursThatIsStale(const ChunkVersion& received, const std::optional<ChunkVersion>& wanted) {
    if (!wanted) return true;
    return !(received.isSameGeneration(*wanted) && received.isOlderThan(*wanted));
}

bool mayBeOursThatIsStale(const DatabaseVersion& received,
                          const std::optional<DatabaseVersion>& wanted) {
    if (!wanted) return true;
    return !(received.isSameDatabase(*wanted) && received.lastMod() < wanted->lastMod());
}

// The stale error for `info` (StaleConfigInfo / StaleDbVersionInfo), its fields in *extraInfo.
template <typename StaleInfo>
Status staleError(const StaleInfo& info, bson::BsonObj* extraInfo) {
    bson::BsonBuilder b;
    info.appendFields(b);
    *extraInfo = b.obj();
    return info.toStatus();
}

}  // namespace

Status ShardMetadata::admitUnversionedWrite(const std::string& ns,
                                            std::optional<Clock::time_point> opDeadline,
                                            bool mayWait) {
    const std::string key = CriticalSections::collectionKey(ns);
    auto deadline = waitDeadline(opDeadline);
    for (;;) {
        if (!mayWait && _sections.blocks(key, true)) return wouldBlock("in a critical section");
        if (!_sections.waitForExit(key, deadline, nullptr, nullptr, true)) {
            return Status(ErrorCodes::LockTimeout, "a migration's critical section on " + ns +
                                                       " did not end in time; retry the write");
        }
        if (_sections.tryAdmit(key, true)) return Status::OK();
    }
}

Status ShardMetadata::checkShardVersion(const std::string& ns, const ChunkVersion& received,
                                        std::optional<Clock::time_point> opDeadline,
                                        bson::BsonObj* extraInfo, bool mayWait, bool isWrite) {
    const std::string key = CriticalSections::collectionKey(ns);
    if (!mayWait && !getCollEntry(ns, false).isOK()) {
        return wouldBlock("the placement must be loaded");
    }
    auto deadline = waitDeadline(opDeadline);
    bool refreshed = false;
    for (;;) {
        bool waited = false;
        Clock::time_point exitedAt;
        if (!mayWait && _sections.blocks(key, isWrite)) return wouldBlock("in a critical section");
        if (!_sections.waitForExit(key, deadline, &waited, &exitedAt, isWrite)) {
            // Still in the critical section: stale with an unknown wanted version, which the
            // router treats as retryable after its own refresh.
            return staleError(placement::StaleConfigInfo{ns, received, std::nullopt, _shardId},
                              extraInfo);
        }
        if (waited) {
            // The placement most likely changed while we waited (migration commit).
            (void)refreshCollectionSince(ns, exitedAt);
            refreshed = true;
        }
        if (!received.isIgnored()) {
            auto decisionTime = Clock::now();
            std::optional<ChunkVersion> wanted = shardVersion(ns, mayWait);
            auto stale = placement::checkShardVersion(ns, _shardId, received, wanted);
            if (stale) {
                if (!refreshed && mayBeOursThatIsStale(received, wanted)) {
                    if (!mayWait) return wouldBlock("the placement may need a refresh");
                    (void)refreshCollectionSince(ns, decisionTime);
                    refreshed = true;
                    continue;
                }
                Status error = staleError(*stale, extraInfo);
                // A router behind us gets what changed since its version (chunk_delta.h).
                auto entry = getCollEntry(ns);
                if (entry.isOK() && entry.getValue().table) {
                    bson::BsonBuilder b;
                    for (bson::BsonElement e : *extraInfo) b.appendElement(e);
                    cluster::appendChangedChunks(*entry.getValue().table, received, b);
                    *extraInfo = b.obj();
                }
                return error;
            }
        }
        if (_sections.tryAdmit(key, isWrite)) return Status::OK();
        // A critical section began between the check and the admission: wait it out.
        if (!mayWait) return wouldBlock("a critical section began");
    }
}

Status ShardMetadata::checkDatabaseVersion(const std::string& db, const DatabaseVersion& received,
                                           std::optional<Clock::time_point> opDeadline,
                                           bson::BsonObj* extraInfo, bool mayWait) {
    const std::string key = CriticalSections::databaseKey(db);
    if (!mayWait && !getDbEntry(db, false).isOK()) {
        return wouldBlock("the placement must be loaded");
    }
    auto deadline = waitDeadline(opDeadline);
    bool refreshed = false;
    for (;;) {
        bool waited = false;
        Clock::time_point exitedAt;
        if (!mayWait && _sections.isEntered(key)) return wouldBlock("in a critical section");
        if (!_sections.waitForExit(key, deadline, &waited, &exitedAt)) {
            return staleError(placement::StaleDbVersionInfo{db, received, std::nullopt}, extraInfo);
        }
        if (waited) {
            (void)refreshDatabaseSince(db, exitedAt);
            refreshed = true;
        }
        auto decisionTime = Clock::now();
        std::optional<DatabaseVersion> wanted = databaseVersion(db, mayWait);
        auto stale = placement::checkDatabaseVersion(db, received, wanted);
        if (stale) {
            if (!refreshed && mayBeOursThatIsStale(received, wanted)) {
                if (!mayWait) return wouldBlock("the placement may need a refresh");
                (void)refreshDatabaseSince(db, decisionTime);
                refreshed = true;
                continue;
            }
            return staleError(*stale, extraInfo);
        }
        if (_sections.tryAdmit(key)) return Status::OK();
        if (!mayWait) return wouldBlock("a critical section began");
    }
}

void ShardMetadata::clear() {
    MutexLock lk(_mutex);
    _colls.clear();
    _dbs.clear();
}

void ShardMetadata::raiseSnapshotFloor(const std::string& ns, Timestamp floor) {
    MutexLock lk(_floorsMutex);
    Timestamp& current = _snapshotFloors[ns];
    current = std::max(current, floor);
}

Status ShardMetadata::checkSnapshotFloor(const std::string& ns, Timestamp readTs) const {
    MutexLock lk(_floorsMutex);
    auto it = _snapshotFloors.find(ns);
    if (it == _snapshotFloors.end() || readTs >= it->second) return Status::OK();
    return Status(ErrorCodes::SnapshotUnavailable,
                  "Unable to read " + ns + " at timestamp " + std::to_string(readTs.secs()) + ":" +
                      std::to_string(readTs.inc()) +
                      ": this shard received a migrated range of it at a later time (" +
                      std::to_string(it->second.secs()) + ":" + std::to_string(it->second.inc()) +
                      "); run the transaction or read again");
}

}  // namespace tessera::shard
