// $collStats and the storage statistics shared with the collStats command.

#include "command/exec/coll_stats.h"

#include "base/wall_clock.h"
#include "command/exec/pipeline_stage_list.h"
#include "command/exec/scan_stages.h"
#include "storage/engine.h"

namespace tessera::command::exec {

using bson::BsonType;

namespace {

struct OwnedTotals {
    int64_t count = 0;
    int64_t bytes = 0;
};

// The owned documents of `coll` and their BSON bytes: kept by the shard (O(1)) when it can, else
// by a scan at the latest snapshot.
OwnedTotals ownedTotals(storage::Engine& engine, const storage::CollectionInfo& coll,
                        const OwnershipFilter& ownership) {
    if (auto kept = ownership.ownedTotals(engine, coll)) return {kept->count, kept->bytes};
    OwnedTotals totals;
    auto snapshot = engine.snapshot();
    auto cursor = snapshot->scan(coll);
    while (auto rec = cursor->next()) {
        if (!ownership.owns(rec->doc)) continue;
        ++totals.count;
        totals.bytes += static_cast<int64_t>(rec->doc.size());
    }
    return totals;
}

}  // namespace

StatusWith<bson::BsonObj> collStatsDocument(const PipelineContext& pctx,
                                            const storage::CollectionPtr& coll,
                                            const std::string& ns, const bson::BsonElement& spec) {
    if (spec.type() != BsonType::Object) {
        return Status(5447000,
                      "$collStats must take a nested object but found: " + spec.toString());
    }
    bson::BsonBuilder b;
    b.append("ns", ns);
    b.append("host", pctx.host);
    b.appendDate("localTime", wallClockMillis());
    for (auto f : spec.objValue()) {
        std::string_view name = f.fieldName();
        if (name == "storageStats") {
            if (!coll) {
                return Status(ErrorCodes::NamespaceNotFound,
                              "Unable to retrieve storageStats in $collStats stage :: caused by "
                              ":: Collection [" +
                                  ns + "] not found.");
            }
            int64_t scale = 1;
            if (f.type() == BsonType::Object) {
                bson::BsonElement s = f.objValue()["scale"];
                if (s && (!s.isNumber() || s.numberLong() < 1)) {
                    return Status(ErrorCodes::BadValue, "scale has to be > 0");
                }
                if (s) scale = s.numberLong();
            }
            b.startObject("storageStats");
            appendStorageStats(b, *pctx.engine, *coll, scale, pctx.ownership.get());
            b.end();
        } else if (name == "count") {
            int64_t count = 0;
            if (coll && pctx.ownership) {
                count = ownedTotals(*pctx.engine, *coll, *pctx.ownership).count;
            } else if (coll) {
                count = pctx.engine->stats(*coll).count;
            }
            b.appendNumber("count", count);
        } else if (name == "latencyStats") {
            b.startObject("latencyStats");
            for (auto kind : {"reads", "writes", "commands", "transactions"}) {
                b.startObject(kind).appendInt64("latency", 0).appendInt64("ops", 0).end();
            }
            b.end();
        } else if (name == "queryExecStats") {
            b.startObject("queryExecStats")
                .startObject("collectionScans")
                .appendInt64("total", 0)
                .appendInt64("nonTailable", 0)
                .end()
                .end();
        } else {
            return Status(40415,
                          "BSON field '$collStats." + std::string(name) + "' is an unknown field.");
        }
    }
    return b.obj();
}

void appendStorageStats(bson::BsonBuilder& b, storage::Engine& engine,
                        const storage::CollectionInfo& coll, int64_t scale,
                        const OwnershipFilter* ownership) {
    storage::CollectionStats stats = engine.stats(coll);
    int64_t orphans = 0;
    if (ownership) {
        OwnedTotals owned = ownedTotals(engine, coll, *ownership);
        orphans = stats.count > owned.count ? stats.count - owned.count : 0;
        stats.count = owned.count;
        stats.dataSize = owned.bytes;
    }
    int64_t totalIndexSize = 0;
    for (const auto& [name, size] : stats.indexSizes) totalIndexSize += size;
    b.appendNumber("size", stats.dataSize / scale);
    b.appendNumber("count", stats.count);
    b.appendNumber("avgObjSize", stats.count > 0 ? stats.dataSize / stats.count : 0);
    b.appendNumber("storageSize", stats.storageSize / scale);
    b.appendNumber("freeStorageSize", 0);
    b.append("capped", coll.options["capped"].trueValue());
    b.appendNumber("nindexes", static_cast<int64_t>(coll.indexes.size()));
    b.appendNumber("totalIndexSize", totalIndexSize / scale);
    b.appendNumber("totalSize", (stats.storageSize + totalIndexSize) / scale);
    b.startObject("indexSizes");
    for (const auto& [name, size] : stats.indexSizes) b.appendNumber(name, size / scale);
    b.end();
    b.appendNumber("scaleFactor", scale);
    if (ownership) b.appendNumber("numOrphanDocs", orphans);
}

namespace {
StatusWith<std::unique_ptr<PlanStage>> parseCollStats(const StageParseContext& ctx,
                                                      std::unique_ptr<PlanStage>) {
    ASSIGN_OR_RETURN(bson::BsonObj doc, collStatsDocument(ctx.pctx, ctx.coll, ctx.ns, ctx.spec()));
    return std::unique_ptr<PlanStage>(
        std::make_unique<VectorSourceStage>(std::vector<bson::BsonObj>{doc}, "COLLSTATS"));
}
}  // namespace

namespace stages {
const StageDescriptor kCollStats{
    "$collStats", {.firstOnly = true, .allowedInFacet = false}, &parseCollStats};
}  // namespace stages

}  // namespace tessera::command::exec
