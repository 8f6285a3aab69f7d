#pragma once

#include <functional>
#include <optional>
#include <string>

#include "base/hlc.h"
#include "base/status.h"
#include "bson/bson_obj.h"
#include "storage/catalog_types.h"
#include "storage/read_snapshot.h"

namespace tessera::storage {

struct WriteOptions {
    bool sync = false;  // j:true — fsync the WAL before acknowledging
};

// A key/value that every document write of this thread makes in the same atomic batch while the
// scope lives (the shard's retryable-write record: a write and the proof that it ran become
// durable together or not at all). The value is computed per write from what the write did.
// Read back with Engine::sideRecords. Scopes do not nest.
class SideRecordScope {
  public:
    enum class Op { kInsert, kUpdate, kRemove };
    // `before`: the version replaced or removed (empty for kInsert); `after`: the version written
    // (empty for kRemove). Both stay valid only for the call.
    using ValueFn = std::function<std::string(Op op, bson::BsonView before, bson::BsonView after)>;

    SideRecordScope(std::string key, ValueFn value);
    ~SideRecordScope();
    SideRecordScope(const SideRecordScope&) = delete;
    SideRecordScope& operator=(const SideRecordScope&) = delete;

    // The record of this thread's active scope, or null (for the writer).
    static const SideRecordScope* active();
    const std::string& key() const { return _key; }
    std::string value(Op op, bson::BsonView before, bson::BsonView after) const {
        return _value(op, before, after);
    }

  private:
    std::string _key;
    ValueFn _value;
};

// Exclusive writer for one collection (holds its write lock while alive). Each mutating call is
// one atomic RocksDB write: the document version, every index entry and the collection's counts
// change together, stamped with one HLC commit timestamp. Reads through the writer see the
// latest committed state (including this writer's earlier calls).
//
// Uniqueness (the _id index and unique secondary indexes) is checked against the latest state;
// a violation returns DuplicateKey (11000) with MongoDB's message
//   "E11000 duplicate key error collection: db.c index: a_1 dup key: { a: 1 }"
// and nothing is written. Use duplicateKeyInfo() to get keyPattern/keyValue for the reply.
class CollectionWriter {
  public:
    virtual ~CollectionWriter() = default;
    virtual const CollectionInfo& collection() const = 0;

    // `doc` must already have an `_id` (first field) and be valid for storage.
    virtual StatusWith<Timestamp> insert(bson::BsonView doc, const WriteOptions& opts) = 0;
    // Replaces the document at recordKey with newDoc (same _id). NoSuchKey if it is gone.
    virtual StatusWith<Timestamp> update(std::string_view recordKey, bson::BsonView newDoc,
                                         const WriteOptions& opts) = 0;
    virtual StatusWith<Timestamp> remove(std::string_view recordKey, const WriteOptions& opts) = 0;

    // Latest committed state, for read-modify-write under the lock.
    virtual std::unique_ptr<ReadSnapshot> latest() = 0;

    // After a DuplicateKey error: {keyPattern: {...}, keyValue: {...}} for the error reply.
    virtual bson::BsonObj duplicateKeyInfo() const = 0;
};

}  // namespace tessera::storage
