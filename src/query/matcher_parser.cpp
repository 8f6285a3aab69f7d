// The filter parser: BSON filter -> MatchExpression tree, with MongoDB's error codes and messages
// (src/mongo/db/matcher/expression_parser.cpp).
#include <cmath>
#include <set>

#include "query/expression_match.h"
#include "query/json_schema.h"
#include "query/matcher.h"

namespace tessera::query {

using bson::BsonElement;
using bson::BsonType;
using bson::BsonView;

namespace {

using ExprPtr = std::unique_ptr<MatchExpression>;
using StatusWithExpr = StatusWith<ExprPtr>;

Status badValue(std::string msg) { return Status(ErrorCodes::BadValue, std::move(msg)); }

// {$ref, $id} documents are values (DBRefs), not operator documents.
bool isDBRefDocument(BsonView obj, bool allowIncomplete) {
    bool hasRef = false, hasId = false, hasDb = false;
    for (BsonElement e : obj) {
        auto n = e.fieldName();
        if (n == "$ref") hasRef = true;
        if (n == "$id") hasId = true;
        if (n == "$db") hasDb = true;
    }
    return allowIncomplete ? (hasRef || hasId || hasDb) : (hasRef && hasId);
}

// {$gt: 5} is an operator document; {a: 5}, {} and DBRefs are values.
bool isExpressionDocument(const BsonElement& e, bool allowIncompleteDBRef) {
    if (!e.isObject()) return false;
    BsonView o = e.objValue();
    if (o.isEmpty()) return false;
    auto name = o.firstElement().fieldName();
    if (name.empty() || name[0] != '$') return false;
    return !isDBRefDocument(o, allowIncompleteDBRef);
}

bool isTopLevelOperator(std::string_view name) {
    static const std::set<std::string_view> kOps = {
        "$and",  "$or",         "$nor",        "$comment",     "$expr",      "$where",
        "$text", "$jsonSchema", "$alwaysTrue", "$alwaysFalse", "$sampleRate"};
    return kOps.count(name) > 0;
}

bool isGeoOperator(std::string_view name) {
    static const std::set<std::string_view> kOps = {
        "$near",          "$nearSphere",   "$geoNear",     "$geoWithin",   "$within",
        "$geoIntersects", "$geometry",     "$maxDistance", "$minDistance", "$box",
        "$center",        "$centerSphere", "$polygon"};
    return kOps.count(name) > 0;
}

bool isBitOperator(std::string_view name) {
    return name == "$bitsAllSet" || name == "$bitsAllClear" || name == "$bitsAnySet" ||
           name == "$bitsAnyClear";
}

// Whether `name` is an operator that can follow a path ({a: {$gt: 1}}), for $all's check.
bool isPathAcceptingKeyword(std::string_view name) {
    static const std::set<std::string_view> kOps = {
        "$eq",     "$ne",   "$gt",   "$gte", "$lt",    "$lte",     "$in",        "$nin", "$all",
        "$exists", "$type", "$size", "$mod", "$regex", "$options", "$elemMatch", "$not"};
    return kOps.count(name) > 0 || isGeoOperator(name) || isBitOperator(name);
}

struct TypeAlias {
    std::string_view name;
    BsonType type;
};
constexpr TypeAlias kTypeAliases[] = {
    {"double", BsonType::Double},
    {"string", BsonType::String},
    {"object", BsonType::Object},
    {"array", BsonType::Array},
    {"binData", BsonType::BinData},
    {"undefined", BsonType::Undefined},
    {"objectId", BsonType::ObjectId},
    {"bool", BsonType::Bool},
    {"date", BsonType::Date},
    {"null", BsonType::Null},
    {"regex", BsonType::Regex},
    {"dbPointer", BsonType::DBPointer},
    {"javascript", BsonType::Code},
    {"symbol", BsonType::Symbol},
    {"javascriptWithScope", BsonType::CodeWScope},
    {"int", BsonType::Int32},
    {"timestamp", BsonType::Timestamp},
    {"long", BsonType::Int64},
    {"decimal", BsonType::Decimal128},
    {"minKey", BsonType::MinKey},
    {"maxKey", BsonType::MaxKey},
};

// An integral number as int64, or an error (MongoDB's parseIntegerElementToLong).
StatusWith<int64_t> integerElementToLong(const BsonElement& e) {
    if (!e.isNumber()) {
        return Status(ErrorCodes::FailedToParse, "Expected a number in: " + e.toString());
    }
    if (e.type() == BsonType::Double || e.type() == BsonType::Decimal128) {
        long double d = e.type() == BsonType::Double ? static_cast<long double>(e.doubleValue())
                                                     : e.decimalValue().toLongDouble();
        if (std::isnan(d)) {
            return Status(ErrorCodes::FailedToParse,
                          "Expected an integer, but found NaN in: " + e.toString());
        }
        if (d >= 9223372036854775808.0L || d < -9223372036854775808.0L) {
            return Status(ErrorCodes::FailedToParse,
                          "Cannot represent as a 64-bit integer: " + e.toString());
        }
        if (d != std::trunc(d)) {
            return Status(ErrorCodes::FailedToParse, "Expected an integer: " + e.toString());
        }
        return static_cast<int64_t>(d);
    }
    return e.numberLong();
}

class Parser {
  public:
    enum class Level { kTop, kDocument, kSubDocument };

