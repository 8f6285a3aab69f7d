#include "command/collation_util.h"
#include "command/crud_commands.h"
#include "command/document_validation.h"
#include "command/exec/query_adapters.h"
#include "command/exec/query_executor.h"
#include "command/exec/write_executor.h"
#include "command/reply_util.h"
#include "command/write_ops_util.h"
#include "query/matcher.h"
#include "query/update_driver.h"
#include "storage/engine.h"

namespace tessera::command {
namespace {

using bson::BsonType;

// findAndModify / findandmodify: {findAndModify: "c", query?, sort?, remove?, update?, new?,
// fields?, upsert?, arrayFilters?, hint?, collation?, bypassDocumentValidation?} →
// {lastErrorObject: {n, updatedExisting?, upserted?}, value}.
class FindAndModifyCommand final : public Command {
  public:
    // One document, found by `_id`, of an existing collection.
    bool runsInline(const ServiceContext& service, const CommandRequest& request) const override {
        return filterPinsId(request.body["query"]) &&
               isExistingCollection(service, request.db, request.firstElement());
    }
    std::string_view name() const override { return "findAndModify"; }
    bool supportsRetryableWrite() const override { return true; }
    std::vector<std::string_view> aliases() const override { return {"findandmodify"}; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        bson::BsonView body = request.body;
        ASSIGN_OR_RETURN(std::string collName,
                         collectionName(request.firstElement(), "findAndModify"));
        ASSIGN_OR_RETURN(bson::BsonView query, optionalObject(body, "query", "findAndModify"));
        ASSIGN_OR_RETURN(bson::BsonView sort, optionalObject(body, "sort", "findAndModify"));
        ASSIGN_OR_RETURN(bson::BsonView fields, optionalObject(body, "fields", "findAndModify"));
        ASSIGN_OR_RETURN(bool remove, boolArgument(body["remove"], "findAndModify"));
        ASSIGN_OR_RETURN(bool returnNew, boolArgument(body["new"], "findAndModify"));
        ASSIGN_OR_RETURN(bool upsert, boolArgument(body["upsert"], "findAndModify"));
        ASSIGN_OR_RETURN(bool bypass,
                         boolArgument(body["bypassDocumentValidation"], "findAndModify"));
        const storage::WriteOptions wopts;  // a journal write concern: awaitJournal, after run()
        ASSIGN_OR_RETURN(bson::BsonObj hint, exec::parseHint(body["hint"]));
        TRY_STATUS(query::Collator::fromArgument(body["collation"]).getStatus());
        ASSIGN_OR_RETURN(auto let, parseLet(body, "findAndModify"));
        bson::BsonElement update = body["update"];
        if (update.isNull()) update = bson::BsonElement();
        if (remove && update) {
            return Status(ErrorCodes::FailedToParse,
                          "Cannot specify both an update and remove=true");
        }
        if (!remove && !update) {
            return Status(ErrorCodes::FailedToParse,
                          "Either an update or remove=true must be specified");
        }
        if (remove && returnNew) {
            return Status(ErrorCodes::FailedToParse,
                          "Cannot specify both new=true and remove=true; 'remove' always "
                          "returns the deleted document");
        }
        if (remove && upsert) {
            return Status(ErrorCodes::FailedToParse,
                          "Cannot specify both upsert=true and remove=true ");
        }
        if (update && update.type() != BsonType::Object && update.type() != BsonType::Array) {
            return Status(ErrorCodes::FailedToParse,
                          "Update argument must be either an object or an array");
        }
        bson::BsonObj arrayFilters;
        if (bson::BsonElement af = body["arrayFilters"]; af && !af.isNull()) {
            TRY_STATUS(expectType(af, BsonType::Array, "findAndModify"));
            arrayFilters = af.objValue().copy();
        }
        std::optional<exec::ProjectionStage::Fn> projection;
        if (!fields.isEmpty()) {
            ASSIGN_OR_RETURN(projection, exec::makeProjection(fields));
        }
        // Validate the query and update before looking at the data.
        ASSIGN_OR_RETURN(auto matcher, query::Matcher::parse(query, nullptr, let));
        exec::UpdateStatement stmt;
        if (update) {
            stmt.query = query.copy();
            stmt.update = update.objValue().copy();
            stmt.updateIsPipeline = update.type() == BsonType::Array;
            stmt.arrayFilters = arrayFilters;
            stmt.hint = hint;
            stmt.sort = sort.copy();
            stmt.upsert = upsert;
            stmt.wantPreImage = !returnNew;
            stmt.wantPostImage = returnNew;
            stmt.collationArg = collationArgument(body);
            stmt.let = let;
            TRY_STATUS(exec::parseUpdate(stmt).getStatus());
        }

        std::string ns = request.db + "." + collName;
        storage::CollectionPtr coll;
        if (upsert) {
            ASSIGN_OR_RETURN(coll, getOrCreateCollection(opCtx, ns));
        } else {
            ASSIGN_OR_RETURN(coll, getWritableCollection(opCtx, ns));
        }

        std::optional<bson::BsonObj> value;
        reply.startObject("lastErrorObject");
        if (remove) {
            int64_t n = 0;
            if (coll) {
                ASSIGN_OR_RETURN(auto writer, opCtx.writer(coll));
                exec::DeleteStatement del{
                    query.copy(), hint, sort.copy(), false, true, collationArgument(body), let};
                del.deferConflicts = opCtx.inlineExecution;  // the pool waits, not an io thread
                TRY_STATUS(exec::executeDelete(opCtx, *writer, del, wopts, &n, &value));
            }
            reply.appendNumber("n", n);
        } else {
            exec::UpdateOutcome outcome;
            if (coll) {
                ASSIGN_OR_RETURN(auto writer, opCtx.writer(coll));
                ASSIGN_OR_RETURN(auto validator,
                                 DocumentValidator::forWrites(writer->collection(), bypass));
                stmt.validator = validator.get();
                ASSIGN_OR_RETURN(auto ownership, opCtx.ownershipFilter(ns));
                stmt.ownership = ownership.get();
                stmt.retryableWrite = opCtx.txnNumber.has_value();
                stmt.inTransaction = opCtx.transaction != nullptr;
                stmt.deferConflicts = opCtx.inlineExecution;  // the pool waits, not an io thread
                // A router's request (versioned) moves what would change shards itself.
                stmt.routerMovesDocuments = !request.body["shardVersion"].eoo();
                Status s = exec::executeUpdate(opCtx, *writer, stmt, wopts, &outcome);
                if (!s.isOK()) {
                    opCtx.errorExtraInfo = outcome.errorInfo;
                    return s;
                }
            }
            bool upserted = outcome.upsertedId.has_value();
            reply.appendNumber("n", outcome.nMatched + (upserted ? 1 : 0));
            reply.append("updatedExisting", outcome.nMatched > 0);
            if (upserted) reply.appendElementAs(outcome.upsertedId->firstElement(), "upserted");
            value = returnNew ? outcome.postImage : outcome.preImage;
        }
        reply.end();
        if (value && projection) {
            ASSIGN_OR_RETURN(bson::BsonObj projected, (*projection)(*value, query::MatchDetails{}));
            value = std::move(projected);
        }
        if (value) {
            reply.append("value", *value);
        } else {
            reply.appendNull("value");
        }
        return Status::OK();
    }
};

}  // namespace

std::unique_ptr<Command> makeFindAndModifyCommand() {
    return std::make_unique<FindAndModifyCommand>();
}

}  // namespace tessera::command
