// Type operators: $type $convert $toString $toInt $toLong $toDouble $toDecimal $toBool
// $toObjectId $toDate $isNumber, and the string conversions shared with other operators.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "query/expression_internal.h"

namespace tessera::query::expr {

using bson::BsonElement;
using bson::BsonType;

std::string formatDouble(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
    char buf[64];
    for (int prec = 15; prec <= 17; ++prec) {
        std::snprintf(buf, sizeof buf, "%.*g", prec, d);
        if (std::strtod(buf, nullptr) == d) break;
    }
    return buf;
}

static std::string pad(int64_t v, int width) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%0*lld", width, static_cast<long long>(v));
    return buf;
}

std::string formatDate(int64_t millis, std::string_view format) {
    CivilTime t = toCivil(millis);
    std::string out;
    for (size_t i = 0; i < format.size(); ++i) {
        char c = format[i];
        if (c != '%' || i + 1 == format.size()) {
            out += c;
            continue;
        }
        char f = format[++i];
        int wday0 = t.dayOfWeek - 1;  // 0 = Sunday
        int isoWday = wday0 == 0 ? 7 : wday0;
        // ISO week: the week with the year's first Thursday is week 1.
        int64_t days = (millis >= 0 ? millis : millis - 86399999) / 86400000;
        int64_t thursday = days - (isoWday - 1) + 3;
        CivilTime th = toCivil(thursday * 86400000);
        int isoWeek = (th.dayOfYear - 1) / 7 + 1;
        switch (f) {
            case 'Y':
                out += pad(t.year, 4);
                break;
            case 'm':
                out += pad(t.month, 2);
                break;
            case 'd':
                out += pad(t.day, 2);
                break;
            case 'H':
                out += pad(t.hour, 2);
                break;
            case 'M':
                out += pad(t.minute, 2);
                break;
            case 'S':
                out += pad(t.second, 2);
                break;
            case 'L':
                out += pad(t.millis, 3);
                break;
            case 'j':
                out += pad(t.dayOfYear, 3);
                break;
            case 'w':
                out += std::to_string(t.dayOfWeek);
                break;
            case 'u':
                out += std::to_string(isoWday);
                break;
            case 'U':
                out += pad((t.dayOfYear - 1 + 7 - wday0) / 7, 2);
                break;
            case 'V':
                out += pad(isoWeek, 2);
                break;
            case 'G':
                out += pad(th.year, 4);
                break;
            case 'Z':
                out += "+000";
                break;
            case 'z':
                out += "+0000";
                break;
            case '%':
                out += '%';
                break;
            case 'b': {
                static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
                out += kMonths[t.month - 1];
                break;
            }
            default:
                out += '%';
                out += f;
        }
    }
    return out;
}

StatusWith<std::string> coerceToString(const Value& v) {
    switch (v.type()) {
        case BsonType::EOO:
        case BsonType::Null:
        case BsonType::Undefined:
            return std::string();
        case BsonType::String:
        case BsonType::Symbol:
        case BsonType::Code:
            return std::string(v.element().stringValue());
        case BsonType::Int32:
            return std::to_string(v.element().int32Value());
        case BsonType::Int64:
            return std::to_string(v.element().int64Value());
        case BsonType::Double:
            return formatDouble(v.element().doubleValue());
        case BsonType::Decimal128:
            return v.element().decimalValue().toString();
        case BsonType::Date:
            return formatDate(v.element().dateValue(), "%Y-%m-%dT%H:%M:%S.%LZ");
        case BsonType::Timestamp:
            return formatDate(static_cast<int64_t>(v.element().timestampValue() >> 32) * 1000,
                              "%Y-%m-%dT%H:%M:%S.%LZ");
        default:
            return Status(16007, "can't convert from BSON type " + typeNameOf(v) + " to String");
    }
}