    // The command's `let` variables for $expr (may be null).
    std::shared_ptr<const Variables> _let;

    StatusWithExpr parseDocument(BsonView obj, Level level) {
        auto root = std::make_unique<LogicalMatchExpression>(MatchType::kAnd);
        for (BsonElement e : obj) {
            auto name = e.fieldName();
            if (!name.empty() && name[0] == '$') {
                ASSIGN_OR_RETURN(ExprPtr sub, parseTopLevel(e, level));
                if (sub) root->add(std::move(sub));
                continue;
            }
            if (isExpressionDocument(e, false)) {
                TRY_STATUS(parseSub(name, e.objValue(), root.get(), level));
                continue;
            }
            if (e.type() == BsonType::Regex) {
                ASSIGN_OR_RETURN(ExprPtr re,
                                 makeRegex(name, e.regexValue().pattern, e.regexValue().options));
                root->add(std::move(re));
                continue;
            }
            ASSIGN_OR_RETURN(ExprPtr eq, makeComparison(MatchType::kEq, name, e));
            root->add(std::move(eq));
        }
        if (root->numChildren() == 1) return std::move(root->releaseChildren().front());
        return ExprPtr(std::move(root));
    }

  private:
    StatusWithExpr parseTopLevel(const BsonElement& e, Level level) {
        auto name = e.fieldName();
        if (name == "$and" || name == "$or" || name == "$nor") {
            MatchType t = name == "$and" ? MatchType::kAnd
                                         : (name == "$or" ? MatchType::kOr : MatchType::kNor);
            if (!e.isArray()) return badValue(std::string(name) + " must be an array");
            BsonView arr = e.objValue();
            if (arr.isEmpty()) return badValue("$and/$or/$nor must be a nonempty array");
            auto node = std::make_unique<LogicalMatchExpression>(t);
            for (BsonElement sub : arr) {
                if (!sub.isObject()) {
                    return badValue("$or/$and/$nor entries need to be full objects");
                }
                ASSIGN_OR_RETURN(ExprPtr child, parseDocument(sub.objValue(), level));
                node->add(std::move(child));
            }
            return ExprPtr(std::move(node));
        }
        if (name == "$comment") return ExprPtr();
        if (name == "$alwaysTrue" || name == "$alwaysFalse") {
            auto v = integerElementToLong(e);
            if (!v.isOK()) return v.getStatus();
            if (v.getValue() != 1) {
                return Status(ErrorCodes::FailedToParse,
                              std::string(name) + " must be an integer value of 1");
            }
            return ExprPtr(std::make_unique<AlwaysBooleanMatchExpression>(name == "$alwaysTrue"));
        }
        if (name == "$expr") {
            if (level == Level::kSubDocument) {
                return badValue("$expr can only be applied to the top-level document");
            }
            return makeExprMatchExpression(e, _let);
        }
        if (name == "$where") return badValue("$where is not supported");
        if (name == "$text") return badValue("$text is not supported");
        if (name == "$jsonSchema") return makeJsonSchemaMatchExpression(e);
        if (name == "$sampleRate") return badValue("$sampleRate is not supported");
        return badValue("unknown top level operator: " + std::string(name));
    }

    // {path: {$op: v, ...}}: adds one node per operator to `root`.
    Status parseSub(std::string_view path, BsonView sub, LogicalMatchExpression* root,
                    Level level) {
        for (BsonElement e : sub) {
            ASSIGN_OR_RETURN(ExprPtr node, parseSubField(sub, path, e, level));
            if (node) root->add(std::move(node));
        }
        return Status::OK();
    }

