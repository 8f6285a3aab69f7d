// bulkWrite (MongoDB 8.0 client bulk write, on admin) on a router: each op runs as a one-statement
// insert/update/delete of its namespace through the ordinary write path (runWriteCommand), in
// order; results are gathered into bulkWrite's cursor reply. Simple rather than fast: one round
// trip per op.
#include "base/error_codes.h"
#include "command/reply_util.h"
#include "command/write_ops_util.h"
#include "router/cluster_write_batch.h"
#include "router/cluster_write_commands.h"
#include "router/router_util.h"

namespace tessera::router {
namespace {

using bson::BsonElement;
using bson::BsonType;
using bson::BsonView;
using command::CommandRequest;
using command::OperationContext;

// Generic fields of the bulkWrite body that every per-op command carries (a retryable one also
// carries the op's index as its statement id).
bool isForwardedField(std::string_view f) {
    return f == "lsid" || f == "txnNumber" || f == "writeConcern" ||
           f == "bypassDocumentValidation" || f == "let" || f == "comment" || f == "maxTimeMS";
}

class ClusterBulkWriteCommand final : public command::Command {
  public:
    std::string_view name() const override { return "bulkWrite"; }
    bool supportsRetryableWrite() const override { return true; }
    bool adminOnly() const override { return true; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        Router& router = Router::get(opCtx);
        BsonView body = request.body;
        TRY_STATUS(checkKnownFields(request, {"ops", "nsInfo", "ordered", "errorsOnly",
                                              "bypassDocumentValidation", "let", "cursor"}));
        ASSIGN_OR_RETURN(auto ops, command::writeStatements(request, "ops"));
        std::vector<BsonView> nsInfo;
        if (const command::DocumentSequence* seq = request.sequence("nsInfo")) {
            nsInfo = seq->documents;
        } else if (BsonElement e = body["nsInfo"]) {
            ASSIGN_OR_RETURN(nsInfo, command::objectArray(e, "bulkWrite"));
        } else {
            return Status(40414, "BSON field 'bulkWrite.nsInfo' is missing but a required field");
        }
        if (nsInfo.empty()) {
            return Status(ErrorCodes::BadValue, "BulkWrite nsInfo must not be empty");
        }
        ASSIGN_OR_RETURN(bool ordered, command::parseOrdered(body, "bulkWrite"));
        bool errorsOnly = body["errorsOnly"].trueValue();
        std::vector<command::Namespace> namespaces;
        for (BsonView info : nsInfo) {
            BsonElement ns = info["ns"];
            if (ns.type() != BsonType::String) {
                return Status(ErrorCodes::TypeMismatch,
                              "BSON field 'bulkWrite.nsInfo.ns' is missing or not a string");
            }
            ASSIGN_OR_RETURN(command::Namespace parsed, command::parseNamespace(ns.stringValue()));
            namespaces.push_back(std::move(parsed));
        }
        // Validate the shape of every op before running any (as MongoDB's IDL parse does).
        std::vector<WriteKind> kinds;
        std::vector<size_t> nsIndexes;
        for (BsonView op : ops) {
            BsonElement first = op.firstElement();
            std::string_view k = first ? first.fieldName() : std::string_view();
            WriteKind kind;
            if (k == "insert") {
                kind = WriteKind::kInsert;
            } else if (k == "update") {
                kind = WriteKind::kUpdate;
            } else if (k == "delete") {
                kind = WriteKind::kDelete;
            } else {
                return Status(ErrorCodes::FailedToParse,
                              "Unrecognized bulkWrite operation type: '" + std::string(k) + "'");
            }
            int64_t idx = first.isNumber() ? first.numberLong() : -1;
            if (idx < 0 || static_cast<size_t>(idx) >= namespaces.size()) {
                return Status(ErrorCodes::BadValue, "BulkWrite ops entry " + op.toJson() +
                                                        " has an invalid nsInfo index.");
            }
            if (kind == WriteKind::kInsert ? !op["document"].isObject()
                                           : !op["filter"].isObject()) {
                return Status(40414,
                              "BSON field 'bulkWrite.ops." +
                                  std::string(kind == WriteKind::kInsert ? "document" : "filter") +
                                  "' is missing but a required field");
            }
            if (kind == WriteKind::kUpdate && !op["updateMods"].isObject() &&
                !op["updateMods"].isArray()) {
                return Status(40414,
                              "BSON field 'bulkWrite.ops.updateMods' is missing but a required "
                              "field");
            }
            kinds.push_back(kind);
            nsIndexes.push_back(static_cast<size_t>(idx));
        }

        int64_t nErrors = 0, nInserted = 0, nMatched = 0, nModified = 0, nUpserted = 0,
                nDeleted = 0;
        std::vector<bson::BsonObj> batch;
        for (size_t i = 0; i < ops.size(); ++i) {
            BsonView op = ops[i];
            WriteKind kind = kinds[i];
            const command::Namespace& ns = namespaces[nsIndexes[i]];
            bson::BsonBuilder cb;
            cb.append(writeCommandName(kind), ns.coll);
            for (BsonElement e : body) {
                if (isForwardedField(e.fieldName())) cb.appendElement(e);
            }
            if (!body["txnNumber"].eoo()) {
                cb.startArray("stmtIds").appendInt32("0", static_cast<int32_t>(i)).end();
            }
            bson::BsonObj cmdBody = cb.obj();
            bson::BsonBuilder sb;
            switch (kind) {
                case WriteKind::kInsert:
                    sb.appendElements(command::ensureIdFirst(op["document"].objValue()));
                    break;
                case WriteKind::kUpdate:
                    sb.appendElementAs(op["filter"], "q");
                    sb.appendElementAs(op["updateMods"], "u");
                    for (BsonElement e : op) {
                        std::string_view f = e.fieldName();
                        if (f == "upsert" || f == "multi" || f == "arrayFilters" || f == "hint" ||
                            f == "collation" || f == "sort") {
                            sb.appendElement(e);
                        }
                    }
                    break;
                case WriteKind::kDelete:
                    sb.appendElementAs(op["filter"], "q");
                    sb.appendInt32("limit", op["multi"].trueValue() ? 0 : 1);
                    for (BsonElement e : op) {
                        if (e.fieldName() == "hint" || e.fieldName() == "collation") {
                            sb.appendElement(e);
                        }
                    }
                    break;
            }
            bson::BsonObj stmt = sb.obj();
            bson::BsonBuilder r;
            opCtx.errorExtraInfo = bson::BsonObj();
            Status s =
                runWriteCommand(opCtx, router, ns.db, ns.ns(), cmdBody, kind, {stmt}, true, r);
            bson::BsonObj res = r.obj();
            // The op's outcome: a command error, or the first writeErrors entry.
            Status opStatus = s;
            bson::BsonObj errorInfo = s.isOK() ? bson::BsonObj() : opCtx.errorExtraInfo;
            if (s.isOK()) {
                if (BsonElement wes = res["writeErrors"];
                    wes.isArray() && !wes.objValue().isEmpty()) {
                    BsonView we = wes.objValue().firstElement().objValue();
                    opStatus =
                        Status(we["code"].numberInt(), std::string(we["errmsg"].stringValue()));
                    bson::BsonBuilder extra;
                    for (BsonElement e : we) {
                        std::string_view f = e.fieldName();
                        if (f != "index" && f != "code" && f != "errmsg" && f != "codeName") {
                            extra.appendElement(e);
                        }
                    }
                    errorInfo = extra.obj();
                }
            }
            int64_t n = res["n"].numberLong();
            int64_t nMod = res["nModified"].numberLong();
            BsonElement upserted = res["upserted"];
            bool didUpsert = upserted.isArray() && !upserted.objValue().isEmpty();
            switch (kind) {
                case WriteKind::kInsert:
                    nInserted += n;
                    break;
                case WriteKind::kDelete:
                    nDeleted += n;
                    break;
                case WriteKind::kUpdate:
                    if (didUpsert) {
                        ++nUpserted;
                    } else {
                        nMatched += n;
                    }
                    nModified += nMod;
                    break;
            }
            if (!opStatus.isOK()) ++nErrors;
            if (!opStatus.isOK() || !errorsOnly) {
                bson::BsonBuilder b;
                b.appendInt32("ok", opStatus.isOK() ? 1 : 0);
                b.appendNumber("idx", static_cast<int64_t>(i));
                if (!opStatus.isOK()) {
                    b.appendInt32("code", opStatus.code());
                    b.append("codeName", opStatus.codeName());
                    b.append("errmsg", opStatus.reason());
                    b.appendElements(errorInfo);
                }
                b.appendNumber("n", n);
                if (kind == WriteKind::kUpdate) {
                    b.appendNumber("nModified", nMod);
                    if (didUpsert) {
                        b.startObject("upserted")
                            .appendElementAs(upserted.objValue().firstElement().objValue()["_id"],
                                             "_id")
                            .end();
                    }
                }
                batch.push_back(b.obj());
            }
            if (!opStatus.isOK() && ordered) break;
        }
        opCtx.errorExtraInfo = bson::BsonObj();
        command::appendSingleBatchCursor(reply, "admin.$cmd.bulkWrite", batch);
        reply.appendNumber("nErrors", nErrors);
        reply.appendNumber("nInserted", nInserted);
        reply.appendNumber("nMatched", nMatched);
        reply.appendNumber("nModified", nModified);
        reply.appendNumber("nUpserted", nUpserted);
        reply.appendNumber("nDeleted", nDeleted);
        return Status::OK();
    }
};

}  // namespace

std::unique_ptr<command::Command> makeClusterBulkWriteCommand() {
    return std::make_unique<ClusterBulkWriteCommand>();
}

}  // namespace tessera::router