namespace {

StatusWith<Value> typeFn(const std::vector<Value>& args, const Variables&) {
    return Value::fromString(typeNameOf(args[0]));
}

StatusWith<Value> isNumber(const std::vector<Value>& args, const Variables&) {
    return Value::fromBool(args[0].isNumber());
}

Status conversionError(const std::string& msg) {
    return Status(ErrorCodes::ConversionFailure, msg);
}

Status unsupported(const Value& in, std::string_view to) {
    return conversionError("Unsupported conversion from " + typeNameOf(in) + " to " +
                           std::string(to) + " in $convert with no onError value");
}

// Parses an ISO-8601 date string: YYYY-MM-DD[THH:MM[:SS[.mmm]]][Z|+hh[:]mm|-hh[:]mm].
bool parseIsoDate(std::string_view s, int64_t* out) {
    auto num = [&](size_t& i, int digits, int* v) {
        if (i + digits > s.size()) return false;
        int x = 0;
        for (int k = 0; k < digits; ++k) {
            char c = s[i + k];
            if (c < '0' || c > '9') return false;
            x = x * 10 + (c - '0');
        }
        *v = x;
        i += digits;
        return true;
    };
    size_t i = 0;
    int y, mo, d, h = 0, mi = 0, sec = 0, ms = 0;
    if (!num(i, 4, &y)) return false;
    if (i < s.size() && s[i] == '-') ++i;
    if (!num(i, 2, &mo)) return false;
    if (i < s.size() && s[i] == '-') ++i;
    if (!num(i, 2, &d)) return false;
    if (mo < 1 || mo > 12 || d < 1 || d > 31) return false;
    int64_t offsetMin = 0;
    if (i < s.size() && (s[i] == 'T' || s[i] == ' ')) {
        ++i;
        if (!num(i, 2, &h)) return false;
        if (i < s.size() && s[i] == ':') ++i;
        if (!num(i, 2, &mi)) return false;
        if (i < s.size() && s[i] == ':') {
            ++i;
            if (!num(i, 2, &sec)) return false;
            if (i < s.size() && s[i] == '.') {
                ++i;
                int digits = 0;
                ms = 0;
                while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
                    if (digits < 3) ms = ms * 10 + (s[i] - '0');
                    ++digits;
                    ++i;
                }
                if (digits == 0) return false;
                for (int k = digits; k < 3; ++k) ms *= 10;
            }
        }
        if (h > 24 || mi > 59 || sec > 60) return false;
    }
    if (i < s.size()) {
        if (s[i] == 'Z') {
            ++i;
        } else if (s[i] == '+' || s[i] == '-') {
            int sign = s[i] == '-' ? -1 : 1;
            ++i;
            int oh, om = 0;
            if (!num(i, 2, &oh)) return false;
            if (i < s.size() && s[i] == ':') ++i;
            if (i < s.size() && !num(i, 2, &om)) return false;
            offsetMin = sign * (oh * 60 + om);
        } else {
            return false;
        }
    }
    if (i != s.size()) return false;
    *out = fromCivil(y, mo, d, h, mi, sec, ms) - offsetMin * 60000;
    return true;
}

bool parseInt64(std::string_view s, int64_t* out) {
    if (s.empty()) return false;
    auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool parseDouble(std::string_view s, double* out) {
    if (s.empty()) return false;
    std::string str(s);
    if (str == "NaN" || str == "nan") {
        *out = std::nan("");
        return true;
    }
    if (str == "Infinity" || str == "inf") {
        *out = INFINITY;
        return true;
    }
    if (str == "-Infinity" || str == "-inf") {
        *out = -INFINITY;
        return true;
    }
    for (char c : str) {
        if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' ||
              c == '-' || c == '+')) {
            return false;
        }
    }
    char* end = nullptr;
    *out = std::strtod(str.c_str(), &end);
    return end == str.c_str() + str.size();
}

