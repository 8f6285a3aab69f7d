// Split and merge of chunks (src/placement/README.md "Chunk version rules").
#include <algorithm>
#include <optional>
#include <set>

#include "base/log.h"
#include "bson/bson_builder.h"
#include "bson/compare.h"
#include "config/chunk_ops.h"
#include "config/config_server_impl.h"

namespace tessera::config {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

// Between the two halves of a split's and a merge's chunk writes (crash tests of
// repairInterruptedChunkOps).
TESSERA_FAIL_POINT_DEFINE(splitChunkHangAfterNewChunks);
TESSERA_FAIL_POINT_DEFINE(mergeChunksHangAfterWidening);

namespace {

BsonObj rangeDetails(BsonView min, BsonView max) {
    BsonBuilder b;
    b.appendObject("min", min).appendObject("max", max);
    return b.obj();
}

// [min, max] of a `bounds` argument.
StatusWith<std::pair<BsonObj, BsonObj>> parseBounds(const bson::BsonElement& e) {
    if (!e.isArray() || e.objValue().nFields() != 2) {
        return Status(ErrorCodes::BadValue, "bounds must be an array of two shard keys [min, max]");
    }
    auto it = e.objValue().begin();
    bson::BsonElement lo = *it++;
    bson::BsonElement hi = *it;
    if (!lo.isObject() || !hi.isObject()) {
        return Status(ErrorCodes::BadValue, "bounds must hold two documents");
    }
    return std::make_pair(lo.objValue().copy(), hi.objValue().copy());
}

// The midpoint of the hashed field's range in a chunk [min, max) of a hashed-prefix key
// (MinKey/MaxKey stand for the int64 extremes).
std::optional<int64_t> hashedMidpoint(BsonView min, BsonView max) {
    auto value = [](const bson::BsonElement& e, bool low) -> std::optional<__int128> {
        if (e.type() == bson::BsonType::MinKey) return __int128(INT64_MIN);
        if (e.type() == bson::BsonType::MaxKey) return __int128(INT64_MAX) + (low ? 0 : 1);
        if (e.type() == bson::BsonType::Int64) return __int128(e.int64Value());
        return std::nullopt;
    };
    auto lo = value(min.firstElement(), true);
    auto hi = value(max.firstElement(), false);
    if (!lo || !hi || *hi - *lo < 2) return std::nullopt;
    return static_cast<int64_t>(*lo + (*hi - *lo) / 2);
}

}  // namespace

Status ConfigServerImpl::splitAt(ShardedCollection& coll, size_t index,
                                 std::vector<BsonObj> points) {
    ASSIGN_OR_RETURN(SplitResult split, computeSplit(coll.pattern, coll.chunks, index, points));
    // New chunks first: a reader in between sees an overlap (ConflictingOperationInProgress,
    // it reads again) rather than a gap.
    for (const ChunkRecord& c : split.inserted) TRY_STATUS(writeChunk(c, coll.coll.uuid, true));
    pauseWhileSet(splitChunkHangAfterNewChunks);
    TRY_STATUS(writeChunk(split.updated, coll.coll.uuid, false));
    BsonBuilder details;
    details.appendObject("before", rangeDetails(coll.chunks[index].min, coll.chunks[index].max));
    details.appendInt64("number", static_cast<int64_t>(split.inserted.size() + 1));
    details.appendString("owningShard", split.updated.shard);
    logChange("split", coll.coll.ns, details.obj());
    _routerNotifier.collectionChanged(coll.coll.ns);
    coll.chunks[index] = split.updated;
    for (ChunkRecord& c : split.inserted) coll.chunks.push_back(std::move(c));
    sortChunks(coll.pattern, coll.chunks);
    return Status::OK();
}

StatusWith<BsonObj> ConfigServerImpl::medianKey(const ShardedCollection& coll, size_t index) {
    const ChunkRecord& chunk = coll.chunks[index];
    size_t dot = coll.coll.ns.find('.');
    std::string db = coll.coll.ns.substr(0, dot);
    std::string name = coll.coll.ns.substr(dot + 1);
    // Every document's shard key fields, sorted by the key (the ownership filter of the shard
    // hides orphans); keys outside the chunk are skipped here.
    BsonBuilder proj;
    proj.appendInt32("_id", 0);
    for (size_t i = 0; i < coll.pattern.numFields(); ++i) {
        if (coll.pattern.fieldPath(i) != "_id") proj.appendInt32(coll.pattern.fieldPath(i), 1);
    }
    if (coll.pattern.toBson().hasField("_id")) {
        proj = BsonBuilder();
        for (size_t i = 0; i < coll.pattern.numFields(); ++i) {
            proj.appendInt32(coll.pattern.fieldPath(i), 1);
        }
    }
    BsonBuilder cmd;
    cmd.appendString("find", name)
        .appendObject("filter", BsonView())
        .appendObject("projection", proj.obj())
        .appendObject("sort", coll.pattern.rangedIndexPattern())
        .appendInt64("batchSize", 1000000);
    ASSIGN_OR_RETURN(BsonObj reply, runOnShard(chunk.shard, db, cmd.obj()));
    std::string lo = coll.pattern.encodeKey(chunk.min);
    std::string hi = coll.pattern.encodeKey(chunk.max);
    std::vector<std::pair<std::string, BsonObj>> keys;
    std::string host;
    for (;;) {
        BsonView cursor = reply["cursor"].objValue();
        bson::BsonElement batch = cursor["firstBatch"];
        if (batch.eoo()) batch = cursor["nextBatch"];
        if (batch.isArray()) {
            for (const bson::BsonElement& d : batch.objValue()) {
                auto key = coll.pattern.extractShardKeyFromDoc(d.objValue());
                if (!key.isOK()) continue;
                std::string e = coll.pattern.encodeKey(key.getValue());
                if (e >= lo && e < hi) keys.emplace_back(std::move(e), key.getValue());
            }
        }
        int64_t id = cursor["id"].numberLong();
        if (id == 0) break;
        BsonBuilder more;
        more.appendInt64("getMore", id).appendString("collection", name);
        ASSIGN_OR_RETURN(reply, runOnShard(chunk.shard, db, more.obj()));
    }
    std::sort(keys.begin(), keys.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    if (keys.empty()) {
        return Status(ErrorCodes::CommandFailed, "cannot split: the chunk [" + chunk.min.toJson() +
                                                     ", " + chunk.max.toJson() + ") is empty");
    }
    size_t m = keys.size() / 2;
    while (m < keys.size() && keys[m].first == lo) ++m;
    if (m == keys.size()) {
        return Status(
            ErrorCodes::CommandFailed,
            "cannot split: every document of the chunk has the key " + chunk.min.toJson());
    }
    return keys[m].second;
}

Status ConfigServerImpl::splitChunk(const std::string& ns, BsonView cmd) {
    ASSIGN_OR_RETURN(DdlLockManager::Guard lock, _ddlLocks.lockCollection(ns, "split " + ns));
    ASSIGN_OR_RETURN(ShardedCollection coll, loadCollection(ns));
    int given = cmd.hasField("middle") + cmd.hasField("find") + cmd.hasField("bounds");
    if (given != 1) {
        return Status(ErrorCodes::BadValue,
                      "need to specify exactly one of find, bounds, or middle");
    }
    if (cmd.hasField("middle")) {
        if (!cmd["middle"].isObject()) return Status(ErrorCodes::BadValue, "middle must be a key");
        BsonObj middle = cmd["middle"].objValue().copy();
        TRY_STATUS(coll.pattern.validateKey(middle));
        auto index = findChunkContaining(coll.pattern, coll.chunks, middle);
        if (!index) return Status(ErrorCodes::InternalError, "no chunk holds " + middle.toJson());
        if (coll.pattern.encodeKey(coll.chunks[*index].min) == coll.pattern.encodeKey(middle)) {
            return Status(ErrorCodes::InvalidOptions,
                          "cannot split on initial or final chunk's key " + middle.toJson());
        }
        return splitAt(coll, *index, {middle});
    }
    std::optional<size_t> index;
    if (cmd.hasField("bounds")) {
        ASSIGN_OR_RETURN(auto bounds, parseBounds(cmd["bounds"]));
        index = findChunkWithBounds(coll.chunks, bounds.first, bounds.second);
        if (!index) {
            return Status(ErrorCodes::InvalidOptions, "no chunk found with the shard key bounds [" +
                                                          bounds.first.toJson() + ", " +
                                                          bounds.second.toJson() + ")");
        }
    } else {
        if (coll.pattern.isHashed()) {
            return Status(ErrorCodes::InvalidOptions,
                          "find is not supported for hashed shard keys: use bounds or middle");
        }
        if (!cmd["find"].isObject()) return Status(ErrorCodes::BadValue, "find must be a query");
        ASSIGN_OR_RETURN(BsonObj key,
                         coll.pattern.extractShardKeyFromQuery(cmd["find"].objValue()));
        if (key.isEmpty()) {
            return Status(
                ErrorCodes::ShardKeyNotFound,
                "find must select a single shard key value: " + cmd["find"].objValue().toJson());
        }
        index = findChunkContaining(coll.pattern, coll.chunks, key);
        if (!index) return Status(ErrorCodes::InternalError, "no chunk holds " + key.toJson());
    }
    const ChunkRecord& chunk = coll.chunks[*index];
    BsonObj point;
    if (coll.pattern.hasHashedPrefix()) {
        auto mid = hashedMidpoint(chunk.min, chunk.max);
        if (!mid) return Status(ErrorCodes::CommandFailed, "cannot split the chunk further");
        BsonBuilder b;
        for (size_t i = 0; i < coll.pattern.numFields(); ++i) {
            if (i == 0) {
                b.appendInt64(coll.pattern.fieldPath(i), *mid);
            } else {
                b.appendMinKey(coll.pattern.fieldPath(i));
            }
        }
        point = b.obj();
    } else {
        ASSIGN_OR_RETURN(point, medianKey(coll, *index));
    }
    return splitAt(coll, *index, {point});
}

Status ConfigServerImpl::mergeChunks(const std::string& ns, BsonView min, BsonView max,
                                     const std::vector<bson::ObjectId>* expected) {
    ASSIGN_OR_RETURN(DdlLockManager::Guard lock, _ddlLocks.lockCollection(ns, "mergeChunks " + ns));
    ASSIGN_OR_RETURN(ShardedCollection coll, loadCollection(ns));
    auto exact = findChunkWithBounds(coll.chunks, min, max);
    if (exact) return Status::OK();  // one chunk already covers the range: nothing to merge
    ASSIGN_OR_RETURN(MergeResult merge, computeMerge(coll.pattern, coll.chunks, min, max, now()));
    if (expected) {
        std::vector<bson::ObjectId> found = merge.removed;
        found.push_back(merge.merged.id);
        std::vector<bson::ObjectId> want = *expected;
        std::sort(found.begin(), found.end());
        std::sort(want.begin(), want.end());
        if (found != want) return Status::OK();  // changed since the decision: the next round looks
    }
    TRY_STATUS(writeChunk(merge.merged, coll.coll.uuid, false));
    pauseWhileSet(mergeChunksHangAfterWidening);
    for (const bson::ObjectId& id : merge.removed) {
        BsonBuilder q;
        q.appendOid("_id", id);
        TRY_STATUS(_local.remove("chunks", q.obj(), false).getStatus());
    }
    BsonBuilder details;
    details.appendObject("merged", rangeDetails(min, max))
        .appendInt64("numChunks", static_cast<int64_t>(merge.removed.size() + 1))
        .appendString("owningShard", merge.merged.shard);
    logChange("merge", ns, details.obj());
    _routerNotifier.collectionChanged(ns);
    return Status::OK();
}

// A split writes its new chunks before it shrinks the old one, a merge widens the first chunk
// before it removes the others (chunk records are written one at a time): a crash in between
// leaves chunks that lie inside another chunk of the same shard. In both cases the enclosing
// chunk alone is right — the old chunk of an unfinished split still covers its range, the
// widened chunk of an unfinished merge covers what it absorbed — so the enclosed ones are
// removed, and the enclosing one gets the next version so every cached routing table replaces
// what it may have learned of the half-done operation. Run before the config server serves.
Status ConfigServerImpl::repairInterruptedChunkOps() {
    ASSIGN_OR_RETURN(std::vector<BsonObj> colls, _local.find("collections", BsonView()));
    for (const BsonObj& doc : colls) {
        if (doc["_id"].type() != bson::BsonType::String || doc["dropped"].trueValue()) continue;
        const std::string ns(doc["_id"].stringValue());
        auto loaded = loadCollection(ns);
        if (!loaded.isOK()) continue;
        ShardedCollection& coll = loaded.getValue();
        sortChunks(coll.pattern, coll.chunks);
        std::optional<size_t> cover;
        std::vector<size_t> enclosed;
        std::set<size_t> covers;
        for (size_t i = 0; i < coll.chunks.size(); ++i) {
            const ChunkRecord& c = coll.chunks[i];
            if (cover) {
                const ChunkRecord& outer = coll.chunks[*cover];
                if (coll.pattern.encodeKey(c.min) < coll.pattern.encodeKey(outer.max)) {
                    if (coll.pattern.encodeKey(c.max) <= coll.pattern.encodeKey(outer.max) &&
                        c.shard == outer.shard) {
                        enclosed.push_back(i);
                        covers.insert(*cover);
                        continue;
                    }
                    log::error(
                        "SHARDING", 9138,
                        "config.chunks overlap that no split or merge explains; left as is",
                        "{\"ns\":\"" + log::jsonEscape(ns) + "\",\"min\":" + c.min.toJson() + "}");
                }
            }
            cover = i;
        }
        if (enclosed.empty()) continue;
        MajorMinor v = maxVersion(coll.chunks);
        for (size_t i : enclosed) {
            BsonBuilder q;
            q.appendOid("_id", coll.chunks[i].id);
            TRY_STATUS(_local.remove("chunks", q.obj(), false).getStatus());
        }
        for (size_t i : covers) {
            ChunkRecord outer = coll.chunks[i];
            outer.major = v.major;
            outer.minor = ++v.minor;
            TRY_STATUS(writeChunk(outer, coll.coll.uuid, false));
        }
        log::warning("SHARDING", 9139, "Repaired chunks left by an interrupted split or merge",
                     "{\"ns\":\"" + log::jsonEscape(ns) +
                         "\",\"removed\":" + std::to_string(enclosed.size()) + "}");
    }
    return Status::OK();
}

}  // namespace tessera::config
