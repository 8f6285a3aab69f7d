// Zones (README.md "Zones"): shards carry zone names (config.shards `tags`), key ranges of a
// collection are assigned to a zone (config.tags {_id, ns, min, max, tag}), and the balancer moves
// every chunk of a zone's range onto the zone's shards and never out of them (the policy's
// second goal), after splitting chunks at the ranges' bounds.
#include <map>
#include <set>

#include "base/log.h"
#include "base/mutex.h"
#include "bson/bson_builder.h"
#include "config/chunk_ops.h"
#include "config/config_server_impl.h"

namespace tessera::config {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

Status ConfigServerImpl::updateShardZone(const std::string& shardId, const std::string& zone,
                                         bool add) {
    MutexLock lk(_shardsMutex);
    if (zone.empty()) return Status(ErrorCodes::BadValue, "zone must be a non-empty string");
    ASSIGN_OR_RETURN(std::vector<BsonObj> shards, _local.find("shards", BsonView()));
    bool found = false;
    int64_t withZone = 0;
    for (const BsonObj& s : shards) {
        bool has = false;
        if (s["tags"].type() == bson::BsonType::Array) {
            for (bson::BsonElement t : s["tags"].objValue()) {
                has = has || (t.type() == bson::BsonType::String && t.stringValue() == zone);
            }
        }
        withZone += has ? 1 : 0;
        found = found || s["_id"].stringValue() == shardId;
    }
    if (!found) return Status(ErrorCodes::ShardNotFound, "Shard " + shardId + " does not exist");
    BsonBuilder u;
    if (add) {
        u.startObject("$addToSet").appendString("tags", zone).end();
    } else {
        BsonBuilder q;
        q.appendString("tag", zone);
        ASSIGN_OR_RETURN(auto range, _local.findOne("tags", q.obj()));
        if (range && withZone <= 1) {
            return Status(ErrorCodes::ZoneStillInUse,
                          "cannot remove a shard from zone " + zone +
                              " if a chunk range is associated with it: remove the zone's ranges "
                              "first (updateZoneKeyRange with zone: null)");
        }
        u.startObject("$pull").appendString("tags", zone).end();
    }
    return _local.update("shards", idQuery(shardId), u.obj(), false).getStatus();
}

Status ConfigServerImpl::updateZoneKeyRange(const std::string& ns, const BsonObj& givenMin,
                                            const BsonObj& givenMax,
                                            const std::optional<std::string>& zone) {
    ASSIGN_OR_RETURN(DdlLockManager::Guard lock,
                     _ddlLocks.lockCollection(ns, "updateZoneKeyRange"));
    auto coll = loadCollection(ns);
    if (!coll.isOK() && !coll.getStatus().is(ErrorCodes::NamespaceNotFound))
        return coll.getStatus();
    // Bounds are compared by the collection's shard key when it is sharded, else as given. On a
    // sharded collection bounds of a prefix of the key are extended (MinKey for the missing
    // fields), as MongoDB does: zones set on the fields of a key before it was refined keep
    // meaning the same documents.
    auto full = [&](const BsonObj& key) -> StatusWith<BsonObj> {
        if (!coll.isOK()) return key;
        return coll.getValue().pattern.extendRangeBound(key);
    };
    auto encode = [&](const BsonObj& key) -> StatusWith<std::string> {
        if (!coll.isOK()) return key.toJson();
        ASSIGN_OR_RETURN(BsonObj extended, full(key));
        return coll.getValue().pattern.encodeKey(extended);
    };
    ASSIGN_OR_RETURN(const BsonObj min, full(givenMin));
    ASSIGN_OR_RETURN(const BsonObj max, full(givenMax));
    ASSIGN_OR_RETURN(std::string lo, encode(min));
    ASSIGN_OR_RETURN(std::string hi, encode(max));
    if (coll.isOK() && !(lo < hi)) {
        return Status(ErrorCodes::BadValue,
                      "min " + min.toJson() + " must be less than max " + max.toJson());
    }
    BsonBuilder q;
    q.appendString("ns", ns);
    ASSIGN_OR_RETURN(std::vector<BsonObj> ranges, _local.find("tags", q.obj()));
    if (!zone) {
        // Removal: exactly this range.
        for (const BsonObj& r : ranges) {
            if (!r["min"].isObject() || !r["max"].isObject()) continue;
            auto rlo = encode(r["min"].objValue().copy());
            auto rhi = encode(r["max"].objValue().copy());
            if (rlo.isOK() && rhi.isOK() && rlo.getValue() == lo && rhi.getValue() == hi) {
                BsonBuilder del;
                del.appendElementAs(r["_id"], "_id");
                return _local.remove("tags", del.obj(), false).getStatus();
            }
        }
        return Status::OK();
    }
    BsonBuilder zq;
    zq.appendString("tags", *zone);
    ASSIGN_OR_RETURN(auto zoneShard, _local.findOne("shards", zq.obj()));
    if (!zoneShard) {
        return Status(
            ErrorCodes::ZoneNotFound,
            "zone " + *zone + " does not exist: add a shard to it first (addShardToZone)");
    }
    for (const BsonObj& r : ranges) {
        if (!r["min"].isObject() || !r["max"].isObject()) continue;
        auto rlo = encode(r["min"].objValue().copy());
        auto rhi = encode(r["max"].objValue().copy());
        if (!rlo.isOK() || !rhi.isOK()) continue;
        if (rlo.getValue() == lo && rhi.getValue() == hi) {
            BsonBuilder set;
            set.startObject("$set").appendString("tag", *zone).end();
            BsonBuilder id;
            id.appendElementAs(r["_id"], "_id");
            return _local.update("tags", id.obj(), set.obj(), false).getStatus();
        }
        if (rlo.getValue() < hi && lo < rhi.getValue()) {
            return Status(ErrorCodes::RangeOverlapConflict,
                          "zone range [" + min.toJson() + ", " + max.toJson() +
                              ") overlaps the range [" + r["min"].objValue().toJson() + ", " +
                              r["max"].objValue().toJson() + ") of zone " +
                              std::string(r["tag"].stringValue()));
        }
    }
    BsonBuilder doc;
    doc.appendOid("_id", bson::ObjectId::generate())
        .appendString("ns", ns)
        .appendObject("min", min)
        .appendObject("max", max)
        .appendString("tag", *zone);
    return _local.insert("tags", doc.obj());
}

StatusWith<std::vector<ZoneRange>> ConfigServerImpl::zoneRanges(const ShardedCollection& coll) {
    BsonBuilder q;
    q.appendString("ns", coll.coll.ns);
    ASSIGN_OR_RETURN(std::vector<BsonObj> docs, _local.find("tags", q.obj()));
    std::vector<ZoneRange> out;
    for (const BsonObj& r : docs) {
        if (r["tag"].type() != bson::BsonType::String) continue;
        // Stored bounds are full keys; one of a key's prefix (written before a refine that did
        // not finish extending it) means what its prefix meant.
        auto min = coll.pattern.extendRangeBound(r["min"].objValue());
        auto max = coll.pattern.extendRangeBound(r["max"].objValue());
        if (!min.isOK() || !max.isOK()) {
            log::warning(
                "SHARDING", 9152, "A zone range does not fit the shard key; ignored",
                "{\"ns\":\"" + log::jsonEscape(coll.coll.ns) + "\",\"range\":" + r.toJson() + "}");
            continue;
        }
        ZoneRange z;
        z.lo = coll.pattern.encodeKey(min.getValue());
        z.hi = coll.pattern.encodeKey(max.getValue());
        z.min = std::move(min).getValue();
        z.max = std::move(max).getValue();
        z.zone = std::string(r["tag"].stringValue());
        out.push_back(std::move(z));
    }
    return out;
}

Status ConfigServerImpl::splitAtZoneBounds(const std::string& ns) {
    ASSIGN_OR_RETURN(DdlLockManager::Guard lock, _ddlLocks.lockCollection(ns, "balancer zones"));
    ASSIGN_OR_RETURN(ShardedCollection coll, loadCollection(ns));
    ASSIGN_OR_RETURN(std::vector<ZoneRange> ranges, zoneRanges(coll));
    const std::string globalMin = coll.pattern.encodeKey(coll.pattern.globalMin());
    const std::string globalMax = coll.pattern.encodeKey(coll.pattern.globalMax());
    for (const ZoneRange& range : ranges) {
        for (const auto& [key, encoded] :
             {std::pair{&range.min, &range.lo}, std::pair{&range.max, &range.hi}}) {
            if (*encoded == globalMin || *encoded == globalMax) {
                continue;  // the key space's own ends are no split points
            }
            auto index = findChunkContaining(coll.pattern, coll.chunks, *key);
            if (!index) continue;
            if (coll.pattern.encodeKey(coll.chunks[*index].min) == *encoded) {
                continue;  // already a chunk boundary
            }
            TRY_STATUS(splitAt(coll, *index, {*key}));
        }
    }
    return Status::OK();
}

}  // namespace tessera::config

