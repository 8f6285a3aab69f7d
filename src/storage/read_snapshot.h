#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/hlc.h"
#include "bson/bson_obj.h"
#include "storage/catalog_types.h"

namespace tessera::storage {

// A document with its record key (cluster_key.h: keystring(_id), or keystring(cluster key
// values) ‖ keystring(_id) in a collection with a cluster key). Opaque to callers.
struct Record {
    std::string recordKey;
    bson::BsonObj doc;
};

class PrepareReads;

// A cursor ends (nullopt) at its last entry, or where it met a prepared transaction whose
// decision its operation may not wait for: the operation's PrepareReads
// (prepared_transactions.h) then holds the conflict, which fails the operation.
class RecordCursor {
  public:
    virtual ~RecordCursor() = default;
    // Next record, or nullopt at the end (or at a conflict, above).
    virtual std::optional<Record> next() = 0;
};

// One index entry: the key (keystring of the indexed values, in key-pattern order and
// direction) and the record it points to.
struct IndexEntry {
    std::string key;
    std::string recordKey;
};

class IndexCursor {
  public:
    virtual ~IndexCursor() = default;
    virtual std::optional<IndexEntry> next() = 0;
};

// Bounds on encoded index keys (keystring::Builder output for the index's key pattern,
// directions included). Empty `low` means from the start; empty `high` means to the end.
struct KeyRange {
    std::string low;
    bool lowInclusive = true;
    std::string high;
    bool highInclusive = true;
};

// A consistent, read-only view of the whole database at one timestamp. Cursors created from a
// snapshot stay valid while the snapshot lives (keep the snapshot alive with the cursor, e.g.
// across getMore). Thread-compatible: use one snapshot from one thread at a time.
class ReadSnapshot {
  public:
    virtual ~ReadSnapshot() = default;
    virtual Timestamp timestamp() const = 0;

    virtual std::optional<bson::BsonObj> findByRecordKey(const CollectionInfo& coll,
                                                         std::string_view recordKey) = 0;
    virtual std::optional<Record> findById(const CollectionInfo& coll,
                                           const bson::BsonElement& id) = 0;
    // All documents in record-key order (forward or backward): cluster key order.
    virtual std::unique_ptr<RecordCursor> scan(const CollectionInfo& coll, bool forward = true) = 0;
    // The documents whose record keys are within `range` (bounds on record keys, with
    // KeyRange's prefix semantics: an inclusive bound includes every record key that starts
    // with it), in record-key order. With a cluster key, a range of cluster key values
    // (encoded like cluster_key.h, without _id) is contiguous: one seek, no filtering.
    virtual std::unique_ptr<RecordCursor> scanRange(const CollectionInfo& coll,
                                                    const KeyRange& range, bool forward = true) = 0;
    // Index entries within `range`, in key order (forward or backward). Each record appears
    // once per distinct key it has (multikey indexes may yield a record several times).
    virtual std::unique_ptr<IndexCursor> indexScan(const CollectionInfo& coll,
                                                   const IndexSpec& index, const KeyRange& range,
                                                   bool forward = true) = 0;

    // The operation whose reads these are from now on (a cursor's getMore): its PrepareReads
    // bounds every wait for a prepared transaction's decision, and notes the conflicts.
    virtual void bindPrepareReads(std::shared_ptr<PrepareReads> reads) = 0;
};

}  // namespace tessera::storage
