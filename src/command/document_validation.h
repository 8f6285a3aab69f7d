#pragma once

#include <memory>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "query/matcher.h"

namespace tessera::storage {
struct CollectionInfo;
}

namespace tessera::command {

// Document validation (MongoDB's `validator`, `validationLevel`, `validationAction` collection
// options, set by create and collMod).
enum class ValidationLevel { kOff, kStrict, kModerate };
enum class ValidationAction { kError, kWarn };

class DocumentValidator {
  public:
    // The validator of a collection's stored options, or nullptr when writes need no check (no
    // validator, an empty one, or validationLevel "off"). Errors only if the stored options are
    // invalid (they are checked by checkValidationOptions before being stored).
    static StatusWith<std::shared_ptr<const DocumentValidator>> fromCollectionOptions(
        bson::BsonView options);

    // The validator for writes to `coll`: nullptr when `bypass` (bypassDocumentValidation) or
    // nothing to check.
    static StatusWith<std::shared_ptr<const DocumentValidator>> forWrites(
        const storage::CollectionInfo& coll, bool bypass);

    // OK when `doc` may be written; else DocumentValidationFailure (121) "Document failed
    // validation" and `*extraInfo` = {errInfo: {failingDocumentId, details: {operatorName, ...}}}.
    // `before` is the document an update replaces (nullptr for inserts and upserts): under
    // validationLevel "moderate" an update of a document that did not satisfy the validator
    // is not checked. With validationAction "warn" a failing document is logged and allowed.
    Status validate(bson::BsonView doc, const bson::BsonView* before,
                    bson::BsonObj* extraInfo) const;

    // MongoDB's error details for a document failing the validator:
    // {operatorName: "$jsonSchema", schemaRulesNotSatisfied: [...]} for a $jsonSchema validator,
    // {operatorName: "$gt", specifiedAs: {x: {$gt: 5}}, reason: "comparison failed",
    // consideredValue: 1} for one clause, {operatorName: "$and", clausesNotSatisfied: [{index,
    // details}]} for several.
    bson::BsonObj explain(bson::BsonView doc) const;

    ValidationLevel level() const { return _level; }
    ValidationAction action() const { return _action; }

  private:
    bson::BsonObj _validator;
    std::unique_ptr<query::Matcher> _matcher;
    ValidationLevel _level = ValidationLevel::kStrict;
    ValidationAction _action = ValidationAction::kError;
};

// Checks the validation options of create/collMod (each may be eoo): `validator` must be an
// object (TypeMismatch 14) and a valid filter ($jsonSchema included; parse errors as the
// matcher's, $where/$text/geo not allowed); `validationLevel` one of "off", "strict",
// "moderate" and `validationAction` one of "error", "warn" (BadValue 2). Validators are not
// allowed in the admin, local and config databases (InvalidOptions 72).
Status checkValidationOptions(std::string_view db, const bson::BsonElement& validator,
                              const bson::BsonElement& level, const bson::BsonElement& action);

}  // namespace tessera::command
