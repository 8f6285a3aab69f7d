// Array, set and object operators.
#include <algorithm>
#include <unordered_map>

#include "query/expression_internal.h"

namespace tessera::query::expr {

using bson::BsonElement;
using bson::BsonType;

namespace {

bool int32Value(const Value& v, int64_t* out) {
    return integralValue(v, out) && *out >= INT32_MIN && *out <= INT32_MAX;
}

StatusWith<Value> arrayElemAt(const std::vector<Value>& args, const Variables&) {
    if (args[0].nullish() || args[1].nullish()) return Value::null();
    if (!args[0].isArray()) {
        return Status(
            28689, "$arrayElemAt's first argument must be an array, but is " + typeNameOf(args[0]));
    }
    if (!args[1].isNumber()) {
        return Status(28690, "$arrayElemAt's second argument must be a numeric value, but is " +
                                 typeNameOf(args[1]));
    }
    int64_t i;
    if (!int32Value(args[1], &i)) {
        return Status(28691,
                      "$arrayElemAt's second argument must be representable as a 32-bit "
                      "integer: " +
                          args[1].toString());
    }
    auto items = args[0].arrayValues();
    int64_t n = static_cast<int64_t>(items.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value();
    return items[static_cast<size_t>(i)];
}

PositionalFn firstLast(bool first) {
    return [first](const std::vector<Value>& args, const Variables&) -> StatusWith<Value> {
        if (args[0].nullish()) return Value::null();
        if (!args[0].isArray()) {
            return Status(28689, std::string(first ? "$first" : "$last") +
                                     "'s argument must be an array, but is " + typeNameOf(args[0]));
        }
        auto items = args[0].arrayValues();
        if (items.empty()) return Value();
        return first ? items.front() : items.back();
    };
}

StatusWith<Value> concatArrays(const std::vector<Value>& args, const Variables&) {
    size_t bytes = 0;
    for (const auto& a : args) {
        if (a.nullish()) return Value::null();
        if (!a.isArray()) {
            return Status(28664, "$concatArrays only supports arrays, not " + typeNameOf(a));
        }
        bytes += a.arrayView().size();
    }
    TRY_STATUS(checkValueBytes("$concatArrays", bytes));
    bson::BsonArrayBuilder out;
    for (const auto& a : args) {
        for (BsonElement e : a.arrayView()) out.appendElement(e);
    }
    return Value::fromArray(out.arr());
}

StatusWith<Value> inFn(const std::vector<Value>& args, const Variables&) {
    if (!args[1].isArray()) {
        return Status(40081,
                      "$in requires an array as a second argument, found: " + typeNameOf(args[1]));
    }
    for (const auto& v : args[1].arrayValues()) {
        if (compareValues(v, args[0]) == 0 && !args[0].missing()) return Value::fromBool(true);
    }
    return Value::fromBool(false);
}

StatusWith<Value> indexOfArray(const std::vector<Value>& args, const Variables&) {
    if (args[0].nullish()) return Value::null();
    if (!args[0].isArray()) {
        return Status(40090, "$indexOfArray requires an array as a first argument, found: " +
                                 typeNameOf(args[0]));
    }
    auto items = args[0].arrayValues();
    int64_t start = 0, end = static_cast<int64_t>(items.size());
    for (size_t i = 2; i < args.size(); ++i) {
        int64_t x;
        if (!integralValue(args[i], &x)) {
            return Status(40096, "$indexOfArray requires an integral " +
                                     std::string(i == 2 ? "starting" : "ending") +
                                     " index, found a value of type: " + typeNameOf(args[i]) +
                                     ", with value: " + args[i].toString());
        }
        if (x < 0) {
            return Status(40097, "$indexOfArray requires a nonnegative " +
                                     std::string(i == 2 ? "starting" : "ending") +
                                     " index, found: " + std::to_string(x));
        }
        (i == 2 ? start : end) = x;
    }
    end = std::min<int64_t>(end, static_cast<int64_t>(items.size()));
    for (int64_t i = start; i < end; ++i) {
        if (compareValues(items[static_cast<size_t>(i)], args[1]) == 0)
            return Value::fromInt32(static_cast<int32_t>(i));
    }
    return Value::fromInt32(-1);
}

StatusWith<Value> isArray(const std::vector<Value>& args, const Variables&) {
    return Value::fromBool(args[0].isArray());
}

StatusWith<Value> range(const std::vector<Value>& args, const Variables&) {
    int64_t v[3] = {0, 0, 1};
    const char* what[] = {"starting value", "ending value", "step value"};
    int codes[] = {34443, 34445, 34447};
    for (size_t i = 0; i < args.size(); ++i) {
        if (!args[i].isNumber()) {
            return Status(codes[i], std::string("$range requires a numeric ") + what[i] +
                                        ", found value of type: " + typeNameOf(args[i]));
        }
        if (!int32Value(args[i], &v[i])) {
            return Status(codes[i] + 1, std::string("$range requires a ") + what[i] +
                                            " that can be represented as a 32-bit integer, "
                                            "found value: " +
                                            args[i].toString());
        }
    }
    if (v[2] == 0) return Status(34449, "$range requires a non-zero step value");
    const int64_t count = v[2] > 0 ? (v[1] > v[0] ? (v[1] - v[0] + v[2] - 1) / v[2] : 0)
                                   : (v[0] > v[1] ? (v[0] - v[1] - v[2] - 1) / -v[2] : 0);
    // Each element: type, an index key of up to 10 digits and its NUL, an int32.
    TRY_STATUS(checkValueBytes("$range", static_cast<size_t>(count) * 16));
    bson::BsonArrayBuilder out;
    for (int64_t x = v[0]; v[2] > 0 ? x < v[1] : x > v[1]; x += v[2]) {
        out.append(static_cast<int32_t>(x));
    }
    return Value::fromArray(out.arr());
}

StatusWith<Value> reverseArray(const std::vector<Value>& args, const Variables&) {
    if (args[0].nullish()) return Value::null();
    if (!args[0].isArray()) {
        return Status(34435, "The argument to $reverseArray must be an array, but was of type: " +
                                 typeNameOf(args[0]));
    }
    auto items = args[0].arrayValues();
    std::reverse(items.begin(), items.end());
    return makeArray(items);
}

StatusWith<Value> size(const std::vector<Value>& args, const Variables&) {
    if (!args[0].isArray()) {
        return Status(17124, "The argument to $size must be an array. Type of the argument was: " +
                                 typeNameOf(args[0]));
    }
    return Value::fromInt32(static_cast<int32_t>(args[0].arrayView().nFields()));
}

StatusWith<Value> slice(const std::vector<Value>& args, const Variables&) {
    for (const auto& a : args) {
        if (a.nullish()) return Value::null();
    }
    if (!args[0].isArray()) {
        return Status(28724, "First argument to $slice must be an array, but is of type: " +
                                 typeNameOf(args[0]));
    }
    if (!args[1].isNumber()) {
        return Status(28725, "Second argument to $slice must be a numeric value, but is of type: " +
                                 typeNameOf(args[1]));
    }
    int64_t a;
    if (!int32Value(args[1], &a)) {
        return Status(28726,
                      "Second argument to $slice can't be represented as a 32-bit integer: " +
                          args[1].toString());
    }
    auto items = args[0].arrayValues();
    int64_t n = static_cast<int64_t>(items.size());
    int64_t start, count;
    if (args.size() == 2) {
        if (a >= 0) {
            start = 0;
            count = a;
        } else {
            start = std::max<int64_t>(0, n + a);
            count = n;
        }
    } else {
        if (!args[2].isNumber()) {
            return Status(28727, "Third argument to $slice must be numeric, but is of type: " +
                                     typeNameOf(args[2]));
        }
        int64_t c;
        if (!int32Value(args[2], &c)) {
            return Status(28728,
                          "Third argument to $slice can't be represented as a 32-bit "
                          "integer: " +
                              args[2].toString());
        }
        if (c <= 0) {
            return Status(28729,
                          "Third argument to $slice must be positive: " + args[2].toString());
        }
        start = a >= 0 ? std::min(a, n) : std::max<int64_t>(0, n + a);
        count = c;
    }
    std::vector<Value> out;
    for (int64_t i = start; i < n && i < start + count; ++i)
        out.push_back(items[static_cast<size_t>(i)]);
    return makeArray(out);
}

StatusWith<Value> zip(const NamedValues& a, const Variables&) {
    Value inputs = a.get("inputs");
    bool longest = false;
    if (a.has("useLongestLength")) {
        Value l = a.get("useLongestLength");
        if (l.type() != BsonType::Bool) {
            return Status(34463, "useLongestLength must be a bool, found " + typeNameOf(l));
        }
        longest = l.element().boolValue();
    }
    if (inputs.nullish()) return Value::null();
    if (!inputs.isArray()) {
        return Status(34461, "inputs must be an array of expressions, found " + typeNameOf(inputs));
    }
    std::vector<std::vector<Value>> arrays;
    for (const auto& in : inputs.arrayValues()) {
        if (in.nullish()) return Value::null();
        if (!in.isArray()) {
            return Status(34468, "$zip found a non-array expression in input: " + in.toString());
        }
        arrays.push_back(in.arrayValues());
    }
    std::vector<Value> defaults(arrays.size(), Value::null());
    if (a.has("defaults")) {
        if (!longest) {
            return Status(34466, "cannot specify defaults unless useLongestLength is true");
        }
        Value d = a.get("defaults");
        if (!d.isArray()) {
            return Status(34462,
                          "defaults must be an array of expressions, found " + typeNameOf(d));
        }
        auto dv = d.arrayValues();
        if (dv.size() != arrays.size()) {
            return Status(34467, "defaults and inputs must have the same length");
        }
        defaults = dv;
    }
    size_t len = arrays.empty() ? 0 : (longest ? 0 : SIZE_MAX);
    for (const auto& arr : arrays)
        len = longest ? std::max(len, arr.size()) : std::min(len, arr.size());
    std::vector<Value> out;
    size_t bytes = 0;
    for (size_t i = 0; i < len; ++i) {
        std::vector<Value> row;
        for (size_t j = 0; j < arrays.size(); ++j) {
            row.push_back(i < arrays[j].size() ? arrays[j][i] : defaults[j]);
        }
        out.push_back(makeArray(row));
        bytes += out.back().holder().size();
        TRY_STATUS(checkValueBytes("$zip", bytes));
    }
    return makeArray(out);
}

// Builds a document from (name, value) pairs: a repeated name replaces the earlier value in place.
Value buildDocument(const std::vector<std::pair<std::string, Value>>& fields) {
    std::vector<std::pair<std::string, Value>> merged;
    std::unordered_map<std::string_view, size_t> at;  // name -> index in merged (views of fields)
    merged.reserve(fields.size());
    for (const auto& [k, v] : fields) {
        auto [it, added] = at.try_emplace(k, merged.size());
        if (added) {
            merged.emplace_back(k, v);
        } else {
            merged[it->second].second = v;
        }
    }
    bson::BsonBuilder b;
    b.startObject("");
    for (const auto& [k, v] : merged) v.appendTo(b, k);
    b.end();
    return Value::fromHolder(b.obj());
}

StatusWith<Value> arrayToObject(const std::vector<Value>& args, const Variables&) {
    const Value& in = args[0];
    if (in.nullish()) return Value::null();
    if (!in.isArray()) {
        return Status(40386, "$arrayToObject requires an array input, found: " + typeNameOf(in));
    }
    auto items = in.arrayValues();
    std::vector<std::pair<std::string, Value>> fields;
    if (items.empty()) return buildDocument(fields);
    bool pairs = items[0].isArray();
    if (!pairs && !items[0].isObject()) {
        return Status(40398,
                      "Unrecognised input type format for $arrayToObject: " + typeNameOf(items[0]));
    }
    for (const auto& item : items) {
        if (pairs) {
            if (!item.isArray()) {
                return Status(40391,
                              "$arrayToObject requires a consistent input format. "
                              "Elements must all be arrays or all be objects. Array was "
                              "detected, now found: " +
                                  typeNameOf(item));
            }
            auto kv = item.arrayValues();
            if (kv.size() != 2) {
                return Status(40397,
                              "$arrayToObject requires an array of size 2 arrays,found "
                              "array of size: " +
                                  std::to_string(kv.size()));
            }
            if (!kv[0].isString()) {
                return Status(40395,
                              "$arrayToObject requires an array of key-value pairs, where "
                              "the key must be of type string. Found key type: " +
                                  typeNameOf(kv[0]));
            }
            std::string k(kv[0].element().stringValue());
            if (k.find('\0') != std::string::npos) {
                return Status(4940400, "Key field cannot contain an embedded null byte");
            }
            fields.emplace_back(k, kv[1]);
        } else {
            if (!item.isObject()) {
                return Status(40391,
                              "$arrayToObject requires a consistent input format. "
                              "Elements must all be arrays or all be objects. Object was "
                              "detected, now found: " +
                                  typeNameOf(item));
            }
            bson::BsonView d = item.objectView();
            if (d.nFields() != 2 || d["k"].eoo() || d["v"].eoo()) {
                return Status(40392,
                              "$arrayToObject requires an object keys of 'k' and 'v'. "
                              "Found incorrect number of keys:" +
                                  std::to_string(d.nFields()));
            }
            if (d["k"].type() != BsonType::String) {
                return Status(40394,
                              "$arrayToObject requires an object with keys 'k' and 'v', "
                              "where the value of 'k' must be of type string. Found type: " +
                                  std::string(bson::typeName(d["k"].type())));
            }
            fields.emplace_back(std::string(d["k"].stringValue()), Value::fromElement(d["v"]));
        }
    }
    return buildDocument(fields);
}

StatusWith<Value> objectToArray(const std::vector<Value>& args, const Variables&) {
    const Value& in = args[0];
    if (in.nullish()) return Value::null();
    if (!in.isObject()) {
        return Status(40390, "$objectToArray requires a document input, found: " + typeNameOf(in));
    }
    bson::BsonArrayBuilder out;
    for (BsonElement e : in.objectView()) {
        bson::BsonBuilder b;
        b.appendString("k", e.fieldName());
        b.appendElementAs(e, "v");
        out.append(b.obj());
    }
    return Value::fromArray(out.arr());
}

StatusWith<Value> sortArray(const NamedValues& a, const Variables&) {
    Value in = a.get("input");
    Value by = a.get("sortBy");
    if (by.isObject()) {
        for (BsonElement e : by.objectView()) {
            int64_t d;
            if (!integralValue(Value::fromElement(e), &d) || (d != 1 && d != -1)) {
                return Status(2942505, "$sortArray sort pattern values must be 1 or -1");
            }
        }
    } else {
        int64_t d;
        if (!integralValue(by, &d) || (d != 1 && d != -1)) {
            return Status(2942505, "$sortArray sortBy must be 1, -1 or a document");
        }
    }
    if (in.nullish()) return Value::null();
    if (!in.isArray()) {
        return Status(2942504,
                      "The input argument to $sortArray must be an array, but was of "
                      "type: " +
                          typeNameOf(in));
    }
    auto items = in.arrayValues();
    auto cmp = [&](const Value& x, const Value& y) -> int {
        if (!by.isObject())
            return compareValues(x, y) * static_cast<int>(by.element().numberLong());
        for (BsonElement e : by.objectView()) {
            std::vector<std::string> parts;
            std::string_view p = e.fieldName();
            size_t s = 0;
            while (true) {
                size_t d = p.find('.', s);
                parts.emplace_back(p.substr(s, d == p.npos ? p.npos : d - s));
                if (d == p.npos) break;
                s = d + 1;
            }
            Value vx = x.isObject() ? navigatePath(x.objectView(), parts) : Value();
            Value vy = y.isObject() ? navigatePath(y.objectView(), parts) : Value();
            // Missing sorts as null.
            if (vx.missing()) vx = Value::null();
            if (vy.missing()) vy = Value::null();
            int c = compareValues(vx, vy) * static_cast<int>(e.numberLong());
            if (c != 0) return c;
        }
        return 0;
    };
    std::stable_sort(items.begin(), items.end(),
                     [&](const Value& x, const Value& y) { return cmp(x, y) < 0; });
    return makeArray(items);
}

// ---- sets ----
std::vector<Value> uniqueSorted(std::vector<Value> v) {
    std::stable_sort(v.begin(), v.end(),
                     [](const Value& a, const Value& b) { return compareValues(a, b) < 0; });
    std::vector<Value> out;
    for (auto& x : v) {
        if (out.empty() || compareValues(out.back(), x) != 0) out.push_back(std::move(x));
    }
    return out;
}

bool contains(const std::vector<Value>& set, const Value& x) {
    return std::binary_search(set.begin(), set.end(), x, [](const Value& a, const Value& b) {
        return compareValues(a, b) < 0;
    });
}

StatusWith<Value> setUnion(const std::vector<Value>& args, const Variables&) {
    std::vector<Value> all;
    for (const auto& a : args) {
        if (a.nullish()) return Value::null();
        if (!a.isArray()) {
            return Status(17043,
                          "All operands of $setUnion must be arrays. One argument is of "
                          "type: " +
                              typeNameOf(a));
        }
        for (auto& v : a.arrayValues()) all.push_back(std::move(v));
    }
    return makeArray(uniqueSorted(std::move(all)));
}

StatusWith<Value> setIntersection(const std::vector<Value>& args, const Variables&) {
    std::vector<Value> cur;
    bool first = true;
    for (const auto& a : args) {
        if (a.nullish()) return Value::null();
        if (!a.isArray()) {
            return Status(17047,
                          "All operands of $setIntersection must be arrays. One argument "
                          "is of type: " +
                              typeNameOf(a));
        }
        auto s = uniqueSorted(a.arrayValues());
        if (first) {
            cur = s;
            first = false;
        } else {
            std::vector<Value> next;
            for (auto& v : cur) {
                if (contains(s, v)) next.push_back(v);
            }
            cur = std::move(next);
        }
    }
    return makeArray(cur);
}

StatusWith<Value> setDifference(const std::vector<Value>& args, const Variables&) {
    if (args[0].nullish() || args[1].nullish()) return Value::null();
    if (!args[0].isArray()) {
        return Status(17048,
                      "both operands of $setDifference must be arrays. First argument is "
                      "of type: " +
                          typeNameOf(args[0]));
    }
    if (!args[1].isArray()) {
        return Status(17049,
                      "both operands of $setDifference must be arrays. Second argument "
                      "is of type: " +
                          typeNameOf(args[1]));
    }
    auto b = uniqueSorted(args[1].arrayValues());
    std::vector<Value> out;
    for (auto& v : uniqueSorted(args[0].arrayValues())) {
        if (!contains(b, v)) out.push_back(v);
    }
    return makeArray(out);
}

StatusWith<Value> setEquals(const std::vector<Value>& args, const Variables&) {
    std::vector<Value> first;
    for (size_t i = 0; i < args.size(); ++i) {
        if (!args[i].isArray()) {
            return Status(17044,
                          "All operands of $setEquals must be arrays. One argument is of "
                          "type: " +
                              typeNameOf(args[i]));
        }
    }
    first = uniqueSorted(args[0].arrayValues());
    for (size_t i = 1; i < args.size(); ++i) {
        auto s = uniqueSorted(args[i].arrayValues());
        if (s.size() != first.size()) return Value::fromBool(false);
        for (size_t j = 0; j < s.size(); ++j) {
            if (compareValues(s[j], first[j]) != 0) return Value::fromBool(false);
        }
    }
    return Value::fromBool(true);
}

StatusWith<Value> setIsSubset(const std::vector<Value>& args, const Variables&) {
    if (!args[0].isArray()) {
        return Status(17046,
                      "both operands of $setIsSubset must be arrays. First argument is "
                      "of type: " +
                          typeNameOf(args[0]));
    }
    if (!args[1].isArray()) {
        return Status(17042,
                      "both operands of $setIsSubset must be arrays. Second argument is "
                      "of type: " +
                          typeNameOf(args[1]));
    }
    auto b = uniqueSorted(args[1].arrayValues());
    for (auto& v : args[0].arrayValues()) {
        if (!contains(b, v)) return Value::fromBool(false);
    }
    return Value::fromBool(true);
}

PositionalFn anyAll(bool any) {
    return [any](const std::vector<Value>& args, const Variables&) -> StatusWith<Value> {
        if (!args[0].isArray()) {
            return Status(any ? 17041 : 17040,
                          std::string(any ? "$anyElementTrue" : "$allElementsTrue") +
                              "'s argument must be an array, but is " + typeNameOf(args[0]));
        }
        for (auto& v : args[0].arrayValues()) {
            if (v.truthy() == any) return Value::fromBool(any);
        }
        return Value::fromBool(!any);
    };
}

// ---- objects ----
StatusWith<Value> mergeObjects(const std::vector<Value>& args, const Variables&) {
    std::vector<std::pair<std::string, Value>> fields;
    size_t bytes = 0;
    for (const Value& a : args) bytes += a.isObject() ? a.objectView().size() : 0;
    TRY_STATUS(checkValueBytes("$mergeObjects", bytes));
    for (size_t i = 0; i < args.size(); ++i) {
        const Value& a = args[i];
        if (a.nullish()) continue;
        if (!a.isObject()) {
            return Status(40400, "$mergeObjects requires object inputs, but input " + a.toString() +
                                     " is of type " + typeNameOf(a));
        }
        for (BsonElement e : a.objectView())
            fields.emplace_back(std::string(e.fieldName()), Value::fromElement(e));
    }
    return buildDocument(fields);
}

class FieldOpExpression final : public Expression {
  public:
    enum class Kind { kGet, kSet, kUnset } kind = Kind::kGet;
    std::string field;
    ExprPtr input;  // null: $$CURRENT
    ExprPtr value;
    StatusWith<Value> evaluate(bson::BsonView root, const Variables& vars) const override {
        Value in;
        if (input) {
            ASSIGN_OR_RETURN(in, input->evaluate(root, vars));
        } else if (const Value* cur = vars.current()) {
            in = *cur;
        } else {
            in = Value::fromDocument(root);
        }
        if (kind == Kind::kGet) {
            if (!in.isObject()) {
                if (in.nullish()) return Value();
                return Value();
            }
            return Value::fromElement(in.objectView()[field]);
        }
        if (in.nullish()) return Value::null();
        if (!in.isObject()) {
            return Status(4161105, std::string(kind == Kind::kSet ? "$setField" : "$unsetField") +
                                       " requires 'input' to evaluate to type Object");
        }
        Value v;
        if (kind == Kind::kSet) {
            ASSIGN_OR_RETURN(v, value->evaluate(root, vars));
        }
        std::vector<std::pair<std::string, Value>> fields;
        bool replaced = false;
        for (BsonElement e : in.objectView()) {
            if (e.fieldName() == field) {
                replaced = true;
                if (!v.missing()) fields.emplace_back(field, v);
                continue;
            }
            fields.emplace_back(std::string(e.fieldName()), Value::fromElement(e));
        }
        if (!replaced && !v.missing()) fields.emplace_back(field, v);
        return buildDocument(fields);
    }
};

CustomParseFn parseFieldOp(FieldOpExpression::Kind kind) {
    return [kind](const BsonElement& args,
                  const ExpressionParseContext& ctx) -> StatusWith<ExprPtr> {
        std::string op = kind == FieldOpExpression::Kind::kGet   ? "$getField"
                         : kind == FieldOpExpression::Kind::kSet ? "$setField"
                                                                 : "$unsetField";
        auto node = std::make_unique<FieldOpExpression>();
        node->kind = kind;
        BsonElement fieldE, inputE, valueE;
        if (args.type() == BsonType::Object && kind == FieldOpExpression::Kind::kGet &&
            !args.objValue().isEmpty() && args.objValue().firstElement().fieldName()[0] == '$') {
            fieldE = args;  // shorthand with an expression as the field: rejected below
        } else if (args.type() == BsonType::Object) {
            for (BsonElement e : args.objValue()) {
                std::string_view n = e.fieldName();
                if (n == "field") {
                    fieldE = e;
                } else if (n == "input") {
                    inputE = e;
                } else if (n == "value" && kind == FieldOpExpression::Kind::kSet) {
                    valueE = e;
                } else {
                    return Status(3041701, op + " found an unknown argument: " + std::string(n));
                }
            }
        } else {
            if (kind != FieldOpExpression::Kind::kGet) {
                return Status(4161100, op + " only supports an object as its argument");
            }
            fieldE = args;
        }
        if (fieldE.eoo()) return Status(3041702, op + " requires 'field' to be specified");
        if (kind == FieldOpExpression::Kind::kSet && valueE.eoo()) {
            return Status(4161103, op + " requires 'value' to be specified");
        }
        if (kind != FieldOpExpression::Kind::kGet && inputE.eoo()) {
            return Status(4161102, op + " requires 'input' to be specified");
        }
        BsonElement f = fieldE;
        if (f.type() == BsonType::Object && f.objValue().nFields() == 1 &&
            f.objValue().firstElement().fieldName() == "$literal") {
            f = f.objValue().firstElement();
        } else if (f.type() == BsonType::String && !f.stringValue().empty() &&
                   f.stringValue()[0] == '$') {
            return Status(5654602,
                          "A string representing a field path is not allowed for "
                          "'field' argument to " +
                              op + "; use $literal");
        }
        if (f.type() != BsonType::String) {
            return Status(5654601, op + " requires 'field' to evaluate to a constant, but got a "
                                        "non-constant argument");
        }
        node->field = std::string(f.stringValue());
        if (!inputE.eoo()) {
            ASSIGN_OR_RETURN(node->input, Expression::parse(inputE, ctx));
        }
        if (!valueE.eoo()) {
            ASSIGN_OR_RETURN(node->value, Expression::parse(valueE, ctx));
        }
        return ExprPtr(std::move(node));
    };
}

}  // namespace

void registerArray(Registry& r) {
    r.positional("$arrayElemAt", 2, 2, arrayElemAt);
    r.positional("$first", 1, 1, firstLast(true));
    r.positional("$last", 1, 1, firstLast(false));
    r.positional("$concatArrays", 0, -1, concatArrays);
    r.positional("$in", 2, 2, inFn);
    r.positional("$indexOfArray", 2, 4, indexOfArray);
    r.positional("$isArray", 1, 1, isArray);
    r.positional("$range", 2, 3, range);
    r.positional("$reverseArray", 1, 1, reverseArray);
    r.positional("$size", 1, 1, size);
    r.positional("$slice", 2, 3, slice);
    r.named("$zip", {"inputs", "useLongestLength", "defaults"}, {"inputs"}, zip, 34464, 34465);
    r.positional("$arrayToObject", 1, 1, arrayToObject);
    r.positional("$objectToArray", 1, 1, objectToArray);
    r.named("$sortArray", {"input", "sortBy"}, {"input", "sortBy"}, sortArray, 2942501, 2942502);
    r.positional("$setUnion", 0, -1, setUnion);
    r.positional("$setIntersection", 0, -1, setIntersection);
    r.positional("$setDifference", 2, 2, setDifference);
    r.positional("$setEquals", 2, -1, setEquals);
    r.positional("$setIsSubset", 2, 2, setIsSubset);
    r.positional("$anyElementTrue", 1, 1, anyAll(true));
    r.positional("$allElementsTrue", 1, 1, anyAll(false));
}

void registerObject(Registry& r) {
    r.positional("$mergeObjects", 0, -1, mergeObjects);
    r.custom("$getField", parseFieldOp(FieldOpExpression::Kind::kGet));
    r.custom("$setField", parseFieldOp(FieldOpExpression::Kind::kSet));
    r.custom("$unsetField", parseFieldOp(FieldOpExpression::Kind::kUnset));
}

}  // namespace tessera::query::expr
