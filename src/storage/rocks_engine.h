#pragma once

#include <rocksdb/db.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "base/mutex.h"
#include "storage/collection_lock.h"
#include "storage/engine.h"
#include "storage/intent_table.h"
#include "storage/key_locks.h"
#include "storage/mvcc_iterator.h"
#include "storage/prepared_transactions.h"
#include "storage/replication.h"
#include "storage/visibility.h"
#include "storage/wal_sync_group.h"

namespace tessera::storage {

// Per-collection mutable state that is not part of the immutable CollectionInfo.
struct CollectionState {
    // Shared by every CollectionWriter for its lifetime, exclusive for DDL touching the
    // collection. Lock order: Engine::_ddlMutex -> access -> catalogUpdate -> KeyLocks ->
    // Engine::_catalogMutex.
    CollectionLock access;
    // Serializes the writers' metadata changes (an index becoming multikey), which go into the
    // batch of the document write that causes them.
    Mutex catalogUpdate;
    // Exact counts: each document write adds its delta after its batch committed.
    std::atomic<int64_t> count{0};
    std::atomic<int64_t> dataSize{0};
};

// The RocksDB implementation of Engine (see README.md).
class RocksCollectionWriter;
class RocksTransaction;

class RocksEngine final : public Engine {
  public:
    static StatusWith<std::unique_ptr<Engine>> open(const EngineOptions& options);
    ~RocksEngine() override;

    std::vector<std::string> listDatabases() const override;
    std::vector<CollectionPtr> listCollections(std::string_view db) const override;
    CollectionPtr getCollection(std::string_view ns) const override;
    StatusWith<CollectionPtr> createCollection(std::string_view ns,
                                               bson::BsonView options) override;
    Status dropCollection(std::string_view ns) override;
    Status dropDatabase(std::string_view db) override;
    Status renameCollection(std::string_view from, std::string_view to, bool dropTarget) override;
    StatusWith<CreateIndexesResult> createIndexes(std::string_view ns,
                                                  std::vector<IndexSpec> specs) override;
    Status dropIndex(std::string_view ns, std::string_view indexName) override;
    Status setCollectionOptions(std::string_view ns, bson::BsonView options) override;
    Status clusterCollection(std::string_view ns, bson::BsonView clusterKey) override;

    std::unique_ptr<ReadSnapshot> snapshot(std::optional<Timestamp> at = {},
                                           std::shared_ptr<PrepareReads> reads = nullptr) override;
    std::unique_ptr<ReadSnapshot> snapshotIncludingInFlight() override;
    StatusWith<std::unique_ptr<ReadSnapshot>> openSnapshot(
        std::optional<Timestamp> at, std::shared_ptr<PrepareReads> reads = nullptr) override;
    StatusWith<std::unique_ptr<CollectionWriter>> writer(const CollectionPtr& coll,
                                                         const WriteUnit* unit) override;
    StatusWith<std::unique_ptr<Transaction>> beginTransaction(std::optional<Timestamp> readAt,
                                                              const WriteUnit* unit) override;
    StatusWith<size_t> fenceTransactionWriters(
        const std::function<bool(const CollectionInfo&)>& affects, const std::string& reason,
        std::chrono::steady_clock::time_point deadline) override;
    StatusWith<std::vector<RecoveredTransaction>> recoverPreparedTransactions(
        std::string_view prefix, const WriteUnit* unit) override;

    CollectionStats stats(const CollectionInfo& coll) const override;
    int64_t approximateRangeBytes(const CollectionInfo& coll, const KeyRange& range) const override;
    int64_t approximateDiskBytes(std::string_view db) const override;
    Timestamp lastCommitTimestamp() const override;
    Status flush() override;
    Status syncWal() override;
    uint64_t walSyncCount() const override { return _walSync.syncs(); }
    size_t preparedTransactionCount() const override { return _prepared.count(); }
    size_t readersWaitingForPreparedForTest() const override { return _prepared.waiting(); }
    Status collectGarbageForTest() override;
    using Engine::writeSideRecords;
    Status writeSideRecords(const std::vector<std::pair<std::string, std::string>>& records,
                            bool synced) override;
    std::vector<std::pair<std::string, std::string>> sideRecords(
        std::string_view prefix) const override;
    StatusWith<std::optional<std::string>> sideRecord(std::string_view key) const override;
    size_t countVersionsForTest(const CollectionInfo& coll, bool indexes) override;

