#include "storage/rocks_engine.h"

#include <rocksdb/cache.h>
#include <rocksdb/convenience.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/listener.h>
#include <rocksdb/table.h>
#include <rocksdb/write_buffer_manager.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <set>
#include <shared_mutex>

#include "base/mutex.h"
#include "bson/bson_builder.h"
#include "bson/compare.h"
#include "storage/catalog_codec.h"
#include "storage/index_keys.h"
#include "storage/index_plan.h"
#include "storage/key_format.h"
#include "storage/mvcc_iterator.h"
#include "storage/rocks_collection_writer.h"
#include "storage/rocks_options.h"
#include "storage/rocks_read_snapshot.h"
#include "storage/rocks_transaction.h"

namespace tessera::storage {
namespace fs = std::filesystem;

namespace {

// Every completed flush or compaction changes the LSM tree: pooled point iterators would pin
// the obsolete one (PointIteratorPool). Called on RocksDB's background threads, without its
// mutex held.
class LsmChangeListener final : public rocksdb::EventListener {
  public:
    explicit LsmChangeListener(RocksEngine* engine) : _engine(engine) {}
    void OnFlushCompleted(rocksdb::DB*, const rocksdb::FlushJobInfo&) override { invalidate(); }
    void OnCompactionCompleted(rocksdb::DB*, const rocksdb::CompactionJobInfo&) override {
        invalidate();
    }

  private:
    void invalidate() {
        _engine->recordsPointIterators()->invalidate();
        _engine->indexesPointIterators()->invalidate();
    }
    RocksEngine* _engine;
};

constexpr const char* kCatalogCf = "catalog";
constexpr const char* kRecordsCf = "records";
constexpr const char* kIndexesCf = "indexes";
// Memtables of all column families together stay below this (plus the block cache).
constexpr size_t kMemtableBudget = size_t{192} << 20;

Status fromRocks(const rocksdb::Status& s, std::string_view context) {
    return RocksEngine::statusOf(s, context);
}

rocksdb::Slice slice(bson::BsonView doc) {
    return rocksdb::Slice(reinterpret_cast<const char*>(doc.data()), doc.size());
}

rocksdb::CompressionType pickCompression() {
    auto supported = rocksdb::GetSupportedCompressions();
    for (auto c : {rocksdb::kLZ4Compression, rocksdb::kSnappyCompression}) {
        if (std::find(supported.begin(), supported.end(), c) != supported.end()) return c;
    }
    return rocksdb::kNoCompression;
}

std::string newUuid() {
    static thread_local std::mt19937_64 rng(std::random_device{}());
    std::string u(16, '\0');
    uint64_t a = rng(), b = rng();
    for (int i = 0; i < 8; ++i) {
        u[i] = static_cast<char>(a >> (8 * i));
        u[8 + i] = static_cast<char>(b >> (8 * i));
    }
    u[6] = static_cast<char>((u[6] & 0x0f) | 0x40);  // version 4
    u[8] = static_cast<char>((u[8] & 0x3f) | 0x80);  // RFC 4122 variant
    return u;
}

}  // namespace

StatusWith<std::unique_ptr<Engine>> Engine::open(const EngineOptions& options) {
    return RocksEngine::open(options);
}

RocksEngine::RocksEngine(const EngineOptions& options)
    : _options(options),
      _clock(options.clock ? options.clock : &HybridLogicalClock::global()),
      _visibility(_clock) {}

StatusWith<std::unique_ptr<Engine>> RocksEngine::open(const EngineOptions& options) {
    if (options.dbpath.empty()) return Status(ErrorCodes::BadValue, "dbpath must not be empty");
    std::error_code ec;
    fs::create_directories(options.dbpath, ec);
    if (ec || !fs::is_directory(options.dbpath)) {
        return Status(ErrorCodes::NonExistentPath,
                      "Data directory " + options.dbpath +
                          " not found and could not be created: " + ec.message());
    }
    for (const char* foreign : {"WiredTiger", "mongod.lock", "WiredTiger.wt"}) {
        if (fs::exists(fs::path(options.dbpath) / foreign)) {
            return Status(ErrorCodes::BadValue, "dbpath " + options.dbpath +
                                                    " holds MongoDB data files, not a Tessera "
                                                    "database");
        }
    }
    std::unique_ptr<RocksEngine> engine(new RocksEngine(options));
    TRY_STATUS(engine->openDb());
    TRY_STATUS(engine->loadCatalog());
    return std::unique_ptr<Engine>(std::move(engine));
}

Status RocksEngine::openDb() {
    const std::string& path = _options.dbpath;
    bool existing = fs::exists(fs::path(path) / "CURRENT");
    if (existing) {
        std::vector<std::string> families;
        rocksdb::Status s = rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &families);
        if (!s.ok()) return fromRocks(s, "cannot read the database in " + path);
        if (std::find(families.begin(), families.end(), kCatalogCf) == families.end()) {
            return Status(ErrorCodes::BadValue,
                          "dbpath " + path + " holds a RocksDB database that is not Tessera's");
        }
    }

    rocksdb::DBOptions dbOptions;
    dbOptions.create_if_missing = true;
    dbOptions.create_missing_column_families = true;
    dbOptions.max_background_jobs = 2;
    dbOptions.max_subcompactions = 1;  // required by MvccGcFilterFactory
    dbOptions.bytes_per_sync = 1 << 20;
    dbOptions.max_total_wal_size = size_t{256} << 20;
    dbOptions.write_buffer_manager = std::make_shared<rocksdb::WriteBufferManager>(kMemtableBudget);
    dbOptions.max_log_file_size = 8 << 20;
    dbOptions.keep_log_file_num = 3;
    dbOptions.enable_pipelined_write = false;
    dbOptions.listeners.push_back(std::make_shared<LsmChangeListener>(this));

