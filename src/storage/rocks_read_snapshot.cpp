#include "storage/rocks_read_snapshot.h"

#include "keystring/keystring.h"
#include "storage/key_format.h"
#include "storage/rocks_engine.h"
#include "storage/rocks_transaction.h"

namespace tessera::storage {
namespace {

class RocksRecordCursor final : public RecordCursor {
  public:
    RocksRecordCursor(RocksEngine* engine, const rocksdb::Snapshot* snap, Timestamp ts,
                      std::string lower, std::string upper, bool forward,
                      rocksdb::WriteBatchWithIndex* overlay,
                      std::shared_ptr<const PreparedSet> prepared)
        : _it(engine->db(), engine->recordsCf(), snap, ts, std::move(lower), std::move(upper),
              forward, overlay, std::move(prepared)) {}

    std::optional<Record> next() override {
        std::string_view userKey, value;
        if (!_it.next(&userKey, &value)) return std::nullopt;
        return Record{std::string(userKey.substr(keys::kCollIdSize)),
                      bson::BsonObj::fromBytes(value)};
    }

  private:
    MvccIterator _it;
};

// Secondary index: user key = prefix(12) | keystring | [recordKey], value = recordKey.
class RocksIndexCursor final : public IndexCursor {
  public:
    RocksIndexCursor(RocksEngine* engine, const rocksdb::Snapshot* snap, Timestamp ts,
                     std::string lower, std::string upper, bool unique, bool forward,
                     rocksdb::WriteBatchWithIndex* overlay,
                     std::shared_ptr<const PreparedSet> prepared)
        : _it(engine->db(), engine->indexesCf(), snap, ts, std::move(lower), std::move(upper),
              forward, overlay, std::move(prepared)),
          _unique(unique) {}

    std::optional<IndexEntry> next() override {
        std::string_view userKey, value;
        if (!_it.next(&userKey, &value)) return std::nullopt;
        std::string_view key = userKey.substr(keys::kCollIdSize + keys::kIndexIdSize);
        if (!_unique) key.remove_suffix(value.size());
        return IndexEntry{std::string(key), std::string(value)};
    }

  private:
    MvccIterator _it;
    bool _unique;
};

// The _id_ index of a collection clustered by _id is the records keyspace: the key is the
// record key.
class IdIndexCursor final : public IndexCursor {
  public:
    IdIndexCursor(RocksEngine* engine, const rocksdb::Snapshot* snap, Timestamp ts,
                  std::string lower, std::string upper, bool forward,
                  rocksdb::WriteBatchWithIndex* overlay,
                  std::shared_ptr<const PreparedSet> prepared)
        : _it(engine->db(), engine->recordsCf(), snap, ts, std::move(lower), std::move(upper),
              forward, overlay, std::move(prepared)) {}

    std::optional<IndexEntry> next() override {
        std::string_view userKey, value;
        if (!_it.next(&userKey, &value)) return std::nullopt;
        std::string rk(userKey.substr(keys::kCollIdSize));
        return IndexEntry{rk, rk};
    }