    // ---- For the snapshot and writer implementations.
    rocksdb::DB* db() const { return _db.get(); }
    // Every batch goes through here. Under ThreadSanitizer the writes are applied one at a time:
    // RocksDB's write group (a leader appends its followers' batches and wakes them) synchronizes
    // inside the Debian library, which is not built with TSan, so TSan would report the leader's
    // reads of a follower's batch as races. Elsewhere this is DB::Write.
    rocksdb::Status write(const rocksdb::WriteOptions& options, rocksdb::WriteBatch* batch);
    rocksdb::ColumnFamilyHandle* recordsCf() const { return _records; }
    rocksdb::ColumnFamilyHandle* indexesCf() const { return _indexes; }
    rocksdb::ColumnFamilyHandle* catalogCf() const { return _catalog; }
    // Reused point-lookup iterators of the records and indexes CFs (mvcc_iterator.h).
    PointIteratorPool* recordsPointIterators() { return &_recordPoints; }
    PointIteratorPool* indexesPointIterators() { return &_indexPoints; }
    VisibilityTracker& visibility() { return _visibility; }
    // Publishes a new version of a collection's metadata (same id and ns).
    void publish(CollectionPtr info);
    // The published metadata of collection `id` (nullptr once dropped).
    CollectionPtr currentInfo(uint64_t id) const;
    // The mutable state of collection `id` (nullptr once dropped).
    std::shared_ptr<CollectionState> collectionState(uint64_t id) const { return stateFor(id); }
    // Adds the persisted counts (count, dataSize, last commit ts) of a collection to `batch`.
    void putCounts(rocksdb::WriteBatch* batch, uint64_t collId, int64_t count, int64_t dataSize,
                   Timestamp lastTs);
    // Adds a document write's change of the counts (a merge, rocks_options.h).
    void mergeCounts(rocksdb::WriteBatch* batch, uint64_t collId, int64_t countDelta,
                     int64_t sizeDelta, Timestamp ts);
    KeyLocks& keyLocks() { return _keyLocks; }
    IntentTable& intents() { return _intents; }
    PreparedTransactions& prepared() { return _prepared; }
    // The open transactions, which fenceTransactionWriters visits (RocksTransaction's
    // constructor and destructor).
    void rememberTransaction(RocksTransaction* txn);
    void forgetTransaction(RocksTransaction* txn);
    // A writer whose writes are intents of `txn` (rocks_transaction.h); never waits for DDL
    // (LockTimeout instead).
    StatusWith<std::unique_ptr<RocksCollectionWriter>> transactionWriter(const CollectionPtr& coll,
                                                                         RocksTransaction* txn);

    // ---- Collections created inside transactions (rocks_txn_catalog.cpp). Such a
    // collection has an id, a state and an entry by id (its transaction's writers work as for
    // any collection) but no entry by namespace until its transaction commits: nobody else
    // finds it. One transaction at a time may create a namespace.
    // Reserves `ns` for transaction `txnId`: NamespaceExists if it exists, WriteConflict while
    // another transaction creates it.
    StatusWith<CollectionPtr> reserveCollection(std::string_view ns, bson::BsonView options,
                                                uint64_t txnId);
    // Replaces the metadata of a reserved collection (indexes added before any write).
    void updateReserved(CollectionPtr info);
    // At the commit of the transaction that reserved `created`: WriteConflict when a plain
    // create or rename took one of the namespaces meanwhile; otherwise they are marked
    // committing (a plain create of one waits for publishReserved) and their catalog entries
    // and zero counts are added to `batch`.
    Status beginPublishingReserved(const std::vector<CollectionPtr>& created,
                                   rocksdb::WriteBatch* batch);
    // After the commit's batch was written: the collections appear by namespace.
    void publishReserved(const std::vector<CollectionPtr>& created);
    // The transaction ended without publishing them (abort, failed commit): forgotten.
    void releaseReserved(const std::vector<CollectionPtr>& created);

