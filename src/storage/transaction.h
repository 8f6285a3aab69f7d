#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/hlc.h"
#include "base/status.h"
#include "bson/bson_obj.h"
#include "storage/catalog_types.h"
#include "storage/collection_writer.h"
#include "storage/engine.h"
#include "storage/read_snapshot.h"

namespace tessera::storage {

// The storage side of one multi-document transaction (Engine::beginTransaction): snapshot
// isolation at one read timestamp, with the transaction's writes as intents nobody else sees.
//
// - Reads (snapshot()) see the committed state at readTimestamp() and, over it, the
//   transaction's own writes.
// - Writes go through writer(coll): the same CollectionWriter contract, but each write is an
//   intent in the transaction's private batch (document, index entries), claimed in the
//   engine's intent table (intent_table.h). A write of a document or unique value that another
//   transaction holds, or that someone committed after the read timestamp (the snapshot did not
//   see it: first committer wins), is a WriteConflict (112) and writes nothing.
// - commit() writes every intent as a committed version at one new commit timestamp, with the
//   collections' count deltas, the observers' side records and the caller's `sideRecords`, in
//   one atomic RocksDB batch: a reader sees all of the transaction or none of it. Releasing the
//   intents after that batch lets the writers that waited for them go on.
// - abort(), or destroying an uncommitted transaction, releases everything; nothing was ever
//   written to the database. After a crash an unprepared transaction has simply vanished.
//
// A transaction holds the access lock of every collection it wrote (shared, like any writer)
// until it ends: DDL of those collections waits for it. writer() never waits for DDL: a
// collection held or awaited by DDL is LockTimeout (24), a transient error for the client.
// Not thread-safe: one operation of the session uses it at a time. Destroy it (and its
// snapshots) before the engine, as every snapshot and writer.
class Transaction {
  public:
    virtual ~Transaction() = default;
    virtual Timestamp readTimestamp() const = 0;
    // A snapshot at readTimestamp() that sees this transaction's writes (also those made after
    // it was opened). It may outlive the transaction; it then sees what the transaction had
    // written when it ended (never committed data newer than readTimestamp()).
    virtual std::unique_ptr<ReadSnapshot> snapshot() = 0;
    // The statement whose reads these are from now on: its PrepareReads bounds every wait of
    // the transaction's reads for a prepared transaction's decision (prepared_transactions.h).
    virtual void bindPrepareReads(std::shared_ptr<PrepareReads> reads) = 0;
    // The transaction's writer of `coll`, owned by the transaction (one per collection, kept
    // until it ends). NamespaceNotFound if the collection was dropped, LockTimeout while DDL
    // holds or waits for it.
    virtual StatusWith<CollectionWriter*> writer(const CollectionPtr& coll) = 0;
    // Whether any write was made, a collection created included (a read-only transaction
    // commits without a write).
    virtual bool hasWrites() const = 0;

