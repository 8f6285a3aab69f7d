#pragma once

// RocksDB configuration of Tessera's column families: the prefix extractor that makes point
// lookups of a versioned key use bloom filters, and the MVCC garbage-collecting compaction filter.

#include <rocksdb/compaction_filter.h>
#include <rocksdb/merge_operator.h>
#include <rocksdb/options.h>
#include <rocksdb/slice_transform.h>

#include <functional>
#include <memory>

#include "base/hlc.h"

namespace tessera::storage {

// Strips the 8-byte inverted commit timestamp: all versions of one user key share a prefix, so a
// Seek(userKey | ~T) with prefix_same_as_start consults the prefix bloom filters.
std::shared_ptr<const rocksdb::SliceTransform> newVersionPrefixExtractor();

// Removes MVCC versions that no reader can see any more. Keys of one user key arrive newest
// first within a compaction; with H = horizon:
//  - a version is dropped when a newer version of the same user key with ts <= H was seen in the
//    same compaction (every read at T >= H sees that newer version instead);
//  - a tombstone that is the newest version <= H is dropped only in a full compaction (all older
//    versions are then in the same compaction and dropped with it; otherwise an older version in
//    a lower level could resurface).
// Requires max_subcompactions == 1 (a subcompaction boundary could split a user key's versions).
class MvccGcFilterFactory : public rocksdb::CompactionFilterFactory {
  public:
    explicit MvccGcFilterFactory(std::function<Timestamp()> horizon)
        : _horizon(std::move(horizon)) {}
    std::unique_ptr<rocksdb::CompactionFilter> CreateCompactionFilter(
        const rocksdb::CompactionFilter::Context& context) override;
    const char* Name() const override { return "tessera.MvccGcFilterFactory"; }

  private:
    std::function<Timestamp()> _horizon;
};

// The catalog's counts entries ("n" collId: count(8) | dataSize(8) | lastCommitTs(8), big-endian
// two's complement) are written by concurrent writers as deltas (RocksDB merges) instead of
// absolute values, so that no writer has to serialize with the others to compute them: the
// merge adds counts and sizes and keeps the greatest timestamp. A Put sets an absolute value
// (collection creation, reclustering).
std::shared_ptr<rocksdb::MergeOperator> newCountsMergeOperator();
// The 24-byte value (or delta) of a counts entry.
std::string encodeCounts(int64_t count, int64_t dataSize, Timestamp lastTs);

}  // namespace tessera::storage
