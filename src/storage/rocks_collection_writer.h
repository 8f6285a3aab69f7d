#pragma once

#include <rocksdb/write_batch.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "storage/collection_writer.h"
#include "storage/index_keys.h"
#include "storage/mvcc_iterator.h"

namespace tessera::storage {

class RocksEngine;
struct CollectionState;

// CollectionWriter over RocksDB. Every call: check uniqueness against the latest state (stable,
// since this writer holds the collection's write lock), take a commit timestamp, write one
// WriteBatch (record version, index entry versions, counts, multikey catalog change), wait for
// visibility (VisibilityTracker invariant 2).
class RocksCollectionWriter final : public CollectionWriter {
  public:
    RocksCollectionWriter(RocksEngine* engine, CollectionPtr coll,
                          std::shared_ptr<CollectionState> state,
                          std::unique_lock<std::mutex> lock);
    ~RocksCollectionWriter() override;

    const CollectionInfo& collection() const override { return *_coll; }
    StatusWith<Timestamp> insert(bson::BsonView doc, const WriteOptions& opts) override;
    StatusWith<Timestamp> update(std::string_view recordKey, bson::BsonView newDoc,
                                 const WriteOptions& opts) override;
    StatusWith<Timestamp> remove(std::string_view recordKey, const WriteOptions& opts) override;
    std::unique_ptr<ReadSnapshot> latest() override;
    bson::BsonObj duplicateKeyInfo() const override { return _dupInfo; }

  private:
    // Keys of one index for the old and the new version of a document. When the record moves
    // (its cluster key changed), every old key is removed and every new key added.
    struct IndexDelta {
        std::vector<std::string> removed;
        std::vector<std::string> added;
        bool multikey = false;
    };
    // Computes the deltas for all maintained indexes (old or new may be null) and checks unique
    // indexes; DuplicateKey with _dupInfo set on a violation. The old version is (or was) at
    // oldRecordKey, the new one goes to newRecordKey (different when the record moves).
    Status computeIndexDeltas(const bson::BsonView* oldDoc, const bson::BsonView* newDoc,
                              std::string_view oldRecordKey, std::string_view newRecordKey);
    Status duplicateKey(const IndexSpec& index, bson::BsonObj keyValue);
    // Writes the batch: a tombstone at `movedFrom` (unless empty), the record version at
    // recordKey (`doc` null: tombstone), index deltas (removed keys point at movedFrom when
    // set), counts. `oldDoc`: the version replaced or removed (null for an insert), for the
    // active SideRecordScope.
    StatusWith<Timestamp> commit(std::string_view movedFrom, std::string_view recordKey,
                                 const bson::BsonView* oldDoc, const bson::BsonView* doc,
                                 int64_t countDelta, int64_t sizeDelta, const WriteOptions& opts);
    const IndexSpec& indexAt(size_t i) const { return _coll->indexes[i + _firstIndex]; }

    RocksEngine* _engine;
    CollectionPtr _coll;
    std::shared_ptr<CollectionState> _state;
    std::unique_lock<std::mutex> _lock;
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
};

}  // namespace tessera::storage
