#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "bson/bson_builder.h"
#include "bson/bson_obj.h"
#include "query/match_expression.h"

namespace tessera::query {

// MongoDB's `$jsonSchema` (draft 4 subset plus `bsonType`), as used by query filters and
// collection validators.
//
// Keywords: bsonType, type, required, properties, additionalProperties, patternProperties,
// minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength, pattern, enum,
// items (schema or array of schemas), additionalItems, minItems, maxItems, uniqueItems,
// minProperties, maxProperties, allOf, anyOf, oneOf, not, dependencies; description and title
// are ignored. Type-specific keywords constrain only values of their type (minimum ignores
// strings, ...), as JSON Schema says. No implicit array traversal.
//
// Parse errors: wrong keyword value type → TypeMismatch (14); invalid values (empty `required`,
// negative `minLength`, `exclusiveMinimum` without `minimum`, both `type` and `bsonType`, ...)
// → FailedToParse (9); unknown keyword → FailedToParse "Unknown $jsonSchema keyword: foo";
// JSON Schema keywords MongoDB does not implement ($ref, $schema, default, definitions, format,
// id) → FailedToParse "$jsonSchema keyword '$ref' is not currently supported"; type "integer" →
// BadValue.
class JsonSchema {
  public:
    struct Node;

    // Parses `schema` (copied).
    static StatusWith<std::shared_ptr<const JsonSchema>> parse(bson::BsonView schema);
    ~JsonSchema();

    // Whether the document satisfies the schema.
    bool matches(bson::BsonView doc) const;

    // Why `doc` fails: MongoDB's error details
    //   {operatorName: "$jsonSchema", schemaRulesNotSatisfied: [{operatorName: "properties",
    //    propertiesNotSatisfied: [{propertyName, details: [{operatorName: "bsonType",
    //    specifiedAs: {bsonType: "string"}, reason: "type did not match", consideredValue,
    //    consideredType}]}]}, {operatorName: "required", specifiedAs: {...},
    //    missingProperties: [...]}, ...]}
    // (schemaRulesNotSatisfied is empty when the document matches).
    bson::BsonObj explainFailure(bson::BsonView doc) const;

    const bson::BsonObj& schema() const { return _schema; }

  private:
    JsonSchema() = default;
    bson::BsonObj _schema;
    std::unique_ptr<Node> _root;
};

// The match expression of `{$jsonSchema: <schema>}` in a filter (parses the schema). Its
// matchType() is kAnd with no children, so planners see no indexable predicate in it.
StatusWith<std::unique_ptr<MatchExpression>> makeJsonSchemaMatchExpression(
    const bson::BsonElement& schema);

// The JsonSchema of a match expression made by makeJsonSchemaMatchExpression, else nullptr.
const JsonSchema* asJsonSchema(const MatchExpression* expr);

}  // namespace tessera::query
