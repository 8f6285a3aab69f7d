// bulkWrite (MongoDB 8.0): inserts, updates and deletes across namespaces in one command.

#include "command/collation_util.h"
#include "command/crud_commands.h"
#include "command/document_validation.h"
#include "command/exec/query_executor.h"
#include "command/exec/write_executor.h"
#include "command/reply_util.h"
#include "command/retryable_statements.h"
#include "command/write_ops_util.h"
#include "query/collator.h"
#include "query/matcher.h"
#include "query/update_driver.h"
#include "storage/engine.h"

namespace tessera::command {
namespace {

using bson::BsonElement;
using bson::BsonType;
using bson::BsonView;

enum class OpKind { kInsert, kUpdate, kDelete };

struct BulkOp {
    OpKind kind = OpKind::kInsert;
    size_t nsIndex = 0;
    BsonView raw;
    BsonView document;  // insert
    exec::UpdateStatement update;
    exec::DeleteStatement del;
};

Status missingField(std::string_view path) {
    return Status(40414, "BSON field '" + std::string(path) + "' is missing but a required field");
}

Status unknownField(std::string_view path) {
    return Status(40415, "BSON field '" + std::string(path) + "' is an unknown field.");
}

// Structural parse of one `ops` entry (errors fail the whole command, as MongoDB's IDL does).
StatusWith<BulkOp> parseOp(BsonView raw, size_t nsCount) {
    BulkOp op;
    op.raw = raw;
    BsonElement first = raw.firstElement();
    std::string_view kind = first ? first.fieldName() : std::string_view();
    if (kind == "insert") {
        op.kind = OpKind::kInsert;
    } else if (kind == "update") {
        op.kind = OpKind::kUpdate;
    } else if (kind == "delete") {
        op.kind = OpKind::kDelete;
    } else {
        return Status(ErrorCodes::FailedToParse,
                      "Unrecognized bulkWrite operation type: '" + std::string(kind) + "'");
    }
    if (!first.isNumber()) {
        return Status(ErrorCodes::TypeMismatch,
                      "BSON field 'bulkWrite.ops." + std::string(kind) + "' is the wrong type '" +
                          std::string(bson::typeName(first.type())) + "', expected type 'int'");
    }
    int64_t idx = first.numberLong();
    if (idx < 0 || static_cast<size_t>(idx) >= nsCount) {
        return Status(ErrorCodes::BadValue,
                      "BulkWrite ops entry " + raw.toJson() + " has an invalid nsInfo index.");
    }
    op.nsIndex = static_cast<size_t>(idx);
    std::string ctx = "bulkWrite.ops";
    switch (op.kind) {
        case OpKind::kInsert: {
            for (BsonElement e : raw) {
                std::string_view f = e.fieldName();
                if (f != "insert" && f != "document")
                    return unknownField(ctx + "." + std::string(f));
            }
            BsonElement doc = raw["document"];
            if (!doc) return missingField("bulkWrite.ops.document");
            TRY_STATUS(expectType(doc, BsonType::Object, ctx));
            op.document = doc.objValue();
            break;
        }
        case OpKind::kUpdate: {
            BsonElement filter = raw["filter"];
            BsonElement mods = raw["updateMods"];
            if (!filter) return missingField("bulkWrite.ops.filter");
            if (!mods) return missingField("bulkWrite.ops.updateMods");
            TRY_STATUS(expectType(filter, BsonType::Object, ctx));
            if (mods.type() != BsonType::Object && mods.type() != BsonType::Array) {
                return Status(ErrorCodes::TypeMismatch,
                              "BSON field 'bulkWrite.ops.updateMods' is the wrong type '" +
                                  std::string(bson::typeName(mods.type())) +
                                  "', expected types '[object, array]'");
            }
            exec::UpdateStatement& stmt = op.update;
            stmt.query = filter.objValue().copy();
            stmt.update = mods.objValue().copy();
            stmt.updateIsPipeline = mods.type() == BsonType::Array;
            for (BsonElement e : raw) {
                std::string_view f = e.fieldName();
                if (f == "update" || f == "filter" || f == "updateMods" || f == "collation" ||
                    f == "let" || f == "constants") {
                    continue;
                }
                if (f == "upsert") {
                    ASSIGN_OR_RETURN(stmt.upsert, boolArgument(e, ctx));
                } else if (f == "multi") {
                    ASSIGN_OR_RETURN(stmt.multi, boolArgument(e, ctx));
                } else if (f == "arrayFilters") {
                    if (e.isNull()) continue;
                    TRY_STATUS(expectType(e, BsonType::Array, ctx));
                    stmt.arrayFilters = e.objValue().copy();
                } else if (f == "hint") {
                    ASSIGN_OR_RETURN(stmt.hint, exec::parseHint(e));
                } else if (f == "sort") {
                    if (e.isNull()) continue;
                    TRY_STATUS(expectType(e, BsonType::Object, ctx));
                    stmt.sort = e.objValue().copy();
                } else if (f == "upsertSupplied") {
                    continue;
                } else {
                    return unknownField(ctx + "." + std::string(f));
                }
            }
            stmt.collationArg = collationArgument(raw);
            if (stmt.multi && !stmt.sort.isEmpty()) {
                return Status(ErrorCodes::InvalidOptions, "Cannot specify sort with multi=true");
            }
            break;
        }
        case OpKind::kDelete: {
            BsonElement filter = raw["filter"];
            if (!filter) return missingField("bulkWrite.ops.filter");
            TRY_STATUS(expectType(filter, BsonType::Object, ctx));
            op.del.query = filter.objValue().copy();
            op.del.collationArg = collationArgument(raw);
            for (BsonElement e : raw) {
                std::string_view f = e.fieldName();
                if (f == "delete" || f == "filter" || f == "collation" || f == "let") continue;
                if (f == "multi") {
                    ASSIGN_OR_RETURN(op.del.multi, boolArgument(e, ctx));
                } else if (f == "hint") {
                    ASSIGN_OR_RETURN(op.del.hint, exec::parseHint(e));
                } else {
                    return unknownField(ctx + "." + std::string(f));
                }
            }
            break;
        }
    }
    return op;
}

struct OpResult {
    Status status = Status::OK();
    int64_t n = 0;
    int64_t nModified = 0;
    std::optional<bson::BsonObj> upsertedId;  // {"": _id}
    bson::BsonObj errorInfo;
};

// bulkWrite: {bulkWrite: 1, ops: [...] | kind-1 `ops`, nsInfo: [{ns}] | kind-1 `nsInfo`,
// ordered?, bypassDocumentValidation?, errorsOnly?, let?, cursor?: {batchSize}} on admin →
// {cursor: {id: 0, firstBatch: [{ok, idx, n, nModified?, upserted?: {_id}, code?, codeName?,
// errmsg?, errInfo?|keyPattern/keyValue?}], ns: "admin.$cmd.bulkWrite"}, nErrors, nInserted,
// nMatched, nModified, nUpserted, nDeleted}.
class BulkWriteCommand final : public Command {
  public:
    std::string_view name() const override { return "bulkWrite"; }
    bool supportsRetryableWrite() const override { return true; }
    bool adminOnly() const override { return true; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        BsonView body = request.body;
        ASSIGN_OR_RETURN(auto rawOps, writeStatements(request, "ops"));
        std::vector<BsonView> nsInfo;
        if (const DocumentSequence* seq = request.sequence("nsInfo")) {
            if (body["nsInfo"]) {
                return Status(ErrorCodes::BadValue,
                              "BSON field 'bulkWrite.nsInfo' is a duplicate field");
            }
            nsInfo = seq->documents;
        } else if (BsonElement e = body["nsInfo"]) {
            ASSIGN_OR_RETURN(nsInfo, objectArray(e, "bulkWrite"));
        } else {
            return missingField("bulkWrite.nsInfo");
        }
        if (nsInfo.empty()) {
            return Status(ErrorCodes::BadValue, "BulkWrite nsInfo must not be empty");
        }
        ASSIGN_OR_RETURN(bool ordered, parseOrdered(body, "bulkWrite"));
        const storage::WriteOptions wopts;  // a journal write concern: awaitJournal, after run()
        ASSIGN_OR_RETURN(bool bypass, boolArgument(body["bypassDocumentValidation"], "bulkWrite"));
        ASSIGN_OR_RETURN(bool errorsOnly, boolArgument(body["errorsOnly"], "bulkWrite"));
        ASSIGN_OR_RETURN(auto let, parseLet(body, "bulkWrite"));
        if (BsonElement c = body["cursor"]; c && !c.isNull()) {
            TRY_STATUS(expectType(c, BsonType::Object, "bulkWrite"));
        }

        std::vector<std::string> namespaces;
        for (BsonView info : nsInfo) {
            BsonElement ns = info["ns"];
            if (!ns) return missingField("bulkWrite.nsInfo.ns");
            if (ns.type() != BsonType::String) {
                return Status(ErrorCodes::TypeMismatch,
                              "BSON field 'bulkWrite.nsInfo.ns' is the wrong type '" +
                                  std::string(bson::typeName(ns.type())) +
                                  "', expected type 'string'");
            }
            ASSIGN_OR_RETURN(Namespace parsed, parseNamespace(ns.stringValue()));
            namespaces.push_back(parsed.ns());
        }
        std::vector<BulkOp> ops;
        ops.reserve(rawOps.size());
        for (BsonView raw : rawOps) {
            ASSIGN_OR_RETURN(BulkOp op, parseOp(raw, namespaces.size()));
            op.update.let = let;
            op.del.let = let;
            ops.push_back(std::move(op));
        }

        // A retryable bulkWrite's ops are its statements (ids 0..n-1, or `stmtIds`), each
        // recorded in its own write's batch as the insert/update/delete commands' are: an
        // earlier attempt's ops are answered from their record (retryable_statements.h).
        RetryableStatements* retryable = opCtx.statements;
        std::vector<int32_t> stmtIds;
        std::vector<int32_t> retried;
        if (retryable) {
            ASSIGN_OR_RETURN(stmtIds, statementIds(request, ops.size()));
        }

        int64_t nErrors = 0, nInserted = 0, nMatched = 0, nModified = 0, nUpserted = 0,
                nDeleted = 0;
        std::vector<bson::BsonObj> batch;
        for (size_t i = 0; i < ops.size(); ++i) {
            const BulkOp& op = ops[i];
            OpResult r;
            if (std::optional<StatementResult> done =
                    retryable ? retryable->executed(stmtIds[i]) : std::nullopt) {
                r.n = done->n;
                r.nModified = done->nModified;
                if (!done->upsertedId.isEmpty()) r.upsertedId = done->upsertedId;
                retried.push_back(stmtIds[i]);
            } else {
                if (retryable) {
                    retryable->beginStatement(stmtIds[i], statementKind(op.kind), recordable(op));
                }
                r = execute(opCtx, op, namespaces[op.nsIndex], wopts, bypass);
                if (retryable) retryable->endStatement(r.status);
            }
            if (r.status.isOK()) {
                switch (op.kind) {
                    case OpKind::kInsert:
                        nInserted += r.n;
                        break;
                    case OpKind::kDelete:
                        nDeleted += r.n;
                        break;
                    case OpKind::kUpdate:
                        if (r.upsertedId) {
                            ++nUpserted;
                        } else {
                            nMatched += r.n;
                        }
                        nModified += r.nModified;
                        break;
                }
            } else {
                ++nErrors;
                // A failed multi-update/delete may have written some documents.
                if (op.kind == OpKind::kUpdate) {
                    nMatched += r.n;
                    nModified += r.nModified;
                } else if (op.kind == OpKind::kDelete) {
                    nDeleted += r.n;
                }
            }
            if (!r.status.isOK() || !errorsOnly) batch.push_back(replyEntry(i, op, r));
            if (!r.status.isOK() && (ordered || r.status.is(ErrorCodes::MaxTimeMSExpired))) {
                break;
            }
        }
        appendSingleBatchCursor(reply, "admin.$cmd.bulkWrite", batch);
        appendRetriedStatementIds(reply, retried);
        reply.appendNumber("nErrors", nErrors);
        reply.appendNumber("nInserted", nInserted);
        reply.appendNumber("nMatched", nMatched);
        reply.appendNumber("nModified", nModified);
        reply.appendNumber("nUpserted", nUpserted);
        reply.appendNumber("nDeleted", nDeleted);
        return Status::OK();
    }

