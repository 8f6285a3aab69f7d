#include "cluster/catalog_cache.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/mutex.h"
#include "base/wall_clock.h"
#include "bson/bson_builder.h"
#include "cluster/catalog_refresh.h"

namespace tessera::cluster {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonType;
using bson::BsonView;
using placement::ChunkVersion;
using placement::RoutingTable;

namespace {

constexpr std::string_view kConfigDb = "config";
// Attempts of one collection refresh when config.chunks changes while being read.
constexpr int kMaxRefreshAttempts = 5;

BsonObj idFilter(std::string_view id) {
    BsonBuilder b;
    b.append("_id", id);
    return b.obj();
}

bool isInternalDb(std::string_view db) { return db == "admin" || db == "config" || db == "local"; }

}  // namespace

// ---- parsers ------------------------------------------------------------------------------------

StatusWith<ShardInfo> parseShardDoc(BsonView doc) {
    auto id = doc["_id"];
    auto host = doc["host"];
    if (id.type() != BsonType::String || host.type() != BsonType::String) {
        return Status(ErrorCodes::FailedToParse,
                      "malformed config.shards document: " + doc.toJson());
    }
    ShardInfo info;
    info.id = std::string(id.stringValue());
    info.host = std::string(host.stringValue());
    info.draining = doc["draining"].trueValue();
    return info;
}

StatusWith<DatabaseInfo> parseDatabaseDoc(BsonView doc) {
    auto id = doc["_id"];
    auto primary = doc["primary"];
    auto version = doc["version"];
    if (id.type() != BsonType::String || primary.type() != BsonType::String ||
        !version.isObject()) {
        return Status(ErrorCodes::FailedToParse,
                      "malformed config.databases document: " + doc.toJson());
    }
    DatabaseInfo info;
    info.name = std::string(id.stringValue());
    info.primary = std::string(primary.stringValue());
    auto v = placement::DatabaseVersion::parse(version.objValue());
    if (!v.isOK()) return v.getStatus().withContext("config.databases " + info.name);
    info.version = std::move(v).getValue();
    return info;
}

StatusWith<placement::Chunk> parseChunkDoc(BsonView doc,
                                           const placement::CollectionGeneration& gen) {
    auto min = doc["min"];
    auto max = doc["max"];
    auto shard = doc["shard"];
    auto lastmod = doc["lastmod"];
    if (!min.isObject() || !max.isObject() || shard.type() != BsonType::String ||
        lastmod.type() != BsonType::Timestamp) {
        return Status(ErrorCodes::FailedToParse,
                      "malformed config.chunks document: " + doc.toJson());
    }
    placement::Chunk chunk;
    chunk.min = min.objValue().copy();
    chunk.max = max.objValue().copy();
    chunk.shard = std::string(shard.stringValue());
    Timestamp v{lastmod.timestampValue()};
    chunk.version = ChunkVersion(gen, v.secs(), v.inc());
    chunk.jumbo = doc["jumbo"].trueValue();
    return chunk;
}

// ---- ShardRegistry ------------------------------------------------------------------------------

ShardRegistry::ShardRegistry(net::RemoteClient& client, std::string configHost, ConfigReads reads)
    : _client(client), _reads(reads), _configHost(std::move(configHost)) {}

Status ShardRegistry::reload() {
    BsonBuilder sort;
    sort.appendInt32("_id", 1);
    ASSIGN_OR_RETURN(auto docs, findAll(_client, _configHost, kConfigDb, "shards", BsonView(),
                                        sort.obj(), primaryPreferred()));
    std::vector<ShardInfo> shards;
    for (const auto& doc : docs) {
        ASSIGN_OR_RETURN(auto info, parseShardDoc(doc));
        shards.push_back(std::move(info));
    }
    std::sort(shards.begin(), shards.end(),
              [](const ShardInfo& a, const ShardInfo& b) { return a.id < b.id; });
    _shards = std::move(shards);
    _loaded = true;
    return Status::OK();
}

StatusWith<std::string> ShardRegistry::hostOf(const ShardId& shard) {
    if (shard == "config") return _configHost;
    MutexLock lock(_mutex);
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (!_loaded || attempt == 1) TRY_STATUS(reload());
        for (const auto& s : _shards) {
            if (s.id == shard) return s.host;
        }
    }
    return Status(ErrorCodes::ShardNotFound, "Shard " + shard + " not found");
}

