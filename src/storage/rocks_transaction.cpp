#include "storage/rocks_transaction.h"

#include "storage/key_format.h"
#include "storage/rocks_engine.h"
#include "storage/rocks_read_snapshot.h"

namespace tessera::storage {

std::optional<std::string> TxnOverlay::ownVersion(rocksdb::ColumnFamilyHandle* cf,
                                                  std::string_view userKey) {
    std::string key(userKey);
    keys::appendTs(key, keys::kIntentTs);
    std::string value;
    rocksdb::Status s = batch.GetFromBatch(cf, rocksdb::DBOptions(), key, &value);
    if (!s.ok()) return std::nullopt;  // NotFound: the transaction did not write it
    return value;
}

RocksTransaction::RocksTransaction(RocksEngine* engine, uint64_t id, Timestamp readTs,
                                   std::unique_ptr<SnapshotPin> pin, const WriteUnit* unit)
    : _engine(engine),
      _id(id),
      _readTs(readTs),
      _unit(unit),
      _overlay(std::make_shared<TxnOverlay>()) {
    _overlay->pin = std::move(pin);
}

RocksTransaction::~RocksTransaction() { abort(); }

std::unique_ptr<ReadSnapshot> RocksTransaction::snapshot() {
    return std::make_unique<RocksReadSnapshot>(_engine, _readTs, nullptr, /*physical=*/true,
                                               _overlay);
}

StatusWith<CollectionWriter*> RocksTransaction::writer(const CollectionPtr& coll) {
    if (_ended) return Status(ErrorCodes::NoSuchTransaction, "the transaction has ended");
    if (auto it = _byRequestedId.find(coll->id); it != _byRequestedId.end()) return it->second;
    ASSIGN_OR_RETURN(std::unique_ptr<RocksCollectionWriter> w,
                     _engine->transactionWriter(coll, this));
    uint64_t id = w->collection().id;  // differs from coll->id when resolved through a rewrite
    auto [it, added] = _writers.emplace(id, std::move(w));
    _byRequestedId[coll->id] = it->second.get();
    return it->second.get();
}

Status RocksTransaction::claim(uint64_t collId, const std::vector<std::string>& lockKeys) {
    return _engine->intents().claim(collId, lockKeys, _id, &_claimed);
}

void RocksTransaction::recordWrite(const CollectionPtr& coll,
                                   const std::shared_ptr<CollectionState>& state,
                                   WriteObserver::Op op, bson::BsonView before,
                                   bson::BsonView after, int64_t countDelta, int64_t sizeDelta) {
    auto copy = [](bson::BsonView v) {
        return v.isEmpty() ? bson::BsonObj() : bson::BsonObj::fromBytes(v.bytes());
    };
    _writes.push_back(Write{coll, op, copy(before), copy(after)});
    Counts& c = _counts[coll->id];
    c.state = state;
    c.count += countDelta;
    c.size += sizeDelta;
}

StatusWith<Timestamp> RocksTransaction::commit(
    const std::vector<std::pair<std::string, std::string>>& sideRecords, const WriteOptions& opts) {
    if (_ended) return Status(ErrorCodes::NoSuchTransaction, "the transaction has ended");
    if (_prepareTs) {
        return Status(ErrorCodes::InvalidOptions,
                      "a prepared transaction commits at its coordinator's commit timestamp");
    }
    if (_writes.empty() && sideRecords.empty()) {
        abort();
        return _readTs;
    }
    return writeCommit(std::nullopt, sideRecords, opts);
}

StatusWith<Timestamp> RocksTransaction::prepare() {
    if (_ended) return Status(ErrorCodes::NoSuchTransaction, "the transaction has ended");
    if (_prepareTs) return *_prepareTs;
    if (_writes.empty()) return _readTs;  // read-only: nothing a reader could see half of
    _prepareTs = _engine->prepared().prepare(_id, _engine->visibility().clock());
    return *_prepareTs;
}

StatusWith<Timestamp> RocksTransaction::commitPrepared(
    Timestamp commitTs, const std::vector<std::pair<std::string, std::string>>& sideRecords,
    const WriteOptions& opts) {
    if (_ended) return Status(ErrorCodes::NoSuchTransaction, "the transaction has ended");
    if (!_prepareTs) {
        if (_writes.empty() && sideRecords.empty()) {
            abort();
            return commitTs;
        }
        return Status(ErrorCodes::InvalidOptions,
                      "commitTimestamp is only valid for a prepared transaction");
    }
    if (commitTs < *_prepareTs) {
        return Status(ErrorCodes::BadValue,
                      "the commit timestamp is before the transaction's prepare timestamp");
    }
    return writeCommit(commitTs, sideRecords, opts);
}

StatusWith<Timestamp> RocksTransaction::writeCommit(
    std::optional<Timestamp> versionTs,
    const std::vector<std::pair<std::string, std::string>>& sideRecords, const WriteOptions& opts) {
    rocksdb::WriteBatch out;
    rocksdb::Status s;
    Timestamp ts;
    {
        // Visible all at once: a reader at a timestamp >= ts waits until this batch is written
        // (VisibilityTracker), a reader below it sees none of it. A prepared transaction's
        // versions carry the coordinator's timestamp, which may be older than commits made
        // since its prepare: the readers that could see it (at or after the prepare timestamp)
        // wait for its release (PreparedTransactions), and the visibility ticket drawn after
        // it makes the next "latest" read include it.
        VisibilityTracker& visibility = _engine->visibility();
        if (versionTs) visibility.clock().advanceTo(*versionTs);
        Timestamp ticket = visibility.beginCommit();
        ts = versionTs ? *versionTs : ticket;
        std::vector<std::pair<std::string, std::string>> observed;
        if (_unit) {
            for (const Write& w : _writes) {
                for (WriteObserver* observer : _unit->observers()) {
                    observer->onWrite(*w.coll, w.op, w.before, w.after, &observed);
                }
            }
        }
        for (rocksdb::ColumnFamilyHandle* cf : {_engine->recordsCf(), _engine->indexesCf()}) {
            std::unique_ptr<rocksdb::WBWIIterator> it(_overlay->batch.NewIterator(cf));
            std::string key;
            for (it->SeekToFirst(); s.ok() && it->Valid(); it->Next()) {
                rocksdb::WriteEntry e = it->Entry();
                std::string_view intentKey(e.key.data(), e.key.size());
                key.assign(keys::userKeyOf(intentKey));
                keys::appendTs(key, ts);
                s = out.Put(cf, key, e.value);
            }
        }
        for (const auto& [collId, c] : _counts) {
            _engine->mergeCounts(&out, collId, c.count, c.size, ts);
        }
        using Records = std::vector<std::pair<std::string, std::string>>;
        for (const Records* records : {static_cast<const Records*>(&observed), &sideRecords}) {
            for (const auto& [key, value] : *records) {
                if (!s.ok()) break;
                std::string k(keys::kSideRecordPrefix);
                k.append(key);
                s = value.empty() ? out.Delete(_engine->catalogCf(), k)
                                  : out.Put(_engine->catalogCf(), k, value);
            }
        }
        if (s.ok()) {
            rocksdb::WriteOptions wo;
            wo.sync = opts.sync;
            s = _engine->db()->Write(wo, &out);
        }
        visibility.endCommit(ticket);
    }
    if (!s.ok()) {
        abort();
        return Status(ErrorCodes::InternalError, "storage write failed: " + s.ToString());
    }
    for (const auto& [collId, c] : _counts) {
        c.state->count.fetch_add(c.count);
        c.state->dataSize.fetch_add(c.size);
    }
    release();
    return ts;
}

void RocksTransaction::abort() {
    if (_ended) return;
    release();
}

void RocksTransaction::release() {
    _ended = true;
    _engine->intents().release(_claimed, _id);
    if (_prepareTs) _engine->prepared().finish(_id);
    _claimed.clear();
    _byRequestedId.clear();
    _writers.clear();  // the collections' access locks
    _writes.clear();
    _counts.clear();
    // The read timestamp's pin goes with the last snapshot that may still read at it.
    if (_overlay.use_count() == 1) _overlay->pin.reset();
}

}  // namespace tessera::storage
