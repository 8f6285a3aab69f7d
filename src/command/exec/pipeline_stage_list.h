#pragma once

// The descriptor of every aggregation stage, each defined in the file of its stage; listed
// here so that pipeline_stage_registry.cpp can collect them (and the definitions get external
// linkage). Include only from those files.

#include "command/exec/pipeline_stage_registry.h"

namespace tessera::command::exec::stages {

extern const StageDescriptor kMatch, kSkip, kLimit;  // query_stages.cpp
extern const StageDescriptor kSort;                  // transform_stages.cpp
extern const StageDescriptor kProject, kAddFields, kSet, kUnset, kReplaceRoot, kReplaceWith, kGroup,
    kSortByCount, kCount, kUnwind, kSample;                // agg_stages.cpp
extern const StageDescriptor kBucket;                      // stage_bucket.cpp
extern const StageDescriptor kBucketAuto;                  // stage_bucket_auto.cpp
extern const StageDescriptor kRedact;                      // stage_redact.cpp
extern const StageDescriptor kGraphLookup;                 // stage_graph_lookup.cpp
extern const StageDescriptor kLookup, kUnionWith, kFacet;  // stage_lookup.cpp
extern const StageDescriptor kOut, kMerge;                 // stage_out_merge.cpp
extern const StageDescriptor kCollStats;                   // coll_stats.cpp
extern const StageDescriptor kIndexStats, kDocuments;      // stage_sources.cpp
extern const StageDescriptor kListLocalSessions;           // local_sessions.cpp
extern const StageDescriptor kCurrentOp;                   // stage_current_op.cpp

}  // namespace tessera::command::exec::stages
