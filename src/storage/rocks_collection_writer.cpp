#include "storage/rocks_collection_writer.h"

#include <algorithm>

#include "bson/bson_builder.h"
#include "keystring/keystring.h"
#include "storage/catalog_codec.h"
#include "storage/cluster_key.h"
#include "storage/key_format.h"
#include "storage/rocks_engine.h"
#include "storage/rocks_read_snapshot.h"

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

thread_local const SideRecordScope* tSideRecord = nullptr;

}  // namespace

SideRecordScope::SideRecordScope(std::string key, ValueFn value)
    : _key(std::move(key)), _value(std::move(value)) {
    invariant(tSideRecord == nullptr);
    tSideRecord = this;
}

SideRecordScope::~SideRecordScope() { tSideRecord = nullptr; }

const SideRecordScope* SideRecordScope::active() { return tSideRecord; }

RocksCollectionWriter::RocksCollectionWriter(RocksEngine* engine, CollectionPtr coll,
                                             std::shared_ptr<CollectionState> state,
                                             std::unique_lock<std::mutex> lock)
    : _engine(engine),
      _coll(std::move(coll)),
      _state(std::move(state)),
      _lock(std::move(lock)),
      _firstIndex(_coll->idIndexIsRecords() ? 1 : 0),
      _records(engine->db(), engine->recordsCf(), nullptr),
      _indexes(engine->db(), engine->indexesCf(), nullptr) {
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

Status RocksCollectionWriter::computeIndexDeltas(const bson::BsonView* oldDoc,
                                                 const bson::BsonView* newDoc,
                                                 std::string_view oldRecordKey,
                                                 std::string_view newRecordKey) {
    // A moved record changes every entry: non-unique user keys hold the record key, and unique
    // entries' values do.
    bool moved = oldDoc && newDoc && oldRecordKey != newRecordKey;
    std::vector<std::string> oldKeys, newKeys;
    for (size_t i = 0; i < _generators.size(); ++i) {
        const IndexSpec& index = indexAt(i);
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
        if (!index.unique) continue;
        for (const std::string& key : delta.added) {
            appendIndexUserKey(_keyBuf, _coll->id, index, key, newRecordKey);
            std::string_view owner;
            // The document's own entry (before a move: at its old record key) is no conflict; on
            // insert every owner is one.
            if (!_indexes.get(_keyBuf, Timestamp::max(), &owner) ||
                (oldDoc && (owner == newRecordKey || owner == oldRecordKey))) {
                continue;
            }
            // Report the values of the conflicting key as the document has them.
            std::vector<std::string> keys;
            std::vector<bson::BsonObj> values;
            Status s = _generators[i].getKeys(*newDoc, &keys, nullptr, &values);
            invariant(s.isOK());
            auto it = std::find(keys.begin(), keys.end(), key);
            invariant(it != keys.end());
            return duplicateKey(index, values[it - keys.begin()]);
        }
    }
    return Status::OK();
}

StatusWith<Timestamp> RocksCollectionWriter::commit(std::string_view movedFrom,
                                                    std::string_view recordKey,
                                                    const bson::BsonView* oldDoc,
                                                    const bson::BsonView* doc, int64_t countDelta,
                                                    int64_t sizeDelta, const WriteOptions& opts) {
    std::shared_ptr<CollectionInfo> newInfo;
    for (size_t i = 0; i < _deltas.size(); ++i) {
        if (_deltas[i].multikey && !indexAt(i).multikey) {
            if (!newInfo) newInfo = std::make_shared<CollectionInfo>(*_coll);
            newInfo->indexes[i + _firstIndex].multikey = true;
        }
    }
    std::string_view removedRecordKey = movedFrom.empty() ? recordKey : movedFrom;
    int64_t newCount = _state->count.load() + countDelta;
    int64_t newSize = _state->dataSize.load() + sizeDelta;

    rocksdb::Status s;
    Timestamp ts;
    {
        CommitGuard commit(_engine->visibility());
        ts = commit.ts();
        _batch.Clear();
        if (!movedFrom.empty()) {
            _keyBuf.clear();
            keys::appendBigEndian64(_keyBuf, _coll->id);
            _keyBuf.append(movedFrom);
            keys::appendTs(_keyBuf, ts);
            s = _batch.Put(_engine->recordsCf(), _keyBuf, rocksdb::Slice());
        }
        _keyBuf.clear();
        keys::appendBigEndian64(_keyBuf, _coll->id);
        _keyBuf.append(recordKey);
        keys::appendTs(_keyBuf, ts);
        rocksdb::Slice value =
            doc ? rocksdb::Slice(reinterpret_cast<const char*>(doc->data()), doc->size())
                : rocksdb::Slice();
        if (s.ok()) s = _batch.Put(_engine->recordsCf(), _keyBuf, value);
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
                s = _batch.Put(_engine->indexesCf(), _keyBuf, rocksdb::Slice());
            }
            for (const std::string& key : _deltas[i].added) {
                appendIndexUserKey(_keyBuf, _coll->id, index, key, recordKey);
                keys::appendTs(_keyBuf, ts);
                s = _batch.Put(_engine->indexesCf(), _keyBuf,
                               rocksdb::Slice(recordKey.data(), recordKey.size()));
            }
        }
        if (newInfo) {
            bson::BsonObj entry = encodeCollectionInfo(*newInfo);
            s = _batch.Put(
                _engine->catalogCf(), keys::catalogCollKey(_coll->id),
                rocksdb::Slice(reinterpret_cast<const char*>(entry.data()), entry.size()));
        }
        _engine->putCounts(&_batch, _coll->id, newCount, newSize, ts);
        if (const SideRecordScope* side = SideRecordScope::active(); side && s.ok()) {
            std::string key(keys::kSideRecordPrefix);
            key.append(side->key());
            SideRecordScope::Op op = countDelta > 0   ? SideRecordScope::Op::kInsert
                                     : countDelta < 0 ? SideRecordScope::Op::kRemove
                                                      : SideRecordScope::Op::kUpdate;
            s = _batch.Put(_engine->catalogCf(), key,
                           side->value(op, oldDoc ? *oldDoc : bson::BsonView(),
                                       doc ? *doc : bson::BsonView()));
        }
        if (s.ok()) {
            rocksdb::WriteOptions wo;
            wo.sync = opts.sync;
            s = _engine->db()->Write(wo, &_batch);
        }
    }
    _records.markStale();
    _indexes.markStale();
    if (!s.ok()) return Status(ErrorCodes::InternalError, "storage write failed: " + s.ToString());
    _state->count.store(newCount);
    _state->dataSize.store(newSize);
    if (newInfo) {
        _engine->publish(newInfo);
        _coll = std::move(newInfo);
    }
    return ts;
}

