// currentOp on a --replSet node (its sessions' open transactions) and the argument rules that a
// shard's currentOp shares (current_op.h). A process without transactions — a plain standalone,
// the config server — has nothing it tracks to report and refuses the command, as before.

#include <set>

#include "bson/bson_types.h"
#include "command/current_op.h"
#include "command/generic_args.h"
#include "command/registry.h"
#include "query/matcher.h"
#include "txn/session_transactions.h"

namespace tessera::command {

StatusWith<CurrentOpFilter> CurrentOpFilter::parse(const CommandRequest& request) {
    CurrentOpFilter out;
    bson::BsonBuilder filter;
    bool first = true;
    for (bson::BsonElement e : request.body) {
        std::string_view f = e.fieldName();
        if (first) {
            first = false;
            continue;
        }
        if (f == "idleSessions") {
            if (e.type() != bson::BsonType::Bool) {
                return Status(ErrorCodes::TypeMismatch, "currentOp.idleSessions must be a boolean");
            }
            out._idleSessions = e.boolValue();
            continue;
        }
        if (f == "$all" || f == "$ownOps" || isGenericArgument(f)) continue;
        filter.appendElement(e);
    }
    bson::BsonObj filterObj = filter.obj();
    ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> matcher, query::Matcher::parse(filterObj));
    out._matcher = std::move(matcher);
    return out;
}

bool CurrentOpFilter::wants(const bson::BsonObj& op) const {
    bson::BsonElement type = op["type"];
    if (!_idleSessions && type.type() == bson::BsonType::String &&
        type.stringValue() == "idleSession") {
        return false;
    }
    return _matcher->matches(op);
}

StatusWith<CurrentOpStageOptions> parseCurrentOpStage(const bson::BsonElement& spec) {
    if (!spec.isObject()) {
        return Status(ErrorCodes::FailedToParse,
                      "$currentOp options must be specified in an object, but found: " +
                          std::string(bson::typeName(spec.type())));
    }
    static const std::set<std::string_view> kFlags = {
        "allUsers", "idleConnections", "idleCursors", "idleSessions",
        "localOps", "backtrace",       "truncateOps", "targetAllNodes"};
    CurrentOpStageOptions options;
    for (bson::BsonElement f : spec.objValue()) {
        if (!kFlags.count(f.fieldName())) {
            return Status(40415, "BSON field '$currentOp." + std::string(f.fieldName()) +
                                     "' is an unknown field.");
        }
        if (f.type() != bson::BsonType::Bool) {
            return Status(ErrorCodes::TypeMismatch,
                          "BSON field '$currentOp." + std::string(f.fieldName()) +
                              "' is the wrong type, expected type 'bool'");
        }
        if (f.fieldName() == "idleSessions") options.idleSessions = f.boolValue();
        if (f.fieldName() == "localOps") options.localOps = f.boolValue();
    }
    return options;
}

namespace {

class CurrentOpCommand final : public Command {
  public:
    std::string_view name() const override { return "currentOp"; }
    bool adminOnly() const override { return true; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        txn::SessionTransactions* transactions =
            opCtx.service ? opCtx.service->transactions : nullptr;
        if (!transactions) {
            return Status(ErrorCodes::CommandNotFound,
                          "currentOp lists transactions, migrations and range deletions; this "
                          "process runs none (start it with --replSet for transactions)");
        }
        ASSIGN_OR_RETURN(CurrentOpFilter filter, CurrentOpFilter::parse(request));
        bson::BsonArrayBuilder inprog;
        for (bson::BsonObj& op : transactions->currentOps()) {
            if (filter.wants(op)) inprog.append(op);
        }
        reply.appendArray("inprog", inprog.arr());
        return Status::OK();
    }
};

}  // namespace

void registerCurrentOpCommand(CommandRegistry& registry) {
    registry.add(std::make_unique<CurrentOpCommand>());
}

}  // namespace tessera::command
