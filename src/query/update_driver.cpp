#include "query/update_driver.h"

#include <chrono>
#include <set>

#include "bson/bson_builder.h"
#include "bson/compare.h"
#include "bson/validate.h"
#include "query/expression_pipeline_update.h"
#include "query/path.h"
#include "query/update_document.h"
#include "query/update_node.h"
#include "query/update_operators.h"
#include "query/update_predicate.h"

namespace tessera::query {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using bson::BsonView;

namespace {

// MongoDB's limit on the result of an update (uassert 17419).
constexpr int kResultTooLargeCode = 17419;

// fieldchecker::isUpdatable plus the positional rules of UpdateObjectNode::parseAndMerge.
// Records array filter identifiers in `used`.
Status checkUpdatePath(std::string_view path, const std::vector<std::string>& parts,
                       const ArrayFilters& filters, std::set<std::string>* used, bool* positional) {
    if (path.empty()) {
        return Status(ErrorCodes::EmptyFieldName, "An empty update path is not valid.");
    }
    for (const auto& p : parts) {
        if (p.empty()) {
            return Status(ErrorCodes::EmptyFieldName,
                          "The update path '" + std::string(path) +
                              "' contains an empty field name, which is not allowed.");
        }
    }
    size_t positionalCount = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
        const std::string& p = parts[i];
        std::string id;
        if (p == "$") {
            ++positionalCount;
            if (i == 0) {
                return Status(ErrorCodes::BadValue,
                              "Cannot have positional (i.e. '$') element in the first position "
                              "in path '" +
                                  std::string(path) + "'");
            }
        } else if (isArrayFilterPart(p, &id)) {
            if (i == 0) {
                return Status(ErrorCodes::BadValue,
                              "Cannot have array filter identifier (i.e. '$[<id>]') element in "
                              "the first position in path '" +
                                  std::string(path) + "'");
            }
            if (!id.empty()) {
                if (!filters.has(id)) {
                    return Status(ErrorCodes::BadValue, "No array filter found for identifier '" +
                                                            id + "' in path '" + std::string(path) +
                                                            "'");
                }
                used->insert(id);
            }
        }
    }
    if (positionalCount > 1) {
        return Status(
            ErrorCodes::BadValue,
            "Too many positional (i.e. '$') elements found in path '" + std::string(path) + "'");
    }
    *positional = positionalCount > 0;
    return Status::OK();
}

bool isDynamic(const std::vector<std::string>& parts) {
    for (const auto& p : parts)
        if (p == "$" || isArrayFilterPart(p)) return true;
    return false;
}

bool isPrefixPath(const std::vector<std::string>& a, const std::vector<std::string>& b) {
    if (a.size() > b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i] != b[i]) return false;
    return true;
}

Status parseRename(UpdateObjectNode* root, const BsonElement& e, const ArrayFilters& filters,
                   std::set<std::string>* used) {
    std::string from(e.fieldName());
    if (e.type() != BsonType::String) {
        return Status(ErrorCodes::BadValue,
                      "The 'to' field for $rename must be a string: " + mongoElementString(e));
    }
    std::string to(e.stringValue());
    if (from == to) {
        return Status(
            ErrorCodes::BadValue,
            "The source and target field for $rename must differ: " + mongoElementString(e));
    }
    std::vector<std::string> fromParts = splitDottedPath(from);
    std::vector<std::string> toParts = splitDottedPath(to);
    bool positional = false;
    TRY_STATUS(checkUpdatePath(from, fromParts, filters, used, &positional));
    TRY_STATUS(checkUpdatePath(to, toParts, filters, used, &positional));
    if (isPrefixPath(fromParts, toParts) || isPrefixPath(toParts, fromParts)) {
        return Status(ErrorCodes::BadValue,
                      "The source and target field for $rename must not be on the same path: " +
                          mongoElementString(e));
    }
    if (isDynamic(fromParts)) {
        return Status(ErrorCodes::BadValue,
                      "The source field for $rename may not be dynamic: " + from);
    }
    if (isDynamic(toParts)) {
        return Status(ErrorCodes::BadValue,
                      "The destination field for $rename may not be dynamic: " + to);
    }
    TRY_STATUS(addUpdateLeaf(root, fromParts, from, makeConflictPlaceholder()));
    return addUpdateLeaf(root, toParts, to, makeRenameNode(from, to));
}