    auto cache = rocksdb::NewLRUCache(std::max<size_t>(_options.blockCacheBytes, 8 << 20));
    auto gcFactory = std::make_shared<MvccGcFilterFactory>(
        [this] { return _visibility.gcHorizon(_options.historyWindowSeconds); });
    rocksdb::CompressionType compression = pickCompression();

    auto versionedCf = [&](size_t writeBufferBytes) {
        rocksdb::BlockBasedTableOptions table;
        table.block_cache = cache;
        table.block_size = 16 << 10;
        table.cache_index_and_filter_blocks = true;
        table.pin_l0_filter_and_index_blocks_in_cache = true;
        table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
        table.whole_key_filtering = false;  // lookups are by user key (prefix), never whole key
        table.format_version = 5;
        rocksdb::ColumnFamilyOptions cf;
        cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
        cf.prefix_extractor = newVersionPrefixExtractor();
        cf.memtable_prefix_bloom_size_ratio = 0.05;
        cf.compaction_filter_factory = gcFactory;
        cf.write_buffer_size = writeBufferBytes;
        cf.max_write_buffer_number = 3;
        cf.level_compaction_dynamic_level_bytes = true;
        cf.compression = compression;
        return cf;
    };
    rocksdb::ColumnFamilyOptions catalogOptions;
    {
        rocksdb::BlockBasedTableOptions table;
        table.block_cache = cache;
        catalogOptions.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
        catalogOptions.write_buffer_size = 4 << 20;
        catalogOptions.merge_operator = newCountsMergeOperator();
    }
    std::vector<rocksdb::ColumnFamilyDescriptor> descriptors = {
        {rocksdb::kDefaultColumnFamilyName, catalogOptions},
        {kCatalogCf, catalogOptions},
        {kRecordsCf, versionedCf(64 << 20)},
        {kIndexesCf, versionedCf(32 << 20)},
    };
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* db = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(dbOptions, path, descriptors, &handles, &db);
    if (!s.ok()) {
        std::string msg = s.ToString();
        if (s.IsIOError() && (msg.find("lock") != std::string::npos ||
                              msg.find("Resource temporarily unavailable") != std::string::npos)) {
            return Status(ErrorCodes::DBPathInUse,
                          "Unable to lock the dbpath " + path +
                              ": another Tessera process is already using it (" + msg + ")");
        }
        return fromRocks(s, "cannot open the database in " + path);
    }
    _db.reset(db);
    _default = handles[0];
    _catalog = handles[1];
    _records = handles[2];
    _indexes = handles[3];
    _recordPoints.attach(db, _records);
    _indexPoints.attach(db, _indexes);
    if (!existing) {
        rocksdb::WriteBatch batch;
        TRY_STATUS(fromRocks(batch.Put(_catalog, keys::kFormatKey, keys::kFormatValue), "init"));
        TRY_STATUS(writeSync(&batch));
    }
    return Status::OK();
}

Status RocksEngine::loadCatalog() {
    std::unique_ptr<rocksdb::Iterator> it(_db->NewIterator(rocksdb::ReadOptions(), _catalog));
    Timestamp maxTs;
    std::map<uint64_t, std::string> counts;
    std::vector<uint64_t> interruptedRewrites;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
        std::string_view key(it->key().data(), it->key().size());
        std::string_view value(it->value().data(), it->value().size());
        if (key == keys::kNextCollectionIdKey && value.size() == 8) {
            _nextCollectionId = std::max(_nextCollectionId, keys::readBigEndian64(value));
        } else if (key.size() == 9 && key[0] == 'c') {
            auto decoded = decodeCollectionInfo(bson::BsonView(value.data()));
            if (!decoded.isOK()) return decoded.getStatus();
            auto info = std::make_shared<const CollectionInfo>(std::move(decoded.getValue()));
            _byNs[info->ns()] = info;
            _byId[info->id] = info;
            _states[info->id] = std::make_shared<CollectionState>();
            // A collection a transaction created is committed without moving the persisted
            // next id (rocks_txn_catalog.cpp): ids stay unique from the entries themselves.
            _nextCollectionId = std::max(_nextCollectionId, info->id + 1);
        } else if (key.size() == 9 && key[0] == 'n' && value.size() == 24) {
            counts[keys::readBigEndian64(key.substr(1))] = std::string(value);
        } else if (key.size() == keys::kRewritePrefix.size() + 8 &&
                   key.substr(0, keys::kRewritePrefix.size()) == keys::kRewritePrefix) {
            interruptedRewrites.push_back(
                keys::readBigEndian64(key.substr(keys::kRewritePrefix.size())));
        }
    }
    TRY_STATUS(fromRocks(it->status(), "cannot read the catalog"));
    for (auto& [id, v] : counts) {
        maxTs = std::max(maxTs, Timestamp{keys::readBigEndian64(std::string_view(v).substr(16))});
        auto st = _states.find(id);
        if (st == _states.end()) continue;
        st->second->count = static_cast<int64_t>(keys::readBigEndian64(v));
        st->second->dataSize =
            static_cast<int64_t>(keys::readBigEndian64(std::string_view(v).substr(8)));
    }
    // Commit timestamps must keep increasing across restarts, whatever the wall clock does.
    _clock->advanceTo(maxTs);

    rocksdb::WriteBatch cleanup;
    // A collection rewrite interrupted by a crash leaves a partial copy under its new id.
    for (uint64_t id : interruptedRewrites) {
        std::string lower = keys::collPrefix(id), upper = keys::collPrefix(id + 1);
        TRY_STATUS(fromRocks(cleanup.DeleteRange(_records, lower, upper), "cleanup"));
        TRY_STATUS(fromRocks(cleanup.DeleteRange(_indexes, lower, upper), "cleanup"));
        TRY_STATUS(fromRocks(cleanup.Delete(_catalog, keys::rewriteMarkerKey(id)), "cleanup"));
    }
    // An index build interrupted by a crash leaves entries under an id >= nextIndexId.
    for (auto& [id, info] : _byId) {
        std::string lower = keys::indexPrefix(id, info->nextIndexId);
        std::string upper = keys::collPrefix(id + 1);
        std::unique_ptr<rocksdb::Iterator> ix(_db->NewIterator(rocksdb::ReadOptions(), _indexes));
        rocksdb::ReadOptions ro;
        ro.total_order_seek = true;
        ix.reset(_db->NewIterator(ro, _indexes));
        ix->Seek(lower);
        if (ix->Valid() && ix->key().compare(upper) < 0) {
            TRY_STATUS(fromRocks(cleanup.DeleteRange(_indexes, lower, upper), "cleanup"));
        }
    }
    if (cleanup.Count() > 0) TRY_STATUS(writeSync(&cleanup));
    return Status::OK();
}

