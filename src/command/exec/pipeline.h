#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "bson/bson_builder.h"
#include "command/exec/plan_executor.h"
#include "storage/catalog_types.h"

namespace tessera::storage {
class Engine;
}

namespace tessera::command::exec {

struct PipelineContext {
    storage::Engine* engine = nullptr;
    std::string host;  // "hostname:port" for $collStats
};

// Builds an aggregation pipeline over collection `coll` (null when missing: no input):
//  - leading $match stages and a following $sort become the query of the access path (so
//    indexes serve them), $sort + $limit is a top-k sort;
//  - then, as composable stages over the document stream: $match, $sort, $skip, $limit,
//    $project (find projection semantics), $group, $count, $unwind (top-level paths);
//  - $collStats (first stage only) produces the collection's statistics document.
// Errors: 40323 (a stage is not a one-field object), 40324 "Unrecognized pipeline stage name:
// '$foo'", 40602 ($collStats not first), NotImplemented for known stages not supported yet
// ($lookup, $out, ...), and each stage's parse errors.
StatusWith<std::unique_ptr<PlanExecutor>> buildPipelineExecutor(
    const PipelineContext& pctx, std::unique_ptr<storage::ReadSnapshot> snapshot,
    storage::CollectionPtr coll, std::string ns, bson::BsonView pipeline, bson::BsonObj hint = {});

// storageStats as $collStats and collStats report them: size, count, avgObjSize, storageSize,
// freeStorageSize, capped, nindexes, totalIndexSize, totalSize, indexSizes, scaleFactor.
void appendStorageStats(bson::BsonBuilder& b, storage::Engine& engine,
                        const storage::CollectionInfo& coll, int64_t scale = 1);

}  // namespace tessera::command::exec