int64_t systemMillis() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Puts `_id` first, generating an ObjectId when there is none (what mongod stores on upsert).
BsonObj withIdFirst(BsonView doc) {
    BsonElement id = doc.getField("_id");
    if (!id.eoo() && doc.firstElement().fieldName() == "_id") return doc.copy();
    BsonBuilder b;
    if (id.eoo()) {
        b.appendOid("_id", bson::ObjectId::generate());
    } else {
        b.appendElement(id);
    }
    for (BsonElement e : doc)
        if (e.fieldName() != "_id") b.appendElement(e);
    return b.obj();
}

bool sameBytes(const BsonElement& a, const BsonElement& b) {
    return a.type() == b.type() && a.valueSize() == b.valueSize() &&
           std::memcmp(a.value(), b.value(), a.valueSize()) == 0;
}

}  // namespace

UpdateDriver::UpdateDriver() = default;
UpdateDriver::UpdateDriver(UpdateDriver&&) noexcept = default;
UpdateDriver& UpdateDriver::operator=(UpdateDriver&&) noexcept = default;
UpdateDriver::~UpdateDriver() = default;

StatusWith<UpdateDriver> UpdateDriver::parse(BsonView update, BsonView arrayFilters) {
    UpdateDriver driver;
    ASSIGN_OR_RETURN(driver._arrayFilters, ArrayFilters::parse(arrayFilters));

    bool replacement = update.isEmpty() || !update.firstElement().fieldName().starts_with("$");
    if (replacement) {
        if (!arrayFilters.isEmpty()) {
            return Status(ErrorCodes::FailedToParse,
                          "arrayFilters may not be specified for replacement-style updates");
        }
        for (BsonElement e : update) {
            if (e.fieldName().starts_with("$")) {
                return Status(ErrorCodes::DollarPrefixedFieldName,
                              "The dollar ($) prefixed field '" + std::string(e.fieldName()) +
                                  "' in '" + std::string(e.fieldName()) +
                                  "' is not allowed in the context of an update's replacement "
                                  "document. Consider using an aggregation pipeline with "
                                  "$replaceWith.");
            }
        }
        driver._kind = Kind::kReplacement;
        driver._replacement = update.copy();
        return driver;
    }

    driver._kind = Kind::kOperators;
    driver._root = std::make_unique<UpdateObjectNode>();
    std::set<std::string> used;
    for (BsonElement op : update) {
        ModifierType type;
        if (!modifierFromName(op.fieldName(), &type)) {
            return Status(ErrorCodes::FailedToParse,
                          "Unknown modifier: " + std::string(op.fieldName()) +
                              ". Expected a valid update modifier or pipeline-style update "
                              "specified as an array");
        }
        if (!op.isObject()) {
            return Status(ErrorCodes::FailedToParse,
                          "Modifiers operate on fields but we found type " +
                              std::string(bson::typeName(op.type())) +
                              " instead. For example: {$mod: {<field>: ...}} not {" +
                              mongoElementString(op) + "}");
        }
        for (BsonElement field : op.objValue()) {
            if (type == ModifierType::kRename) {
                TRY_STATUS(parseRename(driver._root.get(), field, *driver._arrayFilters, &used));
                continue;
            }
            std::string path(field.fieldName());
            std::vector<std::string> parts = splitDottedPath(path);
            bool positional = false;
            TRY_STATUS(checkUpdatePath(path, parts, *driver._arrayFilters, &used, &positional));
            driver._positional = driver._positional || positional;
            ASSIGN_OR_RETURN(auto leaf, makeModifierNode(type, field));
            TRY_STATUS(addUpdateLeaf(driver._root.get(), parts, path, std::move(leaf)));
        }
    }
    for (const auto& id : driver._arrayFilters->identifiers()) {
        if (!used.count(id)) {
            return Status(ErrorCodes::FailedToParse, "The array filter for identifier '" + id +
                                                         "' was not used in the update " +
                                                         mongoDocString(update));
        }
    }
    return driver;
}

StatusWith<UpdateDriver> UpdateDriver::parse(const BsonElement& u, BsonView arrayFilters,
                                             std::shared_ptr<const Variables> let) {
    if (u.isArray()) {
        if (!arrayFilters.isEmpty()) {
            return Status(ErrorCodes::FailedToParse,
                          "arrayFilters may not be specified for pipeline-style updates");
        }
        return parsePipeline(u.objValue(), std::move(let));
    }
    if (!u.isObject()) {
        return Status(ErrorCodes::FailedToParse,
                      "Update argument must be either an object or an array");
    }
    return parse(u.objValue(), arrayFilters);
}

