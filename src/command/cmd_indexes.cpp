// Index DDL: createIndexes, listIndexes, dropIndexes.

#include <algorithm>
#include <array>

#include "command/generic_args.h"
#include "command/registry.h"
#include "command/reply_util.h"
#include "command/transaction_ddl.h"
#include "command/write_ops_util.h"
#include "query/collator.h"
#include "storage/engine.h"
#include "storage/index_keys.h"
#include "storage/transaction.h"

namespace tessera::command {
namespace {

// MongoDB's default index name: "a_1_b_-1".
std::string defaultIndexName(bson::BsonView keyPattern) {
    std::string name;
    for (bson::BsonElement e : keyPattern) {
        if (!name.empty()) name += "_";
        name += e.fieldName();
        name += "_";
        name += e.isNumber() ? std::to_string(e.numberLong()) : std::string(e.stringValue());
    }
    return name;
}

// A wildcard key ("$**", "a.$**") is refused until wildcard indexes exist: one accepted and
// listed but never used by a query was a bug. Other '$' path components are MongoDB's 67.
Status checkKeyPath(std::string_view path) {
    if (path == "$**" || path.ends_with(".$**")) {
        return Status(ErrorCodes::CannotCreateIndex,
                      "wildcard indexes ('" + std::string(path) +
                          "') are not supported by Tessera yet; index the fields queries use");
    }
    for (size_t start = 0; start <= path.size();) {
        size_t dot = path.find('.', start);
        std::string_view part =
            path.substr(start, dot == std::string_view::npos ? path.npos : dot - start);
        if (part.empty()) {
            return Status(
                ErrorCodes::CannotCreateIndex,
                "Index keys cannot contain an empty field name: '" + std::string(path) + "'");
        }
        if (part.front() == '$') {
            return Status(ErrorCodes::CannotCreateIndex,
                          "Index key contains an illegal field name: field name starts with "
                          "'$': '" +
                              std::string(path) + "'");
        }
        if (dot == std::string_view::npos) break;
        start = dot + 1;
    }
    return Status::OK();
}

Status validateKeyPattern(bson::BsonElement key) {
    if (!key.isObject()) {
        return Status(ErrorCodes::TypeMismatch, "The field 'key' must be an object");
    }
    if (key.objValue().isEmpty()) {
        return Status(ErrorCodes::CannotCreateIndex, "Index keys cannot be empty.");
    }
    for (bson::BsonElement e : key.objValue()) {
        if (e.fieldName().empty()) {
            return Status(ErrorCodes::CannotCreateIndex, "Index keys cannot be an empty field.");
        }
        TRY_STATUS(checkKeyPath(e.fieldName()));
        if (e.isNumber()) {
            if (e.numberDouble() == 0 || e.numberDouble() != e.numberDouble()) {
                return Status(
                    ErrorCodes::CannotCreateIndex,
                    "Values in the index key pattern can't be 0 or NaN: " + key.toString(false));
            }
            continue;
        }
        if (e.type() == bson::BsonType::String) {
            std::string_view type = e.stringValue();
            if (type == "hashed") continue;
            static constexpr std::array<std::string_view, 5> kKnown = {"text", "2d", "2dsphere",
                                                                       "2dsphere_bucket", "$**"};
            if (std::find(kKnown.begin(), kKnown.end(), type) == kKnown.end() &&
                e.fieldName().find("$**") == std::string_view::npos) {
                return Status(ErrorCodes::CannotCreateIndex,
                              "Unknown index plugin '" + std::string(type) + "'");
            }
            return Status(ErrorCodes::CannotCreateIndex,
                          "Index type '" + std::string(type) +
                              "' is not supported yet; use 1 (ascending), -1 (descending) or "
                              "\"hashed\"");
        }
        return Status(ErrorCodes::CannotCreateIndex,
                      "Values in v:2 index key pattern cannot be of type " +
                          std::string(typeName(e.type())) +
                          ". Only numbers > 0, numbers < 0, and strings are allowed.");
    }
    // At most one hashed field (31303).
    return storage::validateKeyPattern(key.objValue());
}

// Turns one element of `indexes` into a storage IndexSpec, refusing options Tessera does not
// honour yet instead of ignoring them.
// `defaultCollation`: the collection's default collation (resolved spec), empty for simple; an
// index without a `collation` option gets it, as in MongoDB.
StatusWith<storage::IndexSpec> parseIndexSpec(const bson::BsonElement& elt,
                                              bson::BsonView defaultCollation = {}) {
    if (!elt.isObject()) {
        return Status(ErrorCodes::TypeMismatch, "The elements of 'indexes' must be objects");
    }
    bson::BsonView spec = elt.objValue();
    TRY_STATUS(validateKeyPattern(spec["key"]));
    storage::IndexSpec out;
    out.keyPattern = spec["key"].objValue().copy();
    bson::BsonElement nameElt = spec["name"];
    if (nameElt.eoo()) {
        out.name = defaultIndexName(out.keyPattern);
    } else if (nameElt.type() != bson::BsonType::String || nameElt.stringValue().empty()) {
        return Status(ErrorCodes::TypeMismatch, "The index name must be a non-empty string");
    } else {
        out.name = std::string(nameElt.stringValue());
    }
    query::CollatorPtr collator;
    bool collationGiven = false;
    // Every option of an index specification MongoDB knows is either carried out here or
    // refused (tests/integration/node/options_audit.test.mjs lists them).
    static constexpr std::array<std::string_view, 3> kNotYet = {
        "partialFilterExpression", "expireAfterSeconds", "wildcardProjection"};
    for (bson::BsonElement e : spec) {
        std::string_view f = e.fieldName();
        // `background` and `ns` mean nothing since MongoDB 4.2/4.4 (every build is the same; the
        // namespace is the command's): accepted and dropped, as MongoDB does.
        if (f == "key" || f == "name" || f == "background" || f == "ns") continue;
        if (f == "v") {
            if (!e.isNumber() || e.numberDouble() != 2) {
                return Status(ErrorCodes::CannotCreateIndex,
                              "index version " + e.toString(false) +
                                  " is not supported: Tessera builds version 2 indexes");
            }
            continue;
        }
        if (f == "storageEngine") {
            if (!e.isObject() || !e.objValue().isEmpty()) {
                return Status(ErrorCodes::InvalidOptions,
                              "index option storageEngine configures an engine Tessera does not "
                              "have (its storage is RocksDB); only {} is accepted");
            }
            continue;
        }
        if (f == "hidden") {
            if (e.trueValue()) {
                return Status(ErrorCodes::NotImplemented, "hidden indexes are not supported yet");
            }
            continue;  // hidden: false is what every index is
        }
        if (f == "unique") {
            out.unique = e.trueValue();
        } else if (f == "sparse") {
            out.sparse = e.trueValue();
        } else if (f == "collation") {
            ASSIGN_OR_RETURN(collator, query::Collator::fromArgument(e, &collationGiven));
        } else if (std::find(kNotYet.begin(), kNotYet.end(), f) != kNotYet.end()) {
            return Status(ErrorCodes::NotImplemented,
                          "index option '" + std::string(f) + "' is not supported yet");
        } else {
            return Status(
                ErrorCodes::InvalidIndexSpecificationOption,
                "The field '" + std::string(f) +
                    "' is not valid for an index specification. Specification: " + spec.toJson());
        }
    }
    // Hashed indexes cannot be unique (16764).
    TRY_STATUS(storage::validateHashedIndexOptions(out.keyPattern, out.unique));
    if (out.name == "_id_" && !(out.keyPattern.nFields() == 1 && out.keyPattern.hasField("_id"))) {
        return Status(ErrorCodes::BadValue, "The index name '_id_' is reserved for the _id index");
    }
    bson::BsonBuilder canonical;
    canonical.appendInt32("v", 2);
    canonical.appendObject("key", out.keyPattern);
    canonical.append("name", out.name);
    if (out.unique) canonical.appendBool("unique", true);
    if (out.sparse) canonical.appendBool("sparse", true);
    if (!collationGiven && !defaultCollation.isEmpty()) {
        ASSIGN_OR_RETURN(collator, query::Collator::parse(defaultCollation));
    }
    // listIndexes shows the collation with every option resolved; simple is shown as nothing.
    if (collator) canonical.appendObject("collation", collator->specObj());
    out.spec = canonical.obj();
    return out;
}

class CreateIndexesCommand : public Command {
  public:
    std::string_view name() const override { return "createIndexes"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(std::string coll, collectionName(request.firstElement(), "createIndexes"));
        bson::BsonElement indexes = request.body["indexes"];
        if (!indexes.isArray()) {
            return Status(ErrorCodes::TypeMismatch, "The field 'indexes' must be an array");
        }
        std::string collNs = request.db + "." + coll;
        if (opCtx.transaction) TRY_STATUS(checkCreateInTransaction(opCtx, collNs));
        storage::CollectionPtr existing = lookupCollection(opCtx, collNs);
        bson::BsonView defaultCollation;
        if (existing && existing->options["collation"].isObject()) {
            defaultCollation = existing->options["collation"].objValue();
        }
        std::vector<storage::IndexSpec> specs;
        for (bson::BsonElement e : indexes.objValue()) {
            ASSIGN_OR_RETURN(storage::IndexSpec spec, parseIndexSpec(e, defaultCollation));
            specs.push_back(std::move(spec));
        }
        if (specs.empty()) {
            return Status(ErrorCodes::BadValue, "Must specify at least one index to create");
        }
        std::string ns = request.db + "." + coll;
        // On a shard, a unique index of a sharded collection is unique per shard only: refused
        // unless the shard key is its prefix (MongoDB's rule), until global unique indexes exist.
        ASSIGN_OR_RETURN(auto ownership, opCtx.ownershipFilter(ns));
        if (ownership) {
            for (const storage::IndexSpec& spec : specs) {
                if (spec.unique && !ownership->isUniqueIndexCompatible(spec.keyPattern)) {
                    return Status(ErrorCodes::CannotCreateIndex,
                                  "cannot create unique index over " + spec.keyPattern.toJson() +
                                      " with shard key pattern " +
                                      ownership->shardKeyPattern().toJson() +
                                      ": uniqueness can be maintained only when the shard key "
                                      "is a prefix of the index (global unique indexes are not "
                                      "supported yet)");
                }
            }
        }
        storage::Engine& engine = *opCtx.service->engine;
        bool created = false;
        if (opCtx.transaction) {
            // MongoDB 4.4+: on a collection the transaction creates (here, or before) while it
            // is empty; on any other only indexes that exist already (transaction_ddl.h).
            ASSIGN_OR_RETURN(storage::CollectionPtr target, getWritableCollection(opCtx, ns));
            if (!target) {
                ASSIGN_OR_RETURN(target, createInTransaction(opCtx, ns, bson::BsonView()));
                created = true;
            }
            ASSIGN_OR_RETURN(auto result,
                             opCtx.transaction->createIndexes(target, std::move(specs)));
            appendCreateIndexesReply(reply, result, created);
            return Status::OK();
        }
        ASSIGN_OR_RETURN(storage::CollectionPtr target, getWritableCollection(engine, ns));
        if (!target) {
            auto made = engine.createCollection(ns, bson::BsonObj());
            if (!made.isOK() && !made.getStatus().is(ErrorCodes::NamespaceExists)) {
                return made.getStatus();
            }
            created = made.isOK();
        }
        ASSIGN_OR_RETURN(auto result, engine.createIndexes(ns, std::move(specs)));
        appendCreateIndexesReply(reply, result, created);
        return Status::OK();
    }