std::optional<std::string> ShardRegistry::cachedHostOf(const ShardId& shard) {
    MutexLock lock(_mutex);
    if (!_loaded) return std::nullopt;
    for (const auto& s : _shards) {
        if (s.id == shard) return s.host;
    }
    return std::nullopt;
}

StatusWith<std::vector<ShardInfo>> ShardRegistry::allShards(bool reloadNow) {
    MutexLock lock(_mutex);
    if (!_loaded || reloadNow) TRY_STATUS(reload());
    return _shards;
}

void ShardRegistry::invalidate() {
    MutexLock lock(_mutex);
    _loaded = false;
}

// ---- CatalogCache -------------------------------------------------------------------------------

struct CatalogCache::DbEntry {
    Mutex refreshMutex;  // one refresh at a time; lookups wait for it
    std::optional<DatabaseInfo> info;
    bool stale = true;
    uint64_t staleMarks = 0;  // bumped by every invalidation, to detect one during a refresh
};

struct CatalogCache::CollEntry {
    Mutex refreshMutex;
    std::shared_ptr<const RoutingTable> table;  // null: unsharded
    bool stale = true;
    bool forceFull = true;
    uint64_t staleMarks = 0;
    std::optional<placement::Uuid> uuid;  // of `table`'s collection, for speculative refreshes
};

CatalogCache::CatalogCache(net::RemoteClient& client, ShardRegistry& shards)
    : _client(client), _shards(shards) {}

StatusWith<DatabaseInfo> CatalogCache::getDatabase(std::string_view db, bool createIfMissing) {
    if (db.empty()) return Status(ErrorCodes::InvalidNamespace, "empty database name");
    if (isInternalDb(db)) {
        DatabaseInfo info;
        info.name = std::string(db);
        info.primary = "config";
        return info;
    }
    std::shared_ptr<DbEntry> entry;
    {
        MutexLock lock(_mutex);
        auto it = _dbs.find(db);
        if (it == _dbs.end()) it = _dbs.emplace(std::string(db), std::make_shared<DbEntry>()).first;
        entry = it->second;
        if (!entry->stale && entry->info) return *entry->info;
    }
    MutexLock refresh(entry->refreshMutex);
    {
        MutexLock lock(_mutex);
        if (!entry->stale && entry->info) return *entry->info;
    }
    return refreshDatabase(db, *entry, createIfMissing);
}

StatusWith<DatabaseInfo> CatalogCache::refreshDatabase(std::string_view db, DbEntry& entry,
                                                       bool createIfMissing) {
    uint64_t marks;
    {
        MutexLock lock(_mutex);
        marks = entry.staleMarks;
    }
    const std::string& configHost = _shards.configHost();
    ASSIGN_OR_RETURN(auto docs, findAll(_client, configHost, kConfigDb, "databases", idFilter(db),
                                        BsonView(), _shards.primaryPreferred()));
    std::optional<DatabaseInfo> info;
    if (!docs.empty()) {
        ASSIGN_OR_RETURN(auto parsed, parseDatabaseDoc(docs.front()));
        info = std::move(parsed);
    } else if (createIfMissing) {
        BsonBuilder cmd;
        cmd.append("_configsvrCreateDatabase", db);
        ASSIGN_OR_RETURN(BsonObj reply, _client.runCommand(configHost, "admin", cmd.obj()));
        TRY_STATUS(net::replyStatus(reply));
        if (!reply["database"].isObject()) {
            return Status(ErrorCodes::FailedToParse,
                          "_configsvrCreateDatabase reply without database: " + reply.toJson());
        }
        ASSIGN_OR_RETURN(auto parsed, parseDatabaseDoc(reply["database"].objValue()));
        info = std::move(parsed);
    }
    MutexLock lock(_mutex);
    ++_stats.databaseRefreshes;
    _stats.lastRefreshMillis = wallClockMillis();
    entry.info = info;
    entry.stale = !info || entry.staleMarks != marks;
    if (!info) {
        return Status(ErrorCodes::NamespaceNotFound, "database " + std::string(db) + " not found");
    }
    return *info;
}