RocksEngine::~RocksEngine() {
    if (!_db) return;
    rocksdb::CancelAllBackgroundWork(_db.get(), /*wait=*/true);
    _recordPoints.clear();  // iterators before the column families and the DB
    _indexPoints.clear();
    for (auto* h : {_default, _catalog, _records, _indexes}) {
        if (h) _db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    }
    _db->Close().PermitUncheckedError();
    _db.reset();
}

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TESSERA_UNDER_TSAN 1
#endif
#endif

rocksdb::Status RocksEngine::write(const rocksdb::WriteOptions& options,
                                   rocksdb::WriteBatch* batch) {
    if (CommitLog* log = _commitLog.load()) {
        // Written by applyCommitted once the group has it.
        Status committed = log->commit(std::string_view(batch->Data()));
        if (!committed.isOK()) {
            // writeFailure() reads the code back: "tessera <code>" then the reason.
            return rocksdb::Status::Aborted("tessera " + std::to_string(committed.code()),
                                            committed.reason());
        }
        return rocksdb::Status::OK();
    }
    return writeDirect(options, batch);
}

rocksdb::Status RocksEngine::writeDirect(const rocksdb::WriteOptions& options,
                                         rocksdb::WriteBatch* batch) {
#if defined(TESSERA_UNDER_TSAN)
    static Mutex oneAtATime;  // see the declaration
    MutexLock lk(oneAtATime);
#endif
    return _db->Write(options, batch);
}

Status RocksEngine::writeSync(rocksdb::WriteBatch* batch) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    rocksdb::Status s = write(wo, batch);
    return s.ok() ? Status::OK() : writeFailure(s);
}

void RocksEngine::putCounts(rocksdb::WriteBatch* batch, uint64_t collId, int64_t count,
                            int64_t dataSize, Timestamp lastTs) {
    batch->Put(_catalog, keys::catalogCountKey(collId), encodeCounts(count, dataSize, lastTs))
        .PermitUncheckedError();
}

void RocksEngine::mergeCounts(rocksdb::WriteBatch* batch, uint64_t collId, int64_t countDelta,
                              int64_t sizeDelta, Timestamp ts) {
    batch->Merge(_catalog, keys::catalogCountKey(collId), encodeCounts(countDelta, sizeDelta, ts))
        .PermitUncheckedError();
}

// ---- Catalog reads

std::vector<std::string> RocksEngine::listDatabases() const {
    MutexLock lock(_catalogMutex);
    std::set<std::string> dbs;
    for (const auto& [ns, info] : _byNs) dbs.insert(info->db);
    return {dbs.begin(), dbs.end()};
}

std::vector<CollectionPtr> RocksEngine::listCollections(std::string_view db) const {
    MutexLock lock(_catalogMutex);
    std::vector<CollectionPtr> out;
    for (const auto& [ns, info] : _byNs) {
        if (info->db == db) out.push_back(info);
    }
    return out;
}

CollectionPtr RocksEngine::getCollection(std::string_view ns) const {
    MutexLock lock(_catalogMutex);
    auto it = _byNs.find(ns);
    return it == _byNs.end() ? nullptr : it->second;
}

CollectionPtr RocksEngine::byIdLocked(uint64_t id) const {
    auto it = _byId.find(id);
    return it == _byId.end() ? nullptr : it->second;
}

std::shared_ptr<CollectionState> RocksEngine::stateFor(uint64_t id) const {
    MutexLock lock(_catalogMutex);
    auto it = _states.find(id);
    return it == _states.end() ? nullptr : it->second;
}

void RocksEngine::publish(CollectionPtr info) {
    MutexLock lock(_catalogMutex);
    _byNs[info->ns()] = info;
    _byId[info->id] = info;
}