    // The status of a failed write(): "storage write failed: …" (InternalError), or — when the
    // commit log refused the batch — the log's own error with its code (NotWritablePrimary,
    // InterruptedDueToReplStateChange), which write() carries inside its rocksdb::Status.
    static Status writeFailure(const rocksdb::Status& written);
    // Any failed RocksDB operation as a Status (OK for ok): InternalError "<context>: …", or a
    // refused write's own code as writeFailure reads it, so that clients see what drivers retry.
    static Status statusOf(const rocksdb::Status& s, std::string_view context);

    // Replication (replication.h, rocks_replication.cpp).
    void setCommitLog(CommitLog* log) { _commitLog.store(log); }
    Status applyCommitted(std::string_view batch, uint64_t logIndex, bool fromElsewhere);
    StatusWith<uint64_t> committedLogIndex() const;
    // A consistent copy of the database's files in `dir` (synced_copy.h); returns a log index
    // the copy has applied at least.
    StatusWith<uint64_t> createCheckpoint(const std::string& dir);
    // One catalog change of a batch from elsewhere, as the in-memory state follows it.
    struct FollowedChange {
        enum class Kind { kPublish, kDrop, kCounts, kNextId } kind = Kind::kPublish;
        CollectionPtr info;  // kPublish
        uint64_t id = 0;     // kDrop, kCounts: the collection; kNextId: the next id
        std::string value;   // kCounts: count(8) | dataSize(8) | ts(8)
        bool delta = false;  // kCounts: a merge (added) rather than a put (replaces)

        static FollowedChange publish(CollectionPtr info) {
            return {Kind::kPublish, std::move(info), 0, {}, false};
        }
        static FollowedChange drop(uint64_t id) { return {Kind::kDrop, nullptr, id, {}, false}; }
        static FollowedChange countsOf(uint64_t id, std::string value, bool delta) {
            return {Kind::kCounts, nullptr, id, std::move(value), delta};
        }
        static FollowedChange nextId(uint64_t next) {
            return {Kind::kNextId, nullptr, next, {}, false};
        }
    };

  private:
    explicit RocksEngine(const EngineOptions& options);
    Status openDb();
    // At open, before any other thread can see the engine: not under _catalogMutex (the
    // analysis cannot know that).
    Status loadCatalog() NO_THREAD_SAFETY_ANALYSIS;

