#include "command/document_validation.h"

#include "base/log.h"
#include "bson/bson_builder.h"
#include "query/json_schema.h"
#include "storage/catalog_types.h"

namespace tessera::command {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonType;
using bson::BsonView;

namespace {

StatusWith<ValidationLevel> parseLevel(const BsonElement& e) {
    if (!e) return ValidationLevel::kStrict;
    if (e.type() != BsonType::String) {
        return Status(ErrorCodes::TypeMismatch, "BSON field 'validationLevel' is the wrong type '" +
                                                    std::string(bson::typeName(e.type())) +
                                                    "', expected type 'string'");
    }
    std::string_view v = e.stringValue();
    if (v == "off") return ValidationLevel::kOff;
    if (v == "strict") return ValidationLevel::kStrict;
    if (v == "moderate") return ValidationLevel::kModerate;
    return Status(ErrorCodes::BadValue, "Enumeration value '" + std::string(v) +
                                            "' for field 'validationLevel' is not a valid value.");
}

StatusWith<ValidationAction> parseAction(const BsonElement& e) {
    if (!e) return ValidationAction::kError;
    if (e.type() != BsonType::String) {
        return Status(ErrorCodes::TypeMismatch,
                      "BSON field 'validationAction' is the wrong type '" +
                          std::string(bson::typeName(e.type())) + "', expected type 'string'");
    }
    std::string_view v = e.stringValue();
    if (v == "error") return ValidationAction::kError;
    if (v == "warn") return ValidationAction::kWarn;
    return Status(ErrorCodes::BadValue, "Enumeration value '" + std::string(v) +
                                            "' for field 'validationAction' is not a valid value.");
}

// The value at a dotted path (first element reached; arrays are not traversed).
BsonElement valueAt(BsonView doc, std::string_view path) {
    BsonView current = doc;
    while (true) {
        size_t dot = path.find('.');
        BsonElement e = current[path.substr(0, dot)];
        if (dot == std::string_view::npos || !e) return e;
        if (!e.isObject()) return BsonElement();
        current = e.objValue();
        path = path.substr(dot + 1);
    }
}

// Details for one failing top-level clause {name: value} of a query validator.
bson::BsonObj clauseDetails(BsonView doc, const BsonElement& clause) {
    std::string_view name = clause.fieldName();
    if (name == "$jsonSchema" && clause.isObject()) {
        auto schema = query::JsonSchema::parse(clause.objValue());
        if (schema.isOK()) return schema.getValue()->explainFailure(doc);
    }
    BsonBuilder b;
    if (!name.empty() && name[0] == '$') {
        b.append("operatorName", name);
        b.startObject("specifiedAs").appendElement(clause).end();
        b.append("reason", "expression did not match");
        return b.obj();
    }
    std::string op = "$eq";
    if (clause.isObject() && !clause.objValue().isEmpty()) {
        std::string_view first = clause.objValue().firstElement().fieldName();
        if (!first.empty() && first[0] == '$') op = std::string(first);
    }
    b.append("operatorName", op);
    b.startObject("specifiedAs").appendElement(clause).end();
    BsonElement v = valueAt(doc, name);
    if (!v) {
        b.append("reason", "field was missing");
    } else {
        b.append("reason",
                 op == "$exists" || op == "$type" ? "type did not match" : "comparison failed");
        b.appendElementAs(v, "consideredValue");
    }
    return b.obj();
}

}  // namespace

StatusWith<std::shared_ptr<const DocumentValidator>> DocumentValidator::fromCollectionOptions(
    bson::BsonView options) {
    BsonElement validator = options["validator"];
    ASSIGN_OR_RETURN(ValidationLevel level, parseLevel(options["validationLevel"]));
    ASSIGN_OR_RETURN(ValidationAction action, parseAction(options["validationAction"]));
    if (!validator.isObject() || validator.objValue().isEmpty() || level == ValidationLevel::kOff) {
        return std::shared_ptr<const DocumentValidator>();
    }
    auto out = std::make_shared<DocumentValidator>();
    out->_validator = validator.objValue().copy();
    ASSIGN_OR_RETURN(out->_matcher, query::Matcher::parse(out->_validator));
    out->_level = level;
    out->_action = action;
    return std::shared_ptr<const DocumentValidator>(std::move(out));
}

StatusWith<std::shared_ptr<const DocumentValidator>> DocumentValidator::forWrites(
    const storage::CollectionInfo& coll, bool bypass) {
    if (bypass) return std::shared_ptr<const DocumentValidator>();
    return fromCollectionOptions(coll.options);
}

Status DocumentValidator::validate(bson::BsonView doc, const bson::BsonView* before,
                                   bson::BsonObj* extraInfo) const {
    if (_matcher->matches(doc)) return Status::OK();
    if (before && _level == ValidationLevel::kModerate && !_matcher->matches(*before)) {
        return Status::OK();
    }
    BsonBuilder info;
    BsonElement id = doc["_id"];
    if (id) info.appendElementAs(id, "failingDocumentId");
    info.append("details", explain(doc));
    bson::BsonObj errInfo = info.obj();
    if (_action == ValidationAction::kWarn) {
        log::warning("STORAGE", 20294, "Document would fail validation",
                     "{\"errInfo\":" + errInfo.toJson() + "}");
        return Status::OK();
    }
    if (extraInfo) {
        BsonBuilder b;
        b.append("errInfo", errInfo);
        *extraInfo = b.obj();
    }
    return Status(ErrorCodes::DocumentValidationFailure, "Document failed validation");
}

bson::BsonObj DocumentValidator::explain(bson::BsonView doc) const {
    std::vector<std::pair<size_t, BsonElement>> failing;
    size_t index = 0, clauses = 0;
    for (BsonElement clause : _validator) {
        ++clauses;
        BsonBuilder single;
        single.appendElement(clause);
        auto m = query::Matcher::parse(single.obj());
        if (m.isOK() && !m.getValue()->matches(doc)) failing.emplace_back(index, clause);
        ++index;
    }
    if (clauses == 1 && failing.size() == 1) return clauseDetails(doc, failing.front().second);
    BsonBuilder b;
    b.append("operatorName", "$and");
    BsonArrayBuilder arr;
    for (auto& [i, clause] : failing) {
        BsonBuilder c;
        c.appendNumber("index", static_cast<int64_t>(i));
        c.append("details", clauseDetails(doc, clause));
        arr.append(c.obj());
    }
    b.appendArray("clausesNotSatisfied", arr.arr());
    return b.obj();
}

Status checkValidationOptions(std::string_view db, const bson::BsonElement& validator,
                              const bson::BsonElement& level, const bson::BsonElement& action) {
    TRY_STATUS(parseLevel(level).getStatus());
    TRY_STATUS(parseAction(action).getStatus());
    if (!validator) return Status::OK();
    if (!validator.isObject()) {
        return Status(ErrorCodes::TypeMismatch, "BSON field 'validator' is the wrong type '" +
                                                    std::string(bson::typeName(validator.type())) +
                                                    "', expected type 'object'");
    }
    if (!validator.objValue().isEmpty() && (db == "admin" || db == "local" || db == "config")) {
        return Status(ErrorCodes::InvalidOptions,
                      "Document validators not allowed on system collection " + std::string(db));
    }
    return query::Matcher::parse(validator.objValue()).getStatus();
}

}  // namespace tessera::command
