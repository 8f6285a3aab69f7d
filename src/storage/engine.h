#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/hlc.h"
#include "base/status.h"
#include "bson/bson_obj.h"
#include "storage/catalog_types.h"
#include "storage/read_snapshot.h"
#include "storage/write_observer.h"

namespace tessera::storage {

class ReadSnapshot;
class CollectionWriter;
class Transaction;

struct EngineOptions {
    std::string dbpath;
    size_t blockCacheBytes = size_t{256} << 20;
    // Versions older than now minus this window may be garbage-collected; reads at timestamps
    // older than the window fail with SnapshotTooOld.
    uint32_t historyWindowSeconds = 300;
    // The clock that stamps commits; nullptr means HybridLogicalClock::global() (tests inject
    // their own to control time).
    HybridLogicalClock* clock = nullptr;
};

// The storage engine of one process: one RocksDB instance holding the catalog, every
// collection's documents (MVCC versions keyed by cluster key and commit timestamp) and indexes.
// It is the only code that includes RocksDB headers.
//
// Thread-safety: every method may be called from any thread. DDL operations are serialized
// internally; writes to one collection are serialized by CollectionWriter; reads never block.
class Engine {
  public:
    // Opens (creating if needed) the database in options.dbpath. Fails with a clear message if
    // another process holds the dbpath ("DBPathInUse: Unable to lock the dbpath ...") or the
    // files are not a Tessera database.
    static StatusWith<std::unique_ptr<Engine>> open(const EngineOptions& options);
    virtual ~Engine() = default;  // flushes and closes

    // ---- Catalog (DDL). Namespaces are "db.collection".
    virtual std::vector<std::string> listDatabases() const = 0;
    virtual std::vector<CollectionPtr> listCollections(std::string_view db) const = 0;
    // nullptr if the collection does not exist.
    virtual CollectionPtr getCollection(std::string_view ns) const = 0;
    // NamespaceExists (48) if it exists; InvalidNamespace (73) for bad names. Creates _id_.
    virtual StatusWith<CollectionPtr> createCollection(std::string_view ns,
                                                       bson::BsonView options) = 0;
    // NamespaceNotFound (26) if missing. Drops documents, indexes and counts.
    virtual Status dropCollection(std::string_view ns) = 0;
    virtual Status dropDatabase(std::string_view db) = 0;
    // NamespaceNotFound if `from` is missing; NamespaceExists if `to` exists and !dropTarget.
    virtual Status renameCollection(std::string_view from, std::string_view to,
                                    bool dropTarget) = 0;
    // Builds the indexes over existing documents and publishes them atomically. An index whose
    // name and key pattern both match an existing one is a no-op (not an error). Errors:
    // IndexOptionsConflict (85) / IndexKeySpecsConflict (86) for clashes, DuplicateKey (11000)
    // when building a unique index over duplicates, CannotCreateIndex (67) for bad specs.
    struct CreateIndexesResult {
        int numIndexesBefore = 0;
        int numIndexesAfter = 0;
    };
    virtual StatusWith<CreateIndexesResult> createIndexes(std::string_view ns,
                                                          std::vector<IndexSpec> specs) = 0;
    // IndexNotFound (27); the _id_ index cannot be dropped (InvalidOptions 72).
    virtual Status dropIndex(std::string_view ns, std::string_view indexName) = 0;
    // Replaces the collection's options (as createCollection stored them) with `options`, e.g.
    // for collMod's validator. Persisted in the catalog; writers opened afterwards (and
    // writer->collection()) see the new options. NamespaceNotFound (26) if missing.
    virtual Status setCollectionOptions(std::string_view ns, bson::BsonView options) = 0;
    // Clusters the collection's records by `clusterKey` (cluster_key.h: a shard key pattern,
    // fields 1 or "hashed"; {} or {_id: 1} = by _id, the default). Idempotent. An empty
    // collection, or one already clustered that way, only changes its catalog entry. Otherwise
    // the documents and all indexes are rewritten under a new collection id (each document
    // keeps the commit timestamp of its latest version), the catalog entry is swapped in one
    // synced batch that also range-deletes the old id. Holds the collection's write lock for the
    // whole rewrite: writes block for O(n), like MongoDB's shardCollection index build. Readers
    // that resolved the collection before the swap and open their snapshot after it (or the
    // reverse) see it empty; a snapshot at a timestamp before the swap sees each document only
    // if its latest version is at or before that timestamp. BadValue for an invalid key,
    // ShardKeyNotFound (61) when a document's key path holds an array (nothing changes),
    // NamespaceNotFound (26) if missing.
    virtual Status clusterCollection(std::string_view ns, bson::BsonView clusterKey) = 0;

    // ---- Reads. A snapshot sees exactly the committed state at its timestamp (latest when
    // none is given), consistently across collections and indexes.
    // A snapshot at a timestamp in the future waits until every commit up to it finished (and
    // makes later commits get greater timestamps). Once created, a snapshot pins its versions:
    // garbage collection keeps them until the snapshot is destroyed. Snapshots, cursors and
    // writers must be destroyed before the engine. Its waits for prepared transactions'
    // decisions follow `reads` (prepared_transactions.h; null: as long as they take).
    virtual std::unique_ptr<ReadSnapshot> snapshot(
        std::optional<Timestamp> at = {}, std::shared_ptr<PrepareReads> reads = nullptr) = 0;
    // A snapshot that includes every write holding a commit timestamp now (it waits for those in
    // flight): with write_observer.h's contract, a protocol that starts observing writes and
    // then opens this snapshot sees each write either in the snapshot or in its observer.
    virtual std::unique_ptr<ReadSnapshot> snapshotIncludingInFlight() = 0;
    // As snapshot(), but fails with SnapshotTooOld (239) when `at` is older than the history
    // window (its versions may already be garbage-collected).
    virtual StatusWith<std::unique_ptr<ReadSnapshot>> openSnapshot(
        std::optional<Timestamp> at, std::shared_ptr<PrepareReads> reads = nullptr) = 0;