void RocksEngine::unpublish(const CollectionInfo& coll) {
    MutexLock lock(_catalogMutex);
    _byNs.erase(coll.ns());
    _byId.erase(coll.id);
    _states.erase(coll.id);
    for (auto it = _replacedBy.begin(); it != _replacedBy.end();) {
        if (it->second == coll.id) {
            _states.erase(it->first);
            it = _replacedBy.erase(it);
        } else {
            ++it;
        }
    }
}

// ---- DDL

std::shared_ptr<CollectionInfo> RocksEngine::newCollectionInfo(std::string_view ns,
                                                               bson::BsonView options) {
    auto [db, name] = splitNamespace(ns);
    auto info = std::make_shared<CollectionInfo>();
    info->db = std::string(db);
    info->name = std::string(name);
    info->uuid = newUuid();
    info->options = options.copy();
    IndexSpec id;
    id.name = "_id_";
    id.keyPattern = bson::BsonBuilder().appendInt32("_id", 1).obj();
    id.unique = true;
    id.spec = makeIndexSpecDoc(id);
    info->indexes.push_back(std::move(id));
    return info;
}

StatusWith<CollectionPtr> RocksEngine::createCollection(std::string_view ns,
                                                        bson::BsonView options) {
    TRY_STATUS(validateNamespace(ns));
    MutexLock ddl(_ddlMutex);
    if (getCollection(ns)) {
        return Status(ErrorCodes::NamespaceExists,
                      "Collection " + std::string(ns) + " already exists.");
    }
    auto info = newCollectionInfo(ns, options);
    {
        UniqueLock lock(_catalogMutex);
        // A transaction committing this namespace publishes it in a moment: wait, then exists.
        if (!claimNamespaceFromTransactions(ns, lock)) {
            return Status(ErrorCodes::NamespaceExists,
                          "Collection " + std::string(ns) + " already exists.");
        }
        info->id = _nextCollectionId;
    }
    std::string nextId;
    keys::appendBigEndian64(nextId, info->id + 1);
    rocksdb::WriteBatch batch;
    bson::BsonObj entry = encodeCollectionInfo(*info);
    TRY_STATUS(fromRocks(batch.Put(_catalog, keys::catalogCollKey(info->id), slice(entry)), "put"));
    TRY_STATUS(fromRocks(batch.Put(_catalog, keys::kNextCollectionIdKey, nextId), "put"));
    putCounts(&batch, info->id, 0, 0, Timestamp());
    TRY_STATUS(writeSync(&batch));
    {
        MutexLock lock(_catalogMutex);
        _nextCollectionId = info->id + 1;
        _states[info->id] = std::make_shared<CollectionState>();
        _byNs[info->ns()] = info;
        _byId[info->id] = info;
    }
    return CollectionPtr(info);
}

void RocksEngine::addDropToBatch(rocksdb::WriteBatch* batch, const CollectionInfo& coll) {
    std::string lower = keys::collPrefix(coll.id), upper = keys::collPrefix(coll.id + 1);
    batch->DeleteRange(_records, lower, upper).PermitUncheckedError();
    batch->DeleteRange(_indexes, lower, upper).PermitUncheckedError();
    batch->Delete(_catalog, keys::catalogCollKey(coll.id)).PermitUncheckedError();
    batch->Delete(_catalog, keys::catalogCountKey(coll.id)).PermitUncheckedError();
}

Status RocksEngine::dropCollectionLocked(const CollectionPtr& coll) {
    auto state = stateFor(coll->id);
    invariant(state != nullptr);
    std::lock_guard<CollectionLock> writeLock(state->access);
    rocksdb::WriteBatch batch;
    addDropToBatch(&batch, *coll);
    TRY_STATUS(writeSync(&batch));
    unpublish(*coll);
    return Status::OK();
}

Status RocksEngine::dropCollection(std::string_view ns) {
    MutexLock ddl(_ddlMutex);
    CollectionPtr coll = getCollection(ns);
    if (!coll) return Status(ErrorCodes::NamespaceNotFound, "ns not found");
    return dropCollectionLocked(coll);
}

Status RocksEngine::dropDatabase(std::string_view db) {
    TRY_STATUS(validateDbName(db));
    MutexLock ddl(_ddlMutex);
    for (const CollectionPtr& coll : listCollections(db)) TRY_STATUS(dropCollectionLocked(coll));
    return Status::OK();
}

Status RocksEngine::renameCollection(std::string_view from, std::string_view to, bool dropTarget) {
    TRY_STATUS(validateNamespace(to));
    MutexLock ddl(_ddlMutex);
    CollectionPtr source = getCollection(from);
    if (!source) return Status(ErrorCodes::NamespaceNotFound, "source namespace does not exist");
    if (from == to) {
        return Status(ErrorCodes::IllegalOperation, "Can't rename a collection to itself");
    }
    {
        UniqueLock lock(_catalogMutex);
        claimNamespaceFromTransactions(to, lock);
    }
    CollectionPtr target = getCollection(to);
    if (target && !dropTarget) {
        return Status(ErrorCodes::NamespaceExists, "target namespace exists");
    }
    auto sourceState = stateFor(source->id);
    std::shared_ptr<CollectionState> targetState = target ? stateFor(target->id) : nullptr;
    std::lock_guard<CollectionLock> sourceLock(sourceState->access);
    std::unique_lock<CollectionLock> targetLock;
    if (targetState) targetLock = std::unique_lock(targetState->access);

    auto renamed = std::make_shared<CollectionInfo>(*source);
    auto [db, name] = splitNamespace(to);
    renamed->db = std::string(db);
    renamed->name = std::string(name);
    rocksdb::WriteBatch batch;
    if (target) addDropToBatch(&batch, *target);
    bson::BsonObj entry = encodeCollectionInfo(*renamed);
    TRY_STATUS(
        fromRocks(batch.Put(_catalog, keys::catalogCollKey(renamed->id), slice(entry)), "put"));
    TRY_STATUS(writeSync(&batch));
    if (target) unpublish(*target);
    MutexLock lock(_catalogMutex);
    _byNs.erase(source->ns());
    _byNs[renamed->ns()] = renamed;
    _byId[renamed->id] = renamed;
    return Status::OK();
}