StatusWith<Timestamp> RocksCollectionWriter::insert(bson::BsonView doc, const WriteOptions& opts) {
    bson::BsonElement id = doc.firstElement();
    if (id.eoo() || id.fieldName() != "_id") id = doc.getField("_id");
    if (id.eoo()) return Status(ErrorCodes::BadValue, "document to insert has no _id");
    ASSIGN_OR_RETURN(std::string recordKey, makeRecordKey(*_coll, doc));

    if (_coll->idIndexIsRecords()) {
        // The record key is the _id: the uniqueness check of _id_ is this lookup.
        _keyBuf.clear();
        keys::appendBigEndian64(_keyBuf, _coll->id);
        _keyBuf.append(recordKey);
        std::string_view existing;
        if (_records.get(_keyBuf, Timestamp::max(), &existing)) {
            bson::BsonObj keyValue = bson::BsonBuilder().appendElementAs(id, "_id").obj();
            return duplicateKey(_coll->indexes[0], std::move(keyValue));
        }
    }
    // With a cluster key, _id_ is a unique index checked with the others (a record key holds
    // the _id, so an unused _id means an unused record key).
    TRY_STATUS(computeIndexDeltas(nullptr, &doc, {}, recordKey));
    return commit({}, recordKey, nullptr, &doc, 1, static_cast<int64_t>(doc.size()), opts);
}

StatusWith<Timestamp> RocksCollectionWriter::update(std::string_view recordKey,
                                                    bson::BsonView newDoc,
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
    _keyBuf.clear();
    keys::appendBigEndian64(_keyBuf, _coll->id);
    _keyBuf.append(recordKey);
    std::string_view existing;
    if (!_records.get(_keyBuf, Timestamp::max(), &existing)) {
        return Status(ErrorCodes::NoSuchKey, "document to update no longer exists");
    }
    _oldValue.assign(existing);
    bson::BsonView oldDoc(_oldValue.data());
    std::string newRecordKey(recordKey);
    if (!_coll->idIndexIsRecords()) {
        if (keystring::encodeValue(oldDoc.getField("_id")) != keystring::encodeValue(id)) {
            return immutableId();
        }
        // A changed cluster key moves the record (tombstone at the old key, in the same batch).
        ASSIGN_OR_RETURN(newRecordKey, makeRecordKey(*_coll, newDoc));
    }
    TRY_STATUS(computeIndexDeltas(&oldDoc, &newDoc, recordKey, newRecordKey));
    int64_t sizeDelta = static_cast<int64_t>(newDoc.size()) - static_cast<int64_t>(oldDoc.size());
    std::string_view movedFrom = newRecordKey == recordKey ? std::string_view() : recordKey;
    return commit(movedFrom, newRecordKey, &oldDoc, &newDoc, 0, sizeDelta, opts);
}

StatusWith<Timestamp> RocksCollectionWriter::remove(std::string_view recordKey,
                                                    const WriteOptions& opts) {
    _keyBuf.clear();
    keys::appendBigEndian64(_keyBuf, _coll->id);
    _keyBuf.append(recordKey);
    std::string_view existing;
    if (!_records.get(_keyBuf, Timestamp::max(), &existing)) {
        return Status(ErrorCodes::NoSuchKey, "document to remove no longer exists");
    }
    _oldValue.assign(existing);
    bson::BsonView oldDoc(_oldValue.data());
    TRY_STATUS(computeIndexDeltas(&oldDoc, nullptr, recordKey, recordKey));
    return commit({}, recordKey, &oldDoc, nullptr, -1, -static_cast<int64_t>(oldDoc.size()), opts);
}

std::unique_ptr<ReadSnapshot> RocksCollectionWriter::latest() {
    return std::make_unique<RocksReadSnapshot>(_engine, Timestamp::max(), nullptr, nullptr);
}

}  // namespace tessera::storage