  private:
    static RetryableStatements::Kind statementKind(OpKind kind) {
        switch (kind) {
            case OpKind::kInsert:
                return RetryableStatements::Kind::kInsert;
            case OpKind::kUpdate:
                return RetryableStatements::Kind::kUpdate;
            case OpKind::kDelete:
                break;
        }
        return RetryableStatements::Kind::kDelete;
    }
    // One document at most: a multi-document op is not retryable (MongoDB's rule) and never
    // recorded.
    static bool recordable(const BulkOp& op) {
        return op.kind == OpKind::kInsert ||
               (op.kind == OpKind::kUpdate ? !op.update.multi : !op.del.multi);
    }

    static bson::BsonObj replyEntry(size_t idx, const BulkOp& op, const OpResult& r) {
        bson::BsonBuilder b;
        if (r.status.isOK()) {
            b.appendInt32("ok", 1);
        } else {
            b.appendInt32("ok", 0);
        }
        b.appendNumber("idx", static_cast<int64_t>(idx));
        if (!r.status.isOK()) {
            b.appendInt32("code", r.status.code());
            b.append("codeName", r.status.codeName());
            b.append("errmsg", r.status.reason());
            b.appendElements(r.errorInfo);
        }
        b.appendNumber("n", r.n);
        if (op.kind == OpKind::kUpdate) {
            b.appendNumber("nModified", r.nModified);
            if (r.upsertedId) {
                b.startObject("upserted")
                    .appendElementAs(r.upsertedId->firstElement(), "_id")
                    .end();
            }
        }
        return b.obj();
    }