StatusWith<Value> convertTo(const Value& in, BsonType to) {
    BsonElement e = in.element();
    BsonType from = in.type();
    switch (to) {
        case BsonType::Double: {
            switch (from) {
                case BsonType::Double:
                    return in;
                case BsonType::Int32:
                case BsonType::Int64:
                    return Value::fromDouble(static_cast<double>(e.numberLong()));
                case BsonType::Decimal128: {
                    long double d = e.decimalValue().toLongDouble();
                    if (!std::isinf(d) && std::fabs(d) > 1.7976931348623157e308L) {
                        return conversionError(
                            "Conversion would overflow target type in $convert "
                            "with no onError value: " +
                            in.toString());
                    }
                    return Value::fromDouble(static_cast<double>(d));
                }
                case BsonType::Bool:
                    return Value::fromDouble(e.boolValue() ? 1 : 0);
                case BsonType::Date:
                    return Value::fromDouble(static_cast<double>(e.dateValue()));
                case BsonType::String: {
                    double d;
                    if (!parseDouble(e.stringValue(), &d)) {
                        return conversionError("Failed to parse number '" +
                                               std::string(e.stringValue()) +
                                               "' in $convert with no onError value: Did not "
                                               "consume whole string.");
                    }
                    return Value::fromDouble(d);
                }
                default:
                    return unsupported(in, "double");
            }
        }
        case BsonType::Int32:
        case BsonType::Int64: {
            bool isInt = to == BsonType::Int32;
            std::string name = isInt ? "int" : "long";
            auto fits = [&](long double v) {
                return isInt ? (v >= INT32_MIN && v <= INT32_MAX)
                             : (v >= -9223372036854775808.0L && v < 9223372036854775808.0L);
            };
            auto make = [&](int64_t v) {
                return isInt ? Value::fromInt32(static_cast<int32_t>(v)) : Value::fromInt64(v);
            };
            auto overflow = [&]() {
                return conversionError(
                    "Conversion would overflow target type in $convert with "
                    "no onError value: " +
                    in.toString());
            };
            switch (from) {
                case BsonType::Int32:
                    return make(e.int32Value());
                case BsonType::Int64:
                    if (!fits(static_cast<long double>(e.int64Value()))) return overflow();
                    return make(e.int64Value());
                case BsonType::Double:
                case BsonType::Decimal128: {
                    long double d = from == BsonType::Double ? e.doubleValue()
                                                             : e.decimalValue().toLongDouble();
                    if (std::isnan(d) || std::isinf(d)) {
                        return conversionError(
                            "Attempt to convert NaN value to integer type in "
                            "$convert with no onError value");
                    }
                    d = std::trunc(d);
                    if (!fits(d)) return overflow();
                    return make(static_cast<int64_t>(d));
                }
                case BsonType::Bool:
                    return make(e.boolValue() ? 1 : 0);
                case BsonType::Date:
                    if (isInt) return unsupported(in, name);
                    return make(e.dateValue());
                case BsonType::String: {
                    int64_t v;
                    if (!parseInt64(e.stringValue(), &v) || !fits(static_cast<long double>(v))) {
                        return conversionError("Failed to parse number '" +
                                               std::string(e.stringValue()) +
                                               "' in $convert with no onError value: Did not "
                                               "consume whole string.");
                    }
                    return make(v);
                }
                default:
                    return unsupported(in, name);
            }
        }
        case BsonType::Decimal128: {
            switch (from) {
                case BsonType::Decimal128:
                    return in;
                case BsonType::Int32:
                case BsonType::Int64:
                    return Value::fromDecimal(bson::Decimal128::fromInt64(e.numberLong()));
                case BsonType::Double:
                    return Value::fromDecimal(
                        bson::Decimal128::fromString(formatDouble(e.doubleValue())));
                case BsonType::Bool:
                    return Value::fromDecimal(bson::Decimal128::fromInt64(e.boolValue() ? 1 : 0));
                case BsonType::Date:
                    return Value::fromDecimal(bson::Decimal128::fromInt64(e.dateValue()));
                case BsonType::String: {
                    auto d = bson::Decimal128::fromString(e.stringValue());
                    if (d.isNaN() && e.stringValue() != "NaN") {
                        return conversionError("Failed to parse number '" +
                                               std::string(e.stringValue()) +
                                               "' in $convert with no onError value");
                    }
                    return Value::fromDecimal(d);
                }
                default:
                    return unsupported(in, "decimal");
            }
        }
        case BsonType::Bool:
            return Value::fromBool(from == BsonType::String ? true : e.trueValue());
        case BsonType::String: {
            switch (from) {
                case BsonType::Bool:
                    return Value::fromString(e.boolValue() ? "true" : "false");
                case BsonType::ObjectId:
                    return Value::fromString(e.oidValue().toHex());
                case BsonType::String:
                case BsonType::Int32:
                case BsonType::Int64:
                case BsonType::Double:
                case BsonType::Decimal128:
                case BsonType::Date: {
                    ASSIGN_OR_RETURN(std::string s, coerceToString(in));
                    return Value::fromString(s);
                }
                default:
                    return unsupported(in, "string");
            }
        }
        case BsonType::ObjectId: {
            if (from == BsonType::ObjectId) return in;
            if (from != BsonType::String) return unsupported(in, "objectId");
            std::string_view s = e.stringValue();
            bson::ObjectId oid;
            bool ok = s.size() == 24;
            for (size_t i = 0; ok && i < 12; ++i) {
                auto r = std::from_chars(s.data() + 2 * i, s.data() + 2 * i + 2, oid.bytes[i], 16);
                ok = r.ec == std::errc() && r.ptr == s.data() + 2 * i + 2;
            }
            if (!ok) {
                return conversionError("Failed to parse objectId '" + std::string(s) +
                                       "' in $convert with no onError value: Invalid string "
                                       "length for parsing to OID, expected 24 but found " +
                                       std::to_string(s.size()));
            }
            bson::BsonBuilder b;
            b.appendOid("", oid);
            return Value::fromHolder(b.obj());
        }
        case BsonType::Date: {
            int64_t ms;
            switch (from) {
                case BsonType::Date:
                case BsonType::Timestamp:
                case BsonType::ObjectId:
                    dateMillis(in, &ms);
                    return Value::fromDate(ms);
                case BsonType::Int64:
                    return Value::fromDate(e.int64Value());
                case BsonType::Double:
                case BsonType::Decimal128: {
                    long double d = from == BsonType::Double ? e.doubleValue()
                                                             : e.decimalValue().toLongDouble();
                    if (std::isnan(d) || std::isinf(d) || std::fabs(d) > 9.2e18L) {
                        return conversionError(
                            "Conversion would overflow target type in $convert "
                            "with no onError value: " +
                            in.toString());
                    }
                    return Value::fromDate(static_cast<int64_t>(std::trunc(d)));
                }
                case BsonType::String:
                    if (!parseIsoDate(e.stringValue(), &ms)) {
                        return conversionError("Error parsing date string '" +
                                               std::string(e.stringValue()) + "'");
                    }
                    return Value::fromDate(ms);
                default:
                    return unsupported(in, "date");
            }
        }
        default:
            return unsupported(in, bson::typeName(to));
    }
}

