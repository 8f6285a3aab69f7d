#include "storage/rocks_transaction.h"

#include <algorithm>

#include "base/log.h"
#include "base/mutex.h"
#include "bson/bson_builder.h"
#include "storage/index_plan.h"
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
                                   std::unique_ptr<SnapshotPin> pin,
                                   std::shared_ptr<const PreparedSet> prepared,
                                   const WriteUnit* unit)
    : _engine(engine),
      _id(id),
      _readTs(readTs),
      _unit(unit),
      _overlay(std::make_shared<TxnOverlay>()) {
    _overlay->pin = std::move(pin);
    _overlay->prepared = std::move(prepared);
    _engine->rememberTransaction(this);
}

RocksTransaction::~RocksTransaction() {
    _engine->forgetTransaction(this);  // no fence reaches it any more
    abort();
}

std::unique_ptr<ReadSnapshot> RocksTransaction::snapshot() {
    return std::make_unique<RocksReadSnapshot>(_engine, _readTs, nullptr, /*physical=*/true,
                                               _overlay->prepared, _overlay);
}

Status RocksTransaction::checkNotDoomed() const {
    if (!_doomed.load()) return Status::OK();
    return Status(ErrorCodes::NoSuchTransaction, "Transaction was aborted: " + _doomReason);
}

std::optional<std::string> RocksTransaction::doomedBecause() const {
    if (!_doomed.load()) return std::nullopt;
    return _doomReason;  // written before _doomed, never after
}

RocksTransaction::Fenced RocksTransaction::fence(
    const std::function<bool(const CollectionInfo&)>& affects, const std::string& reason) {
    MutexLock lk(_endMutex);
    if (_ended) return Fenced::kUnaffected;
    bool writes = false;
    for (const auto& [id, w] : _writers) writes = writes || affects(w->collection());
    if (!writes) return Fenced::kUnaffected;
    if (_prepareTs) return Fenced::kPrepared;
    if (!_doomed.load()) {
        _doomReason = reason;
        _doomed.store(true);
    }
    return Fenced::kDoomed;
}

StatusWith<CollectionWriter*> RocksTransaction::writer(const CollectionPtr& coll) {
    MutexLock lk(_endMutex);
    return writerLocked(coll);
}

StatusWith<CollectionWriter*> RocksTransaction::writerLocked(const CollectionPtr& coll) {
    if (_ended) return Status(ErrorCodes::NoSuchTransaction, "the transaction has ended");
    TRY_STATUS(checkNotDoomed());
    if (auto it = _byRequestedId.find(coll->id); it != _byRequestedId.end()) return it->second;
    ASSIGN_OR_RETURN(std::unique_ptr<RocksCollectionWriter> w,
                     _engine->transactionWriter(coll, this));
    uint64_t id = w->collection().id;  // differs from coll->id when resolved through a rewrite
    auto [it, added] = _writers.emplace(id, std::move(w));
    _byRequestedId[coll->id] = it->second.get();
    return it->second.get();
}

StatusWith<CollectionPtr> RocksTransaction::createCollection(std::string_view ns,
                                                             bson::BsonView options) {
    MutexLock lk(_endMutex);
    if (_ended) return Status(ErrorCodes::NoSuchTransaction, "the transaction has ended");
    TRY_STATUS(checkNotDoomed());
    if (_created.count(ns)) {
        return Status(ErrorCodes::NamespaceExists,
                      "Collection " + std::string(ns) + " already exists.");
    }
    ASSIGN_OR_RETURN(CollectionPtr coll, _engine->reserveCollection(ns, options, _id));
    _created.emplace(std::string(ns), coll);
    // Its writer holds the collection's access lock, and a placement change's fence sees it
    // among the collections the transaction writes (fence()).
    TRY_STATUS(writerLocked(coll).getStatus());
    return coll;
}

CollectionPtr RocksTransaction::createdCollection(std::string_view ns) const {
    auto it = _created.find(ns);
    if (it == _created.end()) return nullptr;
    return _engine->currentInfo(it->second->id);
}

std::vector<CollectionPtr> RocksTransaction::createdList() const {
    std::vector<CollectionPtr> out;
    for (const auto& [ns, coll] : _created) out.push_back(coll);
    return out;
}