StatusWith<UpdateDriver> UpdateDriver::parsePipeline(BsonView pipeline,
                                                     std::shared_ptr<const Variables> let) {
    UpdateDriver driver;
    ASSIGN_OR_RETURN(driver._arrayFilters, ArrayFilters::parse(BsonView()));
    driver._kind = Kind::kPipeline;
    ASSIGN_OR_RETURN(driver._pipeline, UpdatePipeline::parse(pipeline, std::move(let)));
    return driver;
}

Status UpdateDriver::applyPipeline(BsonView doc, BsonObj* out) const {
    BsonObj result;
    TRY_STATUS(_pipeline->apply(doc, &result));
    BsonElement originalId = doc.getField("_id");
    if (!originalId.eoo()) {
        BsonElement newId = result.getField("_id");
        if (newId.eoo() || !sameBytes(newId, originalId)) {
            return Status(ErrorCodes::ImmutableField,
                          "After applying the update, the (immutable) field '_id' was found to "
                          "have been altered to " +
                              mongoElementString(newId));
        }
    }
    if (result.size() > bson::kMaxUserDocumentSize) {
        return Status(kResultTooLargeCode, "Resulting document after update is larger than " +
                                               std::to_string(bson::kMaxUserDocumentSize));
    }
    // Since MongoDB 5.0 a pipeline may produce top-level `$`-prefixed fields ($setField).
    TRY_STATUS(validateStorableDocument(result, /*allowTopLevelDollar=*/true));
    *out = std::move(result);
    return Status::OK();
}

Status UpdateDriver::apply(BsonView doc, const ApplyContext& ctx, BsonObj* out,
                           bool* modified) const {
    BsonObj result;
    if (_kind == Kind::kReplacement) {
        TRY_STATUS(applyReplacement(doc, &result));
    } else if (_kind == Kind::kPipeline) {
        TRY_STATUS(applyPipeline(doc, &result));
    } else {
        TRY_STATUS(applyOperators(doc, ctx, ctx.isUpsertInsert, &result));
    }
    *modified = !result.binaryEqual(doc);
    *out = std::move(result);
    return Status::OK();
}

Status UpdateDriver::applyOperators(BsonView doc, const ApplyContext& ctx, bool insert,
                                    BsonObj* out) const {
    MutableDocument mdoc(doc);
    UpdateApplyState state;
    state.doc = &mdoc;
    state.ctx = &ctx;
    state.arrayFilters = _arrayFilters.get();
    state.insert = insert;
    state.originalHolder = doc.copy();
    state.originalId = state.originalHolder.getField("_id");
    state.nowMillis = ctx.nowMillis ? ctx.nowMillis() : systemMillis();
    if (ctx.nowTimestamp) {
        state.nowTimestamp = ctx.nowTimestamp();
    } else {
        state.nowTimestamp = (static_cast<uint64_t>(state.nowMillis / 1000) << 32) | 1u;
    }

    UpdateTarget target;
    target.element = &mdoc.root();
    TRY_STATUS(applyUpdateNodes({_root.get()}, state, target));
    BsonObj result = mdoc.toBson();
    if (result.size() > bson::kMaxUserDocumentSize) {
        return Status(kResultTooLargeCode, "Resulting document after update is larger than " +
                                               std::to_string(bson::kMaxUserDocumentSize));
    }
    if (!state.originalId.eoo()) {
        BsonElement newId = result.getField("_id");
        if (newId.eoo() || !sameBytes(newId, state.originalId)) {
            return Status(ErrorCodes::ImmutableField,
                          "Performing an update on the path '_id' would modify the immutable "
                          "field '_id'");
        }
    }
    TRY_STATUS(validateStorableDocument(result, /*allowTopLevelDollar=*/true));
    *out = std::move(result);
    return Status::OK();
}

