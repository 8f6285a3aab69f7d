// $currentOp on a shard or a --replSet node: the operations in progress that the process's
// currentOp command lists (command/current_op.h), as a source stage of an {aggregate: 1} on
// admin (mongosh's db.currentOp()). A router answers the stage itself, from every shard.

#include "command/current_op.h"
#include "command/exec/pipeline_stage_list.h"
#include "command/exec/scan_stages.h"

namespace tessera::command::exec {
namespace {

StatusWith<std::unique_ptr<PlanStage>> parseCurrentOp(const StageParseContext& ctx,
                                                      std::unique_ptr<PlanStage>) {
    if (ctx.ns != "admin.$cmd.aggregate") {
        return Status(ErrorCodes::InvalidNamespace,
                      "$currentOp must be run against the 'admin' database with {aggregate: 1}");
    }
    ASSIGN_OR_RETURN(CurrentOpStageOptions options, parseCurrentOpStage(ctx.spec()));
    if (!ctx.pctx.currentOps) {
        return Status(ErrorCodes::CommandNotFound,
                      "$currentOp lists transactions, migrations and range deletions; this "
                      "process runs none (start it with --replSet for transactions)");
    }
    ASSIGN_OR_RETURN(std::vector<bson::BsonObj> ops, ctx.pctx.currentOps(options.idleSessions));
    return std::unique_ptr<PlanStage>(
        std::make_unique<VectorSourceStage>(std::move(ops), "CURRENT_OP"));
}

}  // namespace

namespace stages {
const StageDescriptor kCurrentOp{
    "$currentOp",
    {.firstOnly = true, .collectionless = true, .allowedInFacet = false},
    &parseCurrentOp};
}  // namespace stages

}  // namespace tessera::command::exec