StatusWith<Engine::CreateIndexesResult> RocksTransaction::createIndexes(
    const CollectionPtr& coll, std::vector<IndexSpec> specs) {
    MutexLock lk(_endMutex);
    if (_ended) return Status(ErrorCodes::NoSuchTransaction, "the transaction has ended");
    TRY_STATUS(checkNotDoomed());
    auto created = _created.find(coll->ns());
    if (created == _created.end() || created->second->id != coll->id) {
        // Only indexes that all exist already (a no-op, as in MongoDB).
        CollectionInfo planned(*coll);
        std::vector<IndexSpec> toBuild;
        TRY_STATUS(planIndexes(std::move(specs), &planned, &toBuild));
        if (!toBuild.empty()) {
            return Status(ErrorCodes::OperationNotSupportedInTransaction,
                          "Cannot create new indexes on existing collection " + coll->ns() +
                              " in a multi-document transaction.");
        }
        Engine::CreateIndexesResult result;
        result.numIndexesBefore = result.numIndexesAfter = static_cast<int>(coll->indexes.size());
        return result;
    }
    bool written = std::any_of(_writes.begin(), _writes.end(),
                               [&](const Write& w) { return w.coll->id == coll->id; });
    if (written) {
        return Status(ErrorCodes::OperationNotSupportedInTransaction,
                      "Cannot create new indexes on non-empty collection " + coll->ns() +
                          " in a multi-document transaction.");
    }
    CollectionPtr current = _engine->currentInfo(coll->id);
    Engine::CreateIndexesResult result;
    result.numIndexesBefore = static_cast<int>(current->indexes.size());
    auto info = std::make_shared<CollectionInfo>(*current);
    std::vector<IndexSpec> toBuild;
    TRY_STATUS(planIndexes(std::move(specs), info.get(), &toBuild));
    for (IndexSpec& spec : toBuild) info->indexes.push_back(std::move(spec));
    result.numIndexesAfter = static_cast<int>(info->indexes.size());
    if (toBuild.empty()) return result;
    _engine->updateReserved(info);
    // The collection holds nothing yet: its writer is opened again with the new indexes.
    _writers.erase(coll->id);
    _byRequestedId.erase(coll->id);
    TRY_STATUS(writerLocked(info).getStatus());
    return result;
}

Status RocksTransaction::claim(uint64_t collId, const std::vector<std::string>& lockKeys) {
    TRY_STATUS(checkNotDoomed());
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
    MutexLock lk(_endMutex);
    if (_ended) return Status(ErrorCodes::NoSuchTransaction, "the transaction has ended");
    if (_prepareTs) {
        return Status(ErrorCodes::InvalidOptions,
                      "a prepared transaction commits at its coordinator's commit timestamp");
    }
    if (Status doomed = checkNotDoomed(); !doomed.isOK()) {
        abortLocked();
        return doomed;
    }
    if (!hasWrites() && sideRecords.empty()) {
        abortLocked();
        return _readTs;
    }
    return writeCommit(std::nullopt, sideRecords, opts);
}

Status RocksTransaction::addSideRecord(std::string key, std::string value) {
    MutexLock lk(_endMutex);
    if (_ended || _prepareTs) {
        return Status(ErrorCodes::NoSuchTransaction,
                      "the transaction has ended or is prepared: it takes no more writes");
    }
    TRY_STATUS(checkNotDoomed());
    if (value.empty()) return Status(ErrorCodes::BadValue, "a side record needs a value");
    _sideRecords.emplace_back(std::move(key), std::move(value));
    return Status::OK();
}

void RocksTransaction::onAbort(std::function<void()> fn) {
    UniqueLock lk(_endMutex);
    if (!_ended) {
        _onAbort.push_back(std::move(fn));
        return;
    }
    const bool committed = _committed;
    lk.unlock();
    if (!committed) fn();
}

