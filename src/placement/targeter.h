#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "placement/routing_table.h"

namespace tessera::placement {

// How an operation was targeted (for explain, metrics and scatter limits).
enum class TargetingKind {
    kExactKey,  // the shard key is known exactly: one chunk, one shard
    kRanges,    // shard key bounds narrowed the chunks (maybe still several shards)
    kScatter,   // nothing narrowed: every chunk, every shard that owns one
    kNoMatch,   // the filter matches no shard key; one shard is still contacted for the reply
};

std::string_view targetingKindName(TargetingKind kind);  // "exactKey", "ranges", ...

struct TargetingResult {
    TargetingKind kind = TargetingKind::kScatter;
    // Sorted, unique, never empty (kNoMatch names the shard of the first chunk, as MongoDB
    // contacts one shard to produce a correct empty reply).
    std::vector<ShardId> shards;
    // Chunks whose ranges may hold a matching document.
    size_t numChunks = 0;
    // kExactKey: the shard key (hashed fields hashed), as extractShardKeyFromQuery/Doc give it.
    std::optional<bson::BsonObj> shardKey;

    bool isSingleShard() const { return shards.size() == 1; }
    // {kind: "ranges", shards: ["s0", "s1"], numChunks: 3, shardKey?: {...}}
    bson::BsonObj toBson() const;
};

// Targets a read (find/count/aggregate $match prefix) by its filter, never missing a shard that
// owns a matching document (the returned shards are a superset). The filter is analysed with the
// query planner's bounds over the shard key pattern treated as an index key pattern
// (ShardKeyPattern::rangedIndexPattern): top-level fields and $and; equality, $in, ranges, regex
// prefixes, $exists. A hashed field is narrowed only by equalities/$in (each value hashed); a
// range on it does not narrow. Bounds become encoded key ranges (query::encodeKeyRanges),
// intersected with the chunk ranges. $or, $nor, $not, $expr and non-simple collations are not
// analysed (scatter). Parse errors of the filter are returned as the matcher reports them.
// Fast path: a filter that is exactly one plain equality per shard key path ({_id: 5} on {_id: 1};
// numbers, strings, ObjectIds, bools, dates, timestamps, binData) is targeted by its key
// directly, with the same result the planner-based analysis gives.
StatusWith<TargetingResult> targetQuery(const RoutingTable& table, bson::BsonView filter);

// Targets an insert by the document's shard key (missing fields are null). ShardKeyNotFound
// (61) when a key path holds an array.
StatusWith<TargetingResult> targetInsert(const RoutingTable& table, bson::BsonView doc);

// Targets an update or delete by its filter: the same shards as targetQuery. The router decides
// what a single-document write (multi: false, or an upsert) may do with a non-exact result
// (MongoDB: exact shard key, or an _id equality broadcast, or the two-phase "write without shard
// key" protocol; see README.md).
StatusWith<TargetingResult> targetWrite(const RoutingTable& table, bson::BsonView filter);

namespace detail {
// targetQuery's fast path alone (nullopt: the filter needs the full analysis). For tests.
std::optional<TargetingResult> targetExactKeyForTest(const RoutingTable& table,
                                                     bson::BsonView filter);
}  // namespace detail

}  // namespace tessera::placement
