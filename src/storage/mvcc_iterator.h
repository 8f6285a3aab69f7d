#pragma once

#include <rocksdb/db.h>
#include <rocksdb/utilities/write_batch_with_index.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/hlc.h"
#include "base/mutex.h"
#include "storage/key_format.h"
#include "storage/prepared_transactions.h"

namespace tessera::storage {

// Iterates the user keys in [lower, upper) of a versioned column family as of timestamp `readTs`:
// for each user key, the newest version with ts <= readTs, skipping tombstones (empty values).
// With `overlay` (a transaction's own writes, keyed at keys::kIntentTs), the iteration merges
// them over the database and an intent is the newest version of its user key whatever readTs.
// With `prepared` (the transactions prepared at or before readTs when the reader chose it,
// prepared_transactions.h), their versions in [lower, upper) are merged in too: reaching one
// waits for its transaction's decision, then it is the key's version at readTs if the commit
// timestamp is <= readTs, and ignored otherwise; when the set's PrepareReads does not allow the
// wait, the iteration ends there (conflicted(); the conflict is noted in the PrepareReads). Keys
// no prepared transaction wrote are read without waiting.
class MvccIterator {
  public:
    MvccIterator(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                 const rocksdb::Snapshot* snapshot, Timestamp readTs, std::string lower,
                 std::string upper, bool forward, rocksdb::WriteBatchWithIndex* overlay = nullptr,
                 std::shared_ptr<const PreparedSet> prepared = nullptr);
    MvccIterator(const MvccIterator&) = delete;
    MvccIterator& operator=(const MvccIterator&) = delete;

    // The next visible user key and its value; both stay valid until the next call.
    bool next(std::string_view* userKey, std::string_view* value);
    // The commit timestamp of the version last returned by next().
    Timestamp currentTs() const { return _currentTs; }
    // OK unless RocksDB reported an error (corruption, I/O) during the iteration.
    rocksdb::Status status() const { return _it->status(); }
    // The iteration ended at a prepared version it could not wait for (above).
    bool conflicted() const { return _conflicted; }

  private:
    // The database's and the prepared versions, merged in iteration order.
    bool nextMerged(std::string_view* userKey, std::string_view* value);
    bool nextForward(std::string_view* userKey, std::string_view* value);
    bool nextBackward(std::string_view* userKey, std::string_view* value);
    // The bounds are checked here as well as given to RocksDB: a transaction's overlay
    // (WriteBatchWithIndex::NewIteratorWithBase, RocksDB 7.8) does not apply them to its own
    // entries, so a scan would run on into the intents of the next collection or index.
    bool pastUpper(std::string_view key) const {
        return !_upper.empty() && key >= std::string_view(_upper);
    }
    bool visible(Timestamp ts) const {
        return ts <= _readTs || (_withIntents && ts == keys::kIntentTs);
    }

    std::string _lower;
    std::string _upper;
    rocksdb::Slice _lowerSlice;
    rocksdb::Slice _upperSlice;
    rocksdb::ReadOptions _overlayOptions;  // an overlay's merged iterator keeps a pointer to it
    std::unique_ptr<rocksdb::Iterator> _it;
    Timestamp _readTs;
    bool _withIntents;
    bool _forward;
    bool _started = false;
    bool _haveCurrent = false;
    std::string _current;       // user key last returned/decided
    std::string _currentValue;  // backward iteration copies the value
    Timestamp _currentTs;

    // Merging prepared versions (empty: none in range). The database's next key waits in
    // _db* (its views stay valid: the RocksDB iterator does not move meanwhile).
    std::shared_ptr<const PreparedSet> _preparedSet;
    std::vector<PreparedSet::Version> _prepared;  // ascending key order
    size_t _preparedUsed = 0;
    bool _conflicted = false;
    bool _dbPending = false;
    bool _dbDone = false;
    std::string_view _dbKey;
    std::string_view _dbValue;
    Timestamp _dbTs;
};

// Point-lookup iterators of one column family (prefix_same_as_start, no RocksDB snapshot),
// reused across operations: building one (NewIterator: the memtables', every level's and file's
// iterator, an arena) and destroying it cost about as much as the lookup itself, while
// `Refresh()` re-pins the latest state almost for free when no flush or compaction changed the
// LSM tree meanwhile. Reading without a snapshot is exact at a timestamp: versions newer than the
// read's ts are skipped, and the reader's SnapshotPin keeps the ones it may see from GC.
//
// An idle pooled iterator pins the tree it last saw (memtables, files), so every completed flush
// or compaction (RocksEngine's event listener) drops the idle ones and outdates those in use:
// they are destroyed instead of returned. At most kMaxIdle are kept. Thread-safe.
class PointIteratorPool {
  public:
    struct Lease {
        std::unique_ptr<rocksdb::Iterator> it;
        uint64_t generation = 0;
    };
    static constexpr size_t kMaxIdle = 64;

    ~PointIteratorPool() { clear(); }
    // Once, after the DB opened and before the first acquire (invalidate may come earlier).
    void attach(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf) {
        _db = db;
        _cf = cf;
    }

    // An iterator showing the latest state.
    Lease acquire();
    void release(Lease lease);
    // The LSM tree changed: idle iterators are dropped, leased ones will not come back.
    void invalidate();
    // Drops every idle iterator (before the DB closes).
    void clear();

  private:
    rocksdb::Iterator* create() const;

    rocksdb::DB* _db = nullptr;
    rocksdb::ColumnFamilyHandle* _cf = nullptr;
    Mutex _mutex;
    std::vector<Lease> _idle GUARDED_BY(_mutex);
    std::atomic<uint64_t> _generation{0};
};

// Looks up the newest version <= readTs of a user key with one prefix-bloomed Seek, reusing its
// iterator across lookups.
class PointReader {
  public:
    // With `snap`: a private iterator on that snapshot. Without: an iterator leased from `pool`
    // (returned when the reader goes), or a private one when there is no pool.
    PointReader(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, const rocksdb::Snapshot* snap,
                PointIteratorPool* pool = nullptr)
        : _db(db), _cf(cf), _snapshot(snap), _pool(snap ? nullptr : pool) {}
    ~PointReader() { reset(); }
    PointReader(const PointReader&) = delete;
    PointReader& operator=(const PointReader&) = delete;

    // True and *value set (valid until the next call) when a live version exists.
    bool get(std::string_view userKey, Timestamp readTs, std::string_view* value);
    // The newest committed version of userKey, tombstones included: false when there is none;
    // else *value (empty: a tombstone; valid until the next call) and *ts. For a transaction's
    // check that nobody committed the key after its read timestamp.
    bool newest(std::string_view userKey, std::string_view* value, Timestamp* ts);
    // Makes the next get() see writes committed since the iterator was created.
    void markStale() { _stale = true; }
    // Gives the iterator back (to the pool, or destroys it): before its snapshot is released.
    void reset();

  private:
    // The newest version <= readTs, tombstones included.
    bool seek(std::string_view userKey, Timestamp readTs, std::string_view* value, Timestamp* ts);

    rocksdb::DB* _db;
    rocksdb::ColumnFamilyHandle* _cf;
    const rocksdb::Snapshot* _snapshot;
    PointIteratorPool* _pool;
    PointIteratorPool::Lease _lease;  // _lease.it is the iterator, pooled or not
    std::string _seekKey;
    bool _stale = false;
};

}  // namespace tessera::storage