    // ---- DDL inside the transaction (MongoDB 4.4+: create a collection, and indexes on it
    // while it is empty; the command layer checks the rest of MongoDB's rules).
    // Creates collection `ns` (with its _id index) for this transaction only: createdCollection
    // finds it, writer() and snapshot() use it, nobody else sees it. commit() adds its catalog
    // entry to the commit's batch, so it appears with the transaction's documents; abort()
    // leaves nothing. NamespaceExists (48) if it exists, WriteConflict (112) while another
    // transaction creates it, InvalidNamespace (73). A plain create or rename of the name
    // before the commit wins: the commit then fails with WriteConflict (first committer wins).
    // A transaction that created a collection cannot be prepared (a cross-shard write
    // transaction, which MongoDB refuses too): prepare() fails with
    // OperationNotSupportedInTransaction (263).
    virtual StatusWith<CollectionPtr> createCollection(std::string_view ns,
                                                       bson::BsonView options) = 0;
    // The collection this transaction created as `ns` (its current metadata), or nullptr.
    virtual CollectionPtr createdCollection(std::string_view ns) const = 0;
    // Adds `specs` to collection `coll`, which this transaction created and has not written yet
    // (OperationNotSupportedInTransaction otherwise, unless every index exists already: a
    // no-op): Engine::createIndexes' rules and result, the indexes part of the collection's
    // catalog entry at commit.
    virtual StatusWith<Engine::CreateIndexesResult> createIndexes(const CollectionPtr& coll,
                                                                  std::vector<IndexSpec> specs) = 0;
    // Adds a side record (Engine::sideRecords key; a value, never empty) that commits with the
    // transaction: part of its prepare record, written in its commit's batch, gone with its
    // abort. A transaction that added one has writes (hasWrites()). For a record that must be
    // durable exactly when the transaction's writes are: the retryable write a router carried
    // out by this transaction (a document moved to another shard). NoSuchTransaction once it
    // ended or prepared.
    virtual Status addSideRecord(std::string key, std::string value) = 0;
    // The side records added so far (a recovered prepared transaction's included).
    virtual const std::vector<std::pair<std::string, std::string>>& addedSideRecords() const = 0;
    // Commits (see above): the commit timestamp, or readTimestamp() for a read-only
    // transaction. `sideRecords` (Engine::sideRecords keys; empty value deletes) go into the
    // same batch: the session's record of the commit. A failed commit leaves the transaction
    // aborted.
    virtual StatusWith<Timestamp> commit(
        const std::vector<std::pair<std::string, std::string>>& sideRecords,
        const WriteOptions& opts) = 0;

    // ---- Two-phase commit (a participant of a cross-shard transaction).
    // The first phase: the transaction takes no more writes, keeps its intents claimed, and is
    // registered with the engine as prepared at the returned prepare timestamp
    // (prepared_transactions.h): from then on every read at or after that timestamp that meets
    // one of its keys waits for the decision, so no reader sees part of the transaction (reads
    // of other keys go on). Before it returns, the
    // transaction (intents, claims, writes, counts) and the caller's `meta` are written, synced,
    // as side record `recordKey` (Engine::sideRecords), so that after a crash
    // Engine::recoverPreparedTransactions prepares it again; its commit deletes the record in
    // its batch, its abort in a synced write of its own. With `synced` false the record is only
    // written to the WAL (it survives a crash of the process; a later sync makes it durable):
    // for a coordinator's own part, whose decision, written after it in the same log, is synced
    // before any other participant hears it. A transaction without writes is not
    // registered (nothing to wait for), writes no record and returns its read timestamp.
    virtual StatusWith<Timestamp> prepare(const std::string& recordKey, bson::BsonView meta,
                                          bool synced = true) = 0;
    virtual bool isPrepared() const = 0;
    // The second phase, commit: as commit(), but every version is written at `commitTs`, the
    // coordinator's decision (the greatest prepare timestamp of all participants, so >= this
    // one's: BadValue otherwise). The clock advances past it. Readers waiting for the decision
    // go on once the batch is written.
    virtual StatusWith<Timestamp> commitPrepared(
        Timestamp commitTs, const std::vector<std::pair<std::string, std::string>>& sideRecords,
        const WriteOptions& opts) = 0;
    // Aborts (a prepared transaction too: its waiting readers go on).
    virtual void abort() = 0;
    // Runs `fn` once the transaction ends without committing (abort(), a failed commit or
    // prepare, destruction while open), on the thread that ends it; at once when it has already
    // ended so; never after a commit. For in-memory state that lives exactly as long as the
    // transaction may still commit: a shard's claim on moving a retryable write's document
    // (txn::TransactionTable::claimMove). `fn` must not call back into this transaction.
    virtual void onAbort(std::function<void()> fn) = 0;
    // Why a placement change doomed it (Engine::fenceTransactionWriters): its writes, prepare and
    // commit fail; its owner should abort it (releasing what it holds) as soon as it can.
    virtual std::optional<std::string> doomedBecause() const = 0;
};

}  // namespace tessera::storage