StatusWith<Engine::CreateIndexesResult> RocksEngine::createIndexes(std::string_view ns,
                                                                   std::vector<IndexSpec> specs) {
    MutexLock ddl(_ddlMutex);
    CollectionPtr coll = getCollection(ns);
    if (!coll) {
        return Status(ErrorCodes::NamespaceNotFound,
                      "Collection " + std::string(ns) + " does not exist.");
    }
    auto state = stateFor(coll->id);
    std::lock_guard<CollectionLock> writeLock(state->access);
    coll = getCollection(ns);  // current under the lock

    CreateIndexesResult result;
    result.numIndexesBefore = static_cast<int>(coll->indexes.size());
    auto info = std::make_shared<CollectionInfo>(*coll);
    std::vector<IndexSpec> toBuild;
    TRY_STATUS(planIndexes(std::move(specs), info.get(), &toBuild));
    if (toBuild.empty()) {
        result.numIndexesAfter = result.numIndexesBefore;
        return result;
    }
    Status built = buildIndexes(*coll, &toBuild);
    if (!built.isOK()) {
        rocksdb::WriteBatch undo;
        for (const IndexSpec& spec : toBuild) {
            std::string prefix = keys::indexPrefix(coll->id, spec.id);
            undo.DeleteRange(_indexes, prefix, keys::successor(prefix)).PermitUncheckedError();
        }
        TRY_STATUS(writeSync(&undo));
        return built;
    }
    for (IndexSpec& spec : toBuild) info->indexes.push_back(std::move(spec));
    rocksdb::WriteBatch batch;
    bson::BsonObj entry = encodeCollectionInfo(*info);
    TRY_STATUS(fromRocks(batch.Put(_catalog, keys::catalogCollKey(info->id), slice(entry)), "put"));
    TRY_STATUS(writeSync(&batch));
    publish(info);
    result.numIndexesAfter = static_cast<int>(info->indexes.size());
    return result;
}

Status RocksEngine::buildIndexes(const CollectionInfo& coll, std::vector<IndexSpec>* specs) {
    // The entries are stamped with one build timestamp. The build is not "in flight" for the
    // VisibilityTracker: nobody reads the new index ids before the catalog publishes them.
    Timestamp buildTs = _visibility.beginCommit();
    _visibility.endCommit(buildTs);

    std::vector<IndexKeyGenerator> generators;
    for (const IndexSpec& spec : *specs) generators.emplace_back(spec);
    std::vector<std::unordered_map<std::string, std::string>> pendingUnique(specs->size());

    MvccIterator it(_db.get(), _records, nullptr, Timestamp::max(), keys::collPrefix(coll.id),
                    keys::collPrefix(coll.id + 1), true);
    rocksdb::WriteBatch batch;
    std::vector<std::string> keysOut;
    std::string entryKey, existing;
    auto flush = [&]() -> Status {
        if (batch.Count() == 0) return Status::OK();
        TRY_STATUS(fromRocks(write(rocksdb::WriteOptions(), &batch), "index build write"));
        batch.Clear();
        for (auto& p : pendingUnique) p.clear();
        return Status::OK();
    };
    std::string_view userKey, value;
    while (it.next(&userKey, &value)) {
        std::string_view recordKey = userKey.substr(keys::kCollIdSize);
        bson::BsonView doc(value.data());
        for (size_t i = 0; i < specs->size(); ++i) {
            IndexSpec& spec = (*specs)[i];
            bool multikey = false;
            TRY_STATUS(generators[i].getKeys(doc, &keysOut, &multikey));
            spec.multikey = spec.multikey || multikey;
            for (const std::string& key : keysOut) {
                entryKey = keys::indexPrefix(coll.id, spec.id);
                entryKey.append(key);
                if (!spec.unique) entryKey.append(recordKey);
                keys::appendTs(entryKey, buildTs);
                if (spec.unique) {
                    bool dup = pendingUnique[i].count(entryKey) > 0;
                    if (!dup) {
                        rocksdb::Status s =
                            _db->Get(rocksdb::ReadOptions(), _indexes, entryKey, &existing);
                        dup = s.ok();
                    }
                    if (dup) {
                        std::vector<std::string> ks;
                        std::vector<bson::BsonObj> values;
                        TRY_STATUS(generators[i].getKeys(doc, &ks, nullptr, &values));
                        auto pos = std::find(ks.begin(), ks.end(), key) - ks.begin();
                        return Status(ErrorCodes::DuplicateKey,
                                      "E11000 duplicate key error collection: " + coll.ns() +
                                          " index: " + spec.name +
                                          " dup key: " + formatKeyForMessage(values[pos]));
                    }
                    pendingUnique[i].emplace(entryKey, std::string(recordKey));
                }
                TRY_STATUS(fromRocks(batch.Put(_indexes, entryKey,
                                               rocksdb::Slice(recordKey.data(), recordKey.size())),
                                     "put"));
            }
        }
        if (batch.GetDataSize() > (size_t{4} << 20)) TRY_STATUS(flush());
    }
    TRY_STATUS(fromRocks(it.status(), "index build scan"));
    TRY_STATUS(flush());
    // Persist the collection's last commit timestamp so that restarts keep timestamps increasing.
    auto state = stateFor(coll.id);
    putCounts(&batch, coll.id, state->count.load(), state->dataSize.load(), buildTs);
    return flush();
}