    static OpResult execute(OperationContext& opCtx, const BulkOp& op, const std::string& ns,
                            const storage::WriteOptions& wopts, bool bypass) {
        OpResult r;
        r.status = opCtx.checkForInterrupt();
        if (!r.status.isOK()) return r;
        r.status = query::Collator::fromArgument(op.raw["collation"]).getStatus();
        if (!r.status.isOK()) return r;
        switch (op.kind) {
            case OpKind::kInsert:
                r.status = insert(opCtx, op, ns, wopts, bypass, &r);
                break;
            case OpKind::kUpdate:
                r.status = update(opCtx, op, ns, wopts, bypass, &r);
                break;
            case OpKind::kDelete:
                r.status = remove(opCtx, op, ns, wopts, &r);
                break;
        }
        return r;
    }

    static Status insert(OperationContext& opCtx, const BulkOp& op, const std::string& ns,
                         const storage::WriteOptions& wopts, bool bypass, OpResult* r) {
        bson::BsonObj doc = ensureIdFirst(op.document);
        TRY_STATUS(query::validateStorableDocument(doc, /*allowTopLevelDollar=*/true));
        ASSIGN_OR_RETURN(auto ownership, opCtx.ownershipFilter(ns));
        if (ownership && !ownership->owns(doc)) {
            // As the insert command: a shard takes only the documents it owns.
            return Status(ErrorCodes::InvalidOptions, "This shard does not own the document's " +
                                                          ownership->describeKey(doc) +
                                                          ": insert it through a router");
        }
        ASSIGN_OR_RETURN(storage::CollectionPtr coll, getOrCreateCollection(opCtx, ns));
        ASSIGN_OR_RETURN(auto writer, opCtx.writer(coll));
        ASSIGN_OR_RETURN(auto validator,
                         DocumentValidator::forWrites(writer->collection(), bypass));
        if (validator) TRY_STATUS(validator->validate(doc, nullptr, &r->errorInfo));
        auto sw = writer->insert(doc, wopts);
        if (!sw.isOK()) {
            if (sw.getStatus().is(ErrorCodes::DuplicateKey)) {
                r->errorInfo = writer->duplicateKeyInfo();
            }
            return sw.getStatus();
        }
        r->n = 1;
        return Status::OK();
    }