std::optional<CollectionRoutingInfo> CatalogCache::cachedCollectionRoutingInfo(
    std::string_view ns) {
    auto dot = ns.find('.');
    if (dot == std::string_view::npos || dot == 0 || isInternalDb(ns.substr(0, dot))) {
        return std::nullopt;
    }
    MutexLock lock(_mutex);
    auto db = _dbs.find(ns.substr(0, dot));
    if (db == _dbs.end() || db->second->stale || !db->second->info) return std::nullopt;
    auto coll = _colls.find(ns);
    if (coll == _colls.end() || coll->second->stale) return std::nullopt;
    CollectionRoutingInfo result;
    result.db = *db->second->info;
    result.table = coll->second->table;
    return result;
}

StatusWith<CollectionRoutingInfo> CatalogCache::getCollectionRoutingInfo(std::string_view ns,
                                                                         bool createDbIfMissing) {
    auto dot = ns.find('.');
    if (dot == std::string_view::npos || dot == 0) {
        return Status(ErrorCodes::InvalidNamespace, "invalid namespace " + std::string(ns));
    }
    CollectionRoutingInfo result;
    ASSIGN_OR_RETURN(result.db, getDatabase(ns.substr(0, dot), createDbIfMissing));
    if (isInternalDb(result.db.name)) return result;

    std::shared_ptr<CollEntry> entry;
    {
        MutexLock lock(_mutex);
        auto it = _colls.find(ns);
        if (it == _colls.end()) {
            it = _colls.emplace(std::string(ns), std::make_shared<CollEntry>()).first;
        }
        entry = it->second;
        if (!entry->stale) {
            result.table = entry->table;
            return result;
        }
    }
    MutexLock refresh(entry->refreshMutex);
    {
        MutexLock lock(_mutex);
        if (!entry->stale) {
            result.table = entry->table;
            return result;
        }
    }
    ASSIGN_OR_RETURN(result.table, refreshCollection(ns, *entry));
    return result;
}

