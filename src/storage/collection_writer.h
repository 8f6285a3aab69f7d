#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/hlc.h"
#include "base/status.h"
#include "bson/bson_obj.h"
#include "storage/catalog_types.h"
#include "storage/read_snapshot.h"
#include "storage/write_observer.h"

namespace tessera::storage {

struct WriteOptions {
    // Sync the WAL before this write returns. The commands never set it: a write concern with
    // j/fsync/w:"majority" is met once per command by Engine::syncWal (a shared group commit).
    bool sync = false;
};

// A writer of one collection's documents. Writers of one collection run concurrently (each
// holds the collection's access lock shared for its lifetime, so DDL waits for them) and exclude
// each other per document: a write locks its record key(s) and the unique-index values it adds or
// removes while it checks the latest state and commits (KeyLocks, internal). Each mutating call is
// one atomic RocksDB write: the document version, every index entry, the collection's counts and
// what the write unit's observers add (write_observer.h) change together, stamped with one HLC
// commit timestamp; concurrent writers share RocksDB's group commit (one WAL sync for many
// `j: true` writes).
//
// First writer wins: update() and remove() name the version they were computed from; when the
// stored version is another one by then (a concurrent write got there first) they fail with
// WriteConflict (112) and change nothing — the caller reads the document again and retries
// (exec/write_executor.cpp), or, inside a future transaction, reports it.
//
// Uniqueness (the _id index and unique secondary indexes) is checked against the latest state
// under the key's lock; a violation returns DuplicateKey (11000) with MongoDB's message
//   "E11000 duplicate key error collection: db.c index: a_1 dup key: { a: 1 }"
// and nothing is written. Use duplicateKeyInfo() to get keyPattern/keyValue for the reply.
class CollectionWriter {
  public:
    virtual ~CollectionWriter() = default;
    virtual const CollectionInfo& collection() const = 0;

    // `doc` must already have an `_id` (first field) and be valid for storage.
    virtual StatusWith<Timestamp> insert(bson::BsonView doc, const WriteOptions& opts) = 0;
    // Bulk loading (a migration's clone): inserts `docs` (each with an `_id`, valid for
    // storage) in one atomic batch under one commit timestamp, calling the observers for each.
    // A document whose `_id` or unique-index value is taken (stored, or by an earlier document of
    // the batch) is skipped and counted in *skipped. Returns how many were inserted.
    virtual StatusWith<int64_t> insertBatch(const std::vector<bson::BsonView>& docs,
                                            const WriteOptions& opts, int64_t* skipped) = 0;
    // Bulk removal (a range deletion): removes each record that is still the given version, in
    // one atomic batch under one commit timestamp, calling the observers for each; a record
    // changed or gone meanwhile is left alone and counted in *skipped. Returns how many were
    // removed.
    virtual StatusWith<int64_t> removeBatch(const std::vector<Record>& records,
                                            const WriteOptions& opts, int64_t* skipped) = 0;
    // Replaces the document at recordKey, which must still be `expected` (WriteConflict
    // otherwise; NoSuchKey if it is gone), with newDoc (same _id).
    virtual StatusWith<Timestamp> update(std::string_view recordKey, bson::BsonView expected,
                                         bson::BsonView newDoc, const WriteOptions& opts) = 0;
    // Removes the document at recordKey, which must still be `expected` (WriteConflict
    // otherwise; NoSuchKey if it is gone).
    virtual StatusWith<Timestamp> remove(std::string_view recordKey, bson::BsonView expected,
                                         const WriteOptions& opts) = 0;

    // The latest state (every committed write, also those not yet visible to new snapshots),
    // for finding what to write.
    virtual std::unique_ptr<ReadSnapshot> latest() = 0;
    // The document at recordKey now (nullopt: none), for re-reading after a WriteConflict.
    virtual std::optional<bson::BsonObj> current(std::string_view recordKey) = 0;
    // The document whose `_id` is `id` now (nullopt: none), with its record key: a write by
    // `_id` finds its target through the writer's own readers, which the write's check of the
    // latest version then reuses (refreshed, not rebuilt).
    virtual std::optional<Record> currentById(const bson::BsonElement& id) = 0;

    // Whether this writer's writes are intents of a transaction (transaction.h): a
    // WriteConflict then means the transaction must abort, not that the write may be retried.
    virtual bool inTransaction() const { return false; }

    // After a DuplicateKey error: {keyPattern: {...}, keyValue: {...}} for the error reply.
    virtual bson::BsonObj duplicateKeyInfo() const = 0;
};

}  // namespace tessera::storage