    StatusWithExpr parseSubField(BsonView context, std::string_view path, const BsonElement& e,
                                 Level level) {
        auto op = e.fieldName();
        if (op == "$eq") return makeComparison(MatchType::kEq, path, e);
        if (op == "$lt") return makeComparison(MatchType::kLt, path, e);
        if (op == "$lte") return makeComparison(MatchType::kLte, path, e);
        if (op == "$gt") return makeComparison(MatchType::kGt, path, e);
        if (op == "$gte") return makeComparison(MatchType::kGte, path, e);
        if (op == "$ne") {
            if (e.type() == BsonType::Regex) return badValue("Can't have regex as arg to $ne.");
            ASSIGN_OR_RETURN(ExprPtr eq, makeComparison(MatchType::kEq, path, e));
            return ExprPtr(std::make_unique<NotMatchExpression>(std::move(eq)));
        }
        if (op == "$in" || op == "$nin") {
            if (!e.isArray()) return badValue(std::string(op) + " needs an array");
            ASSIGN_OR_RETURN(ExprPtr in, makeIn(path, e.objValue()));
            if (op == "$in") return in;
            return ExprPtr(std::make_unique<NotMatchExpression>(std::move(in)));
        }
        if (op == "$not") return parseNot(path, e, level);
        if (op == "$exists") {
            auto exists = std::make_unique<ExistsMatchExpression>(path);
            if (e.trueValue()) return ExprPtr(std::move(exists));
            return ExprPtr(std::make_unique<NotMatchExpression>(std::move(exists)));
        }
        if (op == "$size") return parseSize(path, e);
        if (op == "$type") return parseType(path, e);
        if (op == "$mod") return parseMod(path, e);
        if (op == "$regex") return parseRegexDocument(path, context);
        if (op == "$options") {
            for (BsonElement x : context) {
                if (x.fieldName() == "$regex") return ExprPtr();
            }
            return badValue("$options needs a $regex");
        }
        if (op == "$elemMatch") return parseElemMatch(path, e);
        if (op == "$all") return parseAll(path, e);
        if (op == "$where") return badValue("$where cannot be applied to a field");
        if (isGeoOperator(op)) {
            return badValue("geo query operator " + std::string(op) + " is not supported");
        }
        if (isBitOperator(op)) {
            return badValue("bit test operator " + std::string(op) + " is not supported");
        }
        return badValue("unknown operator: " + std::string(op));
    }

    StatusWithExpr makeComparison(MatchType type, std::string_view path, const BsonElement& e) {
        if (type != MatchType::kEq && e.type() == BsonType::Regex) {
            return badValue("Can't have RegEx as arg to predicate over field '" +
                            std::string(path) + "'.");
        }
        if (e.type() == BsonType::Undefined) return badValue("cannot compare to undefined");
        return ExprPtr(std::make_unique<ComparisonMatchExpression>(type, path, e));
    }

    StatusWithExpr makeRegex(std::string_view path, std::string_view pattern,
                             std::string_view flags) {
        ASSIGN_OR_RETURN(auto re, CompiledRegex::compile(pattern, flags));
        return ExprPtr(std::make_unique<RegexMatchExpression>(path, std::move(re)));
    }

    StatusWithExpr makeIn(std::string_view path, BsonView arr) {
        auto in = std::make_unique<InMatchExpression>(path);
        for (BsonElement x : arr) {
            if (isExpressionDocument(x, false)) return badValue("cannot nest $ under $in");
            if (x.type() == BsonType::Regex) {
                ASSIGN_OR_RETURN(auto re, CompiledRegex::compile(x.regexValue().pattern,
                                                                 x.regexValue().options));
                in->addRegex(std::move(re));
            } else if (x.type() == BsonType::Undefined) {
                return badValue("InMatchExpression equality cannot be undefined");
            } else {
                in->addEquality(x);
            }
        }
        in->finish();
        return ExprPtr(std::move(in));
    }

    StatusWithExpr parseNot(std::string_view path, const BsonElement& e, Level level) {
        if (e.type() == BsonType::Regex) {
            ASSIGN_OR_RETURN(ExprPtr re,
                             makeRegex(path, e.regexValue().pattern, e.regexValue().options));
            return ExprPtr(std::make_unique<NotMatchExpression>(std::move(re)));
        }
        if (!e.isObject()) return badValue("$not needs a regex or a document");
        BsonView obj = e.objValue();
        if (obj.isEmpty()) return badValue("$not cannot be empty");
        auto theAnd = std::make_unique<LogicalMatchExpression>(MatchType::kAnd);
        TRY_STATUS(parseSub(path, obj, theAnd.get(), level));
        return ExprPtr(std::make_unique<NotMatchExpression>(std::move(theAnd)));
    }

