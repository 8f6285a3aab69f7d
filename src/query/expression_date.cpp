// Date operators (UTC or fixed "+hh:mm" offsets; Olson time zone names other than UTC/GMT are
// rejected with 40485).
#include <cmath>

#include "query/expression_internal.h"

namespace tessera::query::expr {

bool parseIsoDateString(std::string_view s, int64_t* out);

using bson::BsonElement;
using bson::BsonType;

namespace {

// Offset in milliseconds for a timezone value (missing: UTC).
StatusWith<int64_t> tzOffset(const Value& tz) {
    if (tz.missing()) return int64_t{0};
    if (!tz.isString()) {
        return Status(40517, "timezone must evaluate to a string, found " + typeNameOf(tz));
    }
    std::string_view s = tz.element().stringValue();
    if (s == "UTC" || s == "GMT" || s == "Z" || s == "Etc/UTC" || s == "Etc/GMT") return int64_t{0};
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
        std::string digits;
        for (char c : s.substr(1)) {
            if (c != ':') digits += c;
        }
        bool ok = digits.size() == 2 || digits.size() == 4;
        for (char c : digits) ok = ok && std::isdigit(static_cast<unsigned char>(c));
        if (ok) {
            int h = std::stoi(digits.substr(0, 2));
            int m = digits.size() == 4 ? std::stoi(digits.substr(2)) : 0;
            int64_t off = (h * 60 + m) * 60000LL;
            return s[0] == '-' ? -off : off;
        }
    }
    return Status(40485, "unrecognized time zone identifier: \"" + std::string(s) + "\"");
}

StatusWith<int64_t> requireDate(const Value& v, std::string_view what = "") {
    int64_t ms;
    if (!dateMillis(v, &ms)) {
        (void)what;
        return Status(16006, "can't convert from BSON type " + typeNameOf(v) + " to Date");
    }
    return ms;
}

// {$year: <date>}, {$year: [<date>]} or {$year: {date, timezone}}.
class DatePartExpression final : public Expression {
  public:
    std::string op;
    ExprPtr date, timezone;
    StatusWith<Value> evaluate(bson::BsonView root, const Variables& vars) const override {
        ASSIGN_OR_RETURN(Value d, date->evaluate(root, vars));
        Value tz;
        if (timezone) {
            ASSIGN_OR_RETURN(tz, timezone->evaluate(root, vars));
            if (tz.nullish()) return Value::null();
        }
        if (d.nullish()) return Value::null();
        ASSIGN_OR_RETURN(int64_t ms, requireDate(d));
        ASSIGN_OR_RETURN(int64_t off, tzOffset(tz));
        ms += off;
        CivilTime t = toCivil(ms);
        int wday0 = t.dayOfWeek - 1;
        int isoWday = wday0 == 0 ? 7 : wday0;
        int64_t days = (ms >= 0 ? ms : ms - 86399999) / 86400000;
        CivilTime th = toCivil((days - (isoWday - 1) + 3) * 86400000);
        if (op == "$year") return Value::fromInt32(static_cast<int32_t>(t.year));
        if (op == "$month") return Value::fromInt32(t.month);
        if (op == "$dayOfMonth") return Value::fromInt32(t.day);
        if (op == "$hour") return Value::fromInt32(t.hour);
        if (op == "$minute") return Value::fromInt32(t.minute);
        if (op == "$second") return Value::fromInt32(t.second);
        if (op == "$millisecond") return Value::fromInt32(t.millis);
        if (op == "$dayOfWeek") return Value::fromInt32(t.dayOfWeek);
        if (op == "$dayOfYear") return Value::fromInt32(t.dayOfYear);
        if (op == "$week") return Value::fromInt32((t.dayOfYear - 1 + 7 - wday0) / 7);
        if (op == "$isoDayOfWeek") return Value::fromInt32(isoWday);
        if (op == "$isoWeek") return Value::fromInt32((th.dayOfYear - 1) / 7 + 1);
        return Value::fromInt32(static_cast<int32_t>(th.year));  // $isoWeekYear
    }
};

CustomParseFn parseDatePart(std::string op) {
    return [op](const BsonElement& args, const ExpressionParseContext& ctx) -> StatusWith<ExprPtr> {
        auto node = std::make_unique<DatePartExpression>();
        node->op = op;
        if (args.type() == BsonType::Object && !args.objValue().isEmpty() &&
            args.objValue().firstElement().fieldName()[0] != '$') {
            for (BsonElement e : args.objValue()) {
                if (e.fieldName() == "date") {
                    ASSIGN_OR_RETURN(node->date, Expression::parse(e, ctx));
                } else if (e.fieldName() == "timezone") {
                    ASSIGN_OR_RETURN(node->timezone, Expression::parse(e, ctx));
                } else {
                    return Status(40535, "unrecognized option to " + op + ": \"" +
                                             std::string(e.fieldName()) + "\"");
                }
            }
            if (!node->date)
                return Status(40539, "missing 'date' argument to " + op +
                                         ", provided: " + args.toString(false));
            return ExprPtr(std::move(node));
        }
        ASSIGN_OR_RETURN(auto children, parseArgs(args, ctx));
        TRY_STATUS(checkArity(op, children.size(), 1, 1));
        node->date = std::move(children[0]);
        return ExprPtr(std::move(node));
    };
}

StatusWith<Value> dateToString(const NamedValues& a, const Variables&) {
    Value date = a.get("date");
    Value format = a.get("format");
    Value tz = a.get("timezone");
    if (a.has("format") && !format.nullish() && !format.isString()) {
        return Status(18533, "$dateToString requires that 'format' be a string, found: " +
                                 typeNameOf(format) + " with value " + format.toString());
    }
    if (a.has("format") && format.nullish()) return Value::null();
    if (a.has("timezone") && tz.nullish()) return Value::null();
    if (date.nullish()) {
        if (a.has("onNull")) return a.get("onNull");
        return Value::null();
    }
    ASSIGN_OR_RETURN(int64_t ms, requireDate(date));
    ASSIGN_OR_RETURN(int64_t off, tzOffset(tz));
    std::string fmt = format.isString()
                          ? std::string(format.element().stringValue())
                          : (off == 0 ? "%Y-%m-%dT%H:%M:%S.%LZ" : "%Y-%m-%dT%H:%M:%S.%L");
    for (size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%') continue;
        if (i + 1 == fmt.size()) return Status(18535, "Unmatched '%' at end of format string");
        char c = fmt[++i];
        if (std::string_view("YmdHMSLjwuUVGZzb%").find(c) == std::string_view::npos) {
            return Status(18536,
                          std::string("Invalid format character '%") + c + "' in format string");
        }
    }
    std::string out = formatDate(ms + off, fmt);
    if (off != 0) {
        // %z / %Z reflect the offset.
        char sign = off < 0 ? '-' : '+';
        int64_t m = std::llabs(off) / 60000;
        char z[64], zz[64];
        std::snprintf(z, sizeof z, "%c%02lld%02lld", sign, static_cast<long long>(m / 60),
                      static_cast<long long>(m % 60));
        std::snprintf(zz, sizeof zz, "%c%lld", sign, static_cast<long long>(m));
        for (auto [from, to] : {std::pair<std::string, std::string>{"+0000", z}}) {
            size_t p;
            while ((p = out.find(from)) != std::string::npos) out.replace(p, from.size(), to);
        }
        (void)zz;
    }
    return Value::fromString(out);
}

StatusWith<Value> dateFromString(const NamedValues& a, const Variables&) {
    Value s = a.get("dateString");
    Value tz = a.get("timezone");
    auto onError = [&](Status st) -> StatusWith<Value> {
        if (a.has("onError")) return a.get("onError");
        return st;
    };
    if (a.has("format") && !a.get("format").nullish() && !a.get("format").isString()) {
        return Status(40684, "$dateFromString requires that 'format' be a string, found: " +
                                 typeNameOf(a.get("format")));
    }
    if (s.nullish()) {
        if (a.has("onNull")) return a.get("onNull");
        return Value::null();
    }
    if (!s.isString()) {
        return onError(Status(ErrorCodes::ConversionFailure,
                              "$dateFromString requires that 'dateString' be a string, found: " +
                                  typeNameOf(s) + " with value " + s.toString()));
    }
    if (a.has("timezone") && tz.nullish()) return Value::null();
    ASSIGN_OR_RETURN(int64_t off, tzOffset(tz));
    std::string str(s.element().stringValue());
    int64_t ms;
    bool hasZone = str.find('Z') != std::string::npos ||
                   (str.size() > 10 && (str.find('+', 10) != std::string::npos ||
                                        str.find('-', 10) != std::string::npos));
    if (!parseIsoDateString(str, &ms)) {
        return onError(
            Status(ErrorCodes::ConversionFailure, "Error parsing date string '" + str + "'"));
    }
    if (!hasZone) ms -= off;
    return Value::fromDate(ms);
}

// Units for $dateAdd / $dateDiff.
enum class Unit { kMs, kSecond, kMinute, kHour, kDay, kWeek, kMonth, kQuarter, kYear };

StatusWith<Unit> parseUnit(const Value& v, std::string_view op) {
    if (!v.isString()) {
        return Status(
            5439013, std::string(op) + " requires 'unit' to be a string, but got " + typeNameOf(v));
    }
    std::string_view s = v.element().stringValue();
    static const std::pair<const char*, Unit> kUnits[] = {
        {"millisecond", Unit::kMs}, {"second", Unit::kSecond},   {"minute", Unit::kMinute},
        {"hour", Unit::kHour},      {"day", Unit::kDay},         {"week", Unit::kWeek},
        {"month", Unit::kMonth},    {"quarter", Unit::kQuarter}, {"year", Unit::kYear}};
    for (auto [n, u] : kUnits) {
        if (s == n) return u;
    }
    return Status(ErrorCodes::FailedToParse,
                  std::string(op) +
                      " parameter 'unit' value parsing "
                      "failed :: caused by :: unknown time unit value: " +
                      std::string(s));
}

int64_t unitMillis(Unit u) {
    switch (u) {
        case Unit::kMs:
            return 1;
        case Unit::kSecond:
            return 1000;
        case Unit::kMinute:
            return 60000;
        case Unit::kHour:
            return 3600000;
        case Unit::kDay:
            return 86400000;
        case Unit::kWeek:
            return 7 * 86400000LL;
        default:
            return 0;
    }
}

int daysInMonth(int64_t y, int m) {
    static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : kDays[m - 1];
}

NamedFn dateAdd(bool subtract) {
    std::string op = subtract ? "$dateSubtract" : "$dateAdd";
    return [subtract, op](const NamedValues& a, const Variables&) -> StatusWith<Value> {
        Value start = a.get("startDate"), unit = a.get("unit"), amount = a.get("amount");
        Value tz = a.get("timezone");
        if (start.nullish() || unit.nullish() || amount.nullish() ||
            (a.has("timezone") && tz.nullish())) {
            return Value::null();
        }
        int64_t ms;
        if (!dateMillis(start, &ms)) {
            return Status(5166403, op + " requires startDate to be convertible to a date");
        }
        ASSIGN_OR_RETURN(Unit u, parseUnit(unit, op));
        int64_t n;
        if (!integralValue(amount, &n)) {
            return Status(5166402, op + " expects integer amount of time units");
        }
        if (subtract) n = -n;
        ASSIGN_OR_RETURN(int64_t off, tzOffset(tz));
        if (u == Unit::kMonth || u == Unit::kQuarter || u == Unit::kYear) {
            int64_t months = n * (u == Unit::kMonth ? 1 : u == Unit::kQuarter ? 3 : 12);
            CivilTime t = toCivil(ms + off);
            int64_t total = t.year * 12 + (t.month - 1) + months;
            int64_t y = total >= 0 ? total / 12 : (total - 11) / 12;
            int m = static_cast<int>(total - y * 12) + 1;
            int d = std::min(t.day, daysInMonth(y, m));
            return Value::fromDate(fromCivil(y, m, d, t.hour, t.minute, t.second, t.millis) - off);
        }
        return Value::fromDate(ms + n * unitMillis(u));
    };
}

StatusWith<Value> dateDiff(const NamedValues& a, const Variables&) {
    Value start = a.get("startDate"), end = a.get("endDate"), unit = a.get("unit");
    Value tz = a.get("timezone");
    if (start.nullish() || end.nullish() || unit.nullish() || (a.has("timezone") && tz.nullish())) {
        return Value::null();
    }
    int64_t s, e;
    if (!dateMillis(start, &s)) {
        return Status(5166307,
                      "$dateDiff requires 'startDate' to be a date, but got " + typeNameOf(start));
    }
    if (!dateMillis(end, &e)) {
        return Status(5166307,
                      "$dateDiff requires 'endDate' to be a date, but got " + typeNameOf(end));
    }
    ASSIGN_OR_RETURN(Unit u, parseUnit(unit, "$dateDiff"));
    ASSIGN_OR_RETURN(int64_t off, tzOffset(tz));
    s += off;
    e += off;
    auto floorDiv = [](int64_t x, int64_t y) {
        return x / y - ((x % y != 0) && ((x < 0) != (y < 0)));
    };
    CivilTime ts = toCivil(s), te = toCivil(e);
    switch (u) {
        case Unit::kYear:
            return Value::fromInt64(te.year - ts.year);
        case Unit::kQuarter:
            return Value::fromInt64((te.year * 4 + (te.month - 1) / 3) -
                                    (ts.year * 4 + (ts.month - 1) / 3));
        case Unit::kMonth:
            return Value::fromInt64((te.year * 12 + te.month) - (ts.year * 12 + ts.month));
        case Unit::kWeek: {
            // Weeks start on Sunday by default: count boundaries crossed.
            int64_t ds = floorDiv(s, 86400000), de = floorDiv(e, 86400000);
            // 1970-01-04 was a Sunday.
            return Value::fromInt64(floorDiv(de - 3, 7) - floorDiv(ds - 3, 7));
        }
        default: {
            int64_t unitMs = unitMillis(u);
            return Value::fromInt64(floorDiv(e, unitMs) - floorDiv(s, unitMs));
        }
    }
}

}  // namespace

void registerDate(Registry& r) {
    for (const char* op :
         {"$year", "$month", "$dayOfMonth", "$hour", "$minute", "$second", "$millisecond",
          "$dayOfWeek", "$dayOfYear", "$week", "$isoDayOfWeek", "$isoWeek", "$isoWeekYear"}) {
        r.custom(op, parseDatePart(op));
    }
    r.named("$dateToString", {"date", "format", "timezone", "onNull"}, {"date"}, dateToString,
            18534, 18628);
    r.named("$dateFromString", {"dateString", "format", "timezone", "onNull", "onError"},
            {"dateString"}, dateFromString, 40541, 40542);
    r.named("$dateAdd", {"startDate", "unit", "amount", "timezone"},
            {"startDate", "unit", "amount"}, dateAdd(false), 5166302, 5166303);
    r.named("$dateSubtract", {"startDate", "unit", "amount", "timezone"},
            {"startDate", "unit", "amount"}, dateAdd(true), 5166302, 5166303);
    r.named("$dateDiff", {"startDate", "endDate", "unit", "timezone", "startOfWeek"},
            {"startDate", "endDate", "unit"}, dateDiff, 5166302, 5166303);
}

}  // namespace tessera::query::expr
