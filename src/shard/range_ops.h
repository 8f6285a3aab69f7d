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

  private:
    bson::BsonObj _min, _max;
    std::string _encMin, _encMax;
    bool _maxIsGlobal = false;
};

// One page of _shardsvrReadRange: the documents of the range in _id (record key) order after
// `afterId`, until `batchBytes` of documents were collected (at least one document per page).
struct RangePage {
    std::vector<bson::BsonObj> docs;
    int64_t bytes = 0;
    // {_id: <value>} of the last record examined (resume point), absent when none was.
    std::optional<bson::BsonObj> lastId;
    bool done = false;  // no record after lastId
};
RangePage readRangePage(storage::ReadSnapshot& snapshot, const storage::CollectionInfo& coll,
                        const placement::ShardKeyPattern& pattern, const ShardKeyRange& range,
                        const bson::BsonElement& afterId, int64_t batchBytes);

// Removes the stored documents of `range` that `filter` does not own (all of them when filter is
// null). Returns how many were deleted. Works on storage directly (no ownership filter applies).
StatusWith<int64_t> deleteUnownedInRange(storage::Engine& engine, std::string_view ns,
                                         const placement::ShardKeyPattern& pattern,
                                         const ShardKeyRange& range,
                                         const command::OwnershipFilter* filter);

// Inserts documents as they are (with their _id) through the storage writer: no validation, no
// ownership. A document whose _id exists already is skipped (counted in *skipped).
StatusWith<int64_t> insertDocuments(storage::Engine& engine, std::string_view ns,
                                    const std::vector<bson::BsonObj>& docs, int64_t* skipped);

}  // namespace tessera::shard