    StatusWithExpr parseSize(std::string_view path, const BsonElement& e) {
        int size = 0;
        if (e.type() == BsonType::Int32) {
            size = e.int32Value();
        } else if (e.type() == BsonType::Int64) {
            int64_t v = e.int64Value();
            if (v < INT32_MIN || v > INT32_MAX) {
                return badValue("$size must be representable as a 32-bit integer");
            }
            size = static_cast<int>(v);
        } else if (e.type() == BsonType::Double || e.type() == BsonType::Decimal128) {
            long double d = e.type() == BsonType::Double ? static_cast<long double>(e.doubleValue())
                                                         : e.decimalValue().toLongDouble();
            if (std::isnan(d) || d != std::trunc(d) || d < INT32_MIN || d > INT32_MAX) {
                return badValue("$size must be a whole number");
            }
            size = static_cast<int>(d);
        } else {
            return badValue("$size needs a number");
        }
        if (size < 0) return badValue("$size may not be negative");
        return ExprPtr(std::make_unique<SizeMatchExpression>(path, size));
    }

    Status addType(const BsonElement& e, std::vector<BsonType>* types, bool* allNumbers) {
        if (e.isNumber()) {
            auto code = integerElementToLong(e);
            if (!code.isOK()) return code.getStatus();
            int64_t c = code.getValue();
            if (!bson::isValidType(static_cast<int8_t>(c)) || c < -1 || c > 127 || c == 0) {
                return badValue("Invalid numerical type code: " + e.toString(false));
            }
            types->push_back(static_cast<BsonType>(c));
            return Status::OK();
        }
        if (e.type() == BsonType::String) {
            auto alias = e.stringValue();
            if (alias == "number") {
                *allNumbers = true;
                return Status::OK();
            }
            BsonType t;
            if (!typeFromAlias(alias, &t)) {
                return badValue("Unknown type name alias: " + std::string(alias));
            }
            types->push_back(t);
            return Status::OK();
        }
        return Status(ErrorCodes::TypeMismatch, "type must be represented as a number or a string");
    }

    StatusWithExpr parseType(std::string_view path, const BsonElement& e) {
        std::vector<BsonType> types;
        bool allNumbers = false;
        if (e.isArray()) {
            for (BsonElement x : e.objValue()) TRY_STATUS(addType(x, &types, &allNumbers));
        } else {
            TRY_STATUS(addType(e, &types, &allNumbers));
        }
        if (types.empty() && !allNumbers) {
            return Status(ErrorCodes::FailedToParse,
                          std::string(path) + " must match at least one type");
        }
        return ExprPtr(std::make_unique<TypeMatchExpression>(path, std::move(types), allNumbers));
    }

    StatusWithExpr parseMod(std::string_view path, const BsonElement& e) {
        if (!e.isArray()) return badValue("malformed mod, needs to be an array");
        BsonView arr = e.objValue();
        auto it = arr.begin();
        if (it == arr.end()) return badValue("malformed mod, not enough elements");
        BsonElement d = *it++;
        if (!d.isNumber()) return badValue("malformed mod, divisor not a number");
        if (it == arr.end()) return badValue("malformed mod, not enough elements");
        BsonElement r = *it++;
        if (!r.isNumber()) return badValue("malformed mod, remainder not a number");
        if (it != arr.end()) return badValue("malformed mod, too many elements");
        auto toLong = [](const BsonElement& x, const char* what) -> StatusWith<int64_t> {
            long double v = x.type() == BsonType::Decimal128
                                ? x.decimalValue().toLongDouble()
                                : (x.type() == BsonType::Double ? x.doubleValue() : x.numberLong());
            if (!std::isfinite(v) || v >= 9223372036854775808.0L || v < -9223372036854775808.0L) {
                return badValue(std::string("malformed mod, ") + what +
                                " value is invalid :: caused by :: Out of bounds coercing to "
                                "integral value");
            }
            return static_cast<int64_t>(std::trunc(v));
        };
        ASSIGN_OR_RETURN(int64_t divisor, toLong(d, "divisor"));
        ASSIGN_OR_RETURN(int64_t remainder, toLong(r, "remainder"));
        if (divisor == 0) return badValue("divisor cannot be 0");
        return ExprPtr(std::make_unique<ModMatchExpression>(path, divisor, remainder));
    }

