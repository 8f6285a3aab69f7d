// $jsonSchema: parser and validator (src/mongo/db/matcher/schema/json_schema_parser.cpp).
#include "query/json_schema.h"

#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <vector>

#include "bson/compare.h"
#include "query/matcher.h"

namespace tessera::query {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonType;
using bson::BsonView;

namespace {

Status typeMismatch(std::string_view keyword, std::string_view what) {
    return Status(ErrorCodes::TypeMismatch, "$jsonSchema keyword '" + std::string(keyword) +
                                                "' must be " + std::string(what));
}

Status failedToParse(std::string msg) { return Status(ErrorCodes::FailedToParse, std::move(msg)); }

// A set of BSON types; `number` covers int, long, double and decimal.
struct TypeSet {
    std::set<int> types;
    bool number = false;
    bool contains(BsonType t) const {
        if (number && (t == BsonType::Int32 || t == BsonType::Int64 || t == BsonType::Double ||
                       t == BsonType::Decimal128)) {
            return true;
        }
        return types.count(static_cast<int>(t)) > 0;
    }
};

bool isNumberType(BsonType t) {
    return t == BsonType::Int32 || t == BsonType::Int64 || t == BsonType::Double ||
           t == BsonType::Decimal128;
}

// Number of Unicode code points of a UTF-8 string.
size_t codePoints(std::string_view s) {
    size_t n = 0;
    for (unsigned char c : s) {
        if ((c & 0xC0) != 0x80) ++n;
    }
    return n;
}

StatusWith<int64_t> nonNegativeInteger(const BsonElement& e, std::string_view keyword) {
    if (!e.isNumber()) return typeMismatch(keyword, "a number");
    double d = e.numberDouble();
    if (std::isnan(d) || d != std::trunc(d)) {
        return failedToParse("$jsonSchema keyword '" + std::string(keyword) +
                             "' must be a representable as a long integer");
    }
    if (d < 0) {
        return failedToParse("$jsonSchema keyword '" + std::string(keyword) +
                             "' must be a non-negative integer");
    }
    return e.numberLong();
}

}  // namespace

struct JsonSchema::Node {
    // Keyword elements (views into the root's schema copy), for specifiedAs in error details.
    BsonElement typeElem;  // type or bsonType
    std::optional<TypeSet> types;
    BsonElement requiredElem;
    std::vector<std::string> required;
    BsonElement propertiesElem;
    std::vector<std::pair<std::string, std::unique_ptr<Node>>> properties;
    BsonElement additionalPropertiesElem;
    std::optional<bool> additionalPropertiesAllowed;  // boolean form
    std::unique_ptr<Node> additionalPropertiesSchema;
    std::vector<std::pair<std::shared_ptr<const CompiledRegex>, std::unique_ptr<Node>>>
        patternProperties;
    BsonElement minimum, maximum;
    bool exclusiveMinimum = false, exclusiveMaximum = false;
    std::optional<int64_t> minLength, maxLength;
    BsonElement patternElem;
    std::shared_ptr<const CompiledRegex> pattern;
    BsonElement enumElem;
    std::unique_ptr<Node> itemsSchema;
    BsonElement itemsElem;
    std::vector<std::unique_ptr<Node>> itemsArray;
    std::optional<bool> additionalItemsAllowed;
    std::unique_ptr<Node> additionalItemsSchema;
    std::optional<int64_t> minItems, maxItems;
    bool uniqueItems = false;
    std::optional<int64_t> minProperties, maxProperties;
    std::vector<std::unique_ptr<Node>> allOf, anyOf, oneOf;
    std::unique_ptr<Node> notSchema;
    std::vector<std::pair<std::string, std::vector<std::string>>> propertyDependencies;
    std::vector<std::pair<std::string, std::unique_ptr<Node>>> schemaDependencies;
    BsonElement self;  // the whole keyword element set (for error details)
};

namespace {

using Node = JsonSchema::Node;

StatusWith<std::unique_ptr<Node>> parseNode(BsonView schema, bool topLevel);

StatusWith<TypeSet> parseTypes(const BsonElement& e, bool bsonType) {
    std::string_view kw = bsonType ? "bsonType" : "type";
    TypeSet out;
    auto addOne = [&](const BsonElement& v) -> Status {
        if (v.type() != BsonType::String) {
            return typeMismatch(kw, "either a string or an array of strings");
        }
        std::string_view name = v.stringValue();
        if (bsonType) {
            if (name == "number") {
                out.number = true;
                return Status::OK();
            }
            BsonType t;
            if (!typeFromAlias(name, &t)) {
                return Status(ErrorCodes::BadValue,
                              "Unknown type name alias: " + std::string(name));
            }
            out.types.insert(static_cast<int>(t));
            return Status::OK();
        }
        if (name == "integer") {
            return Status(ErrorCodes::BadValue,
                          "$jsonSchema type 'integer' is not currently supported.");
        }
        static const std::pair<std::string_view, BsonType> kJsonTypes[] = {
            {"object", BsonType::Object},
            {"array", BsonType::Array},
            {"boolean", BsonType::Bool},
            {"string", BsonType::String},
            {"null", BsonType::Null}};
        if (name == "number") {
            out.number = true;
            return Status::OK();
        }
        for (auto& [n, t] : kJsonTypes) {
            if (n == name) {
                out.types.insert(static_cast<int>(t));
                return Status::OK();
            }
        }
        return Status(ErrorCodes::BadValue, "Unknown type name alias: " + std::string(name));
    };
    if (e.isArray()) {
        std::set<std::string> seen;
        for (BsonElement v : e.objValue()) {
            TRY_STATUS(addOne(v));
            if (!seen.insert(std::string(v.stringValue())).second) {
                return failedToParse("$jsonSchema keyword '" + std::string(kw) +
                                     "' has duplicate value: " + std::string(v.stringValue()));
            }
        }
        if (seen.empty()) {
            return failedToParse("$jsonSchema keyword '" + std::string(kw) +
                                 "' must name at least one type");
        }
    } else {
        TRY_STATUS(addOne(e));
    }
    return out;
}

StatusWith<std::vector<std::unique_ptr<Node>>> parseSchemaArray(const BsonElement& e,
                                                                std::string_view kw) {
    if (!e.isArray()) return typeMismatch(kw, "an array");
    std::vector<std::unique_ptr<Node>> out;
    for (BsonElement s : e.objValue()) {
        if (!s.isObject()) return typeMismatch(kw, "an array of objects");
        ASSIGN_OR_RETURN(auto node, parseNode(s.objValue(), false));
        out.push_back(std::move(node));
    }
    if (out.empty()) {
        return failedToParse("$jsonSchema keyword '" + std::string(kw) +
                             "' must be a non-empty array");
    }
    return out;
}

StatusWith<std::vector<std::string>> parseStringArray(const BsonElement& e, std::string_view kw,
                                                      bool allowEmpty) {
    if (!e.isArray()) return typeMismatch(kw, "an array");
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (BsonElement s : e.objValue()) {
        if (s.type() != BsonType::String) return typeMismatch(kw, "an array of strings");
        if (!seen.insert(std::string(s.stringValue())).second) {
            return failedToParse("$jsonSchema keyword '" + std::string(kw) +
                                 "' array cannot contain duplicate values");
        }
        out.emplace_back(s.stringValue());
    }
    if (out.empty() && !allowEmpty) {
        return failedToParse("$jsonSchema keyword '" + std::string(kw) +
                             "' cannot be an empty array");
    }
    return out;
}

StatusWith<std::unique_ptr<Node>> parseNode(BsonView schema, bool topLevel) {
    auto node = std::make_unique<Node>();
    BsonElement typeElem, bsonTypeElem, exclMin, exclMax, additionalItems;
    for (BsonElement e : schema) {
        std::string_view kw = e.fieldName();
        if (kw == "type") {
            typeElem = e;
        } else if (kw == "bsonType") {
            bsonTypeElem = e;
        } else if (kw == "required") {
            node->requiredElem = e;
            ASSIGN_OR_RETURN(node->required, parseStringArray(e, kw, false));
        } else if (kw == "properties") {
            if (!e.isObject()) return typeMismatch(kw, "an object");
            node->propertiesElem = e;
            for (BsonElement p : e.objValue()) {
                if (!p.isObject()) {
                    return typeMismatch("properties", "an object whose values are objects");
                }
                ASSIGN_OR_RETURN(auto sub, parseNode(p.objValue(), false));
                node->properties.emplace_back(std::string(p.fieldName()), std::move(sub));
            }
        } else if (kw == "additionalProperties") {
            node->additionalPropertiesElem = e;
            if (e.type() == BsonType::Bool) {
                node->additionalPropertiesAllowed = e.boolValue();
            } else if (e.isObject()) {
                ASSIGN_OR_RETURN(node->additionalPropertiesSchema, parseNode(e.objValue(), false));
            } else {
                return typeMismatch(kw, "either an object or a boolean");
            }
        } else if (kw == "patternProperties") {
            if (!e.isObject()) return typeMismatch(kw, "an object");
            for (BsonElement p : e.objValue()) {
                if (!p.isObject()) {
                    return typeMismatch(kw, "an object whose values are objects");
                }
                ASSIGN_OR_RETURN(auto re, CompiledRegex::compile(p.fieldName(), ""));
                ASSIGN_OR_RETURN(auto sub, parseNode(p.objValue(), false));
                node->patternProperties.emplace_back(std::move(re), std::move(sub));
            }
        } else if (kw == "minimum" || kw == "maximum") {
            if (!e.isNumber()) return typeMismatch(kw, "a number");
            (kw == "minimum" ? node->minimum : node->maximum) = e;
        } else if (kw == "exclusiveMinimum" || kw == "exclusiveMaximum") {
            if (e.type() != BsonType::Bool) return typeMismatch(kw, "a boolean");
            (kw == "exclusiveMinimum" ? exclMin : exclMax) = e;
        } else if (kw == "minLength" || kw == "maxLength") {
            ASSIGN_OR_RETURN(int64_t v, nonNegativeInteger(e, kw));
            (kw == "minLength" ? node->minLength : node->maxLength) = v;
        } else if (kw == "pattern") {
            if (e.type() != BsonType::String) return typeMismatch(kw, "a string");
            node->patternElem = e;
            ASSIGN_OR_RETURN(node->pattern, CompiledRegex::compile(e.stringValue(), ""));
        } else if (kw == "enum") {
            if (!e.isArray()) return typeMismatch(kw, "an array");
            std::vector<BsonElement> values;
            for (BsonElement v : e.objValue()) {
                for (const BsonElement& prev : values) {
                    if (bson::compareElementValues(prev, v) == 0) {
                        return failedToParse(
                            "$jsonSchema keyword 'enum' array cannot contain duplicate values");
                    }
                }
                values.push_back(v);
            }
            if (values.empty()) {
                return failedToParse("$jsonSchema keyword 'enum' cannot be an empty array");
            }
            node->enumElem = e;
        } else if (kw == "items") {
            node->itemsElem = e;
            if (e.isObject()) {
                ASSIGN_OR_RETURN(node->itemsSchema, parseNode(e.objValue(), false));
            } else if (e.isArray()) {
                for (BsonElement s : e.objValue()) {
                    if (!s.isObject()) {
                        return typeMismatch(kw, "an object or an array of objects");
                    }
                    ASSIGN_OR_RETURN(auto sub, parseNode(s.objValue(), false));
                    node->itemsArray.push_back(std::move(sub));
                }
            } else {
                return typeMismatch(kw, "an array or an object");
            }
        } else if (kw == "additionalItems") {
            additionalItems = e;
            if (e.type() == BsonType::Bool) {
                node->additionalItemsAllowed = e.boolValue();
            } else if (e.isObject()) {
                ASSIGN_OR_RETURN(node->additionalItemsSchema, parseNode(e.objValue(), false));
            } else {
                return typeMismatch(kw, "either an object or a boolean");
            }
        } else if (kw == "minItems" || kw == "maxItems") {
            ASSIGN_OR_RETURN(int64_t v, nonNegativeInteger(e, kw));
            (kw == "minItems" ? node->minItems : node->maxItems) = v;
        } else if (kw == "uniqueItems") {
            if (e.type() != BsonType::Bool) return typeMismatch(kw, "a boolean");
            node->uniqueItems = e.boolValue();
        } else if (kw == "minProperties" || kw == "maxProperties") {
            ASSIGN_OR_RETURN(int64_t v, nonNegativeInteger(e, kw));
            (kw == "minProperties" ? node->minProperties : node->maxProperties) = v;
        } else if (kw == "allOf") {
            ASSIGN_OR_RETURN(node->allOf, parseSchemaArray(e, kw));
        } else if (kw == "anyOf") {
            ASSIGN_OR_RETURN(node->anyOf, parseSchemaArray(e, kw));
        } else if (kw == "oneOf") {
            ASSIGN_OR_RETURN(node->oneOf, parseSchemaArray(e, kw));
        } else if (kw == "not") {
            if (!e.isObject()) return typeMismatch(kw, "an object");
            ASSIGN_OR_RETURN(node->notSchema, parseNode(e.objValue(), false));
        } else if (kw == "dependencies") {
            if (!e.isObject()) return typeMismatch(kw, "an object");
            for (BsonElement d : e.objValue()) {
                if (d.isObject()) {
                    ASSIGN_OR_RETURN(auto sub, parseNode(d.objValue(), false));
                    node->schemaDependencies.emplace_back(std::string(d.fieldName()),
                                                          std::move(sub));
                } else if (d.isArray()) {
                    ASSIGN_OR_RETURN(auto names, parseStringArray(d, "dependencies", false));
                    node->propertyDependencies.emplace_back(std::string(d.fieldName()),
                                                            std::move(names));
                } else {
                    return typeMismatch("dependencies",
                                        "an object whose values are objects or "
                                        "arrays of strings");
                }
            }
        } else if (kw == "description" || kw == "title") {
            if (e.type() != BsonType::String) return typeMismatch(kw, "a string");
        } else if (kw == "$ref" || kw == "$schema" || kw == "default" || kw == "definitions" ||
                   kw == "format" || kw == "id") {
            return failedToParse("$jsonSchema keyword '" + std::string(kw) +
                                 "' is not currently supported");
        } else {
            return failedToParse("Unknown $jsonSchema keyword: " + std::string(kw));
        }
    }
    if (typeElem && bsonTypeElem) {
        return failedToParse("Cannot specify both $jsonSchema keywords 'type' and 'bsonType'");
    }
    if (typeElem || bsonTypeElem) {
        node->typeElem = typeElem ? typeElem : bsonTypeElem;
        ASSIGN_OR_RETURN(TypeSet t, parseTypes(node->typeElem, !typeElem));
        if (topLevel && !t.contains(BsonType::Object)) {
            return failedToParse("$jsonSchema keyword '" + std::string(node->typeElem.fieldName()) +
                                 "' must include 'object' at the top level");
        }
        node->types = std::move(t);
    }
    if (exclMin) {
        if (!node->minimum) {
            return failedToParse(
                "$jsonSchema keyword 'minimum' must be a present if exclusiveMinimum is present");
        }
        node->exclusiveMinimum = exclMin.boolValue();
    }
    if (exclMax) {
        if (!node->maximum) {
            return failedToParse(
                "$jsonSchema keyword 'maximum' must be a present if exclusiveMaximum is present");
        }
        node->exclusiveMaximum = exclMax.boolValue();
    }
    if (additionalItems && !node->itemsElem) {
        // Without `items`, additionalItems has no effect (JSON Schema draft 4).
        node->additionalItemsAllowed.reset();
        node->additionalItemsSchema.reset();
    }
    return node;
}

// A value being validated: an element, or the top-level document.
struct Value {
    BsonElement elem;  // eoo for the top-level document
    BsonView obj;      // the object/array value (document at top level)
    BsonType type() const { return elem ? elem.type() : BsonType::Object; }
};

Value valueOf(const BsonElement& e) {
    Value v{e, {}};
    if (e.isObject() || e.isArray()) v.obj = e.objValue();
    return v;
}

void appendConsidered(BsonBuilder& b, const Value& v, bool withType) {
    if (v.elem) {
        b.appendElementAs(v.elem, "consideredValue");
    } else {
        b.append("consideredValue", v.obj);
    }
    if (withType) b.append("consideredType", bson::typeName(v.type()));
}

bson::BsonObj specified(const BsonElement& e) {
    BsonBuilder b;
    b.appendElement(e);
    return b.obj();
}

// Collects error details for failing keywords when `out` is set; returns whether `v` satisfies
// `node`. Without `out` it stops at the first failure.
bool check(const Node& node, const Value& v, BsonArrayBuilder* out);

// Details of a sub-schema failure, as an array.
bson::BsonObj subDetails(const Node& node, const Value& v) {
    BsonArrayBuilder arr;
    check(node, v, &arr);
    return arr.arr();
}

bool checkObject(const Node& node, const Value& v, BsonArrayBuilder* out) {
    bool ok = true;
    BsonView obj = v.obj;
    auto fail = [&]() {
        ok = false;
        return out != nullptr;  // keep going only when explaining
    };
    if (!node.required.empty()) {
        std::vector<std::string> missing;
        for (const std::string& r : node.required) {
            if (!obj.hasField(r)) missing.push_back(r);
        }
        if (!missing.empty()) {
            if (!fail()) return false;
            BsonBuilder d;
            d.append("operatorName", "required");
            d.append("specifiedAs", specified(node.requiredElem));
            BsonArrayBuilder m;
            for (auto& s : missing) m.append(s);
            d.appendArray("missingProperties", m.arr());
            out->append(d.obj());
        }
    }
    if (node.minProperties || node.maxProperties) {
        auto n = static_cast<int64_t>(obj.nFields());
        auto report = [&](std::string_view kw, int64_t limit) {
            BsonBuilder d;
            d.append("operatorName", kw);
            d.startObject("specifiedAs").appendNumber(kw, limit).end();
            d.append("reason", "specified number of properties was not satisfied");
            d.appendNumber("numberOfProperties", n);
            out->append(d.obj());
        };
        if (node.minProperties && n < *node.minProperties) {
            if (!fail()) return false;
            report("minProperties", *node.minProperties);
        }
        if (node.maxProperties && n > *node.maxProperties) {
            if (!fail()) return false;
            report("maxProperties", *node.maxProperties);
        }
    }
    if (!node.properties.empty()) {
        BsonArrayBuilder notSatisfied;
        for (const auto& [name, sub] : node.properties) {
            BsonElement f = obj[name];
            if (!f) continue;
            if (check(*sub, valueOf(f), nullptr)) continue;
            if (!fail()) return false;
            BsonBuilder p;
            p.append("propertyName", name);
            p.appendArray("details", subDetails(*sub, valueOf(f)));
            notSatisfied.append(p.obj());
        }
        if (out && notSatisfied.count() > 0) {
            BsonBuilder d;
            d.append("operatorName", "properties");
            d.appendArray("propertiesNotSatisfied", notSatisfied.arr());
            out->append(d.obj());
        }
    }
    bool hasAdditional =
        node.additionalPropertiesAllowed.has_value() || node.additionalPropertiesSchema != nullptr;
    if (!node.patternProperties.empty() || hasAdditional) {
        BsonArrayBuilder extra;       // additionalProperties: false
        BsonArrayBuilder patternBad;  // patternProperties failures
        BsonArrayBuilder extraBad;    // additionalProperties schema failures
        for (BsonElement f : obj) {
            std::string_view name = f.fieldName();
            bool declared = false;
            for (const auto& [pname, sub] : node.properties) {
                if (pname == name) declared = true;
            }
            for (const auto& [re, sub] : node.patternProperties) {
                if (!re->matches(name)) continue;
                declared = true;
                if (check(*sub, valueOf(f), nullptr)) continue;
                if (!fail()) return false;
                BsonBuilder p;
                p.append("propertyName", name);
                p.append("regexMatched", re->pattern());
                p.appendArray("details", subDetails(*sub, valueOf(f)));
                patternBad.append(p.obj());
            }
            if (declared) continue;
            if (node.additionalPropertiesAllowed == false) {
                if (!fail()) return false;
                extra.append(std::string(name));
            } else if (node.additionalPropertiesSchema &&
                       !check(*node.additionalPropertiesSchema, valueOf(f), nullptr)) {
                if (!fail()) return false;
                BsonBuilder p;
                p.append("propertyName", name);
                p.appendArray("details", subDetails(*node.additionalPropertiesSchema, valueOf(f)));
                extraBad.append(p.obj());
            }
        }
        if (out && patternBad.count() > 0) {
            BsonBuilder d;
            d.append("operatorName", "patternProperties");
            d.appendArray("details", patternBad.arr());
            out->append(d.obj());
        }
        if (out && extra.count() > 0) {
            BsonBuilder d;
            d.append("operatorName", "additionalProperties");
            d.append("specifiedAs", specified(node.additionalPropertiesElem));
            d.appendArray("additionalProperties", extra.arr());
            out->append(d.obj());
        }
        if (out && extraBad.count() > 0) {
            BsonBuilder d;
            d.append("operatorName", "additionalProperties");
            d.appendArray("details", extraBad.arr());
            out->append(d.obj());
        }
    }
    for (const auto& [name, deps] : node.propertyDependencies) {
        if (!obj.hasField(name)) continue;
        BsonArrayBuilder missing;
        for (const std::string& d : deps) {
            if (!obj.hasField(d)) missing.append(d);
        }
        if (missing.count() == 0) continue;
        if (!fail()) return false;
        BsonBuilder d;
        d.append("operatorName", "dependencies");
        d.append("failingDependency", name);
        d.appendArray("missingProperties", missing.arr());
        out->append(d.obj());
    }
    for (const auto& [name, sub] : node.schemaDependencies) {
        if (!obj.hasField(name)) continue;
        if (check(*sub, v, nullptr)) continue;
        if (!fail()) return false;
        BsonBuilder d;
        d.append("operatorName", "dependencies");
        d.append("failingDependency", name);
        d.appendArray("details", subDetails(*sub, v));
        out->append(d.obj());
    }
    return ok;
}

bool checkArray(const Node& node, const Value& v, BsonArrayBuilder* out) {
    bool ok = true;
    auto fail = [&]() {
        ok = false;
        return out != nullptr;
    };
    std::vector<BsonElement> items;
    for (BsonElement e : v.obj) items.push_back(e);
    auto n = static_cast<int64_t>(items.size());
    auto reportCount = [&](std::string_view kw, int64_t limit) {
        BsonBuilder d;
        d.append("operatorName", kw);
        d.startObject("specifiedAs").appendNumber(kw, limit).end();
        d.append("reason", "array did not match specified length");
        appendConsidered(d, v, false);
        out->append(d.obj());
    };
    if (node.minItems && n < *node.minItems) {
        if (!fail()) return false;
        reportCount("minItems", *node.minItems);
    }
    if (node.maxItems && n > *node.maxItems) {
        if (!fail()) return false;
        reportCount("maxItems", *node.maxItems);
    }
    if (node.uniqueItems) {
        std::optional<BsonElement> dup;
        for (size_t i = 0; i < items.size() && !dup; ++i) {
            for (size_t j = i + 1; j < items.size(); ++j) {
                if (bson::compareElementValues(items[i], items[j]) == 0) {
                    dup = items[j];
                    break;
                }
            }
        }
        if (dup) {
            if (!fail()) return false;
            BsonBuilder d;
            d.append("operatorName", "uniqueItems");
            d.startObject("specifiedAs").append("uniqueItems", true).end();
            d.append("reason", "found a duplicate item");
            appendConsidered(d, v, false);
            d.appendElementAs(*dup, "duplicatedValue");
            out->append(d.obj());
        }
    }
    auto itemFailure = [&](std::string_view kw, size_t index, const Node& sub) {
        BsonBuilder d;
        d.append("operatorName", kw);
        d.append("reason", "At least one item did not match the sub-schema");
        d.appendNumber("itemIndex", static_cast<int64_t>(index));
        d.appendArray("details", subDetails(sub, valueOf(items[index])));
        out->append(d.obj());
    };
    if (node.itemsSchema) {
        for (size_t i = 0; i < items.size(); ++i) {
            if (check(*node.itemsSchema, valueOf(items[i]), nullptr)) continue;
            if (!fail()) return false;
            itemFailure("items", i, *node.itemsSchema);
            break;
        }
    } else if (node.itemsElem) {
        for (size_t i = 0; i < items.size() && i < node.itemsArray.size(); ++i) {
            if (check(*node.itemsArray[i], valueOf(items[i]), nullptr)) continue;
            if (!fail()) return false;
            itemFailure("items", i, *node.itemsArray[i]);
            break;
        }
        for (size_t i = node.itemsArray.size(); i < items.size(); ++i) {
            if (node.additionalItemsAllowed == false) {
                if (!fail()) return false;
                BsonBuilder d;
                d.append("operatorName", "additionalItems");
                d.startObject("specifiedAs").append("additionalItems", false).end();
                d.append("reason", "found additional items");
                appendConsidered(d, v, false);
                out->append(d.obj());
                break;
            }
            if (node.additionalItemsSchema &&
                !check(*node.additionalItemsSchema, valueOf(items[i]), nullptr)) {
                if (!fail()) return false;
                itemFailure("additionalItems", i, *node.additionalItemsSchema);
                break;
            }
        }
    }
    return ok;
}

bool check(const Node& node, const Value& v, BsonArrayBuilder* out) {
    bool ok = true;
    auto fail = [&]() {
        ok = false;
        return out != nullptr;
    };
    BsonType t = v.type();
    if (node.types && !node.types->contains(t)) {
        if (!fail()) return false;
        BsonBuilder d;
        d.append("operatorName", node.typeElem.fieldName());
        d.append("specifiedAs", specified(node.typeElem));
        d.append("reason", "type did not match");
        appendConsidered(d, v, true);
        out->append(d.obj());
    }
    if (isNumberType(t)) {
        auto bound = [&](const BsonElement& limit, bool isMin, bool exclusive) {
            if (!limit) return;
            int c = bson::compareElementValues(v.elem, limit);
            bool good = isMin ? (exclusive ? c > 0 : c >= 0) : (exclusive ? c < 0 : c <= 0);
            // NaN is below every number in BSON order, so it fails a minimum and passes a maximum.
            if (good) return;
            if (!fail()) return;
            BsonBuilder d;
            d.append("operatorName", limit.fieldName());
            BsonBuilder spec;
            spec.appendElement(limit);
            if (exclusive) spec.append(isMin ? "exclusiveMinimum" : "exclusiveMaximum", true);
            d.append("specifiedAs", spec.obj());
            d.append("reason", "comparison failed");
            appendConsidered(d, v, false);
            out->append(d.obj());
        };
        bound(node.minimum, true, node.exclusiveMinimum);
        if (!ok && !out) return false;
        bound(node.maximum, false, node.exclusiveMaximum);
        if (!ok && !out) return false;
    }
    if (t == BsonType::String) {
        auto len = static_cast<int64_t>(codePoints(v.elem.stringValue()));
        auto reportLen = [&](std::string_view kw, int64_t limit) {
            BsonBuilder d;
            d.append("operatorName", kw);
            d.startObject("specifiedAs").appendNumber(kw, limit).end();
            d.append("reason", "specified string length was not satisfied");
            appendConsidered(d, v, false);
            out->append(d.obj());
        };
        if (node.minLength && len < *node.minLength) {
            if (!fail()) return false;
            reportLen("minLength", *node.minLength);
        }
        if (node.maxLength && len > *node.maxLength) {
            if (!fail()) return false;
            reportLen("maxLength", *node.maxLength);
        }
        if (node.pattern && !node.pattern->matches(v.elem.stringValue())) {
            if (!fail()) return false;
            BsonBuilder d;
            d.append("operatorName", "pattern");
            d.append("specifiedAs", specified(node.patternElem));
            d.append("reason", "regular expression did not match");
            appendConsidered(d, v, false);
            out->append(d.obj());
        }
    }
    if (node.enumElem) {
        bool found = false;
        for (BsonElement e : node.enumElem.objValue()) {
            if (v.elem) {
                if (bson::compareElementValues(v.elem, e) == 0) found = true;
            } else if (e.isObject() && bson::compareObjects(e.objValue(), v.obj) == 0) {
                found = true;
            }
            if (found) break;
        }
        if (!found) {
            if (!fail()) return false;
            BsonBuilder d;
            d.append("operatorName", "enum");
            d.append("specifiedAs", specified(node.enumElem));
            d.append("reason", "value was not found in enum");
            appendConsidered(d, v, false);
            out->append(d.obj());
        }
    }
    if (t == BsonType::Object) {
        if (!checkObject(node, v, out)) {
            ok = false;
            if (!out) return false;
        }
    }
    if (t == BsonType::Array) {
        if (!checkArray(node, v, out)) {
            ok = false;
            if (!out) return false;
        }
    }
    if (!node.allOf.empty()) {
        BsonArrayBuilder bad;
        for (size_t i = 0; i < node.allOf.size(); ++i) {
            if (check(*node.allOf[i], v, nullptr)) continue;
            if (!fail()) return false;
            BsonBuilder s;
            s.appendNumber("index", static_cast<int64_t>(i));
            s.appendArray("details", subDetails(*node.allOf[i], v));
            bad.append(s.obj());
        }
        if (out && bad.count() > 0) {
            BsonBuilder d;
            d.append("operatorName", "allOf");
            d.appendArray("schemasNotSatisfied", bad.arr());
            out->append(d.obj());
        }
    }
    if (!node.anyOf.empty()) {
        bool any = false;
        for (const auto& s : node.anyOf) {
            if (check(*s, v, nullptr)) {
                any = true;
                break;
            }
        }
        if (!any) {
            if (!fail()) return false;
            BsonArrayBuilder bad;
            for (size_t i = 0; i < node.anyOf.size(); ++i) {
                BsonBuilder s;
                s.appendNumber("index", static_cast<int64_t>(i));
                s.appendArray("details", subDetails(*node.anyOf[i], v));
                bad.append(s.obj());
            }
            BsonBuilder d;
            d.append("operatorName", "anyOf");
            d.appendArray("schemasNotSatisfied", bad.arr());
            out->append(d.obj());
        }
    }
    if (!node.oneOf.empty()) {
        std::vector<int64_t> matched;
        for (size_t i = 0; i < node.oneOf.size(); ++i) {
            if (check(*node.oneOf[i], v, nullptr)) matched.push_back(static_cast<int64_t>(i));
        }
        if (matched.size() != 1) {
            if (!fail()) return false;
            BsonBuilder d;
            d.append("operatorName", "oneOf");
            if (matched.empty()) {
                BsonArrayBuilder bad;
                for (size_t i = 0; i < node.oneOf.size(); ++i) {
                    BsonBuilder s;
                    s.appendNumber("index", static_cast<int64_t>(i));
                    s.appendArray("details", subDetails(*node.oneOf[i], v));
                    bad.append(s.obj());
                }
                d.appendArray("schemasNotSatisfied", bad.arr());
            } else {
                d.append("reason", "more than one subschema matched");
                BsonArrayBuilder idx;
                for (int64_t i : matched) idx.append(i);
                d.appendArray("matchingSchemaIndexes", idx.arr());
            }
            out->append(d.obj());
        }
    }
    if (node.notSchema && check(*node.notSchema, v, nullptr)) {
        if (!fail()) return false;
        BsonBuilder d;
        d.append("operatorName", "not");
        d.append("reason", "child expression matched");
        out->append(d.obj());
    }
    return ok;
}

// {$jsonSchema: ...} in a filter.
class JsonSchemaMatchExpression final : public LogicalMatchExpression {
  public:
    explicit JsonSchemaMatchExpression(std::shared_ptr<const JsonSchema> schema)
        : LogicalMatchExpression(MatchType::kAnd), _schema(std::move(schema)) {}
    bool matches(bson::BsonView doc, MatchDetails*) const override { return _schema->matches(doc); }
    bool matchesSingleElement(const bson::BsonElement& e, MatchDetails*) const override {
        return e.isObject() && _schema->matches(e.objValue());
    }
    const JsonSchema* schema() const { return _schema.get(); }