  private:
    MvccIterator _it;
};

}  // namespace

void keyRangeToBounds(std::string_view prefix, const KeyRange& range, std::string* lower,
                      std::string* upper) {
    lower->assign(prefix);
    if (!range.low.empty()) {
        lower->append(range.low);
        if (!range.lowInclusive) *lower = keys::successor(*lower);
    }
    if (range.high.empty()) {
        *upper = keys::successor(prefix);
    } else {
        upper->assign(prefix);
        upper->append(range.high);
        if (range.highInclusive) *upper = keys::successor(*upper);
    }
}

RocksReadSnapshot::RocksReadSnapshot(RocksEngine* engine, Timestamp ts,
                                     std::unique_ptr<SnapshotPin> pin, bool physical,
                                     std::shared_ptr<const PreparedSet> prepared,
                                     std::shared_ptr<TxnOverlay> overlay)
    : _engine(engine),
      _ts(ts),
      _physical(physical),
      _pin(std::move(pin)),
      _prepared(std::move(prepared)),
      _overlay(std::move(overlay)),
      _records(engine->db(), engine->recordsCf(), nullptr, engine->recordsPointIterators()),
      _indexes(engine->db(), engine->indexesCf(), nullptr, engine->indexesPointIterators()) {}

const rocksdb::Snapshot* RocksReadSnapshot::cursorSnapshot() {
    if (_physical && !_rocksSnapshot) _rocksSnapshot = _engine->db()->GetSnapshot();
    return _rocksSnapshot;
}

rocksdb::WriteBatchWithIndex* RocksReadSnapshot::overlayBatch() const {
    return _overlay ? &_overlay->batch : nullptr;
}

bool RocksReadSnapshot::get(PointReader& reader, rocksdb::ColumnFamilyHandle* cf,
                            std::string_view userKey, std::string_view* value) {
    if (_overlay) {
        if (std::optional<std::string> own = _overlay->ownVersion(cf, userKey)) {
            _ownValue = std::move(*own);
            *value = _ownValue;
            return !_ownValue.empty();
        }
    }
    if (_prepared) {
        if (std::optional<PreparedSet::Version> v = _prepared->versionOf(cf->GetID(), userKey)) {
            // Waits for its decision; a wait the operation may not make finds nothing, and the
            // operation fails with the conflict (status()).
            switch (_prepared->resolve(*v, _ts, value)) {
                case PreparedSet::Seen::kCommitted:
                    return !value->empty();
                case PreparedSet::Seen::kConflict:
                    return false;
                case PreparedSet::Seen::kHidden:
                    break;
            }
        }
    }
    return reader.get(userKey, _ts, value);
}

RocksReadSnapshot::~RocksReadSnapshot() {
    _records.reset();  // iterators before the snapshot
    _indexes.reset();
    if (_rocksSnapshot) _engine->db()->ReleaseSnapshot(_rocksSnapshot);
}

std::optional<bson::BsonObj> RocksReadSnapshot::findByRecordKey(const CollectionInfo& coll,
                                                                std::string_view recordKey) {
    _keyBuf.clear();
    keys::appendBigEndian64(_keyBuf, coll.id);
    _keyBuf.append(recordKey);
    std::string_view value;
    if (!get(_records, _engine->recordsCf(), _keyBuf, &value)) return std::nullopt;
    return bson::BsonObj::fromBytes(value);
}

std::optional<Record> RocksReadSnapshot::findById(const CollectionInfo& coll,
                                                  const bson::BsonElement& id) {
    std::string recordKey;
    if (coll.idIndexIsRecords()) {
        recordKey = keystring::encodeValue(id);
    } else {
        // A unique index entry at `_ts` names the record that had this _id at `_ts`.
        _keyBuf = keys::indexPrefix(coll.id, coll.indexes.front().id);
        _keyBuf.append(keystring::encodeValue(id));
        std::string_view owner;
        if (!get(_indexes, _engine->indexesCf(), _keyBuf, &owner)) return std::nullopt;
        recordKey.assign(owner);
    }
    auto doc = findByRecordKey(coll, recordKey);
    if (!doc) return std::nullopt;
    return Record{std::move(recordKey), std::move(*doc)};
}

std::unique_ptr<RecordCursor> RocksReadSnapshot::scan(const CollectionInfo& coll, bool forward) {
    return std::make_unique<RocksRecordCursor>(
        _engine, cursorSnapshot(), _ts, keys::collPrefix(coll.id), keys::collPrefix(coll.id + 1),
        forward, overlayBatch(), _prepared);
}

std::unique_ptr<RecordCursor> RocksReadSnapshot::scanRange(const CollectionInfo& coll,
                                                           const KeyRange& range, bool forward) {
    std::string lower, upper;
    keyRangeToBounds(keys::collPrefix(coll.id), range, &lower, &upper);
    return std::make_unique<RocksRecordCursor>(_engine, cursorSnapshot(), _ts, std::move(lower),
                                               std::move(upper), forward, overlayBatch(),
                                               _prepared);
}

std::unique_ptr<IndexCursor> RocksReadSnapshot::indexScan(const CollectionInfo& coll,
                                                          const IndexSpec& index,
                                                          const KeyRange& range, bool forward) {
    std::string lower, upper;
    if (index.isIdIndex() && coll.idIndexIsRecords()) {
        keyRangeToBounds(keys::collPrefix(coll.id), range, &lower, &upper);
        return std::make_unique<IdIndexCursor>(_engine, cursorSnapshot(), _ts, std::move(lower),
                                               std::move(upper), forward, overlayBatch(),
                                               _prepared);
    }
    keyRangeToBounds(keys::indexPrefix(coll.id, index.id), range, &lower, &upper);
    return std::make_unique<RocksIndexCursor>(_engine, cursorSnapshot(), _ts, std::move(lower),
                                              std::move(upper), index.unique, forward,
                                              overlayBatch(), _prepared);
}

}  // namespace tessera::storage
