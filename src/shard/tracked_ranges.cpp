#include "shard/tracked_ranges.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "base/log.h"
#include "base/mutex.h"
#include "bson/bson_builder.h"
#include "bson/validate.h"
#include "shard/ownership_filter.h"

namespace tessera::shard {
namespace {

constexpr std::string_view kPrefix = "rng:";
// The counts of a tracked range, apart from its descriptor so that a document write adds 16
// bytes to its batch, not a BSON document: docs(8) bytes(8), little-endian.
constexpr std::string_view kCountsPrefix = "rnc:";

std::string countsKey(const TrackedRange& r) {
    return std::string(kCountsPrefix) + r.recordKey().substr(kPrefix.size());
}

std::string encodeCounts(int64_t docs, int64_t bytes) {
    std::string v(16, '\0');
    std::memcpy(v.data(), &docs, 8);
    std::memcpy(v.data() + 8, &bytes, 8);
    return v;
}

bool overlaps(const ShardKeyRange& a, const ShardKeyRange& b) {
    return a.encodedMin() < b.encodedMax() && b.encodedMin() < a.encodedMax();
}

}  // namespace

bson::BsonObj TrackedRange::toBson() const {
    bson::BsonBuilder b;
    b.append("ns", ns)
        .appendBinary("uuid", 4, uuid)
        .append("kind", kind == Kind::kIncoming ? "incoming" : "outgoing")
        .append("migrationId", migrationId)
        .appendObject("key", pattern->toBson())
        .appendObject("min", range.min())
        .appendObject("max", range.max())
        .appendInt64("docs", docs)
        .appendInt64("bytes", bytes);
    return b.obj();
}

StatusWith<TrackedRange> TrackedRange::parse(bson::BsonView doc) {
    TrackedRange r;
    if (doc["ns"].type() != bson::BsonType::String || !doc["min"].isObject() ||
        !doc["max"].isObject() || doc["kind"].type() != bson::BsonType::String ||
        !doc["key"].isObject()) {
        return Status(ErrorCodes::BadValue, "malformed tracked range " + doc.toJson());
    }
    ASSIGN_OR_RETURN(placement::ShardKeyPattern parsed,
                     placement::ShardKeyPattern::parse(doc["key"].objValue()));
    r.pattern = std::make_shared<const placement::ShardKeyPattern>(std::move(parsed));
    const placement::ShardKeyPattern& pattern = *r.pattern;
    r.ns = std::string(doc["ns"].stringValue());
    if (doc["uuid"].type() == bson::BsonType::BinData) {
        r.uuid = std::string(doc["uuid"].binaryValue().data);
    }
    r.kind = doc["kind"].stringValue() == "outgoing" ? Kind::kOutgoing : Kind::kIncoming;
    if (doc["migrationId"].type() == bson::BsonType::String) {
        r.migrationId = std::string(doc["migrationId"].stringValue());
    }
    ASSIGN_OR_RETURN(r.range,
                     ShardKeyRange::make(pattern, doc["min"].objValue(), doc["max"].objValue()));
    r.docs = doc["docs"].numberLong();
    r.bytes = doc["bytes"].numberLong();
    return r;
}

std::string TrackedRange::recordKey() const {
    std::string key(kPrefix);
    key.append(ns);
    key.push_back('\0');
    key.append(range.encodedMin());
    return key;
}

Status TrackedRanges::load() {
    std::vector<std::pair<std::string, std::string>> stale;
    std::map<std::string, std::string> counts;  // key after the prefix → counts
    for (const auto& [key, value] : _engine.sideRecords(kCountsPrefix)) {
        counts[key.substr(kCountsPrefix.size())] = value;
    }
    MutexLock lk(_mutex);
    _ranges.clear();
    for (const auto& [key, value] : _engine.sideRecords(kPrefix)) {
        const auto* bytes = reinterpret_cast<const uint8_t*>(value.data());
        if (value.size() < 5 || !bson::validateBson(bytes, value.size()).isOK()) continue;
        auto parsed = TrackedRange::parse(bson::BsonView(value.data()));
        if (!parsed.isOK()) {
            log::warning("SHARDING", 22040, "Dropped an unreadable tracked range",
                         "{\"error\":\"" + log::jsonEscape(parsed.getStatus().toString()) + "\"}");
            stale.emplace_back(key, "");
            continue;
        }
        TrackedRange r = std::move(parsed.getValue());
        if (auto c = counts.find(key.substr(kPrefix.size())); c != counts.end()) {
            if (c->second.size() == 16) {
                std::memcpy(&r.docs, c->second.data(), 8);
                std::memcpy(&r.bytes, c->second.data() + 8, 8);
            }
        }
        _ranges.push_back(std::move(r));
    }
    if (!stale.empty()) TRY_STATUS(_engine.writeSideRecords(stale));
    return Status::OK();
}

Status TrackedRanges::dropNamespace(const std::string& ns) {
    MutexLock lk(_mutex);
    std::vector<std::pair<std::string, std::string>> gone;
    for (size_t i = _ranges.size(); i-- > 0;) {
        bool match = ns.ends_with('.') ? _ranges[i].ns.starts_with(ns) : _ranges[i].ns == ns;
        if (!match) continue;
        gone.emplace_back(_ranges[i].recordKey(), "");
        gone.emplace_back(countsKey(_ranges[i]), "");
        _ranges.erase(_ranges.begin() + static_cast<std::ptrdiff_t>(i));
    }
    return gone.empty() ? Status::OK() : _engine.writeSideRecords(gone);
}

Status TrackedRanges::add(const TrackedRange& range) {
    MutexLock lk(_mutex);
    for (const TrackedRange& r : _ranges) {
        if (r.ns == range.ns && overlaps(r.range, range.range)) {
            return Status(ErrorCodes::ConflictingOperationInProgress,
                          "the range [" + range.range.min().toJson() + ", " +
                              range.range.max().toJson() + ") of " + range.ns +
                              " overlaps a range this shard still holds apart (" +
                              r.toBson().toJson() + "); it is being purged, retry");
        }
    }
    bson::BsonObj doc = range.toBson();
    TRY_STATUS(_engine.writeSideRecords(
        {{range.recordKey(), std::string(reinterpret_cast<const char*>(doc.data()), doc.size())},
         {countsKey(range), encodeCounts(range.docs, range.bytes)}}));
    _ranges.push_back(range);
    return Status::OK();
}

Status TrackedRanges::remove(const std::string& ns, const std::string& encodedMin) {
    MutexLock lk(_mutex);
    for (size_t i = 0; i < _ranges.size(); ++i) {
        if (_ranges[i].ns != ns || _ranges[i].range.encodedMin() != encodedMin) continue;
        TRY_STATUS(
            _engine.writeSideRecords({{_ranges[i].recordKey(), ""}, {countsKey(_ranges[i]), ""}}));
        _ranges.erase(_ranges.begin() + static_cast<std::ptrdiff_t>(i));
        return Status::OK();
    }
    return Status::OK();
}

std::optional<TrackedRange> TrackedRanges::find(const std::string& ns,
                                                const std::string& encodedMin) const {
    MutexLock lk(_mutex);
    for (const TrackedRange& r : _ranges) {
        if (r.ns == ns && r.range.encodedMin() == encodedMin) return r;
    }
    return std::nullopt;
}

std::vector<TrackedRange> TrackedRanges::list(const std::string& ns) const {
    MutexLock lk(_mutex);
    std::vector<TrackedRange> out;
    for (const TrackedRange& r : _ranges) {
        if (ns.empty() || r.ns == ns) out.push_back(r);
    }
    return out;
}

// Called for the internal writes of TrackedRanges::write (the mutex held by the caller): the
// range holding the document before and after the write gets the delta, and its new counts
// go into the write's batch.
class TrackedRanges::CountingObserver final : public storage::WriteObserver {
  public:
    explicit CountingObserver(TrackedRanges& ranges) : _ranges(ranges) {}
    void onWrite(const storage::CollectionInfo& coll, Op, bson::BsonView before,
                 bson::BsonView after,
                 std::vector<std::pair<std::string, std::string>>* out) override {
        adjust(coll, before, -1, out);
        adjust(coll, after, +1, out);
    }