StatusWith<std::shared_ptr<const RoutingTable>> CatalogCache::refreshCollection(std::string_view ns,
                                                                                CollEntry& entry) {
    std::shared_ptr<const RoutingTable> cached;
    bool forceFull;
    uint64_t marks;
    {
        MutexLock lock(_mutex);
        cached = entry.table;
        forceFull = entry.forceFull;
        marks = entry.staleMarks;
    }

    const std::string& configHost = _shards.configHost();
    const bool preferred = _shards.primaryPreferred();
    std::shared_ptr<const RoutingTable> table;
    std::optional<placement::Uuid> uuid;
    {
        MutexLock lock(_mutex);
        uuid = entry.uuid;
    }
    bool incremental = false;
    Status last = Status::OK();
    int attempt = 0;
    for (; attempt < kMaxRefreshAttempts; ++attempt) {
        // After a migration the refresh is almost always incremental within the same
        // collection: then the changed chunks are read together with config.collections (one
        // round trip to the config server instead of two — a stale router's first operation is
        // the latency users see) and used only if the collection entry confirms the guess.
        std::optional<RefreshPlan> guess;
        if (cached && uuid && !forceFull) {
            guess = RefreshPlan{RefreshKind::kIncremental, CollectionDocInfo{}, {}};
            guess->coll->uuid = *uuid;
            guess->since = cached->collectionVersion();
        }
        std::vector<BsonObj> collDocs;
        std::optional<std::vector<BsonObj>> guessedChunks;
        if (guess) {
            auto replies = _client.runCommands(
                {{configHost, std::string(kConfigDb),
                  findCommand("collections", idFilter(ns), BsonView(), preferred)},
                 {configHost, std::string(kConfigDb),
                  findCommand("chunks", chunksFilter(*guess), BsonView(), preferred)}});
            if (!replies[0].isOK()) return replies[0].getStatus();
            ASSIGN_OR_RETURN(collDocs, findAllFrom(_client, configHost, kConfigDb, "collections",
                                                   std::move(replies[0]).getValue(), preferred));
            if (replies[1].isOK()) {
                auto chunks = findAllFrom(_client, configHost, kConfigDb, "chunks",
                                          std::move(replies[1]).getValue(), preferred);
                if (chunks.isOK()) guessedChunks = std::move(chunks).getValue();
            }
        } else {
            ASSIGN_OR_RETURN(collDocs, findAll(_client, configHost, kConfigDb, "collections",
                                               idFilter(ns), BsonView(), preferred));
        }
        std::optional<BsonObj> collDoc;
        if (!collDocs.empty()) collDoc = collDocs.front();
        ASSIGN_OR_RETURN(auto plan, planCollectionRefresh(cached.get(), collDoc, forceFull));
        if (plan.kind == RefreshKind::kUnsharded) {
            table = nullptr;
            uuid.reset();
            last = Status::OK();
            break;
        }
        std::vector<BsonObj> chunkDocs;
        if (guessedChunks && plan.kind == RefreshKind::kIncremental && plan.coll &&
            plan.coll->uuid == guess->coll->uuid && plan.since == guess->since) {
            chunkDocs = std::move(*guessedChunks);
        } else {
            ASSIGN_OR_RETURN(chunkDocs, findAll(_client, configHost, kConfigDb, "chunks",
                                                chunksFilter(plan), BsonView(), preferred));
        }
        if (plan.coll) uuid = plan.coll->uuid;
        auto built = applyRefresh(cached, plan, chunkDocs);
        if (built.isOK()) {
            table = std::move(built).getValue();
            incremental = plan.kind == RefreshKind::kIncremental;
            last = Status::OK();
            break;
        }
        last = built.getStatus();
        if (!last.is(ErrorCodes::ConflictingOperationInProgress)) return last;
        if (plan.kind == RefreshKind::kIncremental) {
            forceFull = true;  // does not fit: reload in full right away
        } else {
            // Placement changed under our two reads (or shardCollection is half-written).
            std::this_thread::sleep_for(std::chrono::milliseconds(20 * (attempt + 1)));
        }
    }
    if (!last.isOK()) return last;

    MutexLock lock(_mutex);
    _stats.lastRefreshMillis = wallClockMillis();
    if (incremental) {
        ++_stats.incrementalCollectionRefreshes;
    } else {
        ++_stats.fullCollectionRefreshes;
    }
    entry.table = table;
    entry.uuid = table ? uuid : std::nullopt;
    entry.forceFull = false;
    entry.stale = entry.staleMarks != marks;
    return table;
}

void CatalogCache::refreshAnnouncedCollection(std::string_view ns) {
    std::shared_ptr<CollEntry> entry;
    {
        MutexLock lock(_mutex);
        auto it = _colls.find(ns);
        if (it == _colls.end()) return;  // never looked up here: the first lookup loads it
        entry = it->second;
    }
    MutexLock refresh(entry->refreshMutex);
    if (refreshCollection(ns, *entry).isOK()) {
        MutexLock lock(_mutex);
        ++_stats.announcedRefreshes;
    }
}

void CatalogCache::refreshAnnouncedDatabase(std::string_view db) {
    std::shared_ptr<DbEntry> entry;
    {
        MutexLock lock(_mutex);
        auto it = _dbs.find(db);
        if (it == _dbs.end() || isInternalDb(db)) return;
        entry = it->second;
    }
    MutexLock refresh(entry->refreshMutex);
    // A database that is gone (dropped) is an outcome too: its entry says so now.
    auto refreshed = refreshDatabase(db, *entry, false);
    if (refreshed.isOK() || refreshed.getStatus().is(ErrorCodes::NamespaceNotFound)) {
        MutexLock lock(_mutex);
        ++_stats.announcedRefreshes;
    }
}