Status UpdateDriver::applyReplacement(BsonView doc, BsonObj* out) const {
    BsonElement originalId = doc.getField("_id");
    BsonElement newId = _replacement.getField("_id");
    BsonObj result;
    if (!originalId.eoo() && newId.eoo()) {
        BsonBuilder b;
        b.appendElement(originalId);
        b.appendElements(_replacement);
        result = b.obj();
    } else {
        if (!originalId.eoo() && (bson::canonicalTypeOrder(originalId.type()) !=
                                      bson::canonicalTypeOrder(newId.type()) ||
                                  bson::compareElementValues(originalId, newId) != 0)) {
            return Status(ErrorCodes::ImmutableField,
                          "After applying the update, the (immutable) field '_id' was found to "
                          "have been altered to " +
                              mongoElementString(newId));
        }
        result = _replacement;
    }
    TRY_STATUS(validateStorableDocument(result));
    *out = std::move(result);
    return Status::OK();
}

Status UpdateDriver::applyForUpsert(BsonView seedFromQuery, BsonObj* out,
                                    const ApplyContext& ctx) const {
    BsonObj result;
    if (_kind == Kind::kReplacement) {
        BsonElement seedId = seedFromQuery.getField("_id");
        if (!_replacement.hasField("_id") && !seedId.eoo()) {
            BsonBuilder b;
            b.appendElement(seedId);
            b.appendElements(_replacement);
            result = b.obj();
        } else {
            result = _replacement;
        }
    } else if (_kind == Kind::kPipeline) {
        TRY_STATUS(_pipeline->apply(seedFromQuery, &result));
    } else {
        ApplyContext insertCtx = ctx;
        insertCtx.isUpsertInsert = true;
        TRY_STATUS(applyOperators(seedFromQuery, insertCtx, true, &result));
    }
    result = withIdFirst(result);
    TRY_STATUS(validateStorableDocument(result, /*allowTopLevelDollar=*/_kind == Kind::kPipeline));
    *out = std::move(result);
    return Status::OK();
}

BsonObj UpdateDriver::seedFromEqualities(
    const std::vector<std::pair<std::string, BsonElement>>& eqs) {
    MutableDocument mdoc(BsonObj{});
    for (const auto& [path, value] : eqs) {
        std::vector<std::string> parts = splitDottedPath(path);
        MutableNode* node = &mdoc.root();
        bool ok = true;
        for (size_t i = 0; i + 1 < parts.size() && ok; ++i) {
            MutableNode* child = node->findChild(parts[i]);
            if (!child) {
                BsonElement empty = mdoc.makeValue(
                    [](BsonBuilder& b, std::string_view name) { b.appendObject(name, BsonObj{}); });
                child = node->appendChild(parts[i], empty);
            }
            if (!child->isObject()) ok = false;
            node = child;
        }
        if (!ok || node->findChild(parts.back())) continue;
        node->appendChild(parts.back(), mdoc.copyValue(value));
    }
    return mdoc.toBson();
}

Status validateStorableDocument(BsonView doc, bool allowTopLevelDollar) {
    if (doc.size() > bson::kMaxUserDocumentSize) {
        return Status(ErrorCodes::BSONObjectTooLarge,
                      "object to insert too large. size in bytes: " + std::to_string(doc.size()) +
                          ", max size: " + std::to_string(bson::kMaxUserDocumentSize));
    }
    if (bson::documentDepth(doc.data()) > bson::kMaxStoredDepth) {
        return Status(ErrorCodes::Overflow, "Document exceeds maximum nesting depth of " +
                                                std::to_string(bson::kMaxStoredDepth));
    }
    for (BsonElement e : doc) {
        std::string_view name = e.fieldName();
        if (name == "_id") {
            BsonType t = e.type();
            if (t == BsonType::Array || t == BsonType::Regex || t == BsonType::Undefined) {
                return Status(ErrorCodes::InvalidIdField, "The '_id' value cannot be of type " +
                                                              std::string(bson::typeName(t)));
            }
            if (t == BsonType::Object) {
                for (BsonElement f : e.objValue()) {
                    if (f.fieldName().starts_with("$")) {
                        return Status(ErrorCodes::DollarPrefixedFieldName,
                                      "_id fields may not contain '$'-prefixed fields: " +
                                          std::string(f.fieldName()) +
                                          " is not valid for storage.");
                    }
                }
            }
        } else if (!allowTopLevelDollar && name.starts_with("$")) {
            return Status(ErrorCodes::DollarPrefixedFieldName,
                          "The dollar ($) prefixed field '" + std::string(name) + "' in '" +
                              std::string(name) + "' is not valid for storage.");
        }
    }
    return Status::OK();
}

}  // namespace tessera::query
