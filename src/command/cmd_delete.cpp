#include "command/collation_util.h"
#include "command/crud_commands.h"
#include "command/exec/query_executor.h"
#include "command/exec/write_executor.h"
#include "command/reply_util.h"
#include "command/retryable_statements.h"
#include "command/write_ops_util.h"
#include "query/matcher.h"
#include "storage/engine.h"

namespace tessera::command {
namespace {

using bson::BsonType;

// delete: {delete: "c", deletes: [{q, limit: 0|1, hint?, collation?}] | kind-1 `deletes`,
// ordered?} → {n, writeErrors?}.
class DeleteCommand final : public Command {
  public:
    std::string_view name() const override { return "delete"; }
    bool supportsRetryableWrite() const override { return true; }
    // A few single-document deletes by `_id`.
    bool runsInline(const ServiceContext& service, const CommandRequest& request) const override {
        return isExistingCollection(service, request.db, request.firstElement()) &&
               everyStatementPinsId(request, "deletes", [](bson::BsonView s) {
                   return s["limit"].isNumber() && s["limit"].numberDouble() == 1 &&
                          filterPinsId(s["q"]);
               });
    }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(std::string collName, collectionName(request.firstElement(), "delete"));
        ASSIGN_OR_RETURN(auto raw, writeStatements(request, "deletes"));
        ASSIGN_OR_RETURN(bool ordered, parseOrdered(request.body, "delete"));
        const storage::WriteOptions wopts;  // a journal write concern: awaitJournal, after run()
        ASSIGN_OR_RETURN(auto let, parseLet(request.body, "delete"));
        std::vector<exec::DeleteStatement> stmts;
        for (bson::BsonView s : raw) {
            exec::DeleteStatement stmt;
            bson::BsonElement q = s["q"];
            bson::BsonElement limit = s["limit"];
            if (q.eoo()) {
                return Status(40414,
                              "BSON field 'delete.deletes.q' is missing but a required field");
            }
            if (limit.eoo()) {
                return Status(40414,
                              "BSON field 'delete.deletes.limit' is missing but a required field");
            }
            TRY_STATUS(expectType(q, BsonType::Object, "delete.deletes"));
            if (!limit.isNumber() || (limit.numberDouble() != 0 && limit.numberDouble() != 1)) {
                return Status(ErrorCodes::FailedToParse,
                              "The limit field in delete objects must be 0 or 1. Got " +
                                  limit.toString(false));
            }
            stmt.query = q.objValue().copy();
            stmt.multi = limit.numberDouble() == 0;
            ASSIGN_OR_RETURN(stmt.hint, exec::parseHint(s["hint"]));
            stmt.collationArg = collationArgument(s);
            stmt.let = let;
            stmts.push_back(std::move(stmt));
        }
        // Inline, the one statement leaves a wait for a transaction to the pool (write_ops_util.h).
        if (!stmts.empty()) stmts.front().deferConflicts = opCtx.inlineExecution;
        std::string ns = request.db + "." + collName;
        ASSIGN_OR_RETURN(storage::CollectionPtr coll, getWritableCollection(opCtx, ns));
        std::unique_ptr<storage::CollectionWriter> writer;
        if (coll) {
            ASSIGN_OR_RETURN(writer, opCtx.writer(coll));
        }
        int64_t n = 0;
        std::vector<WriteError> errors;
        // A retryable write's statements that an earlier attempt executed are answered from
        // their record, not applied again (retryable_statements.h).
        RetryableStatements* retryable = opCtx.statements;
        std::vector<int32_t> stmtIds;
        std::vector<int32_t> retried;
        if (retryable) {
            ASSIGN_OR_RETURN(stmtIds, statementIds(request, stmts.size()));
        }
        for (size_t i = 0; i < stmts.size(); ++i) {
            if (retryable) {
                if (auto done = retryable->executed(stmtIds[i])) {
                    n += done->n;
                    retried.push_back(stmtIds[i]);
                    continue;
                }
                retryable->beginStatement(stmtIds[i], RetryableStatements::Kind::kDelete,
                                          !stmts[i].multi);
            }
            Status s = query::Collator::fromArgument(raw[i]["collation"]).getStatus();
            int64_t deleted = 0;
            if (s.isOK() && writer) {
                s = exec::executeDelete(opCtx, *writer, stmts[i], wopts, &deleted);
                if (s.is(ErrorCodes::InlineWouldBlock))
                    return s;  // nothing changed: the pool runs it
            } else if (s.isOK()) {
                auto parsed = query::Matcher::parse(stmts[i].query, nullptr, stmts[i].let);
                if (!parsed.isOK()) s = parsed.getStatus();
            }
            if (retryable) retryable->endStatement(s);
            n += deleted;
            if (!s.isOK()) {
                errors.push_back(WriteError{static_cast<int64_t>(i), s, {}});
                if (s.is(ErrorCodes::MaxTimeMSExpired) || ordered) break;
            }
        }
        reply.appendNumber("n", n);
        appendRetriedStatementIds(reply, retried);
        appendWriteErrors(reply, errors);
        return Status::OK();
    }
};

}  // namespace

std::unique_ptr<Command> makeDeleteCommand() { return std::make_unique<DeleteCommand>(); }

}  // namespace tessera::command
