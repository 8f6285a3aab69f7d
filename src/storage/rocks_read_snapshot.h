#pragma once

#include <rocksdb/db.h>

#include <memory>
#include <string>

#include "storage/mvcc_iterator.h"
#include "storage/read_snapshot.h"
#include "storage/visibility.h"

namespace tessera::storage {

class RocksEngine;
struct TxnOverlay;

// A ReadSnapshot at timestamp `ts`: every lookup reads the newest version <= ts.
//
// Point lookups (findById, findByRecordKey) use pooled iterators without a RocksDB snapshot
// (PointIteratorPool): exact at `ts`, since every commit <= ts was complete when ts was chosen,
// later ones have greater timestamps, and `pin` keeps the versions ts may see from GC. With
// `physical`, cursors (scans) additionally share one RocksDB snapshot, taken when the first one
// is created, so that they all see one physical state (a concurrent drop's range delete
// included); without, each cursor reads the latest state when it starts (ts = max, under a
// collection's writer). With `overlay` (a transaction's snapshot), the transaction's own writes
// are seen over the committed state at `ts`. With `prepared` (the transactions prepared at or
// before `ts` and undecided when `ts` was chosen), a lookup or cursor that meets one of their
// keys waits for that transaction's decision as the set's PrepareReads allows
// (prepared_transactions.h); other keys never wait.
class RocksReadSnapshot final : public ReadSnapshot {
  public:
    RocksReadSnapshot(RocksEngine* engine, Timestamp ts, std::unique_ptr<SnapshotPin> pin,
                      bool physical, std::shared_ptr<const PreparedSet> prepared,
                      std::shared_ptr<TxnOverlay> overlay = nullptr);
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
    void bindPrepareReads(std::shared_ptr<PrepareReads> reads) override {
        if (_prepared) _prepared->bind(std::move(reads));
    }

  private:
    // The cursors' RocksDB snapshot (null without `physical`), taken on first use.
    const rocksdb::Snapshot* cursorSnapshot();
    rocksdb::WriteBatchWithIndex* overlayBatch() const;
    // The version of userKey at `_ts` (the transaction's own first): true and *value when live.
    bool get(PointReader& reader, rocksdb::ColumnFamilyHandle* cf, std::string_view userKey,
             std::string_view* value);

    RocksEngine* _engine;
    Timestamp _ts;
    bool _physical;
    const rocksdb::Snapshot* _rocksSnapshot = nullptr;
    std::unique_ptr<SnapshotPin> _pin;
    std::shared_ptr<const PreparedSet> _prepared;
    std::shared_ptr<TxnOverlay> _overlay;
    std::string _ownValue;
    PointReader _records;
    PointReader _indexes;  // the _id_ index of collections with a cluster key
    std::string _keyBuf;
};

// Translates KeyRange bounds on encoded keys into [lower, upper) on raw keys under `prefix`:
// an inclusive bound includes, and an exclusive bound excludes, every key that starts with it.
void keyRangeToBounds(std::string_view prefix, const KeyRange& range, std::string* lower,
                      std::string* upper);

}  // namespace tessera::storage