namespace tessera::config {

std::vector<std::pair<std::string, std::set<std::string>>> ConfigServerImpl::zoneShards() {
    std::map<std::string, std::set<std::string>> zones;
    auto shards = _local.find("shards", BsonView());
    if (!shards.isOK()) return {};
    for (const BsonObj& s : shards.getValue()) {
        if (s["tags"].type() != bson::BsonType::Array) continue;
        for (bson::BsonElement t : s["tags"].objValue()) {
            if (t.type() == bson::BsonType::String) {
                zones[std::string(t.stringValue())].insert(std::string(s["_id"].stringValue()));
            }
        }
    }
    return {zones.begin(), zones.end()};
}

void ConfigServerImpl::assignZones(const ShardedCollection& coll, balancer::Collection& snapshot) {
    auto ranges = zoneRanges(coll);
    if (!ranges.isOK()) return;
    for (size_t i = 0; i < coll.chunks.size() && i < snapshot.chunks.size(); ++i) {
        std::string lo = coll.pattern.encodeKey(coll.chunks[i].min);
        std::string hi = coll.pattern.encodeKey(coll.chunks[i].max);
        for (const ZoneRange& range : ranges.getValue()) {
            if (range.lo <= lo && hi <= range.hi) snapshot.chunks[i].zone = range.zone;
        }
    }
}

}  // namespace tessera::config
