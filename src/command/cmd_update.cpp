#include "command/collation_util.h"
#include "command/crud_commands.h"
#include "command/document_validation.h"
#include "command/exec/query_executor.h"
#include "command/exec/write_executor.h"
#include "command/reply_util.h"
#include "command/retryable_statements.h"
#include "command/write_ops_util.h"
#include "query/update_driver.h"
#include "storage/engine.h"

namespace tessera::command {
namespace {

using bson::BsonType;

Status missingField(std::string_view path) {
    return Status(40414, "BSON field '" + std::string(path) + "' is missing but a required field");
}

// Structural parse of one `updates` entry (errors here fail the whole command, as MongoDB's IDL
// does); semantic errors of `u` are reported per statement by the executor.
StatusWith<exec::UpdateStatement> parseUpdateStatement(bson::BsonView s) {
    exec::UpdateStatement stmt;
    bson::BsonElement q = s["q"];
    bson::BsonElement u = s["u"];
    if (q.eoo()) return missingField("update.updates.q");
    if (u.eoo()) return missingField("update.updates.u");
    TRY_STATUS(expectType(q, BsonType::Object, "update.updates"));
    if (u.type() != BsonType::Object && u.type() != BsonType::Array) {
        return Status(ErrorCodes::TypeMismatch,
                      "BSON field 'update.updates.u' is the wrong type '" +
                          std::string(bson::typeName(u.type())) +
                          "', expected types '[object, array]'");
    }
    stmt.query = q.objValue().copy();
    stmt.update = u.objValue().copy();
    stmt.updateIsPipeline = u.type() == BsonType::Array;
    ASSIGN_OR_RETURN(stmt.upsert, boolArgument(s["upsert"], "update.updates"));
    ASSIGN_OR_RETURN(stmt.multi, boolArgument(s["multi"], "update.updates"));
    bson::BsonElement af = s["arrayFilters"];
    if (af && !af.isNull()) {
        TRY_STATUS(expectType(af, BsonType::Array, "update.updates"));
        stmt.arrayFilters = af.objValue().copy();
    }
    ASSIGN_OR_RETURN(stmt.hint, exec::parseHint(s["hint"]));
    // MongoDB 8.0: `sort` picks the document a single-document update changes.
    if (bson::BsonElement sort = s["sort"]; sort && !sort.isNull()) {
        TRY_STATUS(expectType(sort, BsonType::Object, "update.updates"));
        if (stmt.multi) {
            return Status(ErrorCodes::InvalidOptions, "Cannot specify sort with multi=true");
        }
        stmt.sort = sort.objValue().copy();
    }
    return stmt;
}

// update: {update: "c", updates: [{q, u, upsert?, multi?, arrayFilters?, hint?, collation?,
// sort?}] | kind-1 `updates`, ordered?, bypassDocumentValidation?} →
// {n, nModified, upserted?: [{index, _id}], writeErrors?}.
class UpdateCommand final : public Command {
  public:
    std::string_view name() const override { return "update"; }
    bool supportsRetryableWrite() const override { return true; }
    // A few single-document updates by `_id` of an existing collection.
    bool runsInline(const ServiceContext& service, const CommandRequest& request) const override {
        return isExistingCollection(service, request.db, request.firstElement()) &&
               everyStatementPinsId(request, "updates", [](bson::BsonView s) {
                   return !s["multi"].trueValue() && filterPinsId(s["q"]);
               });
    }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(std::string collName, collectionName(request.firstElement(), "update"));
        ASSIGN_OR_RETURN(auto raw, writeStatements(request, "updates"));
        ASSIGN_OR_RETURN(bool ordered, parseOrdered(request.body, "update"));
        const storage::WriteOptions wopts;  // a journal write concern: awaitJournal, after run()
        ASSIGN_OR_RETURN(bool bypass,
                         boolArgument(request.body["bypassDocumentValidation"], "update"));
        ASSIGN_OR_RETURN(auto let, parseLet(request.body, "update"));
        std::vector<exec::UpdateStatement> stmts;
        bool anyUpsert = false;
        for (bson::BsonView s : raw) {
            ASSIGN_OR_RETURN(exec::UpdateStatement stmt, parseUpdateStatement(s));
            stmt.collationArg = collationArgument(s);
            stmt.let = let;
            anyUpsert = anyUpsert || stmt.upsert;
            stmts.push_back(std::move(stmt));
        }
        // Inline, the one statement leaves a wait for a transaction to the pool (write_ops_util.h).
        if (!stmts.empty()) stmts.front().deferConflicts = opCtx.inlineExecution;
        std::string ns = request.db + "." + collName;

