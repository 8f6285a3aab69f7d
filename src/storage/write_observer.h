#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bson/bson_obj.h"
#include "storage/catalog_types.h"

namespace tessera::storage {

// A protocol that needs to see an operation's document writes adds an observer to the
// operation's write unit; the storage engine calls it inside every document write and puts what
// it returns into the same atomic RocksDB batch as the document, its index entries and the
// collection's counts — so the write and what the protocol recorded about it become durable
// together or not at all. Today: the shard's retryable-write record (src/shard); next: a
// migration's catch-up of changed keys, later the replication log and transaction intents.
class WriteObserver {
  public:
    enum class Op { kInsert, kUpdate, kRemove };
    virtual ~WriteObserver() = default;
    // `before`: the version replaced or removed (empty for an insert); `after`: the version
    // written (empty for a remove). Both valid only during the call. Appends side records
    // (key, value) to `out`; they are stored under the catalog's side-record prefix
    // (Engine::sideRecords); an empty value deletes the record. Called with the document's key
    // locks held and its commit timestamp taken (still in flight), so an observer that begins
    // observing and then opens Engine::snapshotIncludingInFlight() misses no write: each one is
    // either in that snapshot or observed. Must not block.
    virtual void onWrite(const CollectionInfo& coll, Op op, bson::BsonView before,
                         bson::BsonView after,
                         std::vector<std::pair<std::string, std::string>>* out) = 0;
};

// The storage side of one operation (command::OperationContext::writeUnit): the observers of its
// document writes. Passed to Engine::writer; it must outlive the writers opened with it.
class WriteUnit {
  public:
    void addObserver(WriteObserver* observer) { _observers.push_back(observer); }
    void removeObserver(WriteObserver* observer) { std::erase(_observers, observer); }
    const std::vector<WriteObserver*>& observers() const { return _observers; }

    // An operation that must not wait (run on an io thread): Engine::writer fails with
    // InlineWouldBlock instead of waiting for DDL that holds the collection.
    void setMayWait(bool mayWait) { _mayWait = mayWait; }
    bool mayWait() const { return _mayWait; }

  private:
    std::vector<WriteObserver*> _observers;
    bool _mayWait = true;
};

}  // namespace tessera::storage
