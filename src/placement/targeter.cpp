#include "placement/targeter.h"

#include <algorithm>
#include <array>
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

// Values whose top-level equality the planner turns into exactly one point bound holding the
// value itself (planner_bounds.cpp equalityPredicate's default case), so that the key built from
// them is the key the slow path builds. Objects (operators or embedded-document equality),
// arrays (element matching), regexes (pattern matching), null/undefined (match missing fields),
// MinKey/MaxKey, symbols (compare as strings), code and DBPointer are left to the slow path.
bool isPlainKeyValue(const BsonElement& e) {
    switch (e.type()) {
        case BsonType::Double:
        case BsonType::Int32:
        case BsonType::Int64:
        case BsonType::Decimal128:
        case BsonType::String:
        case BsonType::ObjectId:
        case BsonType::Bool:
        case BsonType::Date:
        case BsonType::Timestamp:
        case BsonType::BinData:
            return true;
        default:
            return false;
    }
}

// The fast path of targetQuery for the hottest routed shape, {k1: v1, ..., kn: vn} with one
// plain equality per shard key path and nothing else (e.g. find({_id: 5}) on {_id: 1}): the
// result is what the planner-based path returns for the same filter, computed without parsing a
// matcher or planning. nullopt when the filter has any other shape.
std::optional<TargetingResult> targetExactKey(const RoutingTable& table, bson::BsonView filter) {
    const ShardKeyPattern& pattern = table.shardKeyPattern();
    const size_t n = pattern.numFields();
    // Small fixed bound: shard keys rarely have more than a few fields.
    constexpr size_t kMaxFastFields = 8;
    if (n > kMaxFastFields) return std::nullopt;
    std::array<BsonElement, kMaxFastFields> values;
    size_t seen = 0;
    for (const BsonElement& e : filter) {
        if (seen == n || !isPlainKeyValue(e)) return std::nullopt;
        std::string_view name = e.fieldName();
        // '$' anywhere: top-level operators and DBRef-style paths ("a.$id") stay with the matcher.
        if (name.find('$') != std::string_view::npos) return std::nullopt;
        size_t i = 0;
        while (i < n && pattern.fieldPath(i) != name) ++i;
        if (i == n || !values[i].eoo()) return std::nullopt;  // another field, or a repeat
        values[i] = e;
        ++seen;
    }
    if (seen != n) return std::nullopt;

    BsonBuilder key;
    for (size_t i = 0; i < n; ++i) {
        if (pattern.isHashedField(i)) {
            key.appendInt64(pattern.fieldPath(i), hashElement(values[i]));
        } else {
            key.appendElementAs(values[i], pattern.fieldPath(i));
        }
    }
    TargetingResult r;
    r.kind = TargetingKind::kExactKey;
    r.shardKey = key.obj();
    r.shards = {table.findChunk(*r.shardKey).shard};
    r.numChunks = 1;
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
    if (auto exact = targetExactKey(table, filter)) return std::move(*exact);
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

namespace detail {
std::optional<TargetingResult> targetExactKeyForTest(const RoutingTable& table,
                                                     bson::BsonView filter) {
    return targetExactKey(table, filter);
}
}  // namespace detail

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