    CollectionPtr byIdLocked(uint64_t id) const REQUIRES(_catalogMutex);
    // A new collection's metadata with its _id index (no id yet).
    static std::shared_ptr<CollectionInfo> newCollectionInfo(std::string_view ns,
                                                             bson::BsonView options);
    // For a plain create or rename to `ns` (holding _catalogMutex, and _ddlMutex): a
    // transaction still creating it loses it (its commit fails with WriteConflict: first
    // committer wins); one committing it is waited for. False when `ns` exists afterwards.
    bool claimNamespaceFromTransactions(std::string_view ns, UniqueLock& lock)
        REQUIRES(_catalogMutex);
    // Pins the timestamp a snapshot or transaction reads at: `at` (waiting until it is
    // visible), or the latest visible one.
    std::unique_ptr<SnapshotPin> pinReadTimestamp(std::optional<Timestamp> at);
    // SnapshotTooOld when `at` is older than the history window (its versions may be gone).
    Status checkHistoryWindow(std::optional<Timestamp> at) const;
    // The current metadata of `coll` (following a rewrite), with its state and access lock
    // (shared; without waiting when !mayWait).
    struct WriterParts {
        CollectionPtr coll;
        std::shared_ptr<CollectionState> state;
        std::shared_lock<CollectionLock> lock;
    };
    StatusWith<WriterParts> writerParts(const CollectionPtr& coll, bool mayWait);
    std::shared_ptr<CollectionState> stateFor(uint64_t id) const;
    Status writeSync(rocksdb::WriteBatch* batch);
    // RocksDB's write itself, under write() and applyCommitted().
    rocksdb::Status writeDirect(const rocksdb::WriteOptions& options, rocksdb::WriteBatch* batch);
    void follow(const std::vector<FollowedChange>& changes) EXCLUDES(_catalogMutex);
    Status syncWalNow();  // one DB::SyncWAL (through _walSync)
    // Adds the deletion of everything of `coll` to `batch` (caller holds its write lock).
    void addDropToBatch(rocksdb::WriteBatch* batch, const CollectionInfo& coll);
    void unpublish(const CollectionInfo& coll);
    Status dropCollectionLocked(const CollectionPtr& coll);
    Status buildIndexes(const CollectionInfo& coll, std::vector<IndexSpec>* specs);
    // Writes the records and index entries of `from` into the keyspace of `to` (same indexes,
    // to's layout), not yet published (rocks_recluster.cpp).
    Status rewriteCollection(const CollectionInfo& from, const CollectionInfo& to);

    EngineOptions _options;
    HybridLogicalClock* _clock;
    VisibilityTracker _visibility;

    std::unique_ptr<rocksdb::DB> _db;
    rocksdb::ColumnFamilyHandle* _default = nullptr;
    rocksdb::ColumnFamilyHandle* _catalog = nullptr;
    rocksdb::ColumnFamilyHandle* _records = nullptr;
    rocksdb::ColumnFamilyHandle* _indexes = nullptr;
    // Invalidated on every completed flush and compaction (LsmChangeListener), cleared before
    // the DB closes.
    PointIteratorPool _recordPoints;
    PointIteratorPool _indexPoints;

    Mutex _ddlMutex;  // serializes DDL
    mutable Mutex _catalogMutex ACQUIRED_AFTER(_ddlMutex);
    std::map<std::string, CollectionPtr, std::less<>> _byNs GUARDED_BY(_catalogMutex);
    std::unordered_map<uint64_t, CollectionPtr> _byId GUARDED_BY(_catalogMutex);
    std::unordered_map<uint64_t, std::shared_ptr<CollectionState>> _states
        GUARDED_BY(_catalogMutex);
    // Collection ids replaced by clusterCollection's rewrite -> the id that replaced them
    // (same CollectionState), so that a writer for a CollectionPtr resolved before the swap
    // finds the current collection. Entries go when the replacing id is dropped.
    std::unordered_map<uint64_t, uint64_t> _replacedBy GUARDED_BY(_catalogMutex);
    uint64_t _nextCollectionId GUARDED_BY(_catalogMutex) = 1;
    // Namespaces reserved by transactions (rocks_txn_catalog.cpp), guarded by _catalogMutex.
    struct Reservation {
        uint64_t txnId = 0;
        uint64_t collId = 0;
        enum class State { kOpen, kLost, kCommitting } state = State::kOpen;
    };
    std::map<std::string, Reservation, std::less<>> _reserved GUARDED_BY(_catalogMutex);
    CondVar _reservationEnded;  // a committing reservation was published
    KeyLocks _keyLocks;
    IntentTable _intents;
    PreparedTransactions _prepared;
    std::atomic<uint64_t> _nextTransactionId{1};
    Mutex _openTransactionsMutex;
    std::unordered_set<RocksTransaction*> _openTransactions GUARDED_BY(_openTransactionsMutex);
    std::atomic<CommitLog*> _commitLog{nullptr};  // replication.h; null: written directly
    // Group commit for syncWal(): concurrent callers share one WAL sync.
    WalSyncGroup _walSync{[this] { return syncWalNow(); }};
};

}  // namespace tessera::storage