        storage::CollectionPtr coll;
        if (anyUpsert) {
            ASSIGN_OR_RETURN(coll, getOrCreateCollection(opCtx, ns));
        } else {
            ASSIGN_OR_RETURN(coll, getWritableCollection(opCtx, ns));
        }
        std::unique_ptr<storage::CollectionWriter> writer;
        std::shared_ptr<const DocumentValidator> validator;
        std::shared_ptr<const OwnershipFilter> ownership;
        if (coll) {
            ASSIGN_OR_RETURN(writer, opCtx.writer(coll));
            ASSIGN_OR_RETURN(validator, DocumentValidator::forWrites(writer->collection(), bypass));
            ASSIGN_OR_RETURN(ownership, opCtx.ownershipFilter(ns));
            for (exec::UpdateStatement& stmt : stmts) {
                stmt.validator = validator.get();
                stmt.ownership = ownership.get();
                stmt.retryableWrite = opCtx.txnNumber.has_value();
                stmt.inTransaction = opCtx.transaction != nullptr;
                // A router's request (versioned) moves what would change shards itself.
                stmt.routerMovesDocuments = !request.body["shardVersion"].eoo();
            }
        }

        int64_t n = 0, nModified = 0;
        std::vector<WriteError> errors;
        bson::BsonArrayBuilder upserted;
        auto appendUpserted = [&](size_t i, bson::BsonElement id) {
            bson::BsonBuilder u;
            u.appendNumber("index", static_cast<int64_t>(i));
            u.appendElementAs(id, "_id");
            upserted.append(u.obj());
        };
        // A retryable write's statements that an earlier attempt executed are answered from
        // their record, not applied again (retryable_statements.h).
        RetryableStatements* retryable = opCtx.statements;
        std::vector<int32_t> stmtIds;
        std::vector<int32_t> retried;
        if (retryable) {
            ASSIGN_OR_RETURN(stmtIds, statementIds(request, stmts.size()));
        }
        for (size_t i = 0; i < stmts.size(); ++i) {
            const exec::UpdateStatement& stmt = stmts[i];
            if (retryable) {
                if (auto done = retryable->executed(stmtIds[i])) {
                    n += done->n;
                    nModified += done->nModified;
                    if (!done->upsertedId.isEmpty()) {
                        appendUpserted(i, done->upsertedId.firstElement());
                    }
                    retried.push_back(stmtIds[i]);
                    continue;
                }
                retryable->beginStatement(stmtIds[i], RetryableStatements::Kind::kUpdate,
                                          !stmt.multi);
            }
            exec::UpdateOutcome outcome;
            Status s = query::Collator::fromArgument(raw[i]["collation"]).getStatus();
            if (s.isOK() && writer) s = exec::executeUpdate(opCtx, *writer, stmt, wopts, &outcome);
            if (s.is(ErrorCodes::InlineWouldBlock)) return s;  // nothing changed: the pool runs it
            if (retryable) retryable->endStatement(s);
            if (s.isOK() && !writer) {
                // Validate the update even though there is nothing to update.
                auto parsed = exec::parseUpdate(stmt);
                if (!parsed.isOK()) s = parsed.getStatus();
            }
            n += outcome.nMatched;
            nModified += outcome.nModified;
            if (outcome.upsertedId) {
                ++n;
                appendUpserted(i, outcome.upsertedId->firstElement());
            }
            if (!s.isOK()) {
                errors.push_back(WriteError{static_cast<int64_t>(i), s, outcome.errorInfo});
                if (s.is(ErrorCodes::MaxTimeMSExpired) || ordered) break;
            }
        }
        reply.appendNumber("n", n);
        reply.appendNumber("nModified", nModified);
        if (upserted.count() > 0) reply.appendArray("upserted", upserted.arr());
        appendRetriedStatementIds(reply, retried);
        appendWriteErrors(reply, errors);
        return Status::OK();
    }
};

}  // namespace

std::unique_ptr<Command> makeUpdateCommand() { return std::make_unique<UpdateCommand>(); }

}  // namespace tessera::command