Status RocksEngine::dropIndex(std::string_view ns, std::string_view indexName) {
    MutexLock ddl(_ddlMutex);
    CollectionPtr coll = getCollection(ns);
    if (!coll) return Status(ErrorCodes::NamespaceNotFound, "ns not found " + std::string(ns));
    if (indexName == "_id_") {
        return Status(ErrorCodes::InvalidOptions, "cannot drop _id index");
    }
    auto state = stateFor(coll->id);
    std::lock_guard<CollectionLock> writeLock(state->access);
    coll = getCollection(ns);
    const IndexSpec* index = coll->findIndex(indexName);
    if (!index) {
        return Status(ErrorCodes::IndexNotFound,
                      "index not found with name [" + std::string(indexName) + "]");
    }
    auto info = std::make_shared<CollectionInfo>(*coll);
    info->indexes.erase(info->indexes.begin() + (index - coll->indexes.data()));
    rocksdb::WriteBatch batch;
    std::string prefix = keys::indexPrefix(coll->id, index->id);
    batch.DeleteRange(_indexes, prefix, keys::successor(prefix)).PermitUncheckedError();
    bson::BsonObj entry = encodeCollectionInfo(*info);
    TRY_STATUS(fromRocks(batch.Put(_catalog, keys::catalogCollKey(info->id), slice(entry)), "put"));
    TRY_STATUS(writeSync(&batch));
    publish(info);
    return Status::OK();
}

Status RocksEngine::setCollectionOptions(std::string_view ns, bson::BsonView options) {
    MutexLock ddl(_ddlMutex);
    CollectionPtr coll = getCollection(ns);
    if (!coll) return Status(ErrorCodes::NamespaceNotFound, "ns not found " + std::string(ns));
    auto state = stateFor(coll->id);
    std::lock_guard<CollectionLock> writeLock(state->access);
    coll = getCollection(ns);  // current under the lock
    auto info = std::make_shared<CollectionInfo>(*coll);
    info->options = options.copy();
    rocksdb::WriteBatch batch;
    bson::BsonObj entry = encodeCollectionInfo(*info);
    TRY_STATUS(fromRocks(batch.Put(_catalog, keys::catalogCollKey(info->id), slice(entry)), "put"));
    TRY_STATUS(writeSync(&batch));
    publish(info);
    return Status::OK();
}

// ---- Reads and writes

std::unique_ptr<SnapshotPin> RocksEngine::pinReadTimestamp(std::optional<Timestamp> at) {
    Timestamp ts;
    if (at) {
        _visibility.waitUntilVisible(*at, /*pin=*/true);
        ts = *at;
    } else {
        ts = _visibility.readTimestamp(/*pin=*/true);
    }
    return std::make_unique<SnapshotPin>(&_visibility, ts);
}

std::unique_ptr<ReadSnapshot> RocksEngine::snapshot(std::optional<Timestamp> at,
                                                    std::shared_ptr<PrepareReads> reads) {
    std::unique_ptr<SnapshotPin> pin = pinReadTimestamp(at);
    Timestamp ts = pin->timestamp();
    // Captured after `ts` was chosen: a transaction prepared at or before it may commit at or
    // before it, and a read that meets one of its keys waits for its decision.
    return std::make_unique<RocksReadSnapshot>(this, ts, std::move(pin), /*physical=*/true,
                                               _prepared.capture(ts, std::move(reads)));
}

std::unique_ptr<ReadSnapshot> RocksEngine::snapshotIncludingInFlight() {
    return snapshot(_clock->current());
}

Status RocksEngine::checkHistoryWindow(std::optional<Timestamp> at) const {
    if (!at) return Status::OK();
    Timestamp now = _clock->current();
    uint32_t window = _options.historyWindowSeconds;
    if (now.secs() > window && at->secs() < now.secs() - window) {
        return Status(ErrorCodes::SnapshotTooOld, "Read timestamp " + std::to_string(at->secs()) +
                                                      ":" + std::to_string(at->inc()) +
                                                      " is older than the history window (" +
                                                      std::to_string(window) + " s)");
    }
    return Status::OK();
}

StatusWith<std::unique_ptr<ReadSnapshot>> RocksEngine::openSnapshot(
    std::optional<Timestamp> at, std::shared_ptr<PrepareReads> reads) {
    TRY_STATUS(checkHistoryWindow(at));
    return snapshot(at, std::move(reads));
}

CollectionPtr RocksEngine::currentInfo(uint64_t id) const {
    MutexLock lock(_catalogMutex);
    return byIdLocked(id);
}

