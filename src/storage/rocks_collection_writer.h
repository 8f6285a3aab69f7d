#pragma once

#include <rocksdb/write_batch.h>

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "storage/collection_writer.h"
#include "storage/index_keys.h"
#include "storage/mvcc_iterator.h"

namespace tessera::storage {

class RocksEngine;
class RocksTransaction;
struct CollectionState;
class CollectionLock;

// CollectionWriter over RocksDB. Every call: compute the index deltas of the write from the
// version it was asked to replace, lock the record key(s) and the unique-index values touched
// (KeyLocks), check the latest state (the expected version still stored, no duplicate key), take
// a commit timestamp, write one WriteBatch (record version, index entry versions, the counts'
// delta, the observers' side records, a multikey catalog change), wait for visibility
// (VisibilityTracker invariant 2), unlock.
class RocksCollectionWriter final : public CollectionWriter {
  public:
    RocksCollectionWriter(RocksEngine* engine, CollectionPtr coll,
                          std::shared_ptr<CollectionState> state,
                          std::shared_lock<CollectionLock> lock, const WriteUnit* unit,
                          RocksTransaction* txn = nullptr);
    ~RocksCollectionWriter() override;

    const CollectionInfo& collection() const override { return *_coll; }
    StatusWith<Timestamp> insert(bson::BsonView doc, const WriteOptions& opts) override;
    StatusWith<int64_t> insertBatch(const std::vector<bson::BsonView>& docs,
                                    const WriteOptions& opts, int64_t* skipped) override;
    StatusWith<int64_t> removeBatch(const std::vector<Record>& records, const WriteOptions& opts,
                                    int64_t* skipped) override;
    StatusWith<Timestamp> update(std::string_view recordKey, bson::BsonView expected,
                                 bson::BsonView newDoc, const WriteOptions& opts) override;
    StatusWith<Timestamp> remove(std::string_view recordKey, bson::BsonView expected,
                                 const WriteOptions& opts) override;
    std::unique_ptr<ReadSnapshot> latest() override;
    std::optional<bson::BsonObj> current(std::string_view recordKey) override;
    std::optional<Record> currentById(const bson::BsonElement& id) override;
    bson::BsonObj duplicateKeyInfo() const override { return _dupInfo; }
    bool inTransaction() const override { return _txn != nullptr; }

  private:
    // Keys of one index for the old and the new version of a document. When the record moves
    // (its cluster key changed), every old key is removed and every new key added.
    struct IndexDelta {
        std::vector<std::string> removed;
        std::vector<std::string> added;
        bool multikey = false;
    };
    // Computes the deltas for all maintained indexes (old or new may be null). The old version is
    // (or was) at oldRecordKey, the new one goes to newRecordKey (different when it moves).
    Status computeIndexDeltas(const bson::BsonView* oldDoc, const bson::BsonView* newDoc,
                              std::string_view oldRecordKey, std::string_view newRecordKey);
    // The keys to lock for a write of `recordKeys` with the current deltas: the record keys and
    // the user keys of every unique-index entry added or removed.
    std::vector<std::string> lockKeys(std::initializer_list<std::string_view> recordKeys) const;
    // Under the locks: DuplicateKey (with _dupInfo) when an added unique entry is owned by
    // another record than oldRecordKey / newRecordKey.
    Status checkUnique(const bson::BsonView* oldDoc, const bson::BsonView& newDoc,
                       std::string_view oldRecordKey, std::string_view newRecordKey);
    // Under the locks: OK when the latest version at recordKey is `expected` (NoSuchKey when
    // there is none, WriteConflict when it is another).
    Status checkExpected(std::string_view recordKey, bson::BsonView expected);
    Status duplicateKey(const IndexSpec& index, bson::BsonObj keyValue);
    // Under the write's key locks: a transaction claims the keys (WriteConflict when another
    // holds one); any other writer checks that no transaction holds them.
    Status checkIntents(const std::vector<std::string>& lockKeys);
    // Under the key's lock: whether a live version of userKey exists in the state this write is
    // checked against — the transaction's own version if it wrote one, else the newest
    // committed version — with *value viewing it (valid until the next call). In a
    // transaction, a version committed after its read timestamp is a WriteConflict: the
    // snapshot did not see it, and the first committer wins.
    StatusWith<bool> latestLive(PointReader& reader, rocksdb::ColumnFamilyHandle* cf,
                                std::string_view userKey, std::string_view* value);
    // commit()'s versions (record, moved-from tombstone, index entries) at `ts`, into `batch`.
    rocksdb::Status putVersions(rocksdb::WriteBatchBase* batch, Timestamp ts,
                                std::string_view movedFrom, std::string_view recordKey,
                                const bson::BsonView* doc);
    // commit() inside a transaction: the versions as intents, the multikey change on its own.
    StatusWith<Timestamp> commitIntent(std::string_view movedFrom, std::string_view recordKey,
                                       const bson::BsonView* oldDoc, const bson::BsonView* doc,
                                       int64_t countDelta, int64_t sizeDelta,
                                       std::shared_ptr<CollectionInfo> newInfo);
    // Writes the batch: a tombstone at `movedFrom` (unless empty), the record version at
    // recordKey (`doc` null: tombstone), index deltas (removed keys point at movedFrom when
    // set), the counts' delta, the observers' records. `oldDoc`: the version replaced or removed
    // (null for an insert).
    StatusWith<Timestamp> commit(std::string_view movedFrom, std::string_view recordKey,
                                 const bson::BsonView* oldDoc, const bson::BsonView* doc,
                                 int64_t countDelta, int64_t sizeDelta, const WriteOptions& opts);
    const IndexSpec& indexAt(size_t i) const { return _coll->indexes[i + _firstIndex]; }
    // Calls the write unit's observers for one document write; their records go to
    // _sideRecords (cleared first).
    void notifyObservers(const bson::BsonView* oldDoc, const bson::BsonView* doc,
                         int64_t countDelta);
    // Adds _sideRecords to `batch` (an empty value deletes the record).
    rocksdb::Status putSideRecords(rocksdb::WriteBatch* batch);
    // insertBatch/removeBatch: completes _batch (counts delta at `ts`, the observers' records,
    // the last value per key) and writes it; then, outside the commit, the in-memory counts.
    rocksdb::Status writeBatchOfMany(int64_t countDelta, int64_t sizeDelta, Timestamp ts,
                                     std::vector<std::pair<std::string, std::string>> sideRecords,
                                     const WriteOptions& opts);
    Status publishBatchOfMany(const rocksdb::Status& written, int64_t countDelta,
                              int64_t sizeDelta);

    RocksEngine* _engine;
    CollectionPtr _coll;
    std::shared_ptr<CollectionState> _state;
    std::shared_lock<CollectionLock> _lock;
    const WriteUnit* _unit;  // may be null
    RocksTransaction* _txn;  // null outside a transaction
    std::string _ownValue;   // latestLive's copy of a transaction's own version
    // 1 when _id_ is the records keyspace (clustered by _id), else 0 (_id_ is maintained too).
    size_t _firstIndex;
    std::vector<IndexKeyGenerator> _generators;  // one per _coll->indexes[i], i >= _firstIndex
    std::vector<IndexDelta> _deltas;
    PointReader _records;
    PointReader _indexes;
    rocksdb::WriteBatch _batch;
    std::string _keyBuf;
    std::string _oldValue;
    bson::BsonObj _dupInfo;
    std::vector<std::pair<std::string, std::string>> _sideRecords;
};

}  // namespace tessera::storage
