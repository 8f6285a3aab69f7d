// What the balancer asks a shard about its chunks (src/config/README.md "Balancer"):
// _shardsvrChunkStats (the owned bytes of each range, without a scan) and _shardsvrSplitPoint
// (the median shard key of one range, by a range scan).

#include "base/log.h"
#include "command/registry.h"
#include "shard/command_util.h"
#include "shard/ownership_filter.h"
#include "shard/range_ops.h"
#include "shard/sharding_state.h"
#include "storage/engine.h"

namespace tessera::shard {
namespace {

using command::CommandRequest;
using command::OperationContext;

class ShardCommand : public command::Command {
  public:
    bool adminOnly() const override { return true; }
};

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
    auto snapshot = opCtx.service->engine->snapshot();
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

// {_shardsvrSplitPoint: ns, min, max} → {bytes, splitPoint: key | jumbo: true | empty: true}: the
// median shard key of the owned documents of [min, max) (a range scan of the records, which are
// stored in shard key order), never the range's min; jumbo when every document has one key;
// `bytes`: the range's owned BSON bytes, exactly.
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
        storage::Engine& engine = *opCtx.service->engine;
        storage::CollectionPtr coll = engine.getCollection(ns);
        ASSIGN_OR_RETURN(auto filter, opCtx.ownershipFilter(ns));
        std::vector<std::pair<std::string, bson::BsonObj>> keys;  // encoded, key
        int64_t bytes = 0;
        if (coll) {
            auto snapshot = engine.snapshot();
            bool clustered = isClusteredBy(*coll, pattern);
            auto cursor = clustered ? snapshot->scanRange(*coll, recordKeyRange(range))
                                    : snapshot->scan(*coll);
            std::string previous;
            while (auto rec = cursor->next()) {
                if (filter && !filter->owns(rec->doc)) continue;
                auto key = pattern.extractShardKeyFromDoc(rec->doc);
                if (!key.isOK()) continue;
                std::string encoded = pattern.encodeKey(key.getValue());
                if (!range.containsEncoded(encoded)) continue;
                bytes += static_cast<int64_t>(rec->doc.size());
                keys.emplace_back(std::move(encoded), std::move(key.getValue()));
            }
            if (!clustered) {
                std::sort(keys.begin(), keys.end(),
                          [](const auto& a, const auto& b) { return a.first < b.first; });
            }
        }
        reply.appendInt64("bytes", bytes);  // exact: the size estimates of a round are not
        if (keys.empty()) {
            reply.appendBool("empty", true);
            return Status::OK();
        }
        if (keys.front().first == keys.back().first) {
            reply.appendBool("jumbo", true);
            reply.appendObject("key", keys.front().second);
            return Status::OK();
        }
        size_t m = keys.size() / 2;
        // Never the first key (a split there leaves an empty chunk): the next greater one.
        while (m < keys.size() && keys[m].first == keys.front().first) ++m;
        reply.appendObject("splitPoint", keys[m].second);
        return Status::OK();
    }
};

}  // namespace

void registerShardChunkStatsCommands(command::CommandRegistry& registry) {
    registry.add(std::make_unique<ChunkStatsCommand>());
    registry.add(std::make_unique<SplitPointCommand>());
}

}  // namespace tessera::shard