StatusWith<RocksEngine::WriterParts> RocksEngine::writerParts(const CollectionPtr& coll,
                                                              bool mayWait) {
    auto state = stateFor(coll->id);
    if (!state) {
        return Status(ErrorCodes::NamespaceNotFound, "collection " + coll->ns() + " was dropped");
    }
    std::shared_lock lock(state->access, std::defer_lock);
    if (!mayWait) {
        if (!lock.try_lock()) {
            return Status(ErrorCodes::InlineWouldBlock, "the collection is held by DDL");
        }
    } else {
        lock.lock();
    }
    CollectionPtr current;
    {
        MutexLock catalogLock(_catalogMutex);
        uint64_t id = coll->id;
        if (auto moved = _replacedBy.find(id); moved != _replacedBy.end()) id = moved->second;
        current = byIdLocked(id);
    }
    if (!current) {
        return Status(ErrorCodes::NamespaceNotFound, "collection " + coll->ns() + " was dropped");
    }
    return WriterParts{std::move(current), std::move(state), std::move(lock)};
}

StatusWith<std::unique_ptr<CollectionWriter>> RocksEngine::writer(const CollectionPtr& coll,
                                                                  const WriteUnit* unit) {
    ASSIGN_OR_RETURN(WriterParts parts, writerParts(coll, !unit || unit->mayWait()));
    return std::unique_ptr<CollectionWriter>(std::make_unique<RocksCollectionWriter>(
        this, std::move(parts.coll), std::move(parts.state), std::move(parts.lock), unit));
}

StatusWith<std::unique_ptr<RocksCollectionWriter>> RocksEngine::transactionWriter(
    const CollectionPtr& coll, RocksTransaction* txn) {
    auto parts = writerParts(coll, /*mayWait=*/false);
    if (parts.getStatus().is(ErrorCodes::InlineWouldBlock)) {
        // MongoDB's answer when a transaction cannot take a collection lock at once: the
        // client retries the transaction once the DDL is done.
        return Status(ErrorCodes::LockTimeout,
                      "Unable to acquire a lock on '" + coll->ns() +
                          "' within a transaction: DDL holds or waits for the collection");
    }
    if (!parts.isOK()) return parts.getStatus();
    return std::make_unique<RocksCollectionWriter>(this, std::move(parts.getValue().coll),
                                                   std::move(parts.getValue().state),
                                                   std::move(parts.getValue().lock), nullptr, txn);
}

StatusWith<std::unique_ptr<Transaction>> RocksEngine::beginTransaction(
    std::optional<Timestamp> readAt, const WriteUnit* unit) {
    TRY_STATUS(checkHistoryWindow(readAt));
    std::unique_ptr<SnapshotPin> pin = pinReadTimestamp(readAt);  // waits for a future readAt
    Timestamp ts = pin->timestamp();
    return std::unique_ptr<Transaction>(
        std::make_unique<RocksTransaction>(this, _nextTransactionId.fetch_add(1), ts,
                                           std::move(pin), _prepared.capture(ts, nullptr), unit));
}

void RocksEngine::rememberTransaction(RocksTransaction* txn) {
    MutexLock lk(_openTransactionsMutex);
    _openTransactions.insert(txn);
}

void RocksEngine::forgetTransaction(RocksTransaction* txn) {
    MutexLock lk(_openTransactionsMutex);
    _openTransactions.erase(txn);
}

StatusWith<size_t> RocksEngine::fenceTransactionWriters(
    const std::function<bool(const CollectionInfo&)>& affects, const std::string& reason,
    std::chrono::steady_clock::time_point deadline) {
    size_t doomed = 0;
    std::vector<uint64_t> prepared;
    {
        // A transaction being destroyed waits here before it goes (forgetTransaction).
        MutexLock lk(_openTransactionsMutex);
        for (RocksTransaction* txn : _openTransactions) {
            switch (txn->fence(affects, reason)) {
                case RocksTransaction::Fenced::kDoomed:
                    ++doomed;
                    break;
                case RocksTransaction::Fenced::kPrepared:
                    prepared.push_back(txn->id());
                    break;
                case RocksTransaction::Fenced::kUnaffected:
                    break;
            }
        }
    }
    if (!_prepared.awaitDecided(prepared, deadline)) {
        return Status(ErrorCodes::LockTimeout,
                      "a prepared transaction writing the collection is still waiting for its "
                      "coordinator's decision; retry once it is decided");
    }
    return doomed;
}

StatusWith<std::vector<Engine::RecoveredTransaction>> RocksEngine::recoverPreparedTransactions(
    std::string_view prefix, const WriteUnit* unit) {
    std::vector<RecoveredTransaction> out;
    for (const auto& [key, value] : sideRecords(prefix)) {
        bson::BsonView record(value.data());
        ASSIGN_OR_RETURN(
            std::unique_ptr<RocksTransaction> txn,
            RocksTransaction::recover(this, _nextTransactionId.fetch_add(1), key, record, unit));
        bson::BsonElement meta = record["meta"];
        out.push_back(RecoveredTransaction{
            meta.isObject() ? bson::BsonObj::fromBytes(meta.objValue().bytes()) : bson::BsonObj(),
            Timestamp{record["prepareTs"].timestampValue()}, std::move(txn)});
    }
    return out;
}

// ---- Stats and maintenance

