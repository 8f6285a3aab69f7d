#include "command/exec/explain.h"

#include "command/server_info.h"

namespace tessera::command::exec {

StatusWith<ExplainVerbosity> parseVerbosity(const bson::BsonElement& e) {
    if (e.eoo()) return ExplainVerbosity::kAllPlansExecution;
    if (e.type() == bson::BsonType::String) {
        std::string_view v = e.stringValue();
        if (v == "queryPlanner") return ExplainVerbosity::kQueryPlanner;
        if (v == "executionStats") return ExplainVerbosity::kExecutionStats;
        if (v == "allPlansExecution") return ExplainVerbosity::kAllPlansExecution;
    }
    return Status(ErrorCodes::BadValue,
                  "Enumeration value '" + e.toString(false) +
                      "' for field 'explain.verbosity' is not a valid value.");
}

namespace {

void appendPlan(bson::BsonBuilder& b, const PlanStage& root, std::string_view wrapStage,
                bool withStats, const PlanExecutor& exec) {
    if (!wrapStage.empty()) {
        b.append("stage", wrapStage);
        if (withStats) b.appendNumber("nReturned", 0);
        b.startObject("inputStage");
        root.explain(b, withStats);
        b.end();
    } else {
        root.explain(b, withStats);
    }
}

}  // namespace

Status appendExplain(const OperationContext& opCtx, PlanExecutor& exec, ExplainVerbosity verbosity,
                     bson::BsonView parsedQuery, bson::BsonView command, std::string_view wrapStage,
                     bson::BsonBuilder& reply) {
    bool withStats = verbosity != ExplainVerbosity::kQueryPlanner;
    if (withStats) {
        WorkingMember m;
        while (true) {
            ASSIGN_OR_RETURN(bool more, exec.next(opCtx, &m));
            if (!more) break;
        }
    }
    reply.append("explainVersion", "1");
    reply.startObject("queryPlanner");
    reply.append("namespace", exec.ns());
    reply.append("indexFilterSet", false);
    reply.append("parsedQuery", parsedQuery);
    reply.append("planSummary", exec.planSummary());
    reply.startObject("winningPlan");
    appendPlan(reply, *exec.root(), wrapStage, false, exec);
    reply.end();
    reply.startArray("rejectedPlans").end();
    reply.end();
    if (withStats) {
        reply.startObject("executionStats");
        reply.append("executionSuccess", true);
        reply.appendNumber("nReturned", exec.nReturned());
        reply.appendNumber("executionTimeMillis", exec.executionTime().count());
        reply.appendNumber("totalKeysExamined", exec.totalKeysExamined());
        reply.appendNumber("totalDocsExamined", exec.totalDocsExamined());
        reply.startObject("executionStages");
        appendPlan(reply, *exec.root(), wrapStage, true, exec);
        reply.end();
        if (verbosity == ExplainVerbosity::kAllPlansExecution) {
            reply.startArray("allPlansExecution").end();
        }
        reply.end();
    }
    reply.append("command", command);
    reply.startObject("serverInfo");
    std::string host = opCtx.service ? opCtx.service->host : std::string();
    reply.append("host", host.substr(0, host.find(':')));
    reply.appendInt32("port", opCtx.service ? opCtx.service->port : 0);
    reply.append("version", kCompatibleMongoVersion);
    reply.append("gitVersion", "tessera-" + std::string(kTesseraVersion));
    reply.end();
    return Status::OK();
}

}  // namespace tessera::command::exec
