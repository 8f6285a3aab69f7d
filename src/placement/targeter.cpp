#include "placement/targeter.h"

#include <algorithm>
#include <set>

#include "bson/bson_builder.h"
#include "bson/compare.h"
#include "placement/hasher.h"
#include "query/matcher.h"
#include "query/planner.h"

namespace tessera::placement {
namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using query::Interval;

// Above this many key ranges the planner widens the bounds (still a superset).
constexpr size_t kMaxKeyRanges = 1000;

BsonObj wrapInt64(int64_t v) {
    BsonBuilder b;
    b.appendInt64("", v);
    return b.obj();
}

Interval pointOf(BsonObj v) { return Interval{v, true, v, true}; }

Interval fullInterval() {
    BsonBuilder lo, hi;
    lo.appendMinKey("");
    hi.appendMaxKey("");
    return Interval{lo.obj(), true, hi.obj(), true};
}

bool isPoint(const Interval& i) {
    return i.lowInclusive && i.highInclusive &&
           bson::compareElementValues(i.low.firstElement(), i.high.firstElement()) == 0;
}

bool isNullish(BsonType t) {
    return t == BsonType::Null || t == BsonType::Undefined || t == BsonType::EOO;
}

// Value bounds of a hashed field -> bounds on its hash: each point hashed; an interval inside
// [undefined, null] becomes the hashes of undefined and null (missing fields hash as null);
// anything else is the full hash range.
std::vector<Interval> hashBounds(const std::vector<Interval>& values) {
    std::vector<int64_t> hashes;
    for (const Interval& i : values) {
        if (isPoint(i)) {
            hashes.push_back(hashElement(i.low.firstElement()));
        } else if (isNullish(i.low.firstElement().type()) &&
                   isNullish(i.high.firstElement().type())) {
            BsonBuilder b;
            b.appendNull("n").appendUndefined("u");
            BsonObj o = b.obj();
            hashes.push_back(hashElement(o["n"]));
            hashes.push_back(hashElement(o["u"]));
        } else {
            return {fullInterval()};
        }
    }
    std::sort(hashes.begin(), hashes.end());
    hashes.erase(std::unique(hashes.begin(), hashes.end()), hashes.end());
    std::vector<Interval> out;
    for (int64_t h : hashes) out.push_back(pointOf(wrapInt64(h)));
    return out;
}

TargetingResult resultFromChunks(const RoutingTable& table, const std::vector<bool>& hit,
                                 TargetingKind kind) {
    TargetingResult r;
    r.kind = kind;
    std::set<ShardId> shards;
    const ChunkMap& map = table.chunkMap();
    for (size_t i = 0; i < map.size(); ++i) {
        if (!hit[i]) continue;
        ++r.numChunks;
        shards.insert(map.chunk(i).shard);
    }
    if (shards.empty()) {
        r.kind = TargetingKind::kNoMatch;
        shards.insert(map.chunk(0).shard);
    }
    r.shards.assign(shards.begin(), shards.end());
    return r;
}

}  // namespace

std::string_view targetingKindName(TargetingKind kind) {
    switch (kind) {
        case TargetingKind::kExactKey:
            return "exactKey";
        case TargetingKind::kRanges:
            return "ranges";
        case TargetingKind::kScatter:
            return "scatter";
        case TargetingKind::kNoMatch:
            return "noMatch";
    }
    return "unknown";
}

BsonObj TargetingResult::toBson() const {
    BsonBuilder b;
    b.append("kind", targetingKindName(kind));
    b.startArray("shards");
    for (size_t i = 0; i < shards.size(); ++i) b.append(std::to_string(i), shards[i]);
    b.end();
    b.appendInt64("numChunks", static_cast<int64_t>(numChunks));
    if (shardKey) b.append("shardKey", *shardKey);
    return b.obj();
}

StatusWith<TargetingResult> targetQuery(const RoutingTable& table, bson::BsonView filter) {
    auto matcher = query::Matcher::parse(filter);
    if (!matcher.isOK()) return matcher.getStatus();
    const ShardKeyPattern& pattern = table.shardKeyPattern();

    static constexpr std::string_view kIndexName = "shardKey";
    query::IndexDescription index{std::string(kIndexName), pattern.rangedIndexPattern()};
    BsonBuilder hint;
    hint.append("hint", kIndexName);
    ASSIGN_OR_RETURN(query::QueryPlan plan,
                     query::planQuery(filter, bson::BsonView(), hint.obj(), {index}));
    query::IndexBounds bounds = std::move(plan.bounds);
    invariant(bounds.fields.size() == pattern.numFields());
    if (auto h = pattern.hashedFieldIndex()) bounds.fields[*h] = hashBounds(bounds.fields[*h]);

    bool exact = true;
    for (const auto& field : bounds.fields) exact = exact && field.size() == 1 && isPoint(field[0]);

    std::vector<query::KeyRangeSpec> ranges =
        query::encodeKeyRanges(pattern.rangedIndexPattern(), bounds, kMaxKeyRanges);
    const ChunkMap& map = table.chunkMap();
    std::vector<bool> hit(map.size(), false);
    for (const query::KeyRangeSpec& spec : ranges) {
        // encodeKeyRanges gives [low, high) with an inclusive low and an exclusive high.
        auto [first, last] = map.overlappingRange(KeyRange{spec.low, spec.high});
        for (size_t i = first; i < last; ++i) hit[i] = true;
    }
    bool all = std::all_of(hit.begin(), hit.end(), [](bool b) { return b; });
    TargetingKind kind = exact ? TargetingKind::kExactKey
                         : all ? TargetingKind::kScatter
                               : TargetingKind::kRanges;
    TargetingResult r = resultFromChunks(table, hit, kind);
    if (r.kind == TargetingKind::kExactKey) {
        BsonBuilder key;
        for (size_t i = 0; i < pattern.numFields(); ++i) {
            key.appendElementAs(bounds.fields[i][0].low.firstElement(), pattern.fieldPath(i));
        }
        r.shardKey = key.obj();
    }
    return r;
}

StatusWith<TargetingResult> targetInsert(const RoutingTable& table, bson::BsonView doc) {
    ASSIGN_OR_RETURN(BsonObj key, table.shardKeyPattern().extractShardKeyFromDoc(doc));
    TargetingResult r;
    r.kind = TargetingKind::kExactKey;
    r.shards = {table.findChunk(key).shard};
    r.numChunks = 1;
    r.shardKey = std::move(key);
    return r;
}

StatusWith<TargetingResult> targetWrite(const RoutingTable& table, bson::BsonView filter) {
    return targetQuery(table, filter);
}

}  // namespace tessera::placement
