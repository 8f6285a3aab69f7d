#include "storage/mvcc_iterator.h"

#include "storage/key_format.h"

namespace tessera::storage {

MvccIterator::MvccIterator(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                           const rocksdb::Snapshot* snapshot, Timestamp readTs, std::string lower,
                           std::string upper, bool forward)
    : _lower(std::move(lower)), _upper(std::move(upper)), _readTs(readTs), _forward(forward) {
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
}

bool MvccIterator::next(std::string_view* userKey, std::string_view* value) {
    return _forward ? nextForward(userKey, value) : nextBackward(userKey, value);
}

bool MvccIterator::nextForward(std::string_view* userKey, std::string_view* value) {
    if (!_started) {
        _it->Seek(_lower);
        _started = true;
    }
    // Versions of one user key are adjacent, newest first.
    for (; _it->Valid(); _it->Next()) {
        std::string_view key(_it->key().data(), _it->key().size());
        std::string_view uk = keys::userKeyOf(key);
        if (_haveCurrent && uk == _current) continue;  // older version of a decided key
        if (keys::tsOf(key) > _readTs) continue;       // too new for this reader
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
        _it->SeekToLast();
        _started = true;
    }
    // Backwards, a user key's versions arrive oldest first: remember the last one <= readTs.
    while (_it->Valid()) {
        std::string_view key(_it->key().data(), _it->key().size());
        _current.assign(keys::userKeyOf(key));
        bool found = false;
        while (_it->Valid()) {
            std::string_view k(_it->key().data(), _it->key().size());
            if (keys::userKeyOf(k) != _current) break;
            if (keys::tsOf(k) <= _readTs) {
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

bool PointReader::get(std::string_view userKey, Timestamp readTs, std::string_view* value) {
    if (_it && _stale && !_it->Refresh().ok()) _it.reset();
    if (!_it) {
        rocksdb::ReadOptions ro;
        ro.snapshot = _snapshot;
        ro.prefix_same_as_start = true;  // one user key's versions; uses the prefix bloom
        _it.reset(_db->NewIterator(ro, _cf));
        _stale = false;
    }
    _stale = false;
    _seekKey.assign(userKey);
    keys::appendTs(_seekKey, readTs);
    _it->Seek(_seekKey);
    if (!_it->Valid()) return false;
    std::string_view key(_it->key().data(), _it->key().size());
    if (key.size() != userKey.size() + keys::kTsSize || keys::userKeyOf(key) != userKey)
        return false;
    if (_it->value().empty()) return false;  // tombstone
    *value = std::string_view(_it->value().data(), _it->value().size());
    return true;
}

}  // namespace tessera::storage
