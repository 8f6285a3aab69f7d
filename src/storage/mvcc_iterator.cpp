#include "storage/mvcc_iterator.h"

#include "base/mutex.h"
#include "storage/key_format.h"

namespace tessera::storage {

MvccIterator::MvccIterator(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                           const rocksdb::Snapshot* snapshot, Timestamp readTs, std::string lower,
                           std::string upper, bool forward, rocksdb::WriteBatchWithIndex* overlay,
                           std::shared_ptr<const PreparedSet> prepared)
    : _lower(std::move(lower)),
      _upper(std::move(upper)),
      _readTs(readTs),
      _withIntents(overlay != nullptr),
      _forward(forward) {
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot;
    ro.total_order_seek = true;  // scans cross prefixes; the prefix extractor must not apply
    _lowerSlice = rocksdb::Slice(_lower);
    ro.iterate_lower_bound = &_lowerSlice;
    if (!_upper.empty()) {
        _upperSlice = rocksdb::Slice(_upper);
        ro.iterate_upper_bound = &_upperSlice;
    }
    _it.reset(db->NewIterator(ro, cf));
    if (overlay) {
        _overlayOptions = ro;
        _overlayOptions.iterate_lower_bound = &_lowerSlice;
        _overlayOptions.iterate_upper_bound = _upper.empty() ? nullptr : &_upperSlice;
        _it.reset(overlay->NewIteratorWithBase(cf, _it.release(), &_overlayOptions));
    }
    if (prepared) {
        _prepared = prepared->versionsIn(cf->GetID(), _lower, _upper);
        if (!_prepared.empty()) _preparedSet = std::move(prepared);
    }
}

bool MvccIterator::next(std::string_view* userKey, std::string_view* value) {
    if (_conflicted) return false;
    if (!_prepared.empty()) return nextMerged(userKey, value);
    return _forward ? nextForward(userKey, value) : nextBackward(userKey, value);
}

bool MvccIterator::nextMerged(std::string_view* userKey, std::string_view* value) {
    for (;;) {
        if (!_dbPending && !_dbDone) {
            std::string_view k, v;
            if (_forward ? nextForward(&k, &v) : nextBackward(&k, &v)) {
                _dbPending = true;
                _dbKey = k;
                _dbValue = v;
                _dbTs = _currentTs;
            } else {
                _dbDone = true;
            }
        }
        const PreparedSet::Version* p = nullptr;
        if (_preparedUsed < _prepared.size()) {
            p = &_prepared[_forward ? _preparedUsed : _prepared.size() - 1 - _preparedUsed];
        }
        bool preparedFirst =
            p && (!_dbPending || (_forward ? p->userKey <= _dbKey : p->userKey >= _dbKey));
        if (!preparedFirst) {
            if (!_dbPending) return false;
            _dbPending = false;
            *userKey = _dbKey;
            *value = _dbValue;
            _currentTs = _dbTs;
            return true;
        }
        bool sameKey = _dbPending && p->userKey == _dbKey;
        if (sameKey && _dbTs == keys::kIntentTs) {  // the reader's own write of it comes first
            ++_preparedUsed;
            continue;
        }
        std::string_view committed;
        Timestamp commitTs;
        PreparedSet::Seen seen = _preparedSet->resolve(*p, _readTs, &committed, &commitTs);
        if (seen == PreparedSet::Seen::kConflict) {
            _conflicted = true;  // the read stops here: its operation fails with the conflict
            return false;
        }
        ++_preparedUsed;
        // Aborted, or committed after _readTs: the database's view decides.
        if (seen == PreparedSet::Seen::kHidden) continue;
        if (sameKey) _dbPending = false;  // the view's version is this one, or older
        if (committed.empty()) continue;  // removed at or before readTs
        *userKey = p->userKey;
        *value = committed;
        _currentTs = commitTs;
        return true;
    }
}

bool MvccIterator::nextForward(std::string_view* userKey, std::string_view* value) {
    if (!_started) {
        _it->Seek(_lower);
        _started = true;
    }
    // Versions of one user key are adjacent, newest first.
    for (; _it->Valid(); _it->Next()) {
        std::string_view key(_it->key().data(), _it->key().size());
        if (pastUpper(key)) return false;
        std::string_view uk = keys::userKeyOf(key);
        if (_haveCurrent && uk == _current) continue;  // older version of a decided key
        if (!visible(keys::tsOf(key))) continue;       // too new for this reader
        _current.assign(uk);
        _haveCurrent = true;
        if (_it->value().empty()) continue;  // deleted as of readTs
        *userKey = _current;
        *value = std::string_view(_it->value().data(), _it->value().size());
        _currentTs = keys::tsOf(key);
        return true;  // the next call skips the remaining versions of _current
    }
    return false;
}

bool MvccIterator::nextBackward(std::string_view* userKey, std::string_view* value) {
    if (!_started) {
        if (_upper.empty()) {
            _it->SeekToLast();
        } else {
            _it->SeekForPrev(_upper);  // the last key <= upper: upper itself is excluded below
            if (_it->Valid() && pastUpper({_it->key().data(), _it->key().size()})) _it->Prev();
        }
        _started = true;
    }
    // Backwards, a user key's versions arrive oldest first: remember the last one <= readTs.
    while (_it->Valid()) {
        std::string_view key(_it->key().data(), _it->key().size());
        if (key < std::string_view(_lower)) return false;
        _current.assign(keys::userKeyOf(key));
        bool found = false;
        while (_it->Valid()) {
            std::string_view k(_it->key().data(), _it->key().size());
            if (k < std::string_view(_lower) || keys::userKeyOf(k) != _current) break;
            if (visible(keys::tsOf(k))) {
                found = true;
                _currentValue.assign(_it->value().data(), _it->value().size());
                _currentTs = keys::tsOf(k);
            }
            _it->Prev();
        }
        if (found && !_currentValue.empty()) {
            *userKey = _current;
            *value = _currentValue;
            return true;
        }
    }
    return false;
}

rocksdb::Iterator* PointIteratorPool::create() const {
    rocksdb::ReadOptions ro;
    ro.prefix_same_as_start = true;  // one user key's versions; uses the prefix bloom
    return _db->NewIterator(ro, _cf);
}

PointIteratorPool::Lease PointIteratorPool::acquire() {
    uint64_t generation = _generation.load(std::memory_order_acquire);
    std::vector<Lease> outdated;
    Lease lease;
    {
        MutexLock lk(_mutex);
        while (!_idle.empty()) {
            Lease last = std::move(_idle.back());
            _idle.pop_back();
            if (last.generation == generation) {
                lease = std::move(last);
                break;
            }
            outdated.push_back(std::move(last));
        }
    }
    outdated.clear();  // destroyed outside the lock
    if (lease.it && lease.it->Refresh().ok()) return lease;
    return Lease{std::unique_ptr<rocksdb::Iterator>(create()), generation};
}

void PointIteratorPool::release(Lease lease) {
    if (!lease.it || lease.generation != _generation.load(std::memory_order_acquire)) return;
    {
        MutexLock lk(_mutex);
        if (_idle.size() < kMaxIdle) {
            _idle.push_back(std::move(lease));
            return;
        }
    }
    // A full pool: `lease` is destroyed here, outside the lock.
}

void PointIteratorPool::invalidate() {
    _generation.fetch_add(1, std::memory_order_acq_rel);
    clear();
}

void PointIteratorPool::clear() {
    std::vector<Lease> idle;
    {
        MutexLock lk(_mutex);
        idle.swap(_idle);
    }
}

void PointReader::reset() {
    if (_pool && _lease.it) _pool->release(std::move(_lease));
    _lease = PointIteratorPool::Lease{};
}

bool PointReader::get(std::string_view userKey, Timestamp readTs, std::string_view* value) {
    Timestamp ts;
    if (!seek(userKey, readTs, value, &ts)) return false;
    return !value->empty();  // empty: a tombstone
}

bool PointReader::newest(std::string_view userKey, std::string_view* value, Timestamp* ts) {
    return seek(userKey, Timestamp::max(), value, ts);
}

bool PointReader::seek(std::string_view userKey, Timestamp readTs, std::string_view* value,
                       Timestamp* ts) {
    if (_lease.it && _stale && !_lease.it->Refresh().ok()) _lease = {};  // dropped, not pooled
    if (!_lease.it) {
        if (_pool) {
            _lease = _pool->acquire();  // refreshed: the latest state
        } else {
            rocksdb::ReadOptions ro;
            ro.snapshot = _snapshot;
            ro.prefix_same_as_start = true;  // one user key's versions; uses the prefix bloom
            _lease.it.reset(_db->NewIterator(ro, _cf));
        }
    }
    _stale = false;
    _seekKey.assign(userKey);
    keys::appendTs(_seekKey, readTs);
    rocksdb::Iterator* it = _lease.it.get();
    it->Seek(_seekKey);
    if (!it->Valid()) return false;
    std::string_view key(it->key().data(), it->key().size());
    if (key.size() != userKey.size() + keys::kTsSize || keys::userKeyOf(key) != userKey)
        return false;
    *value = std::string_view(it->value().data(), it->value().size());
    *ts = keys::tsOf(key);
    return true;
}

}  // namespace tessera::storage
