// Engine::clusterCollection: changing the order a collection's records are stored in.
#include "base/failpoint.h"
#include "base/mutex.h"
#include "bson/compare.h"
#include "storage/catalog_codec.h"
#include "storage/cluster_key.h"
#include "storage/index_keys.h"
#include "storage/key_format.h"
#include "storage/mvcc_iterator.h"
#include "storage/rocks_engine.h"

namespace tessera::storage {
namespace {

Status fromRocks(const rocksdb::Status& s, std::string_view context) {
    return RocksEngine::statusOf(s, context);
}

rocksdb::Slice slice(bson::BsonView doc) {
    return rocksdb::Slice(reinterpret_cast<const char*>(doc.data()), doc.size());
}

constexpr size_t kFlushBytes = size_t{4} << 20;

}  // namespace

// Stops a rewrite after the copy, before the swap, leaving everything as a crash there would
// (tests reopen the engine afterwards).
TESSERA_FAIL_POINT_DEFINE(reclusterStopBeforeSwap);

Status RocksEngine::rewriteCollection(const CollectionInfo& from, const CollectionInfo& to) {
    size_t firstIndex = to.idIndexIsRecords() ? 1 : 0;
    std::vector<IndexKeyGenerator> generators;
    for (size_t i = firstIndex; i < to.indexes.size(); ++i) generators.emplace_back(to.indexes[i]);

    // The caller holds the write lock: the latest state is stable, no snapshot needed.
    MvccIterator it(_db.get(), _records, nullptr, Timestamp::max(), keys::collPrefix(from.id),
                    keys::collPrefix(from.id + 1), true);
    rocksdb::WriteBatch batch;
    std::vector<std::string> indexKeys;
    std::string key;
    std::string_view userKey, value;
    while (it.next(&userKey, &value)) {
        bson::BsonView doc(value.data());
        // Each document keeps the commit timestamp of its latest version, and so do its index
        // entries: a snapshot at or after that timestamp finds it in the new layout.
        Timestamp ts = it.currentTs();
        ASSIGN_OR_RETURN(std::string recordKey, makeRecordKey(to.clusterKey, doc));
        key = keys::collPrefix(to.id);
        key.append(recordKey);
        keys::appendTs(key, ts);
        TRY_STATUS(
            fromRocks(batch.Put(_records, key, rocksdb::Slice(value.data(), value.size())), "put"));
        for (size_t i = 0; i < generators.size(); ++i) {
            const IndexSpec& index = to.indexes[i + firstIndex];
            TRY_STATUS(generators[i].getKeys(doc, &indexKeys, nullptr));
            for (const std::string& k : indexKeys) {
                key = keys::indexPrefix(to.id, index.id);
                key.append(k);
                if (!index.unique) key.append(recordKey);
                keys::appendTs(key, ts);
                TRY_STATUS(fromRocks(batch.Put(_indexes, key, recordKey), "put"));
            }
        }
        if (batch.GetDataSize() > kFlushBytes) {
            TRY_STATUS(fromRocks(write(rocksdb::WriteOptions(), &batch), "recluster write"));
            batch.Clear();
        }
    }
    TRY_STATUS(fromRocks(it.status(), "recluster scan"));
    if (batch.Count() > 0) {
        TRY_STATUS(fromRocks(write(rocksdb::WriteOptions(), &batch), "recluster write"));
    }
    return Status::OK();
}

Status RocksEngine::clusterCollection(std::string_view ns, bson::BsonView clusterKeyIn) {
    ASSIGN_OR_RETURN(bson::BsonObj clusterKey, normalizeClusterKey(clusterKeyIn));
    MutexLock ddl(_ddlMutex);
    CollectionPtr coll = getCollection(ns);
    if (!coll) {
        return Status(ErrorCodes::NamespaceNotFound,
                      "Collection " + std::string(ns) + " does not exist.");
    }
    auto state = stateFor(coll->id);
    std::lock_guard<CollectionLock> writeLock(state->access);
    coll = getCollection(ns);  // current under the lock
    if (bson::compareObjects(coll->clusterKey, clusterKey) == 0) return Status::OK();

    auto info = std::make_shared<CollectionInfo>(*coll);
    info->clusterKey = clusterKey;
    // _id_ gets a fresh keyspace whenever it is an index of its own (never the old one's).
    info->indexes[0].id = info->isClustered() ? info->nextIndexId++ : 0;

    if (state->count.load() == 0) {
        // Only tombstones and superseded versions are left in the old layout: drop them with
        // the layout (a snapshot from before sees the collection empty, as it is).
        rocksdb::WriteBatch batch;
        std::string lower = keys::collPrefix(coll->id), upper = keys::collPrefix(coll->id + 1);
        TRY_STATUS(fromRocks(batch.DeleteRange(_records, lower, upper), "delete"));
        if (!coll->idIndexIsRecords()) {
            std::string prefix = keys::indexPrefix(coll->id, coll->indexes[0].id);
            TRY_STATUS(
                fromRocks(batch.DeleteRange(_indexes, prefix, keys::successor(prefix)), "delete"));
        }
        bson::BsonObj entry = encodeCollectionInfo(*info);
        TRY_STATUS(
            fromRocks(batch.Put(_catalog, keys::catalogCollKey(info->id), slice(entry)), "put"));
        TRY_STATUS(writeSync(&batch));
        publish(info);
        return Status::OK();
    }

    // The new id is persisted before anything is written under it, so that a crash mid-rewrite
    // never lets a later collection inherit the partial data, and so is a marker for open to
    // delete that data (loadCatalog); the swap removes the marker.
    {
        MutexLock lock(_catalogMutex);
        info->id = _nextCollectionId++;
    }
    {
        std::string nextId;
        keys::appendBigEndian64(nextId, info->id + 1);
        rocksdb::WriteBatch batch;
        TRY_STATUS(fromRocks(batch.Put(_catalog, keys::kNextCollectionIdKey, nextId), "put"));
        TRY_STATUS(fromRocks(batch.Put(_catalog, keys::rewriteMarkerKey(info->id), ""), "put"));
        TRY_STATUS(writeSync(&batch));
    }
    std::string newLower = keys::collPrefix(info->id), newUpper = keys::collPrefix(info->id + 1);
    Status rewritten = rewriteCollection(*coll, *info);
    if (!rewritten.isOK()) {
        rocksdb::WriteBatch undo;
        undo.DeleteRange(_records, newLower, newUpper).PermitUncheckedError();
        undo.DeleteRange(_indexes, newLower, newUpper).PermitUncheckedError();
        undo.Delete(_catalog, keys::rewriteMarkerKey(info->id)).PermitUncheckedError();
        TRY_STATUS(writeSync(&undo));
        return rewritten;
    }

    if (reclusterStopBeforeSwap.shouldFail()) {
        return Status(ErrorCodes::OperationFailed, "Failpoint reclusterStopBeforeSwap");
    }

    // The swap: the new entry and counts, the old id's data and entries gone, in one batch.
    Timestamp swapTs = _visibility.beginCommit();
    _visibility.endCommit(swapTs);
    rocksdb::WriteBatch batch;
    bson::BsonObj entry = encodeCollectionInfo(*info);
    TRY_STATUS(fromRocks(batch.Put(_catalog, keys::catalogCollKey(info->id), slice(entry)), "put"));
    putCounts(&batch, info->id, state->count.load(), state->dataSize.load(), swapTs);
    addDropToBatch(&batch, *coll);
    TRY_STATUS(fromRocks(batch.Delete(_catalog, keys::rewriteMarkerKey(info->id)), "delete"));
    TRY_STATUS(writeSync(&batch));
    {
        MutexLock lock(_catalogMutex);
        _byNs[info->ns()] = info;
        _byId.erase(coll->id);
        _byId[info->id] = info;
        _states[info->id] = state;  // the old id keeps it too: writers resolve through it
        for (auto& [from, to] : _replacedBy) {
            if (to == coll->id) to = info->id;
        }
        _replacedBy[coll->id] = info->id;
    }
    return Status::OK();
}

}  // namespace tessera::storage
