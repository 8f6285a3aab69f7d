#pragma once

#include <rocksdb/db.h>

#include <memory>
#include <string>

#include "storage/mvcc_iterator.h"
#include "storage/read_snapshot.h"
#include "storage/visibility.h"

namespace tessera::storage {

class RocksEngine;

// A ReadSnapshot at timestamp `ts`: every lookup reads the newest version <= ts. When created
// with a RocksDB snapshot, all cursors see one physical state as well (drops and GC included).
class RocksReadSnapshot final : public ReadSnapshot {
  public:
    // Takes ownership of `rocksSnapshot` (may be null: then each cursor reads the latest
    // physical state, which is fine for ts = max under a collection's write lock) and of `pin`.
    RocksReadSnapshot(RocksEngine* engine, Timestamp ts, const rocksdb::Snapshot* rocksSnapshot,
                      std::unique_ptr<SnapshotPin> pin);
    ~RocksReadSnapshot() override;

    Timestamp timestamp() const override { return _ts; }
    std::optional<bson::BsonObj> findByRecordKey(const CollectionInfo& coll,
                                                 std::string_view recordKey) override;
    std::optional<Record> findById(const CollectionInfo& coll,
                                   const bson::BsonElement& id) override;
    std::unique_ptr<RecordCursor> scan(const CollectionInfo& coll, bool forward) override;
    std::unique_ptr<RecordCursor> scanRange(const CollectionInfo& coll, const KeyRange& range,
                                            bool forward) override;
    std::unique_ptr<IndexCursor> indexScan(const CollectionInfo& coll, const IndexSpec& index,
                                           const KeyRange& range, bool forward) override;

  private:
    RocksEngine* _engine;
    Timestamp _ts;
    const rocksdb::Snapshot* _rocksSnapshot;
    std::unique_ptr<SnapshotPin> _pin;
    PointReader _records;
    PointReader _indexes;  // the _id_ index of collections with a cluster key
    std::string _keyBuf;
};

// Translates KeyRange bounds on encoded keys into [lower, upper) on raw keys under `prefix`:
// an inclusive bound includes, and an exclusive bound excludes, every key that starts with it.
void keyRangeToBounds(std::string_view prefix, const KeyRange& range, std::string* lower,
                      std::string* upper);

}  // namespace tessera::storage
