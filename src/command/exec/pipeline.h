#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson_builder.h"
#include "command/command.h"
#include "command/exec/plan_executor.h"
#include "query/collator.h"
#include "storage/catalog_types.h"

namespace tessera::storage {
class Engine;
}

namespace tessera::command::exec {

struct PipelineContext {
    PipelineContext() = default;
    PipelineContext(storage::Engine* e, std::string h) : engine(e), host(std::move(h)) {}

    storage::Engine* engine = nullptr;
    std::string host;  // "hostname:port" for $collStats / $indexStats
    bool allowDiskUse = false;
    // The aggregate's collation (nullptr: simple): $match comparisons, $sort, index choice.
    query::CollatorPtr collator;
    // On a shard, which stored documents of the collection it owns (null: all): $collStats
    // counts only those and reports the rest as numOrphanDocs.
    std::shared_ptr<const OwnershipFilter> ownership;
    // The statement's transaction (null: none): $lookup, $graphLookup and $unionWith find the
    // collections it created.
    const storage::Transaction* transaction = nullptr;
    // $currentOp (an aggregate on admin): the operations in progress the process's currentOp
    // command lists (current_op.h), idle sessions' transactions included when asked; null where
    // that command does not run (the stage is refused as it would be).
    std::function<StatusWith<std::vector<bson::BsonObj>>(bool idleSessions)> currentOps;
};

// Builds an aggregation pipeline over collection `coll` (null when missing: no input). `ns` is
// the namespace the pipeline runs on ("db.coll", or "db.$cmd.aggregate" for {aggregate: 1}).
//  - leading $match stages and a following $sort become the query of the access path (so
//    indexes serve them), $sort + $limit is a top-k sort;
//  - every other stage is a PlanStage over the document stream, parsed by its descriptor in the
//    stage registry (pipeline_stage_registry.h), which also says where the stage may appear
//    and how a router splits a pipeline at it.
//  - Stages: $match $project $addFields $set $unset $group $sort $limit $skip $count $unwind
//    $replaceRoot $replaceWith $sortByCount $facet $bucket $bucketAuto $redact $lookup
//    $graphLookup $unionWith $sample $out $merge $collStats $indexStats $documents
//    $listLocalSessions.
// Errors: 40323 (a stage is not a one-field object), 40324 "Unrecognized pipeline stage name:
// '$foo'", 40602 (a first-stage-only stage elsewhere), 40601 ($out/$merge not last), 40600
// (not allowed in $facet), 51047 (not allowed in $lookup), 31441 (not allowed in $unionWith),
// 73 ({aggregate: 1} with a stage that needs a collection), NotImplemented for known stages not
// supported yet ($setWindowFields, $densify, ...), and each stage's parse errors.
StatusWith<std::unique_ptr<PlanExecutor>> buildPipelineExecutor(
    const PipelineContext& pctx, std::unique_ptr<storage::ReadSnapshot> snapshot,
    storage::CollectionPtr coll, std::string ns, bson::BsonView pipeline, bson::BsonObj hint = {});

// The stages alone (the caller wraps them in a PlanExecutor, possibly adding stages on top).
StatusWith<std::unique_ptr<PlanStage>> buildPipelineStages(const PipelineContext& pctx,
                                                           storage::CollectionPtr coll,
                                                           std::string ns, bson::BsonView pipeline,
                                                           bson::BsonObj hint = {});

// Checks a pipeline (parses every stage) without running it: for view definitions.
// `forView` rejects $out/$merge (OptionNotSupportedOnView 167).
Status validatePipeline(const PipelineContext& pctx, const std::string& ns, bson::BsonView pipeline,
                        bool forView);

// storageStats as $collStats and collStats report them: size, count, avgObjSize, storageSize,
// freeStorageSize, capped, nindexes, totalIndexSize, totalSize, indexSizes, scaleFactor. With an
// ownership filter (a shard's sharded collection) `count` and `size` are those of the owned
// documents, counted by a scan, and `numOrphanDocs` says how many stored ones are not owned:
// orphans never inflate a shard's counts (ARCHITECTURE.md invariant 3).
void appendStorageStats(bson::BsonBuilder& b, storage::Engine& engine,
                        const storage::CollectionInfo& coll, int64_t scale = 1,
                        const OwnershipFilter* ownership = nullptr);

// ---- Views. A view is a catalog entry whose options are {viewOn: "<coll>", pipeline: [...]}.

bool isView(const storage::CollectionInfo& coll);

// A namespace resolved through views (recursively): the backing collection (null when it does
// not exist) and the concatenated pipelines of the views, innermost first.
struct ResolvedNamespace {
    std::string ns;                       // the backing collection's namespace
    storage::CollectionPtr coll;          // null when missing
    bool isView = false;                  // the namespace asked for is a view
    std::vector<bson::BsonObj> pipeline;  // stages to apply to the backing collection
};
// ViewDepthLimitExceeded (149) past 20 levels (also how cycles end). With `transaction`, a
// collection it created is found too (command/transaction_ddl.h).
StatusWith<ResolvedNamespace> resolveNamespace(const storage::Engine& engine, const std::string& ns,
                                               const storage::Transaction* transaction = nullptr);

// `pipeline` (stage documents) as a BSON array.
bson::BsonObj pipelineArray(const std::vector<bson::BsonObj>& stages);

// The error of a write to a view: CommandNotSupportedOnView (166) "Namespace db.v is a view, not
// a collection".
Status viewWriteError(const std::string& ns);

}  // namespace tessera::command::exec
