#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"

namespace tessera::router {

// An aggregation pipeline cut for a sharded collection (MongoDB's sharded_agg_helpers
// splitPipeline). The shards run `shardPart`; the router merges their streams (merge-sorted by
// `mergeSort` when it is not empty, else in arrival order) and runs `mergePart` over them.
//
// Rules (each stage's kind is its StageSplit in command/exec/pipeline_stage_registry.h, the
// registry the pipeline builder parses with):
//  - the longest prefix of streaming stages ($match $project $addFields $set $unset
//    $replaceRoot $replaceWith $unwind $redact) runs on the shards;
//  - the first other stage decides the cut:
//      $sort          shards sort, the router merge-sorts; a following run of $skip/$limit
//                     gives the shards `$limit: <max documents needed>` and stays on the router;
//      $limit/$skip   the same run of $skip/$limit: shards get the bound, the router applies all;
//      $group         split into a partial $group (shards) and a merging $group (router) when
//                     every accumulator can be merged ($sum $count $min $max $first $last $push
//                     $addToSet $avg $mergeObjects); otherwise the whole $group runs on the router;
//      $count         shards count, the router sums;
//      $sortByCount   as $group {_id: expr, count: {$sum: 1}} + $sort {count: -1};
//      anything else  ($lookup $facet $unionWith $out $merge $sample $bucket ...) runs on the
//                     router with everything after it.
//  - everything after the cut runs on the router.
// The merge part never starts with $match or $sort (so that it can be built over a router-side
// source by the ordinary pipeline builder).
struct SplitPipeline {
    std::vector<bson::BsonObj> shardPart;
    std::vector<bson::BsonObj> mergePart;
    bson::BsonObj mergeSort;  // empty: unordered merge

    // {shardsPart: [...], mergerPart: [...]} as MongoDB's explain `splitPipeline`.
    bson::BsonObj toBson() const;
};

// Errors: 40323 when a stage is not a one-field document, the $group parse errors of the
// specification being split (15955 no _id, 40234 unknown accumulator shapes are left to the
// builder: such a $group simply is not split).
StatusWith<SplitPipeline> splitPipeline(const std::vector<bson::BsonObj>& stages);

// The stages of a pipeline array ({0: {...}, 1: {...}}). 14 when the pipeline is not an array
// of documents.
StatusWith<std::vector<bson::BsonObj>> pipelineStages(const bson::BsonElement& pipeline);

// Stages that read or write other collections: $lookup, $graphLookup, $unionWith, $out, $merge
// (also inside $facet).
bool pipelineTouchesOtherCollections(const std::vector<bson::BsonObj>& stages);

// The maximum number of input documents a run of $skip/$limit stages starting at `from` can
// consume (nullopt: unbounded, i.e. no $limit in the run), and the index after the run.
struct SkipLimitRun {
    std::optional<int64_t> bound;
    size_t end = 0;
};
SkipLimitRun skipLimitRun(const std::vector<bson::BsonObj>& stages, size_t from);

}  // namespace tessera::router
