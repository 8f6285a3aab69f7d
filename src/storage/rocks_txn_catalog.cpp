// Collections created inside transactions (MongoDB 4.4+'s DDL in a transaction): reserved for
// one transaction, published by its commit's batch, forgotten by its abort. See
// RocksEngine::reserveCollection and README.md "DDL inside a transaction".

#include "base/mutex.h"
#include "storage/catalog_codec.h"
#include "storage/key_format.h"
#include "storage/rocks_engine.h"

namespace tessera::storage {

StatusWith<CollectionPtr> RocksEngine::reserveCollection(std::string_view ns,
                                                         bson::BsonView options, uint64_t txnId) {
    TRY_STATUS(validateNamespace(ns));
    // Serialized with plain DDL, so that a plain create sees the reservation or the reservation
    // sees the created collection.
    MutexLock ddl(_ddlMutex);
    auto info = newCollectionInfo(ns, options);
    MutexLock lock(_catalogMutex);
    if (_byNs.count(ns)) {
        return Status(ErrorCodes::NamespaceExists,
                      "Collection " + std::string(ns) + " already exists.");
    }
    if (auto it = _reserved.find(ns); it != _reserved.end() && it->second.txnId != txnId) {
        return Status(ErrorCodes::WriteConflict,
                      "Collection " + std::string(ns) +
                          " is being created by another transaction; retry the transaction");
    }
    // The id is taken now and never persisted as the next one: the committed catalog entry is
    // what keeps it unique after a restart (loadCatalog), and an aborted one wrote nothing.
    info->id = _nextCollectionId++;
    _reserved[std::string(ns)] = Reservation{txnId, info->id, Reservation::State::kOpen};
    _states[info->id] = std::make_shared<CollectionState>();
    _byId[info->id] = info;
    return CollectionPtr(info);
}

void RocksEngine::updateReserved(CollectionPtr info) {
    MutexLock lock(_catalogMutex);
    _byId[info->id] = std::move(info);
}

bool RocksEngine::claimNamespaceFromTransactions(std::string_view ns, UniqueLock& lock) {
    for (;;) {
        auto it = _reserved.find(ns);
        if (it == _reserved.end()) break;
        if (it->second.state == Reservation::State::kCommitting) {
            // Its batch is being written: bounded by one storage write.
            _reservationEnded.wait(lock);
            continue;
        }
        it->second.state = Reservation::State::kLost;
        break;
    }
    return _byNs.count(ns) == 0;
}

Status RocksEngine::beginPublishingReserved(const std::vector<CollectionPtr>& created,
                                            rocksdb::WriteBatch* batch) {
    {
        MutexLock lock(_catalogMutex);
        for (const CollectionPtr& coll : created) {
            auto it = _reserved.find(coll->ns());
            if (it == _reserved.end() || it->second.collId != coll->id ||
                it->second.state == Reservation::State::kLost) {
                return Status(ErrorCodes::WriteConflict,
                              "Collection " + coll->ns() +
                                  " was created by another operation while this transaction "
                                  "created it; retry the transaction");
            }
        }
        for (const CollectionPtr& coll : created) {
            _reserved.find(coll->ns())->second.state = Reservation::State::kCommitting;
        }
    }
    for (const CollectionPtr& coll : created) {
        CollectionPtr current = currentInfo(coll->id);  // with the indexes added since
        bson::BsonObj entry = encodeCollectionInfo(current ? *current : *coll);
        batch
            ->Put(_catalog, keys::catalogCollKey(coll->id),
                  rocksdb::Slice(entry.bytes().data(), entry.bytes().size()))
            .PermitUncheckedError();
        putCounts(batch, coll->id, 0, 0, Timestamp());
    }
    return Status::OK();
}

void RocksEngine::publishReserved(const std::vector<CollectionPtr>& created) {
    {
        MutexLock lock(_catalogMutex);
        for (const CollectionPtr& coll : created) {
            CollectionPtr current = byIdLocked(coll->id);
            if (!current) continue;
            _byNs[current->ns()] = current;
            _reserved.erase(coll->ns());
        }
    }
    _reservationEnded.notify_all();
}

void RocksEngine::releaseReserved(const std::vector<CollectionPtr>& created) {
    {
        MutexLock lock(_catalogMutex);
        for (const CollectionPtr& coll : created) {
            auto it = _reserved.find(coll->ns());
            if (it != _reserved.end() && it->second.collId == coll->id) _reserved.erase(it);
            _byId.erase(coll->id);
            _states.erase(coll->id);
        }
    }
    _reservationEnded.notify_all();
}

}  // namespace tessera::storage