    // ---- Writes. A writer holds the collection's access lock shared until it is destroyed:
    // writers of one collection run concurrently, DDL on it waits for them (do not hold two
    // writers of one collection, nor run DDL on it, from one thread: it deadlocks once DDL
    // waits). The writer maintains every index of the collection's *current* metadata: use
    // writer->collection(), which may be newer than `coll`. Its document writes call the
    // observers of `unit` (may be null; must outlive the writer). NamespaceNotFound if the
    // collection was dropped.
    virtual StatusWith<std::unique_ptr<CollectionWriter>> writer(
        const CollectionPtr& coll, const WriteUnit* unit = nullptr) = 0;
    // A transaction prepared before a restart (Transaction::prepare): the caller's `meta`, its
    // prepare timestamp, and the transaction, prepared again.
    struct RecoveredTransaction {
        bson::BsonObj meta;
        Timestamp prepareTs;
        std::unique_ptr<Transaction> txn;
    };
    // At startup, before anything reads: every transaction whose prepare record (side records
    // under `prefix`) is still there, prepared again — its intents claimed, its collections'
    // access locks held, reads of its keys at or after its prepare timestamp held until it is
    // decided. Its commit tells the observers of `unit` (may be null; must outlive it).
    virtual StatusWith<std::vector<RecoveredTransaction>> recoverPreparedTransactions(
        std::string_view prefix, const WriteUnit* unit) = 0;
    // A multi-document transaction (transaction.h) reading at `readAt` (the latest visible
    // state when absent; SnapshotTooOld as openSnapshot). Its commit tells the observers of
    // `unit` (may be null; must outlive the transaction) about every write.
    virtual StatusWith<std::unique_ptr<Transaction>> beginTransaction(
        std::optional<Timestamp> readAt, const WriteUnit* unit) = 0;
    // A placement change (a migration's or a DDL's critical section, entered: no new write
    // runs) is about to move or rewrite the collections `affects` selects, and a transaction's
    // later commit would write them under the old placement. So every unprepared transaction
    // that writes one of them is doomed: its later writes, prepare and commit fail with
    // NoSuchTransaction naming `reason` (TransientTransactionError: its client runs it again,
    // under the new placement); a commit in progress finishes first, and is seen by whatever
    // reads after this returns. Then waits until no prepared transaction writes one (only its
    // coordinator decides it). Returns how many were doomed; LockTimeout when a prepared one is
    // still undecided at `deadline`.
    virtual StatusWith<size_t> fenceTransactionWriters(
        const std::function<bool(const CollectionInfo&)>& affects, const std::string& reason,
        std::chrono::steady_clock::time_point deadline) = 0;

    virtual CollectionStats stats(const CollectionInfo& coll) const = 0;
    // RocksDB's estimate of the bytes the records of `coll` in record-key range `range` take
    // (compressed, old versions and tombstones included; memtables too): relative sizes of
    // ranges, for the balancer — not a count.
    virtual int64_t approximateRangeBytes(const CollectionInfo& coll,
                                          const KeyRange& range) const = 0;
    // Bytes on disk of the whole database (for listDatabases sizeOnDisk / dbStats).
    virtual int64_t approximateDiskBytes(std::string_view db) const = 0;

    // Timestamp of the latest committed write (for operationTime).
    virtual Timestamp lastCommitTimestamp() const = 0;
    // Writes every memtable out to data files and syncs the write-ahead log (MongoDB's fsync
    // command): afterwards reads find nothing in memory that is not also in a data file.
    virtual Status flush() = 0;
    // Makes every write committed so far durable (syncs the write-ahead log), as a j: true write
    // would have: a read after it sees only what survives a crash (readConcern "majority" of a
    // one-member set). Concurrent callers share one sync.
    virtual Status syncWal() = 0;
    // Transactions prepared and not yet decided (transaction.h, two-phase commit). While there
    // are any, a read may wait for a decision (prepared_transactions.h).
    virtual size_t preparedTransactionCount() const = 0;
    virtual size_t readersWaitingForPreparedForTest() const = 0;
    // WAL syncs syncWal() has run since open (fewer than its calls when callers shared one).
    virtual uint64_t walSyncCount() const = 0;
    // The side records (write_observer.h) whose key starts with `prefix`, in key order.
    virtual std::vector<std::pair<std::string, std::string>> sideRecords(
        std::string_view prefix) const = 0;
    // The side record whose key is exactly `key` (a point read: no iterator over the records
    // around it), if there is one.
    virtual StatusWith<std::optional<std::string>> sideRecord(std::string_view key) const = 0;
    // Writes side records outside any document write, in one batch (an empty value deletes the
    // record): synced (through syncWal(), shared with concurrent callers), or with `synced` false
    // written to the WAL only — it survives a crash of the process, and a later synced write or
    // syncWal() makes it durable.
    Status writeSideRecords(const std::vector<std::pair<std::string, std::string>>& records) {
        return writeSideRecords(records, true);
    }
    virtual Status writeSideRecords(const std::vector<std::pair<std::string, std::string>>& records,
                                    bool synced) = 0;

    // Forces a garbage-collection pass of versions older than the history window (tests).

    virtual Status collectGarbageForTest() = 0;
    // Number of stored versions (tombstones included) of the collection's records, or of its
    // secondary index entries when `indexes` (tests of garbage collection).
    virtual size_t countVersionsForTest(const CollectionInfo& coll, bool indexes) = 0;
};

}  // namespace tessera::storage
