#pragma once

#include <rocksdb/utilities/write_batch_with_index.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "storage/rocks_collection_writer.h"
#include "storage/transaction.h"
#include "storage/visibility.h"
#include "storage/write_observer.h"

namespace tessera::storage {

class RocksEngine;
struct CollectionState;

// A transaction's own writes, shared by the transaction and every snapshot it handed out (a
// cursor may outlive the statement, or the transaction): intents keyed like committed versions
// with keys::kIntentTs (overwritten in place by a later write of the same key), the pin
// that keeps the versions at the read timestamp from garbage collection, and the transactions
// prepared at or before the read timestamp when it was chosen (their keys make reads wait).
struct TxnOverlay {
    rocksdb::WriteBatchWithIndex batch{rocksdb::BytewiseComparator(), 0, /*overwrite_key=*/true};
    std::unique_ptr<SnapshotPin> pin;
    std::shared_ptr<const PreparedSet> prepared;

    // The transaction's own version of `userKey` in `cf` ("" = it removed it), or nullopt.
    std::optional<std::string> ownVersion(rocksdb::ColumnFamilyHandle* cf,
                                          std::string_view userKey);
};

// Transaction over RocksDB (transaction.h). Its writers are RocksCollectionWriters in
// transaction mode: they check and claim keys as any writer locks them, and put the versions
// into the overlay instead of the database.
class RocksTransaction final : public Transaction {
  public:
    RocksTransaction(RocksEngine* engine, uint64_t id, Timestamp readTs,
                     std::unique_ptr<SnapshotPin> pin, std::shared_ptr<const PreparedSet> prepared,
                     const WriteUnit* unit);
    ~RocksTransaction() override;

    Timestamp readTimestamp() const override { return _readTs; }
    std::unique_ptr<ReadSnapshot> snapshot() override;
    void bindPrepareReads(std::shared_ptr<PrepareReads> reads) override {
        if (_overlay->prepared) _overlay->prepared->bind(std::move(reads));
    }
    StatusWith<CollectionWriter*> writer(const CollectionPtr& coll) override;
    bool hasWrites() const override {
        return !_writes.empty() || !_created.empty() || !_sideRecords.empty();
    }
    StatusWith<CollectionPtr> createCollection(std::string_view ns,
                                               bson::BsonView options) override;
    CollectionPtr createdCollection(std::string_view ns) const override;
    StatusWith<Engine::CreateIndexesResult> createIndexes(const CollectionPtr& coll,
                                                          std::vector<IndexSpec> specs) override;
    Status addSideRecord(std::string key, std::string value) override;
    void onAbort(std::function<void()> fn) override;
    const std::vector<std::pair<std::string, std::string>>& addedSideRecords() const override {
        return _sideRecords;
    }
    StatusWith<Timestamp> commit(
        const std::vector<std::pair<std::string, std::string>>& sideRecords,
        const WriteOptions& opts) override;
    StatusWith<Timestamp> prepare(const std::string& recordKey, bson::BsonView meta,
                                  bool synced = true) override;
    bool isPrepared() const override { return _prepareTs.has_value(); }
    StatusWith<Timestamp> commitPrepared(
        Timestamp commitTs, const std::vector<std::pair<std::string, std::string>>& sideRecords,
        const WriteOptions& opts) override;
    void abort() override;
    std::optional<std::string> doomedBecause() const override;

    // A transaction prepared before a restart, from its prepare record (prepare()); registered
    // with the engine as prepared again. `unit` as for a new transaction.
    static StatusWith<std::unique_ptr<RocksTransaction>> recover(RocksEngine* engine, uint64_t id,
                                                                 const std::string& recordKey,
                                                                 bson::BsonView record,
                                                                 const WriteUnit* unit);

    // ---- For RocksEngine::fenceTransactionWriters.
    enum class Fenced { kUnaffected, kDoomed, kPrepared };
    // If the transaction writes a collection `affects` selects: doomed unless prepared (its
    // writes, prepare and commit fail from now on with NoSuchTransaction naming `reason`; a
    // commit in progress finishes first). kPrepared: prepared, its decision is awaited instead.
    Fenced fence(const std::function<bool(const CollectionInfo&)>& affects,
                 const std::string& reason);

    // ---- For the transaction's writers.
    uint64_t id() const { return _id; }
    TxnOverlay& overlay() { return *_overlay; }
    // Claims the lock keys of a write (IntentTable::claim): WriteConflict if another
    // transaction holds one.
    Status claim(uint64_t collId, const std::vector<std::string>& lockKeys);
    // One document write made as intents: what commit() tells the observers and adds to the
    // collection's counts.
    void recordWrite(const CollectionPtr& coll, const std::shared_ptr<CollectionState>& state,
                     WriteObserver::Op op, bson::BsonView before, bson::BsonView after,
                     int64_t countDelta, int64_t sizeDelta);

  private:
    struct Write {
        CollectionPtr coll;
        WriteObserver::Op op;
        bson::BsonObj before;
        bson::BsonObj after;
    };
    struct Counts {
        std::shared_ptr<CollectionState> state;
        int64_t count = 0;
        int64_t size = 0;
    };
    // The prepare record: `meta`, the timestamps, claims, intents, writes, counts and added
    // side records.
    bson::BsonObj prepareRecord(bson::BsonView meta, Timestamp prepareTs) const;
    // Writes every intent as a version at `versionTs` (a fresh commit timestamp when absent) in
    // one batch with the counts, observers' and caller's side records; returns the timestamp.
    StatusWith<Timestamp> writeCommit(
        std::optional<Timestamp> versionTs,
        const std::vector<std::pair<std::string, std::string>>& sideRecords,
        const WriteOptions& opts);
    // The versions the intents will write, for readers of a prepared transaction.
    PreparedVersions preparedVersions() const;
    // Releases the claimed keys and the writers (their collections' access locks), and the
    // engine's prepared registration: committed at `commitTs`, or aborted (nullopt).
    void release(std::optional<Timestamp> commitTs);
    void abortLocked();
    // NoSuchTransaction when a fence doomed the transaction.
    Status checkNotDoomed() const;
    StatusWith<CollectionWriter*> writerLocked(const CollectionPtr& coll);
    // The collections this transaction created (their reserved metadata).
    std::vector<CollectionPtr> createdList() const;

    RocksEngine* _engine;
    uint64_t _id;
    Timestamp _readTs;
    const WriteUnit* _unit;  // the observers told at commit; may be null
    std::shared_ptr<TxnOverlay> _overlay;
    std::map<uint64_t, std::unique_ptr<RocksCollectionWriter>> _writers;  // by collection id
    std::map<uint64_t, CollectionWriter*> _byRequestedId;
    std::vector<std::string> _claimed;  // intent table keys
    std::vector<Write> _writes;
    std::map<uint64_t, Counts> _counts;                             // by collection id
    std::vector<std::pair<std::string, std::string>> _sideRecords;  // addSideRecord's
    // Collections this transaction created (RocksEngine::reserveCollection), by namespace:
    // published by the commit, released by anything else.
    std::map<std::string, CollectionPtr, std::less<>> _created;
    bool _ended = false;
    bool _committed = false;
    std::vector<std::function<void()>> _onAbort;  // run by release() unless it commits
    std::optional<Timestamp> _prepareTs;
    std::string _prepareRecordKey;  // the side record of the prepared transaction

    // Serializes the ends of the transaction (commit, prepare, abort) and its new writers with a
    // fence, which may run on another thread.
    Mutex _endMutex;
    std::atomic<bool> _doomed{false};
    std::string _doomReason;  // set before _doomed
};

}  // namespace tessera::storage
