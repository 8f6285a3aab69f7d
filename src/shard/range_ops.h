#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "command/command.h"
#include "placement/shard_key_pattern.h"
#include "storage/engine.h"
#include "storage/read_snapshot.h"

namespace tessera::shard {

class TrackedRanges;

// A shard key range [min, max) of one collection, as _shardsvrReadRange / ReceiveRange /
// DeleteRange take it. When max is the pattern's global max the range also holds the global max
// key itself (as the last chunk does).
class ShardKeyRange {
  public:
    // Validates both bounds against the pattern (BadValue) and min < max.
    static StatusWith<ShardKeyRange> make(const placement::ShardKeyPattern& pattern,
                                          bson::BsonView min, bson::BsonView max);

    const bson::BsonObj& min() const { return _min; }
    const bson::BsonObj& max() const { return _max; }
    // Whether the document's shard key falls in the range (false when it cannot be extracted).
    bool containsDoc(const placement::ShardKeyPattern& pattern, bson::BsonView doc) const;
    bool containsEncoded(const std::string& encodedKey) const;
    // ShardKeyPattern::encodeKey of min / max.
    const std::string& encodedMin() const { return _encMin; }
    const std::string& encodedMax() const { return _encMax; }
    bool maxIsGlobal() const { return _maxIsGlobal; }

  private:
    bson::BsonObj _min, _max;
    std::string _encMin, _encMax;
    bool _maxIsGlobal = false;
};

// Whether the collection's records are clustered by `pattern` (storage/cluster_key.h), so that
// the records of a shard key range are one contiguous record-key range: true once
// _shardsvrClusterCollection ran, and for a {_id: 1} shard key in any collection clustered by
// _id.
bool isClusteredBy(const storage::CollectionInfo& coll, const placement::ShardKeyPattern& pattern);

// The record-key bounds of a range in a collection clustered by its shard key: every record
// key starts with the encoded shard key of its document, then the _id.
storage::KeyRange recordKeyRange(const ShardKeyRange& range);

// One page of _shardsvrReadRange, until `batchBytes` of documents were collected (at least one
// document per page). In a collection clustered by the shard key: the records of the range in
// record-key (shard key, _id) order after the record key `afterKey` (or from the range's start),
// read with one seek and no filtering. Otherwise: the documents of the range in _id order after
// `afterId`, found by filtering an _id index scan.
struct RangePage {
    std::vector<bson::BsonObj> docs;
    int64_t bytes = 0;
    // {_id: <value>} of the last record examined (resume point), absent when none was.
    std::optional<bson::BsonObj> lastId;
    // The record key of the last record examined, when the page was read by record key.
    std::optional<std::string> lastKey;
    bool done = false;  // no record after lastId / lastKey
};
RangePage readRangePage(storage::ReadSnapshot& snapshot, const storage::CollectionInfo& coll,
                        const placement::ShardKeyPattern& pattern, const ShardKeyRange& range,
                        const bson::BsonElement& afterId, std::string_view afterKey,
                        int64_t batchBytes);

// Removes the stored documents of `range` that `filter` does not own (all of them when filter is
// null). Returns how many were deleted. Works on storage directly (no ownership filter applies).
// A collection clustered by the shard key reads only the range's records (one seek); others are
// scanned whole.
// Each batch of removals is one TrackedRanges::write (so the tracked counts follow), when
// `tracked` is set.
StatusWith<int64_t> deleteUnownedInRange(storage::Engine& engine, std::string_view ns,
                                         const placement::ShardKeyPattern& pattern,
                                         const ShardKeyRange& range,
                                         const command::OwnershipFilter* filter,
                                         TrackedRanges* tracked = nullptr);

// Inserts documents as they are (with their _id) in one storage batch (CollectionWriter::
// insertBatch): no validation, no ownership. A document whose _id exists already is skipped
// (counted in *skipped). `unit`: the write's observers (may be null).
StatusWith<int64_t> insertDocuments(storage::Engine& engine, std::string_view ns,
                                    const std::vector<bson::BsonView>& docs, int64_t* skipped,
                                    const storage::WriteUnit* unit = nullptr);
StatusWith<int64_t> insertDocuments(storage::Engine& engine, std::string_view ns,
                                    const std::vector<bson::BsonObj>& docs, int64_t* skipped,
                                    const storage::WriteUnit* unit = nullptr);

}  // namespace tessera::shard
