#include "command/crud_commands.h"
#include "command/exec/explain.h"
#include "command/exec/find_request.h"
#include "command/exec/pipeline.h"
#include "command/exec/query_executor.h"
#include "command/reply_util.h"
#include "command/write_ops_util.h"
#include "storage/engine.h"

namespace tessera::command {
namespace {

using bson::BsonType;

// explain: {explain: {find|count|distinct|aggregate|update|delete|findAndModify: ...},
// verbosity?} → {queryPlanner, executionStats?, command, serverInfo}. Explained writes only plan
// (and, with executionStats, run the query part); they never modify data.
class ExplainCommand final : public Command {
  public:
    std::string_view name() const override { return "explain"; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        bson::BsonElement inner = request.firstElement();
        TRY_STATUS(expectType(inner, BsonType::Object, "explain"));
        ASSIGN_OR_RETURN(exec::ExplainVerbosity verbosity,
                         exec::parseVerbosity(request.body["verbosity"]));
        bson::BsonView cmd = inner.objValue();
        if (cmd.isEmpty()) {
            return Status(ErrorCodes::FailedToParse, "explain command requires a nested object");
        }
        std::string_view innerName = cmd.firstElement().fieldName();
        storage::Engine& engine = *opCtx.service->engine;
        auto nsOf = [&](std::string_view command) -> StatusWith<std::string> {
            ASSIGN_OR_RETURN(std::string coll, collectionName(cmd.firstElement(), command));
            return request.db + "." + coll;
        };

        exec::QuerySpec spec;
        std::string wrap;
        std::string ns;
        std::unique_ptr<exec::PlanExecutor> executor;
        if (innerName == "find") {
            CommandRequest innerReq{request.db, innerName, cmd, {}};
            ASSIGN_OR_RETURN(exec::FindRequest req, exec::parseFindRequest(innerReq, cmd));
            ns = request.db + "." + req.coll;
            spec = req.query;
        } else if (innerName == "count" || innerName == "distinct") {
            ASSIGN_OR_RETURN(ns, nsOf(innerName));
            ASSIGN_OR_RETURN(bson::BsonView q, optionalObject(cmd, "query", innerName));
            spec.filter = q.copy();
            ASSIGN_OR_RETURN(spec.hint, exec::parseHint(cmd["hint"]));
            wrap = innerName == "count" ? "COUNT" : "DISTINCT";
        } else if (innerName == "update" || innerName == "delete") {
            ASSIGN_OR_RETURN(ns, nsOf(innerName));
            std::string_view field = innerName == "update" ? "updates" : "deletes";
            CommandRequest innerReq{request.db, innerName, cmd, {}};
            ASSIGN_OR_RETURN(auto stmts, writeStatements(innerReq, field));
            bson::BsonElement q = stmts[0]["q"];
            if (q.type() == BsonType::Object) spec.filter = q.objValue().copy();
            ASSIGN_OR_RETURN(spec.hint, exec::parseHint(stmts[0]["hint"]));
            wrap = innerName == "update" ? "UPDATE" : "DELETE";
        } else if (innerName == "findAndModify" || innerName == "findandmodify") {
            ASSIGN_OR_RETURN(ns, nsOf(innerName));
            ASSIGN_OR_RETURN(bson::BsonView q, optionalObject(cmd, "query", innerName));
            ASSIGN_OR_RETURN(bson::BsonView s, optionalObject(cmd, "sort", innerName));
            spec.filter = q.copy();
            spec.sort = s.copy();
            spec.limit = 1;
            wrap = cmd["remove"].trueValue() ? "DELETE" : "UPDATE";
        } else if (innerName == "aggregate") {
            ASSIGN_OR_RETURN(ns, nsOf(innerName));
            bson::BsonElement pipeline = cmd["pipeline"];
            TRY_STATUS(expectType(pipeline, BsonType::Array, "aggregate"));
            ASSIGN_OR_RETURN(bson::BsonObj hint, exec::parseHint(cmd["hint"]));
            exec::PipelineContext pctx{&engine, opCtx.service->host};
            ASSIGN_OR_RETURN(executor,
                             exec::buildPipelineExecutor(
                                 pctx, engine.snapshot(std::nullopt, opCtx.prepareReads),
                                 engine.getCollection(ns), ns, pipeline.objValue(), hint));
        } else {
            return Status(ErrorCodes::CommandNotFound,
                          "Explain failed due to unknown command: " + std::string(innerName));
        }
        if (!executor) {
            ASSIGN_OR_RETURN(executor, exec::buildQueryExecutor(
                                           engine.snapshot(std::nullopt, opCtx.prepareReads),
                                           engine.getCollection(ns), ns, spec));
        }
        return exec::appendExplain(opCtx, *executor, verbosity, spec.filter, cmd, wrap, reply);
    }
};

}  // namespace

std::unique_ptr<Command> makeExplainCommand() { return std::make_unique<ExplainCommand>(); }

}  // namespace tessera::command
