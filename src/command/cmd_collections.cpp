// Collection DDL: create, drop, listCollections, renameCollection.

#include <algorithm>
#include <array>

#include "command/document_validation.h"
#include "command/exec/pipeline.h"
#include "command/generic_args.h"
#include "command/registry.h"
#include "command/reply_util.h"
#include "command/transaction_ddl.h"
#include "query/collator.h"
#include "query/matcher.h"
#include "storage/engine.h"

namespace tessera::command {
namespace {

// The `idIndex` a collection gets anyway ({key: {_id: 1}, name: "_id_", v: 2}, no collation of
// its own): mongodump/mongorestore send it back as listCollections showed it.
Status checkIdIndexOption(bson::BsonElement e) {
    if (!e.isObject()) return expectType(e, bson::BsonType::Object, "create");
    for (bson::BsonElement f : e.objValue()) {
        std::string_view n = f.fieldName();
        bool ok =
            (n == "key" && f.isObject() && f.objValue().nFields() == 1 &&
             f.objValue()["_id"].isNumber() && f.objValue()["_id"].numberDouble() == 1) ||
            (n == "name" && f.type() == bson::BsonType::String && f.stringValue() == "_id_") ||
            (n == "v" && f.isNumber() && f.numberDouble() == 2) || n == "ns";
        if (!ok) {
            return Status(ErrorCodes::InvalidOptions,
                          "idIndex " + e.objValue().toJson() +
                              " is not supported: a collection's _id index is {key: {_id: 1}, "
                              "name: \"_id_\", v: 2}");
        }
    }
    return Status::OK();
}

// An option naming something Tessera does not have, accepted only as the empty document.
Status checkEmptyOption(bson::BsonElement e, std::string_view what) {
    if (e.isObject() && e.objValue().isEmpty()) return Status::OK();
    return Status(ErrorCodes::InvalidOptions, "create option '" + std::string(e.fieldName()) +
                                                  "' " + std::string(what) +
                                                  "; only {} is accepted");
}

// create's options: each one MongoDB knows is either stored and honoured, accepted only in its
// default form, or refused — never accepted and silently ignored
// (tests/integration/node/options_audit.test.mjs lists them).
Status checkCreateOptions(bson::BsonView body) {
    static constexpr std::array<std::string_view, 8> kNotYet = {"capped",
                                                                "size",
                                                                "max",
                                                                "viewOn",
                                                                "pipeline",
                                                                "timeseries",
                                                                "clusteredIndex",
                                                                "expireAfterSeconds"};
    for (bson::BsonElement e : body) {
        std::string_view f = e.fieldName();
        if (f == "create" || isGenericArgument(f)) continue;
        if (f == "validator" || f == "validationLevel" || f == "validationAction") continue;
        if (f == "collation") {
            TRY_STATUS(query::Collator::fromArgument(e).getStatus());
            continue;
        }
        if (f == "idIndex") {
            TRY_STATUS(checkIdIndexOption(e));
            continue;
        }
        if (f == "storageEngine") {
            TRY_STATUS(checkEmptyOption(e,
                                        "configures an engine Tessera does not have (its "
                                        "storage is RocksDB)"));
            continue;
        }
        if (f == "indexOptionDefaults") {
            bool emptyEngine =
                e.isObject() &&
                (e.objValue().isEmpty() ||
                 (e.objValue().nFields() == 1 && e.objValue()["storageEngine"].isObject() &&
                  e.objValue()["storageEngine"].objValue().isEmpty()));
            if (!emptyEngine) {
                TRY_STATUS(checkEmptyOption(e, "configures an index engine Tessera does not have"));
            }
            continue;
        }
        if (f == "changeStreamPreAndPostImages") {
            if (e.isObject() && !e.objValue()["enabled"].trueValue()) continue;
            return Status(ErrorCodes::NotImplemented,
                          "changeStreamPreAndPostImages needs change streams, which are not "
                          "supported yet");
        }
        if (f == "recordIdsReplicated") {
            if (!e.trueValue()) continue;
            return Status(ErrorCodes::NotImplemented,
                          "recordIdsReplicated: Tessera's record ids are its documents' keys");
        }
        if (f == "encryptedFields") {
            return Status(ErrorCodes::NotImplemented, "encryptedFields is not supported");
        }
        if (std::find(kNotYet.begin(), kNotYet.end(), f) != kNotYet.end()) {
            if (f == "capped" && !e.trueValue()) continue;
            return Status(ErrorCodes::NotImplemented,
                          "create option '" + std::string(f) + "' is not supported yet");
        }
        return Status(40415, "BSON field 'create." + std::string(f) + "' is an unknown field.");
    }
    return Status::OK();
}

// create {create: "v", viewOn: "c", pipeline: [...], collation?}: a view is a catalog entry
// with options {viewOn, pipeline} (it has no documents of its own).
Status createView(OperationContext& opCtx, const CommandRequest& request, const std::string& name) {
    bson::BsonElement viewOn = request.body["viewOn"];
    bson::BsonElement pipeline = request.body["pipeline"];
    if (viewOn.eoo()) {
        return Status(ErrorCodes::BadValue, "'pipeline' requires 'viewOn' to also be specified");
    }
    TRY_STATUS(expectType(viewOn, bson::BsonType::String, "create"));
    if (viewOn.stringValue().empty()) {
        return Status(ErrorCodes::BadValue, "'viewOn' cannot be empty");
    }
    if (!pipeline.eoo()) TRY_STATUS(expectType(pipeline, bson::BsonType::Array, "create"));
    bson::BsonBuilder options;
    options.append("viewOn", viewOn.stringValue());
    if (pipeline.eoo()) {
        options.startArray("pipeline").end();
    } else {
        options.appendArray("pipeline", pipeline.objValue());
    }
    for (bson::BsonElement e : request.body) {
        std::string_view f = e.fieldName();
        if (f == "create" || f == "viewOn" || f == "pipeline" || isGenericArgument(f)) continue;
        if (f == "collation") {
            ASSIGN_OR_RETURN(query::CollatorPtr collator, query::Collator::fromArgument(e));
            if (collator) options.appendObject("collation", collator->specObj());
            continue;
        }
        return Status(ErrorCodes::InvalidOptions,
                      "Invalid option " + std::string(f) +
                          ": only 'viewOn', 'pipeline' and 'collation' are allowed when "
                          "creating a view");
    }
    std::string ns = request.db + "." + name;
    storage::Engine& engine = *opCtx.service->engine;
    if (engine.getCollection(ns)) {
        return Status(ErrorCodes::NamespaceExists, "Collection " + ns + " already exists.");
    }
    exec::PipelineContext pctx;
    pctx.engine = &engine;
    pctx.host = opCtx.service->host;
    if (!pipeline.eoo()) {
        TRY_STATUS(exec::validatePipeline(pctx, ns, pipeline.objValue(), /*forView=*/true));
    }
    // The chain of views below must stay within the depth limit (20).
    std::string backing = request.db + "." + std::string(viewOn.stringValue());
    if (backing == ns) {
        return Status(ErrorCodes::GraphContainsCycle,
                      "View cycle detected: [" + ns + " => " + ns + "]");
    }
    ASSIGN_OR_RETURN(exec::ResolvedNamespace resolved, exec::resolveNamespace(engine, backing));
    (void)resolved;
    auto created = engine.createCollection(ns, options.obj());
    if (!created.isOK() && created.getStatus().is(ErrorCodes::NamespaceExists)) {
        return Status(ErrorCodes::NamespaceExists, "Collection " + ns + " already exists.");
    }
    return created.getStatus();
}

class CreateCommand : public Command {
  public:
    std::string_view name() const override { return "create"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder&) override {
        ASSIGN_OR_RETURN(std::string coll, collectionName(request.firstElement(), "create"));
        if (request.body.hasField("viewOn") || request.body.hasField("pipeline")) {
            if (opCtx.transaction) {
                return Status(ErrorCodes::OperationNotSupportedInTransaction,
                              "Cannot create a view in a multi-document transaction.");
            }
            return createView(opCtx, request, coll);
        }
        TRY_STATUS(checkCreateOptions(request.body));
        TRY_STATUS(checkValidationOptions(request.db, request.body["validator"],
                                          request.body["validationLevel"],
                                          request.body["validationAction"]));
        bson::BsonBuilder options;
        for (bson::BsonElement e : request.body) {
            std::string_view f = e.fieldName();
            if (f == "create" || isGenericArgument(f)) continue;
            if (f == "collation") {
                // Stored with every option resolved (as listCollections shows it); the simple
                // collation is the absence of a default.
                ASSIGN_OR_RETURN(query::CollatorPtr collator, query::Collator::fromArgument(e));
                if (collator) options.appendObject("collation", collator->specObj());
                continue;
            }
            options.appendElement(e);
        }
        std::string ns = request.db + "." + coll;
        if (opCtx.transaction) return createInTransaction(opCtx, ns, options.obj()).getStatus();
        auto created = opCtx.service->engine->createCollection(ns, options.obj());
        if (!created.isOK() && created.getStatus().is(ErrorCodes::NamespaceExists)) {
            return Status(ErrorCodes::NamespaceExists, "Collection " + ns + " already exists.");
        }
        return created.getStatus();
    }
};

class DropCommand : public Command {
  public:
    std::string_view name() const override { return "drop"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(std::string coll, collectionName(request.firstElement(), "drop"));
        std::string ns = request.db + "." + coll;
        storage::CollectionPtr info = opCtx.service->engine->getCollection(ns);
        // Since MongoDB 7.0, dropping a collection that does not exist succeeds.
        if (!info) return Status::OK();
        TRY_STATUS(opCtx.service->engine->dropCollection(ns));
        if (exec::isView(*info)) return Status::OK();  // a view has no indexes
        reply.appendInt32("nIndexesWas", static_cast<int32_t>(info->indexes.size()));
        reply.append("ns", ns);
        return Status::OK();
    }
};

bson::BsonObj collectionEntry(const storage::CollectionInfo& coll, bool nameOnly) {
    bson::BsonBuilder b;
    b.append("name", coll.name);
    if (exec::isView(coll)) {
        b.append("type", "view");
        if (nameOnly) return b.obj();
        b.appendObject("options", coll.options);
        b.startObject("info").appendBool("readOnly", true).end();
        return b.obj();
    }
    b.append("type", "collection");
    if (nameOnly) return b.obj();
    b.appendObject("options", coll.options);
    b.startObject("info").appendBool("readOnly", false);
    appendUuid(b, "uuid", coll.uuid);
    b.end();
    b.startObject("idIndex")
        .appendInt32("v", 2)
        .startObject("key")
        .appendInt32("_id", 1)
        .end()
        .append("name", "_id_")
        .end();
    return b.obj();
}

class ListCollectionsCommand : public Command {
  public:
    std::string_view name() const override { return "listCollections"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(bool nameOnly, boolArgument(request.body["nameOnly"], "listCollections"));
        bson::BsonElement filter = request.body["filter"];
        std::unique_ptr<query::Matcher> matcher;
        if (filter.isObject()) {
            ASSIGN_OR_RETURN(matcher, query::Matcher::parse(filter.objValue()));
        } else if (!filter.eoo() && !filter.isNull()) {
            return expectType(filter, bson::BsonType::Object, "listCollections");
        }
        std::vector<bson::BsonObj> batch;
        for (const storage::CollectionPtr& coll :
             opCtx.service->engine->listCollections(request.db)) {
            // The filter sees the full entry even when the reply is nameOnly.
            if (matcher && !matcher->matches(collectionEntry(*coll, false))) continue;
            batch.push_back(collectionEntry(*coll, nameOnly));
        }
        appendSingleBatchCursor(reply, request.db + ".$cmd.listCollections", batch);
        return Status::OK();
    }
};

class RenameCollectionCommand : public Command {
  public:
    std::string_view name() const override { return "renameCollection"; }
    bool adminOnly() const override { return true; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder&) override {
        bson::BsonElement from = request.firstElement();
        bson::BsonElement to = request.body["to"];
        if (from.type() != bson::BsonType::String || to.type() != bson::BsonType::String) {
            return Status(ErrorCodes::TypeMismatch,
                          "renameCollection needs string 'renameCollection' and 'to' namespaces");
        }
        ASSIGN_OR_RETURN(Namespace source, parseNamespace(from.stringValue()));
        ASSIGN_OR_RETURN(Namespace target, parseNamespace(to.stringValue()));
        ASSIGN_OR_RETURN(bool dropTarget,
                         boolArgument(request.body["dropTarget"], "renameCollection"));
        if (source.ns() == target.ns()) {
            return Status(ErrorCodes::IllegalOperation, "Can't rename a collection to itself");
        }
        storage::Engine& engine = *opCtx.service->engine;
        if (!engine.getCollection(source.ns())) {
            return Status(ErrorCodes::NamespaceNotFound,
                          "Source collection " + source.ns() + " does not exist");
        }
        if (!dropTarget && engine.getCollection(target.ns())) {
            return Status(ErrorCodes::NamespaceExists, "target namespace exists");
        }
        return engine.renameCollection(source.ns(), target.ns(), dropTarget);
    }
};

}  // namespace

void registerCollectionCommands(CommandRegistry& registry) {
    registry.add(std::make_unique<CreateCommand>());
    registry.add(std::make_unique<DropCommand>());
    registry.add(std::make_unique<ListCollectionsCommand>());
    registry.add(std::make_unique<RenameCollectionCommand>());
}

}  // namespace tessera::command