  private:
    void adjust(const storage::CollectionInfo& coll, bson::BsonView doc, int sign,
                std::vector<std::pair<std::string, std::string>>* out) {
        if (doc.isEmpty()) return;
        _ranges._mutex.assertHeld();  // TrackedRanges::write runs the writes under it
        for (size_t i = 0; i < _ranges._ranges.size(); ++i) {
            TrackedRange& r = _ranges._ranges[i];
            // The uuid names the collection (and its incarnation).
            if (r.uuid != coll.uuid || !r.range.containsDoc(*r.pattern, doc)) continue;
            r.docs += sign;
            r.bytes += sign * static_cast<int64_t>(doc.size());
            out->emplace_back(countsKey(r), encodeCounts(r.docs, r.bytes));
            return;
        }
    }
    TrackedRanges& _ranges;
};

Status TrackedRanges::write(const std::function<Status(const storage::WriteUnit&)>& fn) {
    MutexLock lk(_mutex);
    CountingObserver observer(*this);
    storage::WriteUnit unit;
    unit.addObserver(&observer);
    return fn(unit);
}

std::optional<command::OwnershipFilter::Totals> TrackedRanges::ownedTotals(
    const storage::CollectionInfo& coll, const ChunkOwnershipFilter& filter) const {
    MutexLock lk(_mutex);
    storage::CollectionStats stats = _engine.stats(coll);
    command::OwnershipFilter::Totals totals{stats.count, stats.dataSize};
    const std::string ns = coll.ns();
    for (const TrackedRange& r : _ranges) {
        if (r.ns != ns || r.uuid != coll.uuid) continue;  // another incarnation: stale
        switch (filter.ownershipOf(r.range.encodedMin(), r.range.encodedMax())) {
            case ChunkOwnershipFilter::RangeOwnership::kAll:
                break;  // owned: its documents are counted as stored
            case ChunkOwnershipFilter::RangeOwnership::kNone:
                totals.count -= r.docs;
                totals.bytes -= r.bytes;
                break;
            case ChunkOwnershipFilter::RangeOwnership::kPartial:
                return std::nullopt;
        }
    }
    if (totals.count < 0 || totals.bytes < 0) return std::nullopt;  // never guess
    return totals;
}

}  // namespace tessera::shard
