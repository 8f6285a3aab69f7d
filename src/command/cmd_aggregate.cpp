#include "command/collation_util.h"
#include "command/crud_commands.h"
#include "command/cursor_manager.h"
#include "command/exec/explain.h"
#include "command/exec/find_request.h"
#include "command/exec/local_sessions.h"
#include "command/exec/pipeline.h"
#include "command/exec/query_executor.h"
#include "command/exec/stage_subpipeline.h"
#include "command/registry.h"
#include "command/reply_util.h"
#include "command/write_ops_util.h"
#include "storage/engine.h"

namespace tessera::command {
namespace {

using bson::BsonType;

// What the process's currentOp command lists ($currentOp, exec/stage_current_op.cpp): a shard's
// or a --replSet node's; CommandNotFound where it has none.
StatusWith<std::vector<bson::BsonObj>> currentOpsOf(OperationContext& opCtx, bool idleSessions) {
    Command* currentOp =
        opCtx.service->registry ? opCtx.service->registry->find("currentOp") : nullptr;
    if (!currentOp) return Status(ErrorCodes::CommandNotFound, "no currentOp here");
    bson::BsonObj body = bson::BsonBuilder()
                             .appendInt32("currentOp", 1)
                             .appendBool("idleSessions", idleSessions)
                             .obj();
    CommandRequest request;
    request.db = "admin";
    request.commandName = "currentOp";
    request.body = body.view();
    bson::BsonBuilder reply;
    TRY_STATUS(currentOp->run(opCtx, request, reply));
    bson::BsonObj answer = reply.obj();
    std::vector<bson::BsonObj> ops;
    for (bson::BsonElement op : answer["inprog"].objValue()) ops.push_back(op.objValue().copy());
    return ops;
}

// aggregate: {aggregate: "c" | 1, pipeline: [...], cursor: {batchSize?}, explain?, allowDiskUse?,
// hint?, let?, collation?, ...} → {cursor: {firstBatch, id, ns}}.
class AggregateCommand final : public Command {
  public:
    std::string_view name() const override { return "aggregate"; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        bson::BsonView body = request.body;
        bson::BsonElement first = request.firstElement();
        std::string collName;
        if (first.isNumber() && first.numberLong() == 1) {
            collName = "$cmd.aggregate";  // collectionless: only stages that need no input
        } else if (first.type() == BsonType::String) {
            ASSIGN_OR_RETURN(collName, collectionName(first, "aggregate"));
        } else {
            return Status(ErrorCodes::InvalidNamespace,
                          "Invalid aggregate namespace: " + first.toString(false));
        }
        bson::BsonElement pipeline = body["pipeline"];
        if (pipeline.eoo()) {
            return Status(40414, "BSON field 'aggregate.pipeline' is missing but a required field");
        }
        TRY_STATUS(expectType(pipeline, BsonType::Array, "aggregate"));
        TRY_STATUS(checkAggregateReadConcern(body, pipeline.objValue()));
        ASSIGN_OR_RETURN(bool explain, boolArgument(body["explain"], "aggregate"));
        bson::BsonElement cursor = body["cursor"];
        if (cursor.eoo() && !explain) {
            return Status(ErrorCodes::FailedToParse,
                          "The 'cursor' option is required, except for aggregate with the "
                          "explain argument");
        }
        std::optional<int64_t> batchSize;
        if (cursor) {
            TRY_STATUS(expectType(cursor, BsonType::Object, "aggregate"));
            ASSIGN_OR_RETURN(batchSize, exec::nonNegativeArgument(cursor.objValue(), "batchSize",
                                                                  "aggregate.cursor"));
        }
        ASSIGN_OR_RETURN(bson::BsonObj hint, exec::parseHint(body["hint"]));
        ASSIGN_OR_RETURN(bool allowDiskUse, boolArgument(body["allowDiskUse"], "aggregate"));

        std::string ns = request.db + "." + collName;
        if (opCtx.lsid) {
            exec::recordLocalSession(*opCtx.lsid);
        } else if (bson::BsonElement lsid = body["lsid"]; lsid.isObject()) {
            bson::BsonElement id = lsid.objValue()["id"];
            if (id.type() == BsonType::BinData) {
                exec::recordLocalSession(std::string(id.binaryValue().data));
            }
        }
        storage::Engine& engine = *opCtx.service->engine;
        auto snapshot = opCtx.snapshot();
        // Reads through a view run the view's pipeline first, on the backing collection.
        ASSIGN_OR_RETURN(exec::ResolvedNamespace resolved,
                         exec::resolveNamespace(engine, ns, opCtx.transaction));
        storage::CollectionPtr coll = resolved.coll;
        bson::BsonObj stages = pipeline.objValue().copy();
        if (opCtx.transaction && pipelineWriteStage(stages)) {
            return Status(ErrorCodes::OperationNotSupportedInTransaction,
                          "$out and $merge cannot be used in a transaction");
        }
        if (resolved.isView) {
            std::vector<bson::BsonObj> all = resolved.pipeline;
            for (auto s : stages) {
                if (s.type() != BsonType::Object) {
                    return Status(40323,
                                  "A pipeline stage specification object must contain exactly "
                                  "one field.");
                }
                all.push_back(s.objValue().copy());
            }
            stages = exec::pipelineArray(all);
        }
        // The command's `let` variables are bound by substituting their values.
        if (bson::BsonElement let = body["let"]; !let.eoo()) {
            ASSIGN_OR_RETURN(auto letExprs, exec::parseLet(let));
            ASSIGN_OR_RETURN(auto vars, exec::evaluateLet(letExprs, bson::BsonObj()));
            stages = exec::substituteVariables(stages, true, vars);
        }
        exec::PipelineContext pctx;
        pctx.engine = &engine;
        pctx.transaction = opCtx.transaction;
        pctx.host = opCtx.service->host;
        pctx.allowDiskUse = allowDiskUse;
        pctx.currentOps = [&opCtx](bool idleSessions) { return currentOpsOf(opCtx, idleSessions); };
        ASSIGN_OR_RETURN(pctx.ownership, opCtx.ownershipFilter(ns));
        ASSIGN_OR_RETURN(pctx.collator, resolveCollation(body["collation"], coll.get()));
        ASSIGN_OR_RETURN(auto exec, exec::buildPipelineExecutor(pctx, std::move(snapshot), coll, ns,
                                                                stages, hint));
        if (explain) {
            TRY_STATUS(exec::appendExplain(opCtx, *exec, exec::ExplainVerbosity::kQueryPlanner,
                                           bson::BsonView(), body, "", reply));
            // MongoDB's aggregate explain lists the pipeline's stages after the cursor source.
            reply.startArray("stages");
            reply.startObject("0")
                .startObject("$cursor")
                .append("planSummary", exec->planSummary())
                .end()
                .end();
            size_t k = 1;
            for (auto s : stages) reply.append(std::to_string(k++), s.objValue());
            reply.end();
            return Status::OK();
        }
        bson::BsonArrayBuilder batch;
        bool exhausted = false;
        TRY_STATUS(
            fillBatch(opCtx, *exec, batchSize.value_or(kDefaultFirstBatchSize), batch, &exhausted));
        int64_t cursorId = 0;
        if (!exhausted) {
            std::optional<CursorSource> source;
            if (coll) source = CursorSource{coll->ns(), coll->uuid};
            cursorId = opCtx.service->cursors->registerCursor(ns, std::move(exec), false,
                                                              opCtx.lsid, std::move(source));
        }
        exec::appendCursor(reply, "firstBatch", batch, cursorId, ns, opCtx.readAtClusterTime);
        return Status::OK();
    }
};

// collStats: {collStats: "c", scale?} → {ns, size, count, avgObjSize, storageSize, nindexes,
// totalIndexSize, totalSize, indexSizes, scaleFactor}. Deprecated in MongoDB, but mongosh falls
// back to it.
class CollStatsCommand final : public Command {
  public:
    std::string_view name() const override { return "collStats"; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(std::string collName, collectionName(request.firstElement(), "collStats"));
        ASSIGN_OR_RETURN(auto scale, optionalInteger(request.body, "scale", "collStats"));
        if (scale && *scale < 1) {
            return Status(ErrorCodes::BadValue, "scale has to be >= 1");
        }
        std::string ns = request.db + "." + collName;
        storage::CollectionPtr coll = opCtx.service->engine->getCollection(ns);
        if (!coll) {
            return Status(ErrorCodes::NamespaceNotFound, "Collection [" + ns + "] not found.");
        }
        reply.append("ns", ns);
        ASSIGN_OR_RETURN(auto ownership, opCtx.ownershipFilter(ns));
        exec::appendStorageStats(reply, *opCtx.service->engine, *coll, scale.value_or(1),
                                 ownership.get());
        return Status::OK();
    }
};

}  // namespace

std::unique_ptr<Command> makeAggregateCommand() { return std::make_unique<AggregateCommand>(); }
std::unique_ptr<Command> makeCollStatsCommand() { return std::make_unique<CollStatsCommand>(); }

}  // namespace tessera::command