StatusWith<Timestamp> RocksTransaction::prepare(const std::string& recordKey, bson::BsonView meta,
                                                bool synced) {
    MutexLock lk(_endMutex);
    if (_ended) return Status(ErrorCodes::NoSuchTransaction, "the transaction has ended");
    if (_prepareTs) return *_prepareTs;
    if (Status doomed = checkNotDoomed(); !doomed.isOK()) {
        abortLocked();
        return doomed;
    }
    if (!_created.empty()) {
        // MongoDB's rule: no collection is created by a cross-shard write transaction (its
        // catalog entry would have to survive a crash while prepared, and appear on every
        // participant at the commit's timestamp).
        Status refused(ErrorCodes::OperationNotSupportedInTransaction,
                       "Cannot create collection " + _created.begin()->first +
                           " in a transaction that writes to more than one shard; create it "
                           "before the transaction, or write only to its shard");
        abortLocked();
        return refused;
    }
    // Read-only: nothing a reader could see half of.
    if (_writes.empty() && _sideRecords.empty()) return _readTs;
    // Registered first (readers at or after P wait from now on), then made durable: a crash
    // before the record is written loses an unprepared transaction, which is its contract.
    Timestamp ts =
        _engine->prepared().prepare(_id, _engine->visibility().clock(), preparedVersions());
    bson::BsonObj record = prepareRecord(meta, ts);
    Status written = _engine->writeSideRecords({{recordKey, std::string(record.bytes())}}, synced);
    if (!written.isOK()) {
        _engine->prepared().finish(_id, std::nullopt);
        abortLocked();
        return written;
    }
    _prepareTs = ts;
    _prepareRecordKey = recordKey;
    return ts;
}

PreparedVersions RocksTransaction::preparedVersions() const {
    PreparedVersions out;
    for (rocksdb::ColumnFamilyHandle* cf : {_engine->recordsCf(), _engine->indexesCf()}) {
        std::vector<std::pair<std::string, std::string>>& versions = out[cf->GetID()];
        std::unique_ptr<rocksdb::WBWIIterator> it(_overlay->batch.NewIterator(cf));
        for (it->SeekToFirst(); it->Valid(); it->Next()) {
            rocksdb::WriteEntry e = it->Entry();
            std::string_view intentKey(e.key.data(), e.key.size());
            versions.emplace_back(std::string(keys::userKeyOf(intentKey)),
                                  std::string(e.value.data(), e.value.size()));
        }
        // Intent keys carry one suffix; sorted again by user key all the same (a user key may
        // be a prefix of another).
        std::sort(versions.begin(), versions.end());
    }
    return out;
}

bson::BsonObj RocksTransaction::prepareRecord(bson::BsonView meta, Timestamp prepareTs) const {
    bson::BsonBuilder b;
    b.appendObject("meta", meta);
    b.appendTimestamp("readTs", _readTs.value);
    b.appendTimestamp("prepareTs", prepareTs.value);
    bson::BsonBuilder claims;  // an array of the intent-table keys
    for (size_t i = 0; i < _claimed.size(); ++i) {
        claims.appendBinary(std::to_string(i), 0, _claimed[i]);
    }
    b.appendArray("claims", claims.obj());
    // The intents, one WriteBatch of the latest version of each key (the overlay may hold
    // several writes of one key).
    rocksdb::WriteBatch intents;
    for (rocksdb::ColumnFamilyHandle* cf : {_engine->recordsCf(), _engine->indexesCf()}) {
        std::unique_ptr<rocksdb::WBWIIterator> it(_overlay->batch.NewIterator(cf));
        for (it->SeekToFirst(); it->Valid(); it->Next()) {
            rocksdb::WriteEntry e = it->Entry();
            intents.Put(cf, e.key, e.value).PermitUncheckedError();
        }
    }
    b.appendBinary("intents", 0, intents.Data());
    bson::BsonArrayBuilder writes;
    for (const Write& w : _writes) {
        bson::BsonBuilder one;
        one.appendInt64("coll", static_cast<int64_t>(w.coll->id));
        one.appendInt32("op", static_cast<int32_t>(w.op));
        one.appendObject("before", w.before);
        one.appendObject("after", w.after);
        writes.append(one.obj());
    }
    b.appendArray("writes", writes.arr());
    bson::BsonArrayBuilder counts;
    for (const auto& [collId, c] : _counts) {
        bson::BsonBuilder one;
        one.appendInt64("coll", static_cast<int64_t>(collId));
        one.appendInt64("count", c.count);
        one.appendInt64("size", c.size);
        counts.append(one.obj());
    }
    b.appendArray("counts", counts.arr());
    bson::BsonArrayBuilder side;
    for (const auto& [key, value] : _sideRecords) {
        bson::BsonBuilder one;
        one.appendBinary("key", 0, key);
        one.appendBinary("value", 0, value);
        side.append(one.obj());
    }
    b.appendArray("sideRecords", side.arr());
    return b.obj();
}

