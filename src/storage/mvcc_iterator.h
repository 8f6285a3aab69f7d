#pragma once

#include <rocksdb/db.h>

#include <memory>
#include <string>
#include <string_view>

#include "base/hlc.h"

namespace tessera::storage {

// Iterates the user keys in [lower, upper) of a versioned column family as of timestamp `readTs`:
// for each user key, the newest version with ts <= readTs, skipping tombstones (empty values).
class MvccIterator {
  public:
    MvccIterator(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                 const rocksdb::Snapshot* snapshot, Timestamp readTs, std::string lower,
                 std::string upper, bool forward);
    MvccIterator(const MvccIterator&) = delete;
    MvccIterator& operator=(const MvccIterator&) = delete;

    // The next visible user key and its value; both stay valid until the next call.
    bool next(std::string_view* userKey, std::string_view* value);
    // The commit timestamp of the version last returned by next().
    Timestamp currentTs() const { return _currentTs; }
    // OK unless RocksDB reported an error (corruption, I/O) during the iteration.
    rocksdb::Status status() const { return _it->status(); }

  private:
    bool nextForward(std::string_view* userKey, std::string_view* value);
    bool nextBackward(std::string_view* userKey, std::string_view* value);

    std::string _lower;
    std::string _upper;
    rocksdb::Slice _lowerSlice;
    rocksdb::Slice _upperSlice;
    std::unique_ptr<rocksdb::Iterator> _it;
    Timestamp _readTs;
    bool _forward;
    bool _started = false;
    bool _haveCurrent = false;
    std::string _current;       // user key last returned/decided
    std::string _currentValue;  // backward iteration copies the value
    Timestamp _currentTs;
};

// Looks up the newest version <= readTs of `userKey` with one prefix-bloomed Seek. Reuses
// `*iter` (created on first use from `opts`, refreshed when `refresh`).
class PointReader {
  public:
    PointReader(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, const rocksdb::Snapshot* snap)
        : _db(db), _cf(cf), _snapshot(snap) {}
    // True and *value set (valid until the next call) when a live version exists.
    bool get(std::string_view userKey, Timestamp readTs, std::string_view* value);
    // Makes the next get() see writes committed since the iterator was created.
    void markStale() { _stale = true; }

  private:
    rocksdb::DB* _db;
    rocksdb::ColumnFamilyHandle* _cf;
    const rocksdb::Snapshot* _snapshot;
    std::unique_ptr<rocksdb::Iterator> _it;
    std::string _seekKey;
    bool _stale = false;
};

}  // namespace tessera::storage
