#include "storage/rocks_collection_writer.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "base/mutex.h"
#include "bson/bson_builder.h"
#include "keystring/keystring.h"
#include "storage/catalog_codec.h"
#include "storage/cluster_key.h"
#include "storage/key_format.h"
#include "storage/rocks_engine.h"
#include "storage/rocks_read_snapshot.h"
#include "storage/rocks_transaction.h"

namespace tessera::storage {
namespace {

// Ends a commit (making it visible) whatever happens to its write.
class CommitGuard {
  public:
    CommitGuard(VisibilityTracker& tracker) : _tracker(tracker), _ts(tracker.beginCommit()) {}
    ~CommitGuard() { _tracker.endCommit(_ts); }
    Timestamp ts() const { return _ts; }

  private:
    VisibilityTracker& _tracker;
    Timestamp _ts;
};

void appendIndexUserKey(std::string& out, uint64_t collId, const IndexSpec& index,
                        std::string_view key, std::string_view recordKey) {
    out.clear();
    keys::appendBigEndian64(out, collId);
    keys::appendBigEndian32(out, index.id);
    out.append(key);
    if (!index.unique) out.append(recordKey);
}

// Side records of a batch of document writes: one Put per key, the last value (each observer
// record is an absolute value; a batch of 20 000 inserts into one tracked range would otherwise
// put its counts 20 000 times).
std::vector<std::pair<std::string, std::string>> lastPerKey(
    std::vector<std::pair<std::string, std::string>> records) {
    std::vector<std::pair<std::string, std::string>> out;
    std::set<std::string> seen;
    for (auto it = records.rbegin(); it != records.rend(); ++it) {
        if (seen.insert(it->first).second) out.push_back(std::move(*it));
    }
    std::reverse(out.begin(), out.end());
    return out;
}

}  // namespace

RocksCollectionWriter::RocksCollectionWriter(RocksEngine* engine, CollectionPtr coll,
                                             std::shared_ptr<CollectionState> state,
                                             std::shared_lock<CollectionLock> lock,
                                             const WriteUnit* unit, RocksTransaction* txn)
    : _engine(engine),
      _coll(std::move(coll)),
      _state(std::move(state)),
      _lock(std::move(lock)),
      _unit(unit),
      _txn(txn),
      _firstIndex(_coll->idIndexIsRecords() ? 1 : 0),
      _records(engine->db(), engine->recordsCf(), nullptr, engine->recordsPointIterators()),
      _indexes(engine->db(), engine->indexesCf(), nullptr, engine->indexesPointIterators()) {
    for (size_t i = _firstIndex; i < _coll->indexes.size(); ++i) {
        _generators.emplace_back(_coll->indexes[i]);
    }
    _deltas.resize(_generators.size());
}

RocksCollectionWriter::~RocksCollectionWriter() = default;

Status RocksCollectionWriter::duplicateKey(const IndexSpec& index, bson::BsonObj keyValue) {
    _dupInfo = bson::BsonBuilder()
                   .appendObject("keyPattern", index.keyPattern)
                   .appendObject("keyValue", keyValue)
                   .obj();
    return Status(ErrorCodes::DuplicateKey,
                  "E11000 duplicate key error collection: " + _coll->ns() +
                      " index: " + index.name + " dup key: " + formatKeyForMessage(keyValue));
}

Status RocksCollectionWriter::checkIntents(const std::vector<std::string>& lockKeys) {
    if (_txn) return _txn->claim(_coll->id, lockKeys);
    return _engine->intents().checkFree(_coll->id, lockKeys);
}

StatusWith<bool> RocksCollectionWriter::latestLive(PointReader& reader,
                                                   rocksdb::ColumnFamilyHandle* cf,
                                                   std::string_view userKey,
                                                   std::string_view* value) {
    if (!_txn) return reader.get(userKey, Timestamp::max(), value);
    if (std::optional<std::string> own = _txn->overlay().ownVersion(cf, userKey)) {
        _ownValue = std::move(*own);
        *value = _ownValue;
        return !_ownValue.empty();
    }
    Timestamp ts;
    if (!reader.newest(userKey, value, &ts)) return false;
    if (ts > _txn->readTimestamp()) return transactionWriteConflict();
    return !value->empty();
}

Status RocksCollectionWriter::computeIndexDeltas(const bson::BsonView* oldDoc,
                                                 const bson::BsonView* newDoc,
                                                 std::string_view oldRecordKey,
                                                 std::string_view newRecordKey) {
    // A moved record changes every entry: non-unique user keys hold the record key, and unique
    // entries' values do.
    bool moved = oldDoc && newDoc && oldRecordKey != newRecordKey;
    std::vector<std::string> oldKeys, newKeys;
    for (size_t i = 0; i < _generators.size(); ++i) {
        IndexDelta& delta = _deltas[i];
        delta.removed.clear();
        delta.added.clear();
        delta.multikey = false;
        oldKeys.clear();
        newKeys.clear();
        if (oldDoc) {
            // The stored version was indexable when it was written.
            Status s = _generators[i].getKeys(*oldDoc, &oldKeys, nullptr);
            invariant(s.isOK());
        }
        if (newDoc) TRY_STATUS(_generators[i].getKeys(*newDoc, &newKeys, &delta.multikey));
        if (moved) {
            delta.removed = oldKeys;
            delta.added = newKeys;
        } else {
            std::set_difference(oldKeys.begin(), oldKeys.end(), newKeys.begin(), newKeys.end(),
                                std::back_inserter(delta.removed));
            std::set_difference(newKeys.begin(), newKeys.end(), oldKeys.begin(), oldKeys.end(),
                                std::back_inserter(delta.added));
        }
    }
    return Status::OK();
}

std::vector<std::string> RocksCollectionWriter::lockKeys(
    std::initializer_list<std::string_view> recordKeys) const {
    std::vector<std::string> keys;
    for (std::string_view rk : recordKeys) {
        if (!rk.empty()) keys.push_back("r" + std::string(rk));
    }
    for (size_t i = 0; i < _deltas.size(); ++i) {
        const IndexSpec& index = indexAt(i);
        if (!index.unique) continue;  // its entries hold the record key: the record lock covers
        for (const auto* list : {&_deltas[i].added, &_deltas[i].removed}) {
            for (const std::string& key : *list) {
                std::string k = "u";
                keys::appendBigEndian32(k, index.id);
                k.append(key);
                keys.push_back(std::move(k));
            }
        }
    }
    return keys;
}

Status RocksCollectionWriter::checkUnique(const bson::BsonView* oldDoc,
                                          const bson::BsonView& newDoc,
                                          std::string_view oldRecordKey,
                                          std::string_view newRecordKey) {
    for (size_t i = 0; i < _generators.size(); ++i) {
        const IndexSpec& index = indexAt(i);
        if (!index.unique) continue;
        for (const std::string& key : _deltas[i].added) {
            appendIndexUserKey(_keyBuf, _coll->id, index, key, newRecordKey);
            std::string_view owner;
            // The document's own entry (before a move: at its old record key) is no conflict; on
            // insert every owner is one.
            ASSIGN_OR_RETURN(bool owned,
                             latestLive(_indexes, _engine->indexesCf(), _keyBuf, &owner));
            if (!owned || (oldDoc && (owner == newRecordKey || owner == oldRecordKey))) {
                continue;
            }
            // Report the values of the conflicting key as the document has them.
            std::vector<std::string> keys;
            std::vector<bson::BsonObj> values;
            Status s = _generators[i].getKeys(newDoc, &keys, nullptr, &values);
            invariant(s.isOK());
            auto it = std::find(keys.begin(), keys.end(), key);
            invariant(it != keys.end());
            return duplicateKey(index, values[it - keys.begin()]);
        }
    }
    return Status::OK();
}

Status RocksCollectionWriter::checkExpected(std::string_view recordKey, bson::BsonView expected) {
    _keyBuf.clear();
    keys::appendBigEndian64(_keyBuf, _coll->id);
    _keyBuf.append(recordKey);
    std::string_view existing;
    ASSIGN_OR_RETURN(bool live, latestLive(_records, _engine->recordsCf(), _keyBuf, &existing));
    if (!live) return Status(ErrorCodes::NoSuchKey, "the document no longer exists");
    if (existing.size() != expected.size() ||
        std::memcmp(existing.data(), expected.data(), existing.size()) != 0) {
        return Status(ErrorCodes::WriteConflict,
                      "WriteConflict: the document was changed by a concurrent write");
    }
    return Status::OK();
}

StatusWith<Timestamp> RocksCollectionWriter::commit(std::string_view movedFrom,
                                                    std::string_view recordKey,
                                                    const bson::BsonView* oldDoc,
                                                    const bson::BsonView* doc, int64_t countDelta,
                                                    int64_t sizeDelta, const WriteOptions& opts) {
    // An index that becomes multikey changes the collection's metadata in this write's batch;
    // concurrent writers serialize those changes and build them on the published metadata.
    bool becomesMultikey = false;
    for (size_t i = 0; i < _deltas.size(); ++i) {
        becomesMultikey = becomesMultikey || (_deltas[i].multikey && !indexAt(i).multikey);
    }
    std::unique_lock<Mutex> catalogLock;
    std::shared_ptr<CollectionInfo> newInfo;
    if (becomesMultikey) {
        catalogLock = std::unique_lock(_state->catalogUpdate);
        CollectionPtr published = _engine->currentInfo(_coll->id);
        if (!published) published = _coll;
        for (size_t i = 0; i < _deltas.size(); ++i) {
            size_t at = i + _firstIndex;
            if (_deltas[i].multikey && at < published->indexes.size() &&
                !published->indexes[at].multikey) {
                if (!newInfo) newInfo = std::make_shared<CollectionInfo>(*published);
                newInfo->indexes[at].multikey = true;
            }
        }
        if (!newInfo) _coll = published;  // another writer published it meanwhile
    }
    if (_txn) {
        return commitIntent(movedFrom, recordKey, oldDoc, doc, countDelta, sizeDelta,
                            std::move(newInfo));
    }

    rocksdb::Status s;
    Timestamp ts;
    {
        CommitGuard commit(_engine->visibility());
        ts = commit.ts();
        // Observers run once the write holds its commit timestamp (write_observer.h): one that
        // starts observing and then reads at Engine::snapshotIncludingInFlight() either sees
        // this write in that snapshot or is called for it.
        notifyObservers(oldDoc, doc, countDelta);
        _batch.Clear();
        s = putVersions(&_batch, ts, movedFrom, recordKey, doc);
        if (newInfo) {
            bson::BsonObj entry = encodeCollectionInfo(*newInfo);
            s = _batch.Put(
                _engine->catalogCf(), keys::catalogCollKey(_coll->id),
                rocksdb::Slice(reinterpret_cast<const char*>(entry.data()), entry.size()));
        }
        _engine->mergeCounts(&_batch, _coll->id, countDelta, sizeDelta, ts);
        if (s.ok()) s = putSideRecords(&_batch);
        if (s.ok()) {
            rocksdb::WriteOptions wo;
            wo.sync = opts.sync;
            s = _engine->write(wo, &_batch);
        }
    }
    if (!s.ok()) return RocksEngine::writeFailure(s);
    _state->count.fetch_add(countDelta);
    _state->dataSize.fetch_add(sizeDelta);
    if (newInfo) {
        _engine->publish(newInfo);
        _coll = std::move(newInfo);
    }
    return ts;
}

rocksdb::Status RocksCollectionWriter::putVersions(rocksdb::WriteBatchBase* batch, Timestamp ts,
                                                   std::string_view movedFrom,
                                                   std::string_view recordKey,
                                                   const bson::BsonView* doc) {
    std::string_view removedRecordKey = movedFrom.empty() ? recordKey : movedFrom;
    rocksdb::Status s;
    if (!movedFrom.empty()) {
        _keyBuf.clear();
        keys::appendBigEndian64(_keyBuf, _coll->id);
        _keyBuf.append(movedFrom);
        keys::appendTs(_keyBuf, ts);
        s = batch->Put(_engine->recordsCf(), _keyBuf, rocksdb::Slice());
    }
    _keyBuf.clear();
    keys::appendBigEndian64(_keyBuf, _coll->id);
    _keyBuf.append(recordKey);
    keys::appendTs(_keyBuf, ts);
    rocksdb::Slice value =
        doc ? rocksdb::Slice(reinterpret_cast<const char*>(doc->data()), doc->size())
            : rocksdb::Slice();
    if (s.ok()) s = batch->Put(_engine->recordsCf(), _keyBuf, value);
    for (size_t i = 0; s.ok() && i < _deltas.size(); ++i) {
        const IndexSpec& index = indexAt(i);
        for (const std::string& key : _deltas[i].removed) {
            // A unique key the moved record keeps is overwritten below (same user key and
            // timestamp), not tombstoned.
            if (index.unique && !movedFrom.empty() &&
                std::binary_search(_deltas[i].added.begin(), _deltas[i].added.end(), key)) {
                continue;
            }
            appendIndexUserKey(_keyBuf, _coll->id, index, key, removedRecordKey);
            keys::appendTs(_keyBuf, ts);
            s = batch->Put(_engine->indexesCf(), _keyBuf, rocksdb::Slice());
        }
        for (const std::string& key : _deltas[i].added) {
            appendIndexUserKey(_keyBuf, _coll->id, index, key, recordKey);
            keys::appendTs(_keyBuf, ts);
            s = batch->Put(_engine->indexesCf(), _keyBuf,
                           rocksdb::Slice(recordKey.data(), recordKey.size()));
        }
    }
    return s;
}

StatusWith<Timestamp> RocksCollectionWriter::commitIntent(std::string_view movedFrom,
                                                          std::string_view recordKey,
                                                          const bson::BsonView* oldDoc,
                                                          const bson::BsonView* doc,
                                                          int64_t countDelta, int64_t sizeDelta,
                                                          std::shared_ptr<CollectionInfo> newInfo) {
    if (newInfo) {
        // Marking an index multikey early is always safe (the planner only stops assuming
        // single keys), so it does not wait for the transaction and survives its abort.
        rocksdb::WriteBatch catalog;
        bson::BsonObj entry = encodeCollectionInfo(*newInfo);
        rocksdb::Status s =
            catalog.Put(_engine->catalogCf(), keys::catalogCollKey(_coll->id),
                        rocksdb::Slice(reinterpret_cast<const char*>(entry.data()), entry.size()));
        rocksdb::WriteOptions wo;
        wo.sync = true;
        if (s.ok()) s = _engine->write(wo, &catalog);
        if (!s.ok()) {
            return RocksEngine::writeFailure(s);
        }
        _engine->publish(newInfo);
        _coll = std::move(newInfo);
    }
    rocksdb::Status s =
        putVersions(&_txn->overlay().batch, keys::kIntentTs, movedFrom, recordKey, doc);
    if (!s.ok())
        return Status(ErrorCodes::InternalError, "transaction write failed: " + s.ToString());
    WriteObserver::Op op = countDelta > 0   ? WriteObserver::Op::kInsert
                           : countDelta < 0 ? WriteObserver::Op::kRemove
                                            : WriteObserver::Op::kUpdate;
    _txn->recordWrite(_coll, _state, op, oldDoc ? *oldDoc : bson::BsonView(),
                      doc ? *doc : bson::BsonView(), countDelta, sizeDelta);
    return _txn->readTimestamp();
}

void RocksCollectionWriter::notifyObservers(const bson::BsonView* oldDoc, const bson::BsonView* doc,
                                            int64_t countDelta) {
    _sideRecords.clear();
    if (!_unit) return;
    WriteObserver::Op op = countDelta > 0   ? WriteObserver::Op::kInsert
                           : countDelta < 0 ? WriteObserver::Op::kRemove
                                            : WriteObserver::Op::kUpdate;
    for (WriteObserver* observer : _unit->observers()) {
        observer->onWrite(*_coll, op, oldDoc ? *oldDoc : bson::BsonView(),
                          doc ? *doc : bson::BsonView(), &_sideRecords);
    }
}

rocksdb::Status RocksCollectionWriter::putSideRecords(rocksdb::WriteBatch* batch) {
    rocksdb::Status s;
    for (const auto& [key, value] : _sideRecords) {
        std::string k(keys::kSideRecordPrefix);
        k.append(key);
        s = value.empty() ? batch->Delete(_engine->catalogCf(), k)
                          : batch->Put(_engine->catalogCf(), k, value);
        if (!s.ok()) break;
    }
    return s;
}

StatusWith<Timestamp> RocksCollectionWriter::insert(bson::BsonView doc, const WriteOptions& opts) {
    bson::BsonElement id = doc.firstElement();
    if (id.eoo() || id.fieldName() != "_id") id = doc.getField("_id");
    if (id.eoo()) return Status(ErrorCodes::BadValue, "document to insert has no _id");
    ASSIGN_OR_RETURN(std::string recordKey, makeRecordKey(*_coll, doc));
    TRY_STATUS(computeIndexDeltas(nullptr, &doc, {}, recordKey));
    std::vector<std::string> keys = lockKeys({recordKey});
    KeyLocks::Guard guard = _engine->keyLocks().lock(_coll->id, {keys.begin(), keys.end()});
    TRY_STATUS(checkIntents(keys));
    _records.markStale();
    _indexes.markStale();
    if (_coll->idIndexIsRecords()) {
        // The record key is the _id: the uniqueness check of _id_ is this lookup.
        _keyBuf.clear();
        keys::appendBigEndian64(_keyBuf, _coll->id);
        _keyBuf.append(recordKey);
        std::string_view existing;
        ASSIGN_OR_RETURN(bool taken,
                         latestLive(_records, _engine->recordsCf(), _keyBuf, &existing));
        if (taken) {
            bson::BsonObj keyValue = bson::BsonBuilder().appendElementAs(id, "_id").obj();
            return duplicateKey(_coll->indexes[0], std::move(keyValue));
        }
    }
    // With a cluster key, _id_ is a unique index checked with the others (a record key holds
    // the _id, so an unused _id means an unused record key).
    TRY_STATUS(checkUnique(nullptr, doc, {}, recordKey));
    return commit({}, recordKey, nullptr, &doc, 1, static_cast<int64_t>(doc.size()), opts);
}

StatusWith<int64_t> RocksCollectionWriter::insertBatch(const std::vector<bson::BsonView>& docs,
                                                       const WriteOptions& opts, int64_t* skipped) {
    if (_txn) return Status(ErrorCodes::OperationNotSupportedInTransaction, "insertBatch");
    // Each document's record key and index keys first (no lock held), then every key of the
    // batch locked at once, the uniqueness checks under the locks, and one write.
    struct Pending {
        bson::BsonView doc;
        std::string recordKey;
        std::vector<IndexDelta> deltas;
    };
    std::vector<Pending> pending;
    pending.reserve(docs.size());
    std::vector<std::string> lockList;
    for (bson::BsonView doc : docs) {
        if (doc.getField("_id").eoo()) {
            return Status(ErrorCodes::BadValue, "document to insert has no _id");
        }
        ASSIGN_OR_RETURN(std::string recordKey, makeRecordKey(*_coll, doc));
        TRY_STATUS(computeIndexDeltas(nullptr, &doc, {}, recordKey));
        for (size_t i = 0; i < _deltas.size(); ++i) {
            if (_deltas[i].multikey && !indexAt(i).multikey) {
                // Rare (a catalog change rides along): one document at a time.
                int64_t inserted = 0;
                for (bson::BsonView d : docs) {
                    auto one = insert(d, opts);
                    if (one.isOK()) {
                        ++inserted;
                    } else if (one.getStatus().is(ErrorCodes::DuplicateKey)) {
                        if (skipped) ++*skipped;
                    } else {
                        return one.getStatus();
                    }
                }
                return inserted;
            }
        }
        for (std::string& k : lockKeys({recordKey})) lockList.push_back(std::move(k));
        pending.push_back({doc, std::move(recordKey), _deltas});
    }
    if (pending.empty()) return int64_t{0};
    std::vector<std::string_view> lockViews(lockList.begin(), lockList.end());
    KeyLocks::Guard guard = _engine->keyLocks().lock(_coll->id, lockViews);
    _records.markStale();
    _indexes.markStale();
    std::set<std::string> taken;  // "r"/"u" lock keys claimed by earlier documents of the batch
    std::vector<const Pending*> accepted;
    for (const Pending& p : pending) {
        _deltas = p.deltas;
        std::vector<std::string> mine = lockKeys({p.recordKey});
        bool conflict = std::any_of(mine.begin(), mine.end(),
                                    [&](const std::string& k) { return taken.count(k) > 0; }) ||
                        !checkIntents(mine).isOK();  // a transaction holds it
        if (!conflict && _coll->idIndexIsRecords()) {
            _keyBuf.clear();
            keys::appendBigEndian64(_keyBuf, _coll->id);
            _keyBuf.append(p.recordKey);
            std::string_view existing;
            conflict = _records.get(_keyBuf, Timestamp::max(), &existing);
        }
        if (!conflict) conflict = !checkUnique(nullptr, p.doc, {}, p.recordKey).isOK();
        if (conflict) {
            if (skipped) ++*skipped;
            continue;
        }
        for (std::string& k : mine) taken.insert(std::move(k));
        accepted.push_back(&p);
    }
    if (accepted.empty()) return int64_t{0};

    rocksdb::Status s;
    int64_t count = 0, size = 0;
    std::vector<std::pair<std::string, std::string>> sideRecords;
    {
        CommitGuard commit(_engine->visibility());
        Timestamp ts = commit.ts();
        _batch.Clear();
        for (const Pending* p : accepted) {
            notifyObservers(nullptr, &p->doc, 1);
            for (auto& r : _sideRecords) sideRecords.push_back(std::move(r));
            _keyBuf.clear();
            keys::appendBigEndian64(_keyBuf, _coll->id);
            _keyBuf.append(p->recordKey);
            keys::appendTs(_keyBuf, ts);
            s = _batch.Put(
                _engine->recordsCf(), _keyBuf,
                rocksdb::Slice(reinterpret_cast<const char*>(p->doc.data()), p->doc.size()));
            for (size_t i = 0; s.ok() && i < p->deltas.size(); ++i) {
                for (const std::string& key : p->deltas[i].added) {
                    appendIndexUserKey(_keyBuf, _coll->id, indexAt(i), key, p->recordKey);
                    keys::appendTs(_keyBuf, ts);
                    s = _batch.Put(_engine->indexesCf(), _keyBuf,
                                   rocksdb::Slice(p->recordKey.data(), p->recordKey.size()));
                }
            }
            if (!s.ok()) break;
            ++count;
            size += static_cast<int64_t>(p->doc.size());
        }
        if (s.ok()) s = writeBatchOfMany(count, size, ts, std::move(sideRecords), opts);
    }
    TRY_STATUS(publishBatchOfMany(s, count, size));
    return count;
}

StatusWith<int64_t> RocksCollectionWriter::removeBatch(const std::vector<Record>& records,
                                                       const WriteOptions& opts, int64_t* skipped) {
    if (_txn) return Status(ErrorCodes::OperationNotSupportedInTransaction, "removeBatch");
    struct Pending {
        const Record* rec;
        std::vector<IndexDelta> deltas;
    };
    std::vector<Pending> pending;
    pending.reserve(records.size());
    std::vector<std::string> lockList;
    for (const Record& rec : records) {
        bson::BsonView doc = rec.doc;
        TRY_STATUS(computeIndexDeltas(&doc, nullptr, rec.recordKey, rec.recordKey));
        for (std::string& k : lockKeys({rec.recordKey})) lockList.push_back(std::move(k));
        pending.push_back({&rec, _deltas});
    }
    if (pending.empty()) return int64_t{0};
    std::vector<std::string_view> lockViews(lockList.begin(), lockList.end());
    KeyLocks::Guard guard = _engine->keyLocks().lock(_coll->id, lockViews);
    _records.markStale();
    std::vector<const Pending*> accepted;
    for (const Pending& p : pending) {
        _deltas = p.deltas;
        if (!checkIntents(lockKeys({p.rec->recordKey})).isOK() ||
            !checkExpected(p.rec->recordKey, p.rec->doc).isOK()) {
            if (skipped) ++*skipped;
            continue;
        }
        accepted.push_back(&p);
    }
    if (accepted.empty()) return int64_t{0};

    rocksdb::Status s;
    int64_t count = 0, size = 0;
    std::vector<std::pair<std::string, std::string>> sideRecords;
    {
        CommitGuard commit(_engine->visibility());
        Timestamp ts = commit.ts();
        _batch.Clear();
        for (const Pending* p : accepted) {
            bson::BsonView doc = p->rec->doc;
            notifyObservers(&doc, nullptr, -1);
            for (auto& r : _sideRecords) sideRecords.push_back(std::move(r));
            _keyBuf.clear();
            keys::appendBigEndian64(_keyBuf, _coll->id);
            _keyBuf.append(p->rec->recordKey);
            keys::appendTs(_keyBuf, ts);
            s = _batch.Put(_engine->recordsCf(), _keyBuf, rocksdb::Slice());
            for (size_t i = 0; s.ok() && i < p->deltas.size(); ++i) {
                for (const std::string& key : p->deltas[i].removed) {
                    appendIndexUserKey(_keyBuf, _coll->id, indexAt(i), key, p->rec->recordKey);
                    keys::appendTs(_keyBuf, ts);
                    s = _batch.Put(_engine->indexesCf(), _keyBuf, rocksdb::Slice());
                }
            }
            if (!s.ok()) break;
            --count;
            size -= static_cast<int64_t>(doc.size());
        }
        if (s.ok()) s = writeBatchOfMany(count, size, ts, std::move(sideRecords), opts);
    }
    TRY_STATUS(publishBatchOfMany(s, count, size));
    return -count;
}

rocksdb::Status RocksCollectionWriter::writeBatchOfMany(
    int64_t countDelta, int64_t sizeDelta, Timestamp ts,
    std::vector<std::pair<std::string, std::string>> sideRecords, const WriteOptions& opts) {
    _engine->mergeCounts(&_batch, _coll->id, countDelta, sizeDelta, ts);
    _sideRecords = lastPerKey(std::move(sideRecords));
    rocksdb::Status s = putSideRecords(&_batch);
    if (!s.ok()) return s;
    rocksdb::WriteOptions wo;
    wo.sync = opts.sync;
    return _engine->write(wo, &_batch);
}

Status RocksCollectionWriter::publishBatchOfMany(const rocksdb::Status& written, int64_t countDelta,
                                                 int64_t sizeDelta) {
    if (!written.ok()) {
        return RocksEngine::writeFailure(written);
    }
    _state->count.fetch_add(countDelta);
    _state->dataSize.fetch_add(sizeDelta);
    return Status::OK();
}

StatusWith<Timestamp> RocksCollectionWriter::update(std::string_view recordKey,
                                                    bson::BsonView expected, bson::BsonView newDoc,
                                                    const WriteOptions& opts) {
    auto immutableId = [] {
        return Status(ErrorCodes::ImmutableField,
                      "Performing an update on the path '_id' would modify the immutable field "
                      "'_id'");
    };
    bson::BsonElement id = newDoc.getField("_id");
    if (id.eoo()) return immutableId();
    if (_coll->idIndexIsRecords() && keystring::encodeValue(id) != recordKey) {
        return immutableId();
    }
    std::string newRecordKey(recordKey);
    if (!_coll->idIndexIsRecords()) {
        if (keystring::encodeValue(expected.getField("_id")) != keystring::encodeValue(id)) {
            return immutableId();
        }
        // A changed cluster key moves the record (tombstone at the old key, in the same batch).
        ASSIGN_OR_RETURN(newRecordKey, makeRecordKey(*_coll, newDoc));
    }
    TRY_STATUS(computeIndexDeltas(&expected, &newDoc, recordKey, newRecordKey));
    std::vector<std::string> keys =
        lockKeys({recordKey, newRecordKey == recordKey ? std::string_view() : newRecordKey});
    KeyLocks::Guard guard = _engine->keyLocks().lock(_coll->id, {keys.begin(), keys.end()});
    TRY_STATUS(checkIntents(keys));
    _records.markStale();
    _indexes.markStale();
    TRY_STATUS(checkExpected(recordKey, expected));
    TRY_STATUS(checkUnique(&expected, newDoc, recordKey, newRecordKey));
    int64_t sizeDelta = static_cast<int64_t>(newDoc.size()) - static_cast<int64_t>(expected.size());
    std::string_view movedFrom = newRecordKey == recordKey ? std::string_view() : recordKey;
    return commit(movedFrom, newRecordKey, &expected, &newDoc, 0, sizeDelta, opts);
}

StatusWith<Timestamp> RocksCollectionWriter::remove(std::string_view recordKey,
                                                    bson::BsonView expected,
                                                    const WriteOptions& opts) {
    TRY_STATUS(computeIndexDeltas(&expected, nullptr, recordKey, recordKey));
    std::vector<std::string> keys = lockKeys({recordKey});
    KeyLocks::Guard guard = _engine->keyLocks().lock(_coll->id, {keys.begin(), keys.end()});
    TRY_STATUS(checkIntents(keys));
    _records.markStale();
    TRY_STATUS(checkExpected(recordKey, expected));
    return commit({}, recordKey, &expected, nullptr, -1, -static_cast<int64_t>(expected.size()),
                  opts);
}

std::unique_ptr<ReadSnapshot> RocksCollectionWriter::latest() {
    if (_txn) return _txn->snapshot();
    // Prepared transactions hold their keys' claims: a writer of one waits at its claim.
    return std::make_unique<RocksReadSnapshot>(_engine, Timestamp::max(), nullptr,
                                               /*physical=*/false, nullptr);
}

std::optional<Record> RocksCollectionWriter::currentById(const bson::BsonElement& id) {
    // A transaction's view is its snapshot with its own writes: a conflict shows when it writes.
    if (_txn) return _txn->snapshot()->findById(*_coll, id);
    std::string recordKey;
    if (_coll->idIndexIsRecords()) {
        recordKey = keystring::encodeValue(id);
    } else {
        // The unique _id index entry names the record that has this _id now.
        _indexes.markStale();
        _keyBuf = keys::indexPrefix(_coll->id, _coll->indexes.front().id);
        _keyBuf.append(keystring::encodeValue(id));
        std::string_view owner;
        if (!_indexes.get(_keyBuf, Timestamp::max(), &owner)) return std::nullopt;
        recordKey.assign(owner);
    }
    std::optional<bson::BsonObj> doc = current(recordKey);
    if (!doc) return std::nullopt;
    return Record{std::move(recordKey), std::move(*doc)};
}

std::optional<bson::BsonObj> RocksCollectionWriter::current(std::string_view recordKey) {
    if (_txn) return _txn->snapshot()->findByRecordKey(*_coll, recordKey);
    _records.markStale();
    _keyBuf.clear();
    keys::appendBigEndian64(_keyBuf, _coll->id);
    _keyBuf.append(recordKey);
    std::string_view existing;
    if (!_records.get(_keyBuf, Timestamp::max(), &existing)) return std::nullopt;
    return bson::BsonObj::fromBytes(existing);
}

}  // namespace tessera::storage