CollectionStats RocksEngine::stats(const CollectionInfo& coll) const {
    CollectionStats out;
    if (auto state = stateFor(coll.id)) {
        out.count = state->count.load();
        out.dataSize = state->dataSize.load();
    }
    auto approx = [&](rocksdb::ColumnFamilyHandle* cf, const std::string& lo,
                      const std::string& hi) -> int64_t {
        rocksdb::Range range(lo, hi);
        uint64_t size = 0;
        rocksdb::SizeApproximationOptions options;
        options.include_memtables = true;
        options.include_files = true;
        _db->GetApproximateSizes(options, cf, &range, 1, &size).PermitUncheckedError();
        return static_cast<int64_t>(size);
    };
    out.storageSize = approx(_records, keys::collPrefix(coll.id), keys::collPrefix(coll.id + 1));
    for (const IndexSpec& index : coll.indexes) {
        int64_t size;
        if (index.isIdIndex() && coll.idIndexIsRecords()) {
            size = out.count * 24;  // estimate: the record keys are the _id index
        } else {
            std::string prefix = keys::indexPrefix(coll.id, index.id);
            size = approx(_indexes, prefix, keys::successor(prefix));
        }
        out.indexSizes.emplace_back(index.name, size);
    }
    return out;
}

int64_t RocksEngine::approximateDiskBytes(std::string_view db) const {
    int64_t total = 0;
    for (const CollectionPtr& coll : listCollections(db)) {
        CollectionStats s = stats(*coll);
        total += s.storageSize;
        for (const auto& [name, size] : s.indexSizes) total += size;
    }
    return total;
}

Timestamp RocksEngine::lastCommitTimestamp() const { return _visibility.lastVisible(); }

Status RocksEngine::flush() {
    rocksdb::FlushOptions options;
    options.wait = true;
    TRY_STATUS(fromRocks(_db->Flush(options, {_default, _catalog, _records, _indexes}), "flush"));
    return fromRocks(_db->FlushWAL(/*sync=*/true), "sync the write-ahead log");
}

Status RocksEngine::syncWal() { return _walSync.wait(); }

Status RocksEngine::syncWalNow() { return fromRocks(_db->SyncWAL(), "sync the write-ahead log"); }

Status RocksEngine::collectGarbageForTest() {
    rocksdb::FlushOptions flush;
    flush.wait = true;
    TRY_STATUS(fromRocks(_db->Flush(flush, {_records, _indexes}), "flush"));
    rocksdb::CompactRangeOptions compact;
    compact.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    compact.exclusive_manual_compaction = true;
    for (auto* cf : {_records, _indexes}) {
        TRY_STATUS(fromRocks(_db->CompactRange(compact, cf, nullptr, nullptr), "compact"));
    }
    return Status::OK();
}

Status RocksEngine::writeSideRecords(
    const std::vector<std::pair<std::string, std::string>>& records, bool synced) {
    rocksdb::WriteBatch batch;
    for (const auto& [key, value] : records) {
        std::string k(keys::kSideRecordPrefix);
        k.append(key);
        TRY_STATUS(
            fromRocks(value.empty() ? batch.Delete(_catalog, k) : batch.Put(_catalog, k, value),
                      "side record"));
    }
    TRY_STATUS(fromRocks(write(rocksdb::WriteOptions(), &batch), "side record write failed"));
    // Synced through the group commit, so that concurrent side records (prepared transactions,
    // coordinators' records) and j/commit syncs share one WAL sync.
    return synced ? syncWal() : Status::OK();
}

int64_t RocksEngine::approximateRangeBytes(const CollectionInfo& coll,
                                           const KeyRange& range) const {
    std::string lo = keys::collPrefix(coll.id) + range.low;
    std::string hi =
        range.high.empty() ? keys::collPrefix(coll.id + 1) : keys::collPrefix(coll.id) + range.high;
    rocksdb::Range r(lo, hi);
    uint64_t size = 0;
    rocksdb::SizeApproximationOptions options;
    options.include_memtables = true;
    options.include_files = true;
    _db->GetApproximateSizes(options, _records, &r, 1, &size).PermitUncheckedError();
    return static_cast<int64_t>(size);
}

std::vector<std::pair<std::string, std::string>> RocksEngine::sideRecords(
    std::string_view prefix) const {
    std::string start(keys::kSideRecordPrefix);
    start.append(prefix);
    rocksdb::ReadOptions ro;
    ro.total_order_seek = true;
    std::unique_ptr<rocksdb::Iterator> it(_db->NewIterator(ro, _catalog));
    std::vector<std::pair<std::string, std::string>> out;
    for (it->Seek(start); it->Valid() && it->key().starts_with(start); it->Next()) {
        out.emplace_back(it->key().ToString().substr(keys::kSideRecordPrefix.size()),
                         it->value().ToString());
    }
    return out;
}

StatusWith<std::optional<std::string>> RocksEngine::sideRecord(std::string_view key) const {
    std::string k(keys::kSideRecordPrefix);
    k.append(key);
    std::string value;
    rocksdb::Status s = _db->Get(rocksdb::ReadOptions(), _catalog, k, &value);
    if (s.IsNotFound()) return std::optional<std::string>();
    TRY_STATUS(fromRocks(s, "side record read failed"));
    return std::optional<std::string>(std::move(value));
}

size_t RocksEngine::countVersionsForTest(const CollectionInfo& coll, bool indexes) {
    rocksdb::ReadOptions ro;
    ro.total_order_seek = true;
    std::unique_ptr<rocksdb::Iterator> it(_db->NewIterator(ro, indexes ? _indexes : _records));
    std::string lower = indexes ? keys::indexPrefix(coll.id, 1) : keys::collPrefix(coll.id);
    std::string upper = keys::collPrefix(coll.id + 1);
    size_t n = 0;
    for (it->Seek(lower); it->Valid() && it->key().compare(upper) < 0; it->Next()) ++n;
    return n;
}

}  // namespace tessera::storage