// The target of $convert's `to`: a type name or number.
StatusWith<BsonType> targetType(const Value& to) {
    if (to.isString()) {
        std::string_view n = to.element().stringValue();
        static const std::pair<const char*, BsonType> kNames[] = {
            {"double", BsonType::Double},     {"string", BsonType::String},
            {"objectId", BsonType::ObjectId}, {"bool", BsonType::Bool},
            {"date", BsonType::Date},         {"int", BsonType::Int32},
            {"long", BsonType::Int64},        {"decimal", BsonType::Decimal128},
            {"null", BsonType::Null},         {"object", BsonType::Object},
            {"array", BsonType::Array},       {"binData", BsonType::BinData},
            {"regex", BsonType::Regex},       {"timestamp", BsonType::Timestamp},
            {"minKey", BsonType::MinKey},     {"maxKey", BsonType::MaxKey}};
        for (auto [name, t] : kNames) {
            if (n == name) return t;
        }
        return Status(ErrorCodes::BadValue, "Unknown type name: " + std::string(n));
    }
    int64_t code;
    if (integralValue(to, &code)) {
        if (!bson::isValidType(static_cast<int8_t>(code)) || code == 0) {
            return Status(ErrorCodes::FailedToParse,
                          "In $convert, numeric value for 'to' does not correspond to a BSON "
                          "type: " +
                              std::to_string(code));
        }
        return static_cast<BsonType>(code);
    }
    return Status(ErrorCodes::FailedToParse,
                  "$convert's 'to' argument must be a string or number, but is " + typeNameOf(to));
}

StatusWith<Value> convert(const Value& in, const Value& to, const NamedValues* opts) {
    if (to.nullish()) return Value::null();
    ASSIGN_OR_RETURN(BsonType t, targetType(to));
    if (in.nullish()) {
        if (opts && opts->has("onNull")) return opts->get("onNull");
        return Value::null();
    }
    if (in.type() == t) return in;
    auto r = convertTo(in, t);
    if (!r.isOK() && opts && opts->has("onError")) return opts->get("onError");
    return r;
}

PositionalFn toType(BsonType t) {
    return [t](const std::vector<Value>& args, const Variables&) -> StatusWith<Value> {
        if (args[0].nullish()) return Value::null();
        if (args[0].type() == t) return args[0];
        return convertTo(args[0], t);
    };
}

}  // namespace

// Exposed for $dateFromString.
bool parseIsoDateString(std::string_view s, int64_t* out) { return parseIsoDate(s, out); }

void registerConversion(Registry& r) {
    r.positional("$type", 1, 1, typeFn);
    r.positional("$isNumber", 1, 1, isNumber);
    r.named("$convert", {"input", "to", "onError", "onNull"}, {"input", "to"},
            [](const NamedValues& a, const Variables&) {
                return convert(a.get("input"), a.get("to"), &a);
            });
    r.positional("$toString", 1, 1, toType(BsonType::String));
    r.positional("$toInt", 1, 1, toType(BsonType::Int32));
    r.positional("$toLong", 1, 1, toType(BsonType::Int64));
    r.positional("$toDouble", 1, 1, toType(BsonType::Double));
    r.positional("$toDecimal", 1, 1, toType(BsonType::Decimal128));
    r.positional("$toBool", 1, 1, toType(BsonType::Bool));
    r.positional("$toObjectId", 1, 1, toType(BsonType::ObjectId));
    r.positional("$toDate", 1, 1, toType(BsonType::Date));
}

}  // namespace tessera::query::expr