  private:
    std::shared_ptr<const JsonSchema> _schema;
};

}  // namespace

JsonSchema::~JsonSchema() = default;

StatusWith<std::shared_ptr<const JsonSchema>> JsonSchema::parse(bson::BsonView schema) {
    std::shared_ptr<JsonSchema> out(new JsonSchema());
    out->_schema = schema.copy();
    ASSIGN_OR_RETURN(out->_root, parseNode(out->_schema, true));
    return std::shared_ptr<const JsonSchema>(std::move(out));
}

bool JsonSchema::matches(bson::BsonView doc) const {
    return check(*_root, Value{BsonElement(), doc}, nullptr);
}

bson::BsonObj JsonSchema::explainFailure(bson::BsonView doc) const {
    BsonArrayBuilder rules;
    check(*_root, Value{BsonElement(), doc}, &rules);
    BsonBuilder b;
    b.append("operatorName", "$jsonSchema");
    b.appendArray("schemaRulesNotSatisfied", rules.arr());
    return b.obj();
}

StatusWith<std::unique_ptr<MatchExpression>> makeJsonSchemaMatchExpression(
    const bson::BsonElement& schema) {
    if (!schema.isObject()) {
        return Status(ErrorCodes::TypeMismatch, "$jsonSchema must be an object");
    }
    ASSIGN_OR_RETURN(auto parsed, JsonSchema::parse(schema.objValue()));
    return std::unique_ptr<MatchExpression>(
        std::make_unique<JsonSchemaMatchExpression>(std::move(parsed)));
}

const JsonSchema* asJsonSchema(const MatchExpression* expr) {
    auto* js = dynamic_cast<const JsonSchemaMatchExpression*>(expr);
    return js ? js->schema() : nullptr;
}

}  // namespace tessera::query
