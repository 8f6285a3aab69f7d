// $currentOp on a shard or a --replSet node: the operations in progress that the process's
// currentOp command lists (command/current_op.h), as a source stage of an {aggregate: 1} on
// admin (mongosh's db.currentOp()). A router answers the stage itself, from every shard.

#include <set>

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
    if (ctx.spec().type() != bson::BsonType::Object) {
        return Status(ErrorCodes::FailedToParse,
                      "$currentOp options must be specified in an object, but found: " +
                          std::string(bson::typeName(ctx.spec().type())));
    }
    // Each is carried out or means nothing here: every operation is the caller's own (no
    // authentication), idle connections and cursors are not operations this process lists,
    // every listed operation is local, a report has no backtrace and is never truncated.
    static const std::set<std::string_view> kFlags = {
        "allUsers", "idleConnections", "idleCursors", "idleSessions",
        "localOps", "backtrace",       "truncateOps", "targetAllNodes"};
    bool idleSessions = true;
    for (bson::BsonElement f : ctx.spec().objValue()) {
        if (!kFlags.count(f.fieldName())) {
            return Status(40415, "BSON field '$currentOp." + std::string(f.fieldName()) +
                                     "' is an unknown field.");
        }
        if (f.type() != bson::BsonType::Bool) {
            return Status(ErrorCodes::TypeMismatch,
                          "BSON field '$currentOp." + std::string(f.fieldName()) +
                              "' is the wrong type, expected type 'bool'");
        }
        if (f.fieldName() == "idleSessions") idleSessions = f.boolValue();
    }
    if (!ctx.pctx.currentOps) {
        return Status(ErrorCodes::CommandNotFound,
                      "$currentOp lists transactions, migrations and range deletions; this "
                      "process runs none (start it with --replSet for transactions)");
    }
    ASSIGN_OR_RETURN(std::vector<bson::BsonObj> ops, ctx.pctx.currentOps(idleSessions));
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
