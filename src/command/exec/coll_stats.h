#pragma once

#include <string>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "command/exec/pipeline.h"

namespace tessera::command::exec {

// The single document `{$collStats: spec}` produces for `coll` (null when the collection does not
// exist): ns, host, localTime and the sections the spec asks for (storageStats, count,
// latencyStats, queryExecStats). Counts and sizes are the engine's exact, maintained ones.
StatusWith<bson::BsonObj> collStatsDocument(const PipelineContext& pctx,
                                            const storage::CollectionPtr& coll,
                                            const std::string& ns, const bson::BsonElement& spec);

}  // namespace tessera::command::exec