void CatalogCache::onStaleShardVersion(std::string_view ns,
                                       const std::optional<ChunkVersion>& wanted) {
    MutexLock lock(_mutex);
    auto it = _colls.find(ns);
    if (it == _colls.end()) return;  // not cached: the next lookup loads it anyway
    auto& entry = *it->second;
    if (entry.stale || needsShardVersionRefresh(entry.table.get(), wanted)) {
        entry.stale = true;
        ++entry.staleMarks;
    }
}

bool CatalogCache::applyChangedChunks(std::string_view ns, const ShardId& shard,
                                      const ChunkVersion& wanted,
                                      std::vector<placement::Chunk> changed) {
    std::shared_ptr<CollEntry> entry;
    {
        MutexLock lock(_mutex);
        auto it = _colls.find(ns);
        if (it == _colls.end()) return false;
        entry = it->second;
    }
    // A refresh in progress would install its own (maybe older) result after ours.
    std::unique_lock refresh(entry->refreshMutex, std::try_to_lock);
    if (!refresh.owns_lock()) return false;
    std::shared_ptr<const RoutingTable> cached;
    {
        MutexLock lock(_mutex);
        if (entry->stale) return false;
        cached = entry->table;
    }
    if (!cached || !needsShardVersionRefresh(cached.get(), wanted)) return !!cached;
    if (!(cached->generation() == wanted.generation())) return false;
    auto updated = cached->makeUpdated(std::move(changed));
    if (!updated.isOK() || !(updated.getValue()->shardVersion(shard) == wanted)) return false;
    MutexLock lock(_mutex);
    if (entry->stale || entry->table != cached) return false;
    entry->table = std::move(updated.getValue());
    ++_stats.changedChunksApplied;
    return true;
}

void CatalogCache::onStaleDatabaseVersion(std::string_view db,
                                          const std::optional<placement::DatabaseVersion>& wanted) {
    MutexLock lock(_mutex);
    auto it = _dbs.find(db);
    if (it == _dbs.end()) return;
    auto& entry = *it->second;
    std::optional<placement::DatabaseVersion> cached;
    if (entry.info) cached = entry.info->version;
    if (entry.stale || needsDatabaseVersionRefresh(cached, wanted)) {
        entry.stale = true;
        ++entry.staleMarks;
    }
}

void CatalogCache::invalidateDatabase(std::string_view db) {
    MutexLock lock(_mutex);
    if (auto it = _dbs.find(db); it != _dbs.end()) {
        it->second->stale = true;
        ++it->second->staleMarks;
    }
    std::string prefix = std::string(db) + ".";
    for (auto it = _colls.lower_bound(prefix);
         it != _colls.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
        it->second->stale = true;
        it->second->forceFull = true;
        ++it->second->staleMarks;
    }
}

void CatalogCache::invalidateCollection(std::string_view ns) {
    MutexLock lock(_mutex);
    if (auto it = _colls.find(ns); it != _colls.end()) {
        it->second->stale = true;
        it->second->forceFull = true;
        ++it->second->staleMarks;
    }
}

void CatalogCache::invalidateAll() {
    {
        MutexLock lock(_mutex);
        for (auto& [name, entry] : _dbs) {
            entry->stale = true;
            ++entry->staleMarks;
        }
        for (auto& [name, entry] : _colls) {
            entry->stale = true;
            entry->forceFull = true;
            ++entry->staleMarks;
        }
    }
    _shards.invalidate();
}

CatalogCache::Stats CatalogCache::stats() const {
    MutexLock lock(_mutex);
    Stats s = _stats;
    s.numDatabaseEntries = static_cast<int64_t>(_dbs.size());
    s.numCollectionEntries = static_cast<int64_t>(_colls.size());
    return s;
}

}  // namespace tessera::cluster
