// Arithmetic operators: $add $subtract $multiply $divide $mod $abs $ceil $floor $round $trunc
// $sqrt $pow $exp $ln $log $log10, and the array-reducing $sum $avg $min $max $stdDevPop
// $stdDevSamp.
#include <cmath>
#include <random>

#include "query/expression_internal.h"

namespace tessera::query::expr {

using bson::BsonElement;
using bson::BsonType;

void NumericSum::add(const BsonElement& e) {
    int r = numericRank(e.type());
    if (r > _rank) _rank = r;
    if (e.type() == BsonType::Decimal128) {
        _dec += e.decimalValue().toLongDouble();
        return;
    }
    _dec += static_cast<long double>(
        e.type() == BsonType::Double ? e.doubleValue() : static_cast<double>(e.numberLong()));
    if (e.type() == BsonType::Double) {
        _dbl += e.doubleValue();
    } else {
        int64_t x = e.numberLong();
        _dbl += static_cast<double>(x);
        if (!_overflow && __builtin_add_overflow(_long, x, &_long)) _overflow = true;
    }
}

Value NumericSum::result() const {
    switch (_rank) {
        case 3:
            return decimalFromLongDouble(_dec);
        case 2:
            return Value::fromDouble(_dbl);
        default:
            if (_overflow) return Value::fromDouble(_dbl);
            return integerResult(_long, _rank == 0);
    }
}

namespace {

Value nullValue() { return Value::null(); }

StatusWith<Value> add(const std::vector<Value>& args, const Variables&) {
    NumericSum sum;
    bool haveDate = false;
    int64_t dateMs = 0;
    bool isNull = false;
    for (const auto& a : args) {
        if (a.nullish()) {
            isNull = true;
            continue;
        }
        if (a.isNumber()) {
            sum.add(a.element());
        } else if (a.type() == BsonType::Date) {
            if (haveDate) return Status(16612, "only one date allowed in an $add expression");
            haveDate = true;
            dateMs = a.element().dateValue();
        } else {
            return Status(16554, "$add only supports numeric or date types, not " + typeNameOf(a));
        }
    }
    if (isNull) return nullValue();
    if (haveDate) {
        double d = sum.asDouble();
        if (std::isnan(d) || std::isinf(d)) {
            return Status(ErrorCodes::Overflow, "date overflow in $add");
        }
        return Value::fromDate(
            dateMs + (sum.rank() >= 2 ? std::llround(d) : sum.result().element().numberLong()));
    }
    return sum.result();
}

int resultRank(const Value& a, const Value& b) {
    return std::max(numericRank(a.type()), numericRank(b.type()));
}

StatusWith<Value> subtract(const std::vector<Value>& args, const Variables&) {
    const Value& l = args[0];
    const Value& r = args[1];
    if (l.nullish() || r.nullish()) return nullValue();
    if (l.type() == BsonType::Date) {
        if (r.type() == BsonType::Date) {
            return Value::fromInt64(l.element().dateValue() - r.element().dateValue());
        }
        if (r.isNumber()) {
            int64_t delta =
                r.element().type() == BsonType::Double || r.element().type() == BsonType::Decimal128
                    ? std::llround(toDouble(r.element()))
                    : r.element().numberLong();
            return Value::fromDate(l.element().dateValue() - delta);
        }
    } else if (l.isNumber() && r.isNumber()) {
        int rank = resultRank(l, r);
        BsonElement a = l.element(), b = r.element();
        if (rank == 3) {
            return decimalFromLongDouble(toDecimal(a).toLongDouble() - toDecimal(b).toLongDouble());
        }
        if (rank == 2) return Value::fromDouble(a.numberDouble() - b.numberDouble());
        int64_t out;
        if (__builtin_sub_overflow(a.numberLong(), b.numberLong(), &out)) {
            return Value::fromDouble(static_cast<double>(a.numberLong()) -
                                     static_cast<double>(b.numberLong()));
        }
        return integerResult(out, rank == 0);
    }
    return Status(16556, "can't $subtract " + typeNameOf(r) + " from " + typeNameOf(l));
}

StatusWith<Value> multiply(const std::vector<Value>& args, const Variables&) {
    int rank = 0;
    int64_t prod = 1;
    bool overflow = false;
    double dprod = 1;
    long double decprod = 1;
    bool isNull = false;
    for (const auto& a : args) {
        if (a.nullish()) {
            isNull = true;
            continue;
        }
        if (!a.isNumber()) {
            return Status(16555, "$multiply only supports numeric types, not " + typeNameOf(a));
        }
        BsonElement e = a.element();
        rank = std::max(rank, numericRank(e.type()));
        decprod *= e.type() == BsonType::Decimal128 ? e.decimalValue().toLongDouble()
                                                    : static_cast<long double>(e.numberDouble());
        dprod *= toDouble(e);
        if (e.type() == BsonType::Int32 || e.type() == BsonType::Int64) {
            if (!overflow && __builtin_mul_overflow(prod, e.numberLong(), &prod)) overflow = true;
        }
    }
    if (isNull) return nullValue();
    if (rank == 3) return decimalFromLongDouble(decprod);
    if (rank == 2 || overflow) return Value::fromDouble(dprod);
    return integerResult(prod, rank == 0);
}

StatusWith<Value> divide(const std::vector<Value>& args, const Variables&) {
    const Value& l = args[0];
    const Value& r = args[1];
    if (l.nullish() || r.nullish()) return nullValue();
    if (!l.isNumber() || !r.isNumber()) {
        return Status(16609, "$divide only supports numeric types, not " + typeNameOf(l) + " and " +
                                 typeNameOf(r));
    }
    if (resultRank(l, r) == 3) {
        long double d = toDecimal(r.element()).toLongDouble();
        if (d == 0) return Status(ErrorCodes::BadValue, "can't $divide by zero");
        return decimalFromLongDouble(toDecimal(l.element()).toLongDouble() / d);
    }
    double d = r.element().numberDouble();
    if (d == 0) return Status(ErrorCodes::BadValue, "can't $divide by zero");
    return Value::fromDouble(l.element().numberDouble() / d);
}

StatusWith<Value> mod(const std::vector<Value>& args, const Variables&) {
    const Value& l = args[0];
    const Value& r = args[1];
    if (l.nullish() || r.nullish()) return nullValue();
    if (!l.isNumber() || !r.isNumber()) {
        return Status(16611, "$mod only supports numeric types, not " + typeNameOf(l) + " and " +
                                 typeNameOf(r));
    }
    int rank = resultRank(l, r);
    if (rank == 3) {
        long double d = toDecimal(r.element()).toLongDouble();
        if (d == 0) return Status(16610, "can't $mod by zero");
        return decimalFromLongDouble(std::fmod(toDecimal(l.element()).toLongDouble(), d));
    }
    if (rank == 2) {
        double d = r.element().numberDouble();
        if (d == 0) return Status(16610, "can't $mod by zero");
        return Value::fromDouble(std::fmod(l.element().numberDouble(), d));
    }
    int64_t d = r.element().numberLong();
    if (d == 0) return Status(16610, "can't $mod by zero");
    if (d == -1) return integerResult(0, rank == 0);
    return integerResult(l.element().numberLong() % d, rank == 0);
}

// Unary numeric operators: nullish -> null, non-number -> 28765.
StatusWith<Value> unaryCheck(std::string_view op, const Value& v) {
    if (!v.isNumber()) {
        return Status(28765,
                      std::string(op) + " only supports numeric types, not " + typeNameOf(v));
    }
    return Value();
}

PositionalFn unaryDouble(std::string op, double (*fn)(double), long double (*lfn)(long double)) {
    return [op, fn, lfn](const std::vector<Value>& args, const Variables&) -> StatusWith<Value> {
        const Value& v = args[0];
        if (v.nullish()) return nullValue();
        auto check = unaryCheck(op, v);
        if (!check.isOK()) return check;
        if (v.type() == BsonType::Decimal128) {
            return decimalFromLongDouble(lfn(v.element().decimalValue().toLongDouble()));
        }
        return Value::fromDouble(fn(v.element().numberDouble()));
    };
}

PositionalFn ceilFloor(std::string op, bool ceil) {
    return [op, ceil](const std::vector<Value>& args, const Variables&) -> StatusWith<Value> {
        const Value& v = args[0];
        if (v.nullish()) return nullValue();
        auto check = unaryCheck(op, v);
        if (!check.isOK()) return check;
        switch (v.type()) {
            case BsonType::Double:
                return Value::fromDouble(ceil ? std::ceil(v.element().doubleValue())
                                              : std::floor(v.element().doubleValue()));
            case BsonType::Decimal128: {
                long double d = v.element().decimalValue().toLongDouble();
                return decimalFromLongDouble(ceil ? std::ceil(d) : std::floor(d));
            }
            default:
                return v;
        }
    };
}

// Rounds `x` to `place` decimal places; half to even when `roundMode`, else truncation.
long double roundTo(long double x, int64_t place, bool round) {
    long double scale = std::pow(10.0L, static_cast<long double>(place < 0 ? -place : place));
    long double y = place < 0 ? x / scale : x * scale;
    long double r = round ? std::nearbyint(y) : std::trunc(y);
    return place < 0 ? r * scale : r / scale;
}

PositionalFn roundTrunc(std::string op, bool round) {
    return [op, round](const std::vector<Value>& args, const Variables&) -> StatusWith<Value> {
        const Value& v = args[0];
        if (v.nullish()) return nullValue();
        int64_t place = 0;
        if (args.size() > 1) {
            if (args[1].nullish()) return nullValue();
            if (!integralValue(args[1], &place)) {
                return Status(51082, "precision argument to  " + op + " must be a integral value");
            }
            if (place < -20 || place > 100) {
                return Status(51083, "cannot apply " + op + " with precision value " +
                                         std::to_string(place) + " value must be in [-20, 100]");
            }
        }
        if (!v.isNumber()) {
            return Status(51081, op + " only supports numeric types, not " + typeNameOf(v));
        }
        switch (v.type()) {
            case BsonType::Double: {
                double d = v.element().doubleValue();
                if (std::isnan(d) || std::isinf(d)) return v;
                return Value::fromDouble(static_cast<double>(roundTo(d, place, round)));
            }
            case BsonType::Decimal128: {
                long double d = v.element().decimalValue().toLongDouble();
                if (std::isnan(d) || std::isinf(d)) return v;
                return decimalFromLongDouble(roundTo(d, place, round));
            }
            default: {
                if (place >= 0) return v;
                int64_t x = v.element().numberLong();
                long double r = roundTo(static_cast<long double>(x), place, round);
                if (r > 9.2e18L || r < -9.2e18L) {
                    return Status(51080, "invalid conversion from Decimal128 result in " + op +
                                             " resulting from arguments: [" + std::to_string(x) +
                                             ", " + std::to_string(place) + "]");
                }
                return integerResult(static_cast<int64_t>(r), v.type() == BsonType::Int32);
            }
        }
    };
}

StatusWith<Value> absFn(const std::vector<Value>& args, const Variables&) {
    const Value& v = args[0];
    if (v.nullish()) return nullValue();
    auto check = unaryCheck("$abs", v);
    if (!check.isOK()) return check;
    switch (v.type()) {
        case BsonType::Int32: {
            int64_t x = v.element().int32Value();
            return integerResult(x < 0 ? -x : x, true);
        }
        case BsonType::Int64: {
            int64_t x = v.element().int64Value();
            if (x == INT64_MIN) return Status(28680, "can't take $abs of long long min");
            return Value::fromInt64(x < 0 ? -x : x);
        }
        case BsonType::Double:
            return Value::fromDouble(std::fabs(v.element().doubleValue()));
        default:
            return decimalFromLongDouble(std::fabs(v.element().decimalValue().toLongDouble()));
    }
}

StatusWith<Value> sqrtFn(const std::vector<Value>& args, const Variables&) {
    const Value& v = args[0];
    if (v.nullish()) return nullValue();
    auto check = unaryCheck("$sqrt", v);
    if (!check.isOK()) return check;
    long double d = v.type() == BsonType::Decimal128 ? v.element().decimalValue().toLongDouble()
                                                     : v.element().numberDouble();
    if (d < 0) return Status(28714, "$sqrt's argument must be greater than or equal to 0");
    if (v.type() == BsonType::Decimal128) return decimalFromLongDouble(std::sqrt(d));
    return Value::fromDouble(std::sqrt(static_cast<double>(d)));
}

StatusWith<Value> powFn(const std::vector<Value>& args, const Variables&) {
    const Value& b = args[0];
    const Value& e = args[1];
    if (b.nullish() || e.nullish()) return nullValue();
    if (!b.isNumber()) return Status(28762, "$pow's base must be numeric, not " + typeNameOf(b));
    if (!e.isNumber()) {
        return Status(28763, "$pow's exponent must be numeric, not " + typeNameOf(e));
    }
    int rank = resultRank(b, e);
    long double base = toDecimal(b.element()).toLongDouble();
    long double ex = toDecimal(e.element()).toLongDouble();
    if (b.type() != BsonType::Decimal128 && b.type() != BsonType::Double)
        base = b.element().numberLong();
    if (base == 0 && ex < 0) {
        return Status(28764, "$pow cannot take a base of 0 and a negative exponent");
    }
    if (rank == 3) return decimalFromLongDouble(std::pow(base, ex));
    if (rank == 2)
        return Value::fromDouble(std::pow(b.element().numberDouble(), e.element().numberDouble()));
    int64_t bi = b.element().numberLong();
    int64_t ei = e.element().numberLong();
    if (ei < 0) {
        if (bi == 1) return integerResult(1, rank == 0);
        if (bi == -1) return integerResult(ei % 2 == 0 ? 1 : -1, rank == 0);
        return Value::fromDouble(std::pow(static_cast<double>(bi), static_cast<double>(ei)));
    }
    int64_t result = 1;
    bool overflow = false;
    for (int64_t i = 0; i < ei && !overflow; ++i) {
        if (__builtin_mul_overflow(result, bi, &result)) overflow = true;
        if (result == 0 || result == 1) break;
    }
    if (overflow) {
        return Value::fromDouble(std::pow(static_cast<double>(bi), static_cast<double>(ei)));
    }
    if (rank == 0 && (result < INT32_MIN || result > INT32_MAX)) return Value::fromInt64(result);
    return integerResult(result, rank == 0);
}

PositionalFn logFn(std::string op, int code, double (*fn)(double),
                   long double (*lfn)(long double)) {
    return
        [op, code, fn, lfn](const std::vector<Value>& args, const Variables&) -> StatusWith<Value> {
            const Value& v = args[0];
            if (v.nullish()) return nullValue();
            if (!v.isNumber()) {
                return Status(code == 28766 ? 28765 : 28765,
                              op + " only supports numeric types, not " + typeNameOf(v));
            }
            long double d = toDecimal(v.element()).toLongDouble();
            if (v.type() != BsonType::Decimal128) d = v.element().numberDouble();
            if (!(d > 0) && !std::isnan(d)) {
                return Status(code, op + "'s argument must be a positive number, but " +
                                        v.element().toString(false));
            }
            if (v.type() == BsonType::Decimal128) return decimalFromLongDouble(lfn(d));
            return Value::fromDouble(fn(static_cast<double>(d)));
        };
}

StatusWith<Value> logBase(const std::vector<Value>& args, const Variables&) {
    const Value& v = args[0];
    const Value& b = args[1];
    if (v.nullish() || b.nullish()) return nullValue();
    if (!v.isNumber())
        return Status(28756, "$log's argument must be numeric, not " + typeNameOf(v));
    if (!b.isNumber()) return Status(28757, "$log's base must be numeric, not " + typeNameOf(b));
    long double x = v.type() == BsonType::Decimal128 ? v.element().decimalValue().toLongDouble()
                                                     : v.element().numberDouble();
    long double base = b.type() == BsonType::Decimal128 ? b.element().decimalValue().toLongDouble()
                                                        : b.element().numberDouble();
    if (!(x > 0)) {
        return Status(
            28758, "$log's argument must be a positive number, but " + v.element().toString(false));
    }
    if (!(base > 0) || base == 1) {
        return Status(28759, "$log's base must be a positive number not equal to 1, but " +
                                 b.element().toString(false));
    }
    if (resultRank(v, b) == 3) return decimalFromLongDouble(std::log(x) / std::log(base));
    return Value::fromDouble(std::log(static_cast<double>(x)) /
                             std::log(static_cast<double>(base)));
}

// Values to reduce for the expression forms of $sum/$avg/...: one array argument means its
// elements; otherwise the arguments.
std::vector<Value> reduceInputs(const std::vector<Value>& args) {
    if (args.size() == 1 && args[0].isArray()) return args[0].arrayValues();
    return args;
}

StatusWith<Value> sumFn(const std::vector<Value>& args, const Variables&) {
    NumericSum sum;
    for (const auto& v : reduceInputs(args)) {
        if (v.isNumber()) sum.add(v.element());
    }
    return sum.result();
}

StatusWith<Value> avgFn(const std::vector<Value>& args, const Variables&) {
    NumericSum sum;
    int64_t n = 0;
    for (const auto& v : reduceInputs(args)) {
        if (v.isNumber()) {
            sum.add(v.element());
            ++n;
        }
    }
    if (n == 0) return nullValue();
    if (sum.rank() == 3) return decimalFromLongDouble(sum.asLongDouble() / n);
    Value total = sum.result();
    return Value::fromDouble(total.element().numberDouble() / static_cast<double>(n));
}

PositionalFn minMax(bool isMax) {
    return [isMax](const std::vector<Value>& args, const Variables&) -> StatusWith<Value> {
        Value best;
        for (const auto& v : reduceInputs(args)) {
            if (v.nullish()) continue;
            if (best.missing()) {
                best = v;
                continue;
            }
            int c = compareValues(v, best);
            if (isMax ? c > 0 : c < 0) best = v;
        }
        if (best.missing()) return nullValue();
        return best;
    };
}

PositionalFn stdDev(bool samp) {
    return [samp](const std::vector<Value>& args, const Variables&) -> StatusWith<Value> {
        double mean = 0, m2 = 0;
        int64_t n = 0;
        for (const auto& v : reduceInputs(args)) {
            if (!v.isNumber()) continue;
            double x = toDouble(v.element());
            ++n;
            double delta = x - mean;
            mean += delta / static_cast<double>(n);
            m2 += delta * (x - mean);
        }
        if (n == 0 || (samp && n == 1)) return nullValue();
        return Value::fromDouble(std::sqrt(m2 / static_cast<double>(samp ? n - 1 : n)));
    };
}

double log10d(double x) { return std::log10(x); }
long double log10l(long double x) { return std::log10(x); }
double lnd(double x) { return std::log(x); }
long double lnl(long double x) { return std::log(x); }
double expd(double x) { return std::exp(x); }
long double expl_(long double x) { return std::exp(x); }

// {$rand: {}}: a uniformly distributed double in [0, 1), new on every evaluation.
StatusWith<Value> randFn(const std::vector<Value>& args, const Variables&) {
    if (!args.empty() &&
        !(args[0].type() == BsonType::Object && args[0].element().objValue().isEmpty())) {
        return Status(3040501, "$rand does not currently accept arguments");
    }
    thread_local std::mt19937_64 rng{std::random_device{}()};
    return Value::fromDouble(std::uniform_real_distribution<double>(0.0, 1.0)(rng));
}

}  // namespace

void registerArithmetic(Registry& r) {
    r.positional("$add", 0, -1, add);
    r.positional("$subtract", 2, 2, subtract);
    r.positional("$multiply", 0, -1, multiply);
    r.positional("$divide", 2, 2, divide);
    r.positional("$mod", 2, 2, mod);
    r.positional("$abs", 1, 1, absFn);
    r.positional("$ceil", 1, 1, ceilFloor("$ceil", true));
    r.positional("$floor", 1, 1, ceilFloor("$floor", false));
    r.positional("$round", 1, 2, roundTrunc("$round", true));
    r.positional("$trunc", 1, 2, roundTrunc("$trunc", false));
    r.positional("$sqrt", 1, 1, sqrtFn);
    r.positional("$pow", 2, 2, powFn);
    r.positional("$exp", 1, 1, unaryDouble("$exp", expd, expl_));
    r.positional("$ln", 1, 1, logFn("$ln", 28766, lnd, lnl));
    r.positional("$log10", 1, 1, logFn("$log10", 28761, log10d, log10l));
    r.positional("$log", 2, 2, logBase);
    r.positional("$sum", 0, -1, sumFn);
    r.positional("$avg", 0, -1, avgFn);
    r.positional("$max", 0, -1, minMax(true));
    r.positional("$min", 0, -1, minMax(false));
    r.positional("$stdDevPop", 0, -1, stdDev(false));
    r.positional("$stdDevSamp", 0, -1, stdDev(true));
    r.positional("$rand", 0, 1, randFn);
}

}  // namespace tessera::query::expr