  private:
    static void appendCreateIndexesReply(bson::BsonBuilder& reply,
                                         const storage::Engine::CreateIndexesResult& result,
                                         bool created) {
        reply.appendInt32("numIndexesBefore", result.numIndexesBefore);
        reply.appendInt32("numIndexesAfter", result.numIndexesAfter);
        if (result.numIndexesAfter == result.numIndexesBefore) {
            reply.append("note", "all indexes already exist");
        }
        reply.appendBool("createdCollectionAutomatically", created);
    }
};

class ListIndexesCommand : public Command {
  public:
    std::string_view name() const override { return "listIndexes"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(std::string coll, collectionName(request.firstElement(), "listIndexes"));
        std::string ns = request.db + "." + coll;
        storage::CollectionPtr info = opCtx.service->engine->getCollection(ns);
        if (!info) return Status(ErrorCodes::NamespaceNotFound, "ns does not exist: " + ns);
        std::vector<bson::BsonObj> batch;
        for (const storage::IndexSpec& index : info->indexes) batch.push_back(index.spec);
        appendSingleBatchCursor(reply, request.db + ".$cmd.listIndexes." + coll, batch);
        return Status::OK();
    }
};

class DropIndexesCommand : public Command {
  public:
    std::string_view name() const override { return "dropIndexes"; }
    std::vector<std::string_view> aliases() const override { return {"deleteIndexes"}; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(std::string coll, collectionName(request.firstElement(), "dropIndexes"));
        std::string ns = request.db + "." + coll;
        storage::Engine& engine = *opCtx.service->engine;
        ASSIGN_OR_RETURN(storage::CollectionPtr info, getWritableCollection(engine, ns));
        if (!info) return Status(ErrorCodes::NamespaceNotFound, "ns not found " + ns);
        bson::BsonElement index = request.body["index"];
        std::vector<std::string> names;
        if (index.type() == bson::BsonType::String && index.stringValue() == "*") {
            for (const auto& spec : info->indexes) {
                if (!spec.isIdIndex()) names.push_back(spec.name);
            }
        } else if (index.type() == bson::BsonType::String) {
            names.emplace_back(index.stringValue());
        } else if (index.isObject()) {
            const storage::IndexSpec* spec = info->findIndexByKeyPattern(index.objValue());
            if (!spec) {
                return Status(ErrorCodes::IndexNotFound,
                              "can't find index with key: " + index.objValue().toJson());
            }
            names.push_back(spec->name);
        } else if (index.isArray()) {
            for (bson::BsonElement e : index.objValue()) {
                if (e.type() != bson::BsonType::String) {
                    return Status(ErrorCodes::TypeMismatch, "index names must be strings");
                }
                names.emplace_back(e.stringValue());
            }
        } else {
            return Status(ErrorCodes::TypeMismatch,
                          "The 'index' field must be a string, an object or an array of strings");
        }
        for (const std::string& n : names) {
            if (n == "_id_") return Status(ErrorCodes::InvalidOptions, "cannot drop _id index");
            if (!info->findIndex(n)) {
                return Status(ErrorCodes::IndexNotFound, "index not found with name [" + n + "]");
            }
        }
        for (const std::string& n : names) TRY_STATUS(engine.dropIndex(ns, n));
        reply.appendInt32("nIndexesWas", static_cast<int32_t>(info->indexes.size()));
        return Status::OK();
    }
};

}  // namespace

void registerIndexCommands(CommandRegistry& registry) {
    registry.add(std::make_unique<CreateIndexesCommand>());
    registry.add(std::make_unique<ListIndexesCommand>());
    registry.add(std::make_unique<DropIndexesCommand>());
}

}  // namespace tessera::command
