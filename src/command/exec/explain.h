#pragma once

#include <string>

#include "base/status.h"
#include "bson/bson_builder.h"
#include "command/command.h"
#include "command/exec/plan_executor.h"

namespace tessera::command::exec {

enum class ExplainVerbosity { kQueryPlanner, kExecutionStats, kAllPlansExecution };

// `verbosity` of the explain command (default allPlansExecution, as MongoDB). BadValue for
// unknown values.
StatusWith<ExplainVerbosity> parseVerbosity(const bson::BsonElement& e);

// Appends MongoDB's explain reply fields: explainVersion, queryPlanner {namespace, parsedQuery,
// winningPlan, rejectedPlans: []}, executionStats (runs the plan to the end; no writes happen
// for explained writes), command, serverInfo. `wrapStage` ("UPDATE", "DELETE", "COUNT") puts a
// stage of that name above the plan, as MongoDB shows explained writes and counts.
Status appendExplain(const OperationContext& opCtx, PlanExecutor& exec, ExplainVerbosity verbosity,
                     bson::BsonView parsedQuery, bson::BsonView command, std::string_view wrapStage,
                     bson::BsonBuilder& reply);

}  // namespace tessera::command::exec
