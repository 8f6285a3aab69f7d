// What the balancer asks a shard about its chunks (src/config/README.md "Balancer"):
// _shardsvrChunkStats (the owned bytes of each range, without a scan) and _shardsvrSplitPoint
// (the keys that halve a range, or cut it into pieces of a chunk size, by one range scan).

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "base/log.h"
#include "command/registry.h"
#include "shard/command_util.h"
#include "shard/key_sampler.h"
#include "shard/ownership_filter.h"
#include "shard/range_ops.h"
#include "shard/sharding_state.h"
#include "storage/engine.h"

namespace tessera::shard {
namespace {

using command::CommandRequest;
using command::OperationContext;

// The collection's routing table (refreshed) and pattern, or an error.
StatusWith<std::shared_ptr<const placement::RoutingTable>> tableOf(OperationContext& opCtx,
                                                                   const std::string& ns) {
    ASSIGN_OR_RETURN(auto md, shardMetadataOf(opCtx));
    TRY_STATUS(md->refreshCollection(ns));
    ASSIGN_OR_RETURN(auto table, md->collection(ns));
    if (!table) return Status(ErrorCodes::NamespaceNotSharded, ns + " is not sharded");
    return table;
}

// The BSON bytes of the owned documents of `range`, by a range scan.
int64_t exactOwnedBytes(OperationContext& opCtx, const storage::CollectionInfo& coll,
                        const placement::ShardKeyPattern& pattern, const ShardKeyRange& range) {
    auto filter = opCtx.ownershipFilter(coll.ns());
    auto snapshot = opCtx.service->engine->snapshot(std::nullopt, opCtx.prepareReads);
    bool clustered = isClusteredBy(coll, pattern);
    auto cursor =
        clustered ? snapshot->scanRange(coll, recordKeyRange(range)) : snapshot->scan(coll);
    int64_t bytes = 0;
    while (auto rec = cursor->next()) {
        if (!clustered && !range.containsDoc(pattern, rec->doc)) continue;
        if (filter.isOK() && filter.getValue() && !filter.getValue()->owns(rec->doc)) continue;
        bytes += static_cast<int64_t>(rec->doc.size());
    }
    return bytes;
}

// {_shardsvrChunkStats: ns, ranges: [{min, max}], exact?} → {ranges: [{bytes}], ownedBytes,
// ownedDocs}: the shard's exact owned totals (src/shard/README.md "Exact counts") shared out over
// the ranges in proportion to RocksDB's size estimates of their records (which count compressed
// bytes, old versions and tombstones: only their ratios are used) — O(ranges), no scan; with
// `exact: true` each range's owned bytes by a range scan (balancerCollectionStatus's jumbo
// chunks), and always while the collection holds at most 64 MB on this shard.
class ChunkStatsCommand final : public ShardCommand {
  public:
    std::string_view name() const override { return "_shardsvrChunkStats"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(std::string ns, stringArg(request.body, "_shardsvrChunkStats", name()));
        ASSIGN_OR_RETURN(auto table, tableOf(opCtx, ns));
        bson::BsonElement ranges = request.body["ranges"];
        if (ranges.type() != bson::BsonType::Array) {
            return Status(ErrorCodes::TypeMismatch, "ranges must be an array of {min, max}");
        }
        storage::Engine& engine = *opCtx.service->engine;
        storage::CollectionPtr coll = engine.getCollection(ns);
        const placement::ShardKeyPattern& pattern = table->shardKeyPattern();
        // RocksDB's estimates are coarse (whole blocks, memtables): ranges of a small collection
        // would be misjudged, so up to kExactBelowBytes owned bytes every range is counted
        // exactly (a scan of at most that much); above, ranges are large enough for estimates.
        constexpr int64_t kExactBelowBytes = int64_t{64} << 20;
        storage::CollectionStats stored = coll ? engine.stats(*coll) : storage::CollectionStats{};
        const bool exact = request.body["exact"].trueValue() || stored.dataSize <= kExactBelowBytes;
        std::vector<int64_t> approx;
        for (bson::BsonElement r : ranges.objValue()) {
            if (!r.isObject() || !r.objValue()["min"].isObject() ||
                !r.objValue()["max"].isObject()) {
                return Status(ErrorCodes::TypeMismatch, "ranges must be an array of {min, max}");
            }
            ASSIGN_OR_RETURN(ShardKeyRange range,
                             ShardKeyRange::make(pattern, r.objValue()["min"].objValue(),
                                                 r.objValue()["max"].objValue()));
            int64_t a = 0;
            if (coll && exact) {
                a = exactOwnedBytes(opCtx, *coll, pattern, range);
            } else if (coll && isClusteredBy(*coll, pattern)) {
                a = engine.approximateRangeBytes(*coll, recordKeyRange(range));
            }
            approx.push_back(std::max<int64_t>(a, 0));
        }
        command::OwnershipFilter::Totals owned;
        if (coll) {
            ASSIGN_OR_RETURN(auto filter, opCtx.ownershipFilter(ns));
            std::optional<command::OwnershipFilter::Totals> kept;
            if (filter) kept = filter->ownedTotals(engine, *coll);
            storage::CollectionStats stats = engine.stats(*coll);
            owned = kept.value_or(command::OwnershipFilter::Totals{stats.count, stats.dataSize});
        }
        if (exact) {
            bson::BsonArrayBuilder out;
            for (int64_t a : approx) {
                bson::BsonBuilder b;
                b.appendInt64("bytes", a);
                out.append(b.obj());
            }
            reply.appendArray("ranges", out.arr());
            reply.appendInt64("ownedBytes", owned.bytes);
            reply.appendInt64("ownedDocs", owned.count);
            return Status::OK();
        }
        int64_t sum = 0;
        for (int64_t a : approx) sum += a;
        bson::BsonArrayBuilder out;
        for (int64_t a : approx) {
            double share = sum > 0 ? static_cast<double>(a) / static_cast<double>(sum)
                                   : 1.0 / static_cast<double>(approx.size());
            bson::BsonBuilder b;
            b.appendInt64("bytes", static_cast<int64_t>(share * static_cast<double>(owned.bytes)));
            out.append(b.obj());
        }
        reply.appendArray("ranges", out.arr());
        reply.appendInt64("ownedBytes", owned.bytes);
        reply.appendInt64("ownedDocs", owned.count);
        return Status::OK();
    }
};

// {_shardsvrSplitPoint: ns, min, max, maxChunkBytes?} → {bytes, splitPoint: key, splitPoints:
// [keys] | jumbo: true, key | empty: true}: from one range scan of the owned documents of
// [min, max) (records are stored in shard key order): `splitPoint` the key that halves the
// range's bytes, `splitPoints` the keys that cut it into ⌈bytes / maxChunkBytes⌉ pieces of
// equal bytes (only with maxChunkBytes; MongoDB's autoSplitVector), never the range's min;
// jumbo when every document has one key; `bytes`: the range's owned BSON bytes, exactly.
class SplitPointCommand final : public ShardCommand {
  public:
    std::string_view name() const override { return "_shardsvrSplitPoint"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(std::string ns, stringArg(request.body, "_shardsvrSplitPoint", name()));
        ASSIGN_OR_RETURN(auto table, tableOf(opCtx, ns));
        const placement::ShardKeyPattern& pattern = table->shardKeyPattern();
        ASSIGN_OR_RETURN(bson::BsonView min, objectArg(request.body, "min", name()));
        ASSIGN_OR_RETURN(bson::BsonView max, objectArg(request.body, "max", name()));
        ASSIGN_OR_RETURN(ShardKeyRange range, ShardKeyRange::make(pattern, min, max));
        int64_t maxChunkBytes = 0;
        if (bson::BsonElement m = request.body["maxChunkBytes"]; !m.eoo()) {
            if (!m.isNumber() || m.numberLong() <= 0) {
                return Status(ErrorCodes::BadValue, "maxChunkBytes must be a positive number");
            }
            maxChunkBytes = m.numberLong();
        }
        storage::Engine& engine = *opCtx.service->engine;
        storage::CollectionPtr coll = engine.getCollection(ns);
        ASSIGN_OR_RETURN(auto filter, opCtx.ownershipFilter(ns));
        KeySampler sampler;
        if (coll) {
            auto snapshot = engine.snapshot(std::nullopt, opCtx.prepareReads);
            const bool clustered = isClusteredBy(*coll, pattern);
            auto cursor = clustered ? snapshot->scanRange(*coll, recordKeyRange(range))
                                    : snapshot->scan(*coll);
            // Not stored in shard key order (never for a collection sharded by Tessera; kept for
            // safety): every key of the range, sorted, then sampled.
            std::vector<std::tuple<std::string, bson::BsonObj, int64_t>> unordered;
            while (auto rec = cursor->next()) {
                if (filter && !filter->owns(rec->doc)) continue;
                auto key = pattern.extractShardKeyFromDoc(rec->doc);
                if (!key.isOK()) continue;
                std::string encoded = pattern.encodeKey(key.getValue());
                if (!range.containsEncoded(encoded)) continue;
                const auto size = static_cast<int64_t>(rec->doc.size());
                if (clustered) {
                    sampler.add(std::move(encoded), key.getValue(), size);
                } else {
                    unordered.emplace_back(std::move(encoded), std::move(key.getValue()), size);
                }
            }
            std::sort(unordered.begin(), unordered.end(),
                      [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
            for (auto& [encoded, key, size] : unordered) sampler.add(std::move(encoded), key, size);
        }
        reply.appendInt64("bytes", sampler.bytes());  // exact: a round's sizes are estimates
        if (sampler.empty()) {
            reply.appendBool("empty", true);
            return Status::OK();
        }
        if (sampler.oneKey()) {
            reply.appendBool("jumbo", true);
            reply.appendObject("key", sampler.firstKey());
            return Status::OK();
        }
        // No sampled key past the middle differs from the first (one key holds most of the
        // bytes): the first key after it.
        std::vector<bson::BsonObj> median = sampler.points(2);
        reply.appendObject("splitPoint", median.empty() ? *sampler.secondKey() : median.front());
        if (maxChunkBytes > 0 && sampler.bytes() > maxChunkBytes) {
            const int64_t pieces = (sampler.bytes() + maxChunkBytes - 1) / maxChunkBytes;
            bson::BsonArrayBuilder points;
            for (const bson::BsonObj& p : sampler.points(pieces)) points.append(p);
            reply.appendArray("splitPoints", points.arr());
        }
        return Status::OK();
    }
};

}  // namespace

void registerShardChunkStatsCommands(command::CommandRegistry& registry) {
    registry.add(std::make_unique<ChunkStatsCommand>());
    registry.add(std::make_unique<SplitPointCommand>());
}

}  // namespace tessera::shard
