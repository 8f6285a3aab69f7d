#include "command/write_ops_util.h"

#include <cmath>

#include "command/reply_util.h"
#include "command/transaction_ddl.h"
#include "command/view_reads.h"
#include "query/expression.h"
#include "storage/engine.h"

namespace tessera::command {

using bson::BsonType;

StatusWith<std::vector<bson::BsonView>> objectArray(const bson::BsonElement& arr,
                                                    std::string_view command) {
    TRY_STATUS(expectType(arr, BsonType::Array, command));
    std::vector<bson::BsonView> out;
    for (auto e : arr.objValue()) {
        if (e.type() != BsonType::Object) {
            return Status(ErrorCodes::TypeMismatch,
                          "BSON field '" + std::string(command) + "." +
                              std::string(arr.fieldName()) + "' is the wrong type '" +
                              std::string(bson::typeName(e.type())) + "', expected type 'object'");
        }
        out.push_back(e.objValue());
    }
    return out;
}

StatusWith<std::vector<bson::BsonView>> writeStatements(const CommandRequest& request,
                                                        std::string_view field) {
    bson::BsonElement inBody = request.body[field];
    const DocumentSequence* seq = request.sequence(field);
    std::vector<bson::BsonView> out;
    if (inBody && seq) {
        return Status(ErrorCodes::BadValue, "BSON field '" + std::string(request.commandName) +
                                                "." + std::string(field) +
                                                "' is a duplicate field");
    }
    if (seq) {
        out = seq->documents;
    } else if (inBody) {
        ASSIGN_OR_RETURN(out, objectArray(inBody, request.commandName));
    } else {
        return Status(ErrorCodes::FailedToParse, "BSON field '" + std::string(request.commandName) +
                                                     "." + std::string(field) +
                                                     "' is missing but a required field");
    }
    if (out.empty() || out.size() > static_cast<size_t>(kMaxWriteBatchSize)) {
        return Status(ErrorCodes::InvalidLength, "Write batch sizes must be between 1 and " +
                                                     std::to_string(kMaxWriteBatchSize) + ". Got " +
                                                     std::to_string(out.size()) + " operations.");
    }
    return out;
}

StatusWith<std::shared_ptr<const query::Variables>> parseLet(bson::BsonView body,
                                                             std::string_view command) {
    bson::BsonElement let = body["let"];
    if (let.eoo() || let.isNull()) return std::shared_ptr<const query::Variables>();
    TRY_STATUS(expectType(let, bson::BsonType::Object, command));
    ASSIGN_OR_RETURN(std::unique_ptr<query::Variables> vars,
                     query::Variables::fromLet(let.objValue(), nullptr));
    return std::shared_ptr<const query::Variables>(std::move(vars));
}

StatusWith<bool> parseOrdered(bson::BsonView body, std::string_view command) {
    bson::BsonElement e = body["ordered"];
    if (e.eoo()) return true;
    return boolArgument(e, command);
}

namespace {

StatusWith<storage::CollectionPtr> writable(storage::CollectionPtr coll, const std::string& ns) {
    if (coll && !coll->options["viewOn"].eoo()) {
        return Status(ErrorCodes::CommandNotSupportedOnView,
                      "Namespace " + ns + " is a view, not a collection");
    }
    return coll;
}

}  // namespace

StatusWith<storage::CollectionPtr> getWritableCollection(const storage::Engine& engine,
                                                         const std::string& ns) {
    return writable(engine.getCollection(ns), ns);
}

StatusWith<storage::CollectionPtr> getWritableCollection(const OperationContext& opCtx,
                                                         const std::string& ns) {
    return writable(lookupCollection(opCtx, ns), ns);
}

StatusWith<storage::CollectionPtr> getOrCreateCollection(OperationContext& opCtx,
                                                         const std::string& ns) {
    if (!opCtx.transaction) return getOrCreateCollection(*opCtx.service->engine, ns);
    ASSIGN_OR_RETURN(storage::CollectionPtr existing, getWritableCollection(opCtx, ns));
    if (existing) return existing;
    auto created = createInTransaction(opCtx, ns, bson::BsonView());
    // Created by someone else since the lookup: the transaction writes into it.
    if (created.getStatus().is(ErrorCodes::NamespaceExists)) {
        return getWritableCollection(opCtx, ns);
    }
    return created;
}

bool filterPinsId(bson::BsonElement filter) {
    if (!filter.isObject()) return false;
    bson::BsonElement id = filter.objValue()["_id"];
    if (id.isObject()) {
        bson::BsonView ops = id.objValue();
        bson::BsonElement eq = ops["$eq"];
        if (eq.eoo() || ops.nFields() != 1) return false;
        id = eq;
    }
    switch (id.type()) {
        case bson::BsonType::EOO:
        case bson::BsonType::Object:
        case bson::BsonType::Array:
        case bson::BsonType::Regex:
            return false;
        default:
            return true;
    }
}

bool isExistingCollection(const ServiceContext& service, std::string_view db,
                          bson::BsonElement coll) {
    if (!service.engine || coll.type() != bson::BsonType::String) return false;
    std::string ns = std::string(db) + "." + std::string(coll.stringValue());
    storage::CollectionPtr c = service.engine->getCollection(ns);
    return c && !isViewCollection(c);
}

StatusWith<storage::CollectionPtr> getOrCreateCollection(storage::Engine& engine,
                                                         const std::string& ns) {
    for (int attempt = 0; attempt < 3; ++attempt) {
        ASSIGN_OR_RETURN(storage::CollectionPtr existing, getWritableCollection(engine, ns));
        if (existing) return existing;
        auto created = engine.createCollection(ns, bson::BsonView());
        if (created.isOK()) return created.getValue();
        // Lost a race with another creator: read it again.
        if (!created.getStatus().is(ErrorCodes::NamespaceExists)) return created.getStatus();
    }
    return Status(ErrorCodes::ConflictingOperationInProgress,
                  "collection " + ns + " was dropped while being created");
}

bson::BsonObj ensureIdFirst(bson::BsonView doc) {
    auto first = doc.firstElement();
    if (!first.eoo() && first.fieldName() == "_id") return doc.copy();
    bson::BsonBuilder b;
    bson::BsonElement id = doc["_id"];
    if (id.eoo()) {
        b.append("_id", bson::ObjectId::generate());
    } else {
        b.appendElement(id);
    }
    for (auto e : doc) {
        if (e.fieldName() == "_id") continue;
        b.appendElement(e);
    }
    return b.obj();
}

void appendWriteErrors(bson::BsonBuilder& reply, const std::vector<WriteError>& errors) {
    if (errors.empty()) return;
    reply.startArray("writeErrors");
    for (size_t i = 0; i < errors.size(); ++i) {
        const WriteError& w = errors[i];
        reply.startObject(std::to_string(i));
        reply.appendNumber("index", w.index);
        reply.appendInt32("code", w.status.code());
        reply.appendElements(w.extraInfo);
        reply.append("errmsg", w.status.reason());
        reply.end();
    }
    reply.end();
}

WriteError makeWriteError(int64_t index, const Status& status,
                          const storage::CollectionWriter* writer) {
    WriteError w{index, status, {}};
    if (status.is(ErrorCodes::DuplicateKey) && writer != nullptr) {
        w.extraInfo = writer->duplicateKeyInfo();
    }
    return w;
}

Status checkCollation(const bson::BsonElement& collation) {
    if (collation.eoo()) return Status::OK();
    if (collation.type() != BsonType::Object) {
        return Status(ErrorCodes::TypeMismatch, "BSON field 'collation' is the wrong type '" +
                                                    std::string(bson::typeName(collation.type())) +
                                                    "', expected type 'object'");
    }
    bson::BsonView c = collation.objValue();
    if (c.isEmpty()) return Status::OK();
    bson::BsonElement locale = c["locale"];
    if (locale.type() == BsonType::String && locale.stringValue() == "simple") {
        return Status::OK();
    }
    return Status(ErrorCodes::BadValue,
                  "collation " + c.toJson() +
                      " is not supported: only the simple (binary) collation {locale: "
                      "\"simple\"} is available");
}

StatusWith<bson::BsonView> optionalObject(bson::BsonView body, std::string_view field,
                                          std::string_view command) {
    bson::BsonElement e = body[field];
    if (e.eoo()) return bson::BsonView();
    TRY_STATUS(expectType(e, BsonType::Object, command));
    return e.objValue();
}

StatusWith<std::optional<int64_t>> optionalInteger(bson::BsonView body, std::string_view field,
                                                   std::string_view command) {
    bson::BsonElement e = body[field];
    if (e.eoo() || e.isNull()) return std::optional<int64_t>();
    if (!e.isNumber()) {
        return Status(ErrorCodes::TypeMismatch,
                      "BSON field '" + std::string(command) + "." + std::string(field) +
                          "' is the wrong type '" + std::string(bson::typeName(e.type())) +
                          "', expected types '[long, int, decimal, double]'");
    }
    if (e.type() == BsonType::Double && !std::isfinite(e.doubleValue())) {
        return Status(ErrorCodes::BadValue, "BSON field '" + std::string(command) + "." +
                                                std::string(field) + "' must be finite");
    }
    return std::optional<int64_t>(e.numberLong());
}

std::optional<std::string_view> pipelineWriteStage(bson::BsonView pipeline) {
    for (bson::BsonElement stage : pipeline) {
        if (!stage.isObject() || stage.objValue().isEmpty()) continue;
        std::string_view name = stage.objValue().firstElement().fieldName();
        if (name == "$out" || name == "$merge") return name;
    }
    return std::nullopt;
}

Status checkAggregateReadConcern(bson::BsonView body, bson::BsonView pipeline) {
    bson::BsonElement rc = body["readConcern"];
    if (!rc.isObject()) return Status::OK();
    bson::BsonElement level = rc.objValue()["level"];
    if (level.type() != bson::BsonType::String || level.stringValue() != "linearizable") {
        return Status::OK();
    }
    if (std::optional<std::string_view> name = pipelineWriteStage(pipeline)) {
        return Status(
            ErrorCodes::InvalidOptions,
            std::string(*name) + " cannot be used with a 'linearizable' read concern level");
    }
    return Status::OK();
}

}  // namespace tessera::command