namespace {

// Puts a recovered prepare record's intents back into a transaction's overlay.
class IntentLoader final : public rocksdb::WriteBatch::Handler {
  public:
    IntentLoader(TxnOverlay* overlay, std::map<uint32_t, rocksdb::ColumnFamilyHandle*> cfs)
        : _overlay(overlay), _cfs(std::move(cfs)) {}
    rocksdb::Status PutCF(uint32_t cfId, const rocksdb::Slice& key,
                          const rocksdb::Slice& value) override {
        auto it = _cfs.find(cfId);
        if (it == _cfs.end()) return rocksdb::Status::Corruption("unknown column family");
        return _overlay->batch.Put(it->second, key, value);
    }

  private:
    TxnOverlay* _overlay;
    std::map<uint32_t, rocksdb::ColumnFamilyHandle*> _cfs;
};

}  // namespace

StatusWith<std::unique_ptr<RocksTransaction>> RocksTransaction::recover(
    RocksEngine* engine, uint64_t id, const std::string& recordKey, bson::BsonView record,
    const WriteUnit* unit) {
    auto corrupt = [&](const std::string& what) {
        return Status(ErrorCodes::InternalError,
                      "the prepare record " + recordKey + " is damaged: " + what);
    };
    if (record["readTs"].type() != bson::BsonType::Timestamp ||
        record["prepareTs"].type() != bson::BsonType::Timestamp ||
        record["intents"].type() != bson::BsonType::BinData || !record["writes"].isArray() ||
        !record["counts"].isArray() || !record["claims"].isArray()) {
        return corrupt("missing fields");
    }
    Timestamp readTs{record["readTs"].timestampValue()};
    Timestamp prepareTs{record["prepareTs"].timestampValue()};
    // No read-timestamp pin: a prepared transaction reads nothing any more.
    auto txn = std::make_unique<RocksTransaction>(engine, id, readTs, nullptr, nullptr, unit);
    IntentLoader loader(txn->_overlay.get(), {{engine->recordsCf()->GetID(), engine->recordsCf()},
                                              {engine->indexesCf()->GetID(), engine->indexesCf()}});
    rocksdb::WriteBatch intents(std::string(record["intents"].binaryValue().data));
    if (rocksdb::Status s = intents.Iterate(&loader); !s.ok()) return corrupt(s.ToString());
    for (bson::BsonElement e : record["writes"].objValue()) {
        bson::BsonView w = e.objValue();
        auto collId = static_cast<uint64_t>(w["coll"].numberLong());
        CollectionPtr coll = engine->currentInfo(collId);
        if (!coll) return corrupt("collection " + std::to_string(collId) + " no longer exists");
        auto copy = [](bson::BsonElement v) {
            return v.isObject() ? bson::BsonObj::fromBytes(v.objValue().bytes()) : bson::BsonObj();
        };
        txn->_writes.push_back(Write{coll, static_cast<WriteObserver::Op>(w["op"].numberInt()),
                                     copy(w["before"]), copy(w["after"])});
        // Its writer holds the collection's access lock (DDL waits for the decision).
        if (!txn->_byRequestedId.count(collId)) TRY_STATUS(txn->writer(coll).getStatus());
    }
    for (bson::BsonElement e : record["counts"].objValue()) {
        bson::BsonView c = e.objValue();
        auto collId = static_cast<uint64_t>(c["coll"].numberLong());
        Counts& counts = txn->_counts[collId];
        counts.state = engine->collectionState(collId);
        if (!counts.state) return corrupt("collection " + std::to_string(collId) + " has no state");
        counts.count = c["count"].numberLong();
        counts.size = c["size"].numberLong();
    }
    for (bson::BsonElement e : record["claims"].objValue()) {
        txn->_claimed.emplace_back(e.binaryValue().data);
    }
    // Absent from the records of versions before side records could be added.
    if (bson::BsonElement side = record["sideRecords"]; side.isArray()) {
        for (bson::BsonElement e : side.objValue()) {
            if (!e.isObject() || e.objValue()["key"].type() != bson::BsonType::BinData ||
                e.objValue()["value"].type() != bson::BsonType::BinData) {
                return corrupt("a malformed side record");
            }
            txn->_sideRecords.emplace_back(e.objValue()["key"].binaryValue().data,
                                           e.objValue()["value"].binaryValue().data);
        }
    }
    engine->intents().restore(txn->_claimed, id);
    engine->visibility().clock().advanceTo(prepareTs);
    engine->prepared().restore(id, prepareTs, txn->preparedVersions());
    txn->_prepareTs = prepareTs;
    txn->_prepareRecordKey = recordKey;
    return txn;
}