    static Status update(OperationContext& opCtx, const BulkOp& op, const std::string& ns,
                         const storage::WriteOptions& wopts, bool bypass, OpResult* r) {
        storage::CollectionPtr coll;
        if (op.update.upsert) {
            ASSIGN_OR_RETURN(coll, getOrCreateCollection(opCtx, ns));
        } else {
            ASSIGN_OR_RETURN(coll, getWritableCollection(opCtx, ns));
        }
        if (!coll) {
            // Nothing to update, but the statement must still be valid.
            TRY_STATUS(query::Matcher::parse(op.update.query, nullptr, op.update.let).getStatus());
            TRY_STATUS(exec::parseUpdate(op.update).getStatus());
            return Status::OK();
        }
        ASSIGN_OR_RETURN(auto writer, opCtx.writer(coll));
        ASSIGN_OR_RETURN(auto validator,
                         DocumentValidator::forWrites(writer->collection(), bypass));
        exec::UpdateStatement stmt = op.update;
        stmt.validator = validator.get();
        ASSIGN_OR_RETURN(auto ownership, opCtx.ownershipFilter(ns));
        stmt.ownership = ownership.get();
        stmt.retryableWrite = opCtx.txnNumber.has_value();
        exec::UpdateOutcome outcome;
        Status s = exec::executeUpdate(opCtx, *writer, stmt, wopts, &outcome);
        r->n = outcome.nMatched + (outcome.upsertedId ? 1 : 0);
        r->nModified = outcome.nModified;
        r->upsertedId = outcome.upsertedId;
        r->errorInfo = outcome.errorInfo;
        return s;
    }

    static Status remove(OperationContext& opCtx, const BulkOp& op, const std::string& ns,
                         const storage::WriteOptions& wopts, OpResult* r) {
        ASSIGN_OR_RETURN(storage::CollectionPtr coll, getWritableCollection(opCtx, ns));
        if (!coll) return query::Matcher::parse(op.del.query, nullptr, op.del.let).getStatus();
        ASSIGN_OR_RETURN(auto writer, opCtx.writer(coll));
        return exec::executeDelete(opCtx, *writer, op.del, wopts, &r->n);
    }
};

}  // namespace

std::unique_ptr<Command> makeBulkWriteCommand() { return std::make_unique<BulkWriteCommand>(); }

}  // namespace tessera::command
