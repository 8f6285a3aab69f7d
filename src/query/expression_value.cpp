// Value, Variables and the helpers shared by the expression operators.
#include <chrono>
#include <cmath>
#include <cstdio>

#include "bson/compare.h"
#include "query/expression_internal.h"

namespace tessera::query {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonType;

Value Value::fromElement(const BsonElement& e) {
    if (e.eoo()) return Value();
    BsonBuilder b;
    b.appendElementAs(e, "");
    return Value(b.obj());
}

#define TESSERA_VALUE_MAKER(Name, Type, Call) \
    Value Value::Name(Type v) {               \
        BsonBuilder b;                        \
        b.Call("", v);                        \
        return Value(b.obj());                \
    }
TESSERA_VALUE_MAKER(fromBool, bool, appendBool)
TESSERA_VALUE_MAKER(fromInt32, int32_t, appendInt32)
TESSERA_VALUE_MAKER(fromInt64, int64_t, appendInt64)
TESSERA_VALUE_MAKER(fromDouble, double, appendDouble)
TESSERA_VALUE_MAKER(fromDecimal, const bson::Decimal128&, appendDecimal)
TESSERA_VALUE_MAKER(fromString, std::string_view, appendString)
TESSERA_VALUE_MAKER(fromDate, int64_t, appendDate)
TESSERA_VALUE_MAKER(fromDocument, bson::BsonView, appendObject)
TESSERA_VALUE_MAKER(fromArray, bson::BsonView, appendArray)
#undef TESSERA_VALUE_MAKER

Value Value::null() {
    BsonBuilder b;
    b.appendNull("");
    return Value(b.obj());
}

Value Value::fromArray(const std::vector<Value>& values) {
    bson::BsonArrayBuilder arr;
    for (const auto& v : values) v.appendTo(arr);
    return fromArray(arr.arr());
}

bool Value::nullish() const {
    BsonType t = type();
    return t == BsonType::EOO || t == BsonType::Null || t == BsonType::Undefined;
}

std::vector<Value> Value::arrayValues() const {
    std::vector<Value> out;
    for (BsonElement e : arrayView()) out.push_back(fromElement(e));
    return out;
}

void Value::appendTo(BsonBuilder& b, std::string_view name) const {
    if (!missing()) b.appendElementAs(element(), name);
}

void Value::appendTo(bson::BsonArrayBuilder& b) const {
    if (missing()) {
        b.appendNull();
    } else {
        b.appendElement(element());
    }
}

std::string Value::toString() const {
    if (missing()) return "missing";
    return element().toString(false);
}

int compareValues(const Value& a, const Value& b) {
    if (a.missing() || b.missing()) return (a.missing() ? 0 : 1) - (b.missing() ? 0 : 1);
    return bson::compareElementValues(a.element(), b.element());
}

// ---- Variables ----

Variables::Variables() {
    _now = std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
               .count();
    _hasNow = true;
}

Variables::Variables(const Variables* parent) : _parent(parent) {}

void Variables::set(std::string name, Value v) {
    for (auto& [n, val] : _vars) {
        if (n == name) {
            val = std::move(v);
            return;
        }
    }
    _vars.emplace_back(std::move(name), std::move(v));
}

const Value* Variables::get(std::string_view name) const {
    for (const Variables* s = this; s; s = s->_parent) {
        for (auto it = s->_vars.rbegin(); it != s->_vars.rend(); ++it) {
            if (it->first == name) return &it->second;
        }
    }
    return nullptr;
}

int64_t Variables::nowMillis() const {
    for (const Variables* s = this; s; s = s->_parent) {
        if (s->_hasNow) return s->_now;
    }
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

void Variables::setNowMillis(int64_t millis) {
    _now = millis;
    _hasNow = true;
}

uint64_t Variables::clusterTime() const {
    for (const Variables* s = this; s; s = s->_parent) {
        if (s->_clusterTime) return s->_clusterTime;
    }
    return (static_cast<uint64_t>(nowMillis() / 1000) << 32) | 1;
}

void Variables::setClusterTime(uint64_t ts) { _clusterTime = ts; }

const Value* Variables::current() const {
    for (const Variables* s = this; s; s = s->_parent) {
        if (s->_current) return s->_current;
    }
    return nullptr;
}

std::vector<std::string> Variables::names() const {
    std::vector<std::string> out;
    for (const Variables* s = this; s; s = s->_parent) {
        for (const auto& [n, v] : s->_vars) out.push_back(n);
    }
    return out;
}

StatusWith<std::unique_ptr<Variables>> Variables::fromLet(bson::BsonView let,
                                                          const Variables* base) {
    auto vars = std::make_unique<Variables>(base);
    if (!base) vars->setNowMillis(Variables().nowMillis());
    ExpressionParseContext pctx;
    if (base) pctx.defineAll(*base);
    static const bson::BsonObj kEmpty = bson::fromJson("{}");
    for (BsonElement e : let) {
        TRY_STATUS(expr::validateVariableName(e.fieldName()));
        ASSIGN_OR_RETURN(auto parsed, Expression::parse(e, pctx));
        ASSIGN_OR_RETURN(Value v, parsed->evaluate(kEmpty, *vars));
        vars->set(std::string(e.fieldName()), std::move(v));
        pctx.define(std::string(e.fieldName()));
    }
    return vars;
}

bool ExpressionParseContext::isDefined(std::string_view name) const {
    for (const ExpressionParseContext* c = this; c; c = c->_parent) {
        for (const auto& n : c->_names) {
            if (n == name) return true;
        }
    }
    return false;
}

StatusWith<bool> evaluateTruthy(const Expression& expr, bson::BsonView root,
                                const Variables& vars) {
    ASSIGN_OR_RETURN(Value v, expr.evaluate(root, vars));
    return v.truthy();
}

namespace expr {

Value NamedValues::get(std::string_view name) const {
    for (const auto& [n, v] : _values) {
        if (n == name) return v;
    }
    return Value();
}

bool NamedValues::has(std::string_view name) const {
    for (const auto& [n, v] : _values) {
        if (n == name) return true;
    }
    return false;
}

std::string typeNameOf(const Value& v) {
    if (v.missing()) return "missing";
    return std::string(bson::typeName(v.type()));
}

int numericRank(BsonType t) {
    switch (t) {
        case BsonType::Int32:
            return 0;
        case BsonType::Int64:
            return 1;
        case BsonType::Double:
            return 2;
        case BsonType::Decimal128:
            return 3;
        default:
            return -1;
    }
}

bson::Decimal128 toDecimal(const BsonElement& e) {
    switch (e.type()) {
        case BsonType::Decimal128:
            return e.decimalValue();
        case BsonType::Double:
            return bson::Decimal128::fromDouble(e.doubleValue());
        default:
            return bson::Decimal128::fromInt64(e.numberLong());
    }
}

double toDouble(const BsonElement& e) {
    if (e.type() == BsonType::Decimal128)
        return static_cast<double>(e.decimalValue().toLongDouble());
    return e.numberDouble();
}

long double decimalToLongDouble(const bson::Decimal128& d) { return d.toLongDouble(); }

Value decimalFromLongDouble(long double v) {
    if (std::isnan(v)) return Value::fromDecimal(bson::Decimal128::fromString("NaN"));
    if (std::isinf(v)) {
        return Value::fromDecimal(bson::Decimal128::fromString(v > 0 ? "Infinity" : "-Infinity"));
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17Lg", v);
    std::string s(buf);
    // Trim trailing zeros of the fraction (1.10000000000000000 -> 1.1).
    auto e = s.find_first_of("eE");
    std::string mant = s.substr(0, e == std::string::npos ? s.size() : e);
    std::string exp = e == std::string::npos ? "" : s.substr(e);
    if (mant.find('.') != std::string::npos) {
        while (!mant.empty() && mant.back() == '0') mant.pop_back();
        if (!mant.empty() && mant.back() == '.') mant.pop_back();
    }
    return Value::fromDecimal(bson::Decimal128::fromString(mant + exp));
}

Value integerResult(int64_t v, bool preferInt) {
    if (preferInt && v >= INT32_MIN && v <= INT32_MAX)
        return Value::fromInt32(static_cast<int32_t>(v));
    return Value::fromInt64(v);
}

bool integralValue(const Value& v, int64_t* out) {
    if (!v.isNumber()) return false;
    BsonElement e = v.element();
    switch (e.type()) {
        case BsonType::Int32:
            *out = e.int32Value();
            return true;
        case BsonType::Int64:
            *out = e.int64Value();
            return true;
        case BsonType::Double: {
            double d = e.doubleValue();
            if (std::trunc(d) != d || d < -9.2e18 || d > 9.2e18) return false;
            *out = static_cast<int64_t>(d);
            return true;
        }
        default: {
            long double d = e.decimalValue().toLongDouble();
            if (std::isnan(d) || std::trunc(d) != d || d < -9.2e18L || d > 9.2e18L) return false;
            *out = static_cast<int64_t>(d);
            return true;
        }
    }
}

// Howard Hinnant's civil calendar algorithms.
int64_t daysFromCivil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

static void civilFromDays(int64_t z, int64_t* y, int* m, int* d) {
    z += 719468;
    const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const unsigned doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const int64_t yy = static_cast<int64_t>(yoe) + era * 400;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    *d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
    *m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
    *y = yy + (*m <= 2);
}

static int64_t floorDiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

CivilTime toCivil(int64_t millis) {
    CivilTime t{};
    int64_t days = floorDiv(millis, 86400000);
    int64_t rem = millis - days * 86400000;
    civilFromDays(days, &t.year, &t.month, &t.day);
    t.hour = static_cast<int>(rem / 3600000);
    t.minute = static_cast<int>(rem / 60000 % 60);
    t.second = static_cast<int>(rem / 1000 % 60);
    t.millis = static_cast<int>(rem % 1000);
    // 1970-01-01 was a Thursday (5 with Sunday = 1).
    t.dayOfWeek = static_cast<int>(((days % 7) + 7 + 4) % 7) + 1;
    t.dayOfYear = static_cast<int>(days - daysFromCivil(t.year, 1, 1)) + 1;
    return t;
}

int64_t fromCivil(int64_t y, int month, int day, int hour, int minute, int second, int millis) {
    // Normalise the month into 1..12 (dateAdd may overflow months).
    int64_t m0 = month - 1;
    y += floorDiv(m0, 12);
    m0 -= floorDiv(m0, 12) * 12;
    int64_t days = daysFromCivil(y, static_cast<unsigned>(m0 + 1), 1) + (day - 1);
    return days * 86400000 + hour * 3600000LL + minute * 60000LL + second * 1000LL + millis;
}

bool dateMillis(const Value& v, int64_t* out) {
    switch (v.type()) {
        case BsonType::Date:
            *out = v.element().dateValue();
            return true;
        case BsonType::Timestamp:
            *out = static_cast<int64_t>(v.element().timestampValue() >> 32) * 1000;
            return true;
        case BsonType::ObjectId: {
            auto oid = v.element().oidValue();
            uint32_t secs = (uint32_t{oid.bytes[0]} << 24) | (uint32_t{oid.bytes[1]} << 16) |
                            (uint32_t{oid.bytes[2]} << 8) | uint32_t{oid.bytes[3]};
            *out = static_cast<int64_t>(secs) * 1000;
            return true;
        }
        default:
            return false;
    }
}

Value makeArray(const std::vector<Value>& values) { return Value::fromArray(values); }

namespace {
void appendPathValues(const BsonElement& e, const std::vector<std::string>& parts, size_t i,
                      bson::BsonArrayBuilder& out);

// Aggregation field path semantics (ExpressionFieldPath): descend through documents; at an
// array, apply the rest of the path to each element and collect the results (missing results
// are dropped; nested arrays recurse).
Value lookupFrom(const BsonElement& start, const std::vector<std::string>& parts, size_t i) {
    BsonElement e = start;
    for (; i < parts.size(); ++i) {
        if (e.type() == BsonType::Object) {
            e = e.objValue()[parts[i]];
            if (e.eoo()) return Value();
        } else if (e.type() == BsonType::Array) {
            bson::BsonArrayBuilder arr;
            for (auto elem : e.objValue()) appendPathValues(elem, parts, i, arr);
            return Value::fromArray(arr.arr());
        } else {
            return Value();
        }
    }
    return Value::fromElement(e);
}

void appendPathValues(const BsonElement& e, const std::vector<std::string>& parts, size_t i,
                      bson::BsonArrayBuilder& out) {
    if (e.type() == BsonType::Object) {
        Value v = lookupFrom(e, parts, i);
        if (!v.missing()) out.appendElement(v.element());
    } else if (e.type() == BsonType::Array) {
        bson::BsonArrayBuilder inner;
        for (auto elem : e.objValue()) appendPathValues(elem, parts, i, inner);
        out.appendArray(inner.arr());
    }
}
}  // namespace

Value navigatePath(const Value& base, const std::vector<std::string>& parts, size_t from) {
    if (base.missing()) return Value();
    if (from >= parts.size()) return base;
    return lookupFrom(base.element(), parts, from);
}

Value navigatePath(bson::BsonView doc, const std::vector<std::string>& parts) {
    if (parts.empty()) return Value::fromDocument(doc);
    BsonElement e = doc[parts[0]];
    if (e.eoo()) return Value();
    if (parts.size() == 1) return Value::fromElement(e);
    return lookupFrom(e, parts, 1);
}

}  // namespace expr
Status checkValueBytes(std::string_view op, size_t bytes) {
    if (bytes <= kMaxValueBytes) return Status::OK();
    return Status(ErrorCodes::ExceededMemoryLimit,
                  std::string(op) + " would build a value of more than " + std::to_string(bytes) +
                      " bytes; an expression's value may have at most " +
                      std::to_string(kMaxValueBytes) + " bytes");
}

}  // namespace tessera::query