StatusWith<Timestamp> RocksTransaction::commitPrepared(
    Timestamp commitTs, const std::vector<std::pair<std::string, std::string>>& sideRecords,
    const WriteOptions& opts) {
    MutexLock lk(_endMutex);
    if (_ended) return Status(ErrorCodes::NoSuchTransaction, "the transaction has ended");
    if (!_prepareTs) {
        if (_writes.empty() && _sideRecords.empty() && sideRecords.empty()) {
            abortLocked();
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
    if (!_created.empty()) {
        // The collections it created: entries (and zero counts) first in the batch, so that
        // the count merges below apply over them.
        Status publishing = _engine->beginPublishingReserved(createdList(), &out);
        if (!publishing.isOK()) {
            abortLocked();
            return publishing;
        }
    }
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
        if (!_prepareRecordKey.empty()) observed.emplace_back(_prepareRecordKey, std::string());
        using Records = std::vector<std::pair<std::string, std::string>>;
        for (const Records* records : {static_cast<const Records*>(&observed),
                                       static_cast<const Records*>(&_sideRecords), &sideRecords}) {
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
            s = _engine->write(wo, &out);
        }
        visibility.endCommit(ticket);
    }
    if (!s.ok()) {
        abortLocked();
        return RocksEngine::writeFailure(s);
    }
    for (const auto& [collId, c] : _counts) {
        c.state->count.fetch_add(c.count);
        c.state->dataSize.fetch_add(c.size);
    }
    if (!_created.empty()) {
        _engine->publishReserved(createdList());
        _created.clear();
    }
    release(ts);
    return ts;
}

void RocksTransaction::abort() {
    MutexLock lk(_endMutex);
    abortLocked();
}

void RocksTransaction::abortLocked() {
    if (_ended) return;
    if (!_prepareRecordKey.empty()) {
        // Synced: a prepare record that survived its abort would prepare the transaction again
        // after a crash, with no coordinator left to decide it.
        Status deleted = _engine->writeSideRecords({{_prepareRecordKey, std::string()}});
        if (!deleted.isOK()) {
            log::error("STORAGE", 22210,
                       "Could not delete the record of an aborted prepared "
                       "transaction",
                       "{\"error\":\"" + log::jsonEscape(deleted.toString()) + "\"}");
        }
    }
    release(std::nullopt);
}

void RocksTransaction::release(std::optional<Timestamp> commitTs) {
    _ended = true;
    _committed = commitTs.has_value();
    _engine->intents().release(_claimed, _id);
    if (_prepareTs) _engine->prepared().finish(_id, commitTs);
    _claimed.clear();
    _byRequestedId.clear();
    _writers.clear();  // the collections' access locks
    _writes.clear();
    _counts.clear();
    if (!_created.empty()) {
        _engine->releaseReserved(createdList());  // not published: an abort or failed commit
        _created.clear();
    }
    // The read timestamp's pin goes with the last snapshot that may still read at it.
    if (_overlay.use_count() == 1) _overlay->pin.reset();
    std::vector<std::function<void()>> onAbort = std::move(_onAbort);
    _onAbort.clear();
    if (!_committed) {
        for (auto& fn : onAbort) fn();
    }
}

}  // namespace tessera::storage