    StatusWithExpr parseRegexDocument(std::string_view path, BsonView context) {
        std::string_view pattern, options;
        for (BsonElement e : context) {
            if (e.fieldName() == "$regex") {
                if (e.type() == BsonType::String) {
                    pattern = e.stringValue();
                } else if (e.type() == BsonType::Regex) {
                    pattern = e.regexValue().pattern;
                    if (!e.regexValue().options.empty()) {
                        if (!options.empty()) {
                            return Status(51074, "options set in both $regex and $options");
                        }
                        options = e.regexValue().options;
                    }
                } else {
                    return badValue("$regex has to be a string");
                }
            } else if (e.fieldName() == "$options") {
                if (e.type() != BsonType::String) return badValue("$options has to be a string");
                if (!options.empty()) {
                    return Status(51075, "options set in both $regex and $options");
                }
                options = e.stringValue();
            }
        }
        return makeRegex(path, pattern, options);
    }

    StatusWithExpr parseElemMatch(std::string_view path, const BsonElement& e) {
        if (!e.isObject()) return badValue("$elemMatch needs an Object");
        BsonView obj = e.objValue();
        bool valueForm =
            isExpressionDocument(e, true) && !isTopLevelOperator(obj.firstElement().fieldName());
        if (valueForm) {
            LogicalMatchExpression theAnd(MatchType::kAnd);
            TRY_STATUS(parseSub("", obj, &theAnd, Level::kSubDocument));
            auto node = std::make_unique<ElemMatchValueMatchExpression>(path);
            for (auto& c : theAnd.releaseChildren()) node->add(std::move(c));
            return ExprPtr(std::move(node));
        }
        ASSIGN_OR_RETURN(ExprPtr sub, parseDocument(obj, Level::kSubDocument));
        return ExprPtr(std::make_unique<ElemMatchObjectMatchExpression>(path, std::move(sub)));
    }

    StatusWithExpr parseAll(std::string_view path, const BsonElement& e) {
        if (!e.isArray()) return badValue("$all needs an array");
        BsonView arr = e.objValue();
        auto node = std::make_unique<LogicalMatchExpression>(MatchType::kAnd);
        BsonElement first = arr.isEmpty() ? BsonElement() : arr.firstElement();
        auto isElemMatchDoc = [](const BsonElement& x) {
            return x.isObject() && !x.objValue().isEmpty() &&
                   x.objValue().firstElement().fieldName() == "$elemMatch";
        };
        if (isElemMatchDoc(first)) {
            for (BsonElement x : arr) {
                if (!isElemMatchDoc(x)) return badValue("$all/$elemMatch has to be consistent");
                ASSIGN_OR_RETURN(ExprPtr em, parseElemMatch(path, x.objValue().firstElement()));
                node->add(std::move(em));
            }
            return ExprPtr(std::move(node));
        }
        for (BsonElement x : arr) {
            if (x.type() == BsonType::Regex) {
                ASSIGN_OR_RETURN(ExprPtr re,
                                 makeRegex(path, x.regexValue().pattern, x.regexValue().options));
                node->add(std::move(re));
            } else if (x.isObject() && !x.objValue().isEmpty() &&
                       isPathAcceptingKeyword(x.objValue().firstElement().fieldName())) {
                return badValue("no $ expressions in $all");
            } else {
                ASSIGN_OR_RETURN(ExprPtr eq, makeComparison(MatchType::kEq, path, x));
                node->add(std::move(eq));
            }
        }
        if (node->numChildren() == 0) {
            return ExprPtr(std::make_unique<AlwaysBooleanMatchExpression>(false));
        }
        return ExprPtr(std::move(node));
    }
};

}  // namespace

bool typeFromAlias(std::string_view alias, BsonType* out) {
    for (const auto& a : kTypeAliases) {
        if (a.name == alias) {
            *out = a.type;
            return true;
        }
    }
    return false;
}

StatusWith<std::unique_ptr<MatchExpression>> parseMatchExpression(BsonView filter) {
    Parser p;
    return p.parseDocument(filter, Parser::Level::kTop);
}

StatusWith<std::unique_ptr<MatchExpression>> parseMatchExpression(
    BsonView filter, std::shared_ptr<const Variables> let) {
    Parser p;
    p._let = std::move(let);
    return p.parseDocument(filter, Parser::Level::kTop);
}

}  // namespace tessera::query
