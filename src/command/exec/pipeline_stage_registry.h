#pragma once

// The aggregation stages this server knows. Each stage's descriptor — its name, where it may
// appear, how a router splits a pipeline at it, and its parser — is defined next to the stage's
// PlanStage (query_stages.cpp, agg_stages.cpp, stage_lookup.cpp, ...) and listed once in
// pipeline_stage_registry.cpp. The pipeline builder (pipeline.cpp) checks the constraints and
// calls the parsers; the router's pipeline split (router/pipeline_split.cpp) reads `split`.

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "command/exec/pipeline.h"
#include "command/exec/plan_stage.h"
#include "command/exec/stage_subpipeline.h"

namespace tessera::command::exec {

// Where a stage runs when a router cuts a pipeline over a sharded collection into a shard part
// and a merge part.
enum class StageSplit {
    kStreaming,   // document by document, no state: on the shards
    kSortMerge,   // the shards sort, the router merge-sorts
    kSkipLimit,   // the shards get the bound of a $skip/$limit run, the router applies it all
    kAccumulate,  // partial accumulation on the shards, the final one on the router
    kOnMerger,    // on the router, with everything after it
};

struct StageConstraints {
    StageSplit split = StageSplit::kOnMerger;
    bool firstOnly = false;       // a source: 40602 anywhere but first
    bool collectionless = false;  // may start {aggregate: 1} (no collection)
    bool writes = false;          // $out / $merge: last only, never in a sub-pipeline or view
    bool allowedInFacet = true;   // else 40600
    bool readsOtherCollections = false;  // $lookup, $graphLookup, $unionWith
};

// Where a pipeline is being built: sub-pipelines refuse some stages.
enum class BuildContext { kTop, kFacet, kLookup, kUnionWith, kView, kMergePipeline };

// What a stage's parser sees of the pipeline being built.
struct StageParseContext {
    const PipelineContext& pctx;
    const storage::CollectionPtr& coll;  // the pipeline's collection (null: none)
    const std::string& ns;
    const std::string& db;
    BuildContext context;
    // The pipeline's stages and the index of the one being parsed (a parser may look ahead:
    // $sort takes a following $limit as its top-k bound).
    std::span<const bson::BsonElement> stages;
    size_t index;

    const bson::BsonElement& spec() const { return stages[index]; }
    const bson::BsonElement* next() const {
        return index + 1 < stages.size() ? &stages[index + 1] : nullptr;
    }
};

// Parses the stage at ctx.index and returns the new root: the stage over `input` (the stages
// before it; null for a source, which is always first).
using StageParser = StatusWith<std::unique_ptr<PlanStage>> (*)(const StageParseContext& ctx,
                                                               std::unique_ptr<PlanStage> input);

struct StageDescriptor {
    std::string_view name;
    StageConstraints constraints;
    StageParser parse = nullptr;  // null: a MongoDB stage not supported yet (NotImplemented)
};

// The descriptor of `name` (a known stage, supported or not yet), or null.
const StageDescriptor* findStage(std::string_view name);

// ---- Shared by the stages' parsers.

// `stage` over `input` (a stage whose only child is the previous root).
std::unique_ptr<PlanStage> stack(std::unique_ptr<PlanStage> input,
                                 std::unique_ptr<PlanStage> stage);

// A non-negative (positive unless `allowZero`) integral argument of $skip / $limit.
StatusWith<int64_t> positiveIntegerArg(const bson::BsonElement& e, int code,
                                       const std::string& what, bool allowZero);

// A namespace argument of $lookup / $unionWith / $out / $merge: "coll" or {db, coll}.
StatusWith<std::string> targetNamespace(const bson::BsonElement& e, const std::string& db,
                                        std::string_view stage, int typeCode);

// 15973 / 15976 for a $sort specification that is not a non-empty object.
Status checkSortSpec(const bson::BsonElement& e);

// Builds `pipeline` in `context` over `coll` (null: none), or over the documents of `feed` when
// it is set ($facet's input, $merge's matched document).
StatusWith<std::unique_ptr<PlanStage>> buildSubPipeline(
    const PipelineContext& pctx, storage::CollectionPtr coll, std::string ns, BuildContext context,
    std::shared_ptr<std::vector<bson::BsonObj>> feed, bson::BsonView pipeline);

// A factory of sub-pipelines over `resolved` (a view's stages go first), built in `context`.
SubPipelineFactory subPipelineFactory(const PipelineContext& pctx,
                                      const ResolvedNamespace& resolved, BuildContext context);

bool isCollectionlessNs(std::string_view ns);

}  // namespace tessera::command::exec
