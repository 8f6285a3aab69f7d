#include "query/update_arithmetic.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "query/update_document.h"

namespace tessera::query {

using bson::BsonElement;
using bson::BsonType;
using bson::Decimal128;

namespace {

using u128 = unsigned __int128;

constexpr int kExponentBias = 6176;
constexpr int kMaxExponent = 6111;
constexpr int kMinExponent = -6176;

u128 pow10(int n) {
    u128 r = 1;
    for (int i = 0; i < n; ++i) r *= 10;
    return r;
}

const u128 kMaxCoefficient = pow10(34);  // exclusive

struct Unpacked {
    bool negative = false;
    bool nan = false;
    bool inf = false;
    int exponent = 0;
    u128 coefficient = 0;
};

Unpacked unpack(const Decimal128& d) {
    Unpacked u;
    u.negative = (d.high >> 63) != 0;
    uint64_t comb = (d.high >> 58) & 0x1f;
    if (comb == 0x1f) {
        u.nan = true;
        return u;
    }
    if (comb == 0x1e) {
        u.inf = true;
        return u;
    }
    if (((d.high >> 61) & 3) == 3) {
        // Coefficients in this form exceed 10^34 - 1: non-canonical, read as zero.
        u.exponent = static_cast<int>((d.high >> 47) & 0x3fff) - kExponentBias;
        u.coefficient = 0;
        return u;
    }
    u.exponent = static_cast<int>((d.high >> 49) & 0x3fff) - kExponentBias;
    u.coefficient = (static_cast<u128>(d.high & ((1ull << 49) - 1)) << 64) | d.low;
    if (u.coefficient >= kMaxCoefficient) u.coefficient = 0;
    return u;
}

Decimal128 nanValue() { return Decimal128{0, 0x7c00000000000000ull}; }
Decimal128 infValue(bool negative) {
    return Decimal128{0, 0x7800000000000000ull | (negative ? (1ull << 63) : 0)};
}

// Drops `digits` low decimal digits with round-half-even; `sticky` says that non-zero digits
// below the dropped ones were already discarded.
u128 divRound(u128 c, int digits, bool* sticky) {
    if (digits <= 0) return c;
    for (int i = 0; i < digits - 1; ++i) {
        if (c % 10 != 0) *sticky = true;
        c /= 10;
    }
    u128 q = c / 10;
    unsigned r = static_cast<unsigned>(c % 10);
    if (r > 5 || (r == 5 && (*sticky || (q & 1)))) ++q;
    if (r != 0) *sticky = true;
    return q;
}

int digitsOf(u128 c) {
    int n = 0;
    while (c != 0) {
        c /= 10;
        ++n;
    }
    return n;
}

Decimal128 pack(bool negative, u128 coefficient, int exponent, bool sticky = false) {
    int drop = std::max(digitsOf(coefficient) - 34, kMinExponent - exponent);
    if (drop > 0) {
        coefficient = drop > 40 ? 0 : divRound(coefficient, drop, &sticky);
        exponent += drop;
        if (coefficient >= kMaxCoefficient) {  // rounding carried into a 35th digit
            coefficient /= 10;
            ++exponent;
        }
    }
    while (exponent > kMaxExponent && coefficient != 0 && coefficient * 10 < kMaxCoefficient) {
        coefficient *= 10;
        --exponent;
    }
    if (exponent > kMaxExponent) {
        if (coefficient == 0) {
            exponent = kMaxExponent;
        } else {
            return infValue(negative);
        }
    }
    Decimal128 d;
    d.low = static_cast<uint64_t>(coefficient);
    d.high = (negative ? (1ull << 63) : 0) |
             (static_cast<uint64_t>(exponent + kExponentBias) << 49) |
             static_cast<uint64_t>(coefficient >> 64);
    return d;
}

Decimal128 toDecimal(const BsonElement& e) {
    switch (e.type()) {
        case BsonType::Decimal128:
            return e.decimalValue();
        case BsonType::Double:
            return Decimal128::fromDouble(e.doubleValue());
        default:
            return Decimal128::fromInt64(e.numberLong());
    }
}

int typeRank(BsonType t) {
    switch (t) {
        case BsonType::Int32:
            return 0;
        case BsonType::Int64:
            return 1;
        case BsonType::Double:
            return 2;
        default:
            return 3;
    }
}

}  // namespace

Decimal128 decimalAdd(Decimal128 a, Decimal128 b) {
    Unpacked x = unpack(a), y = unpack(b);
    if (x.nan || y.nan) return nanValue();
    if (x.inf || y.inf) {
        if (x.inf && y.inf && x.negative != y.negative) return nanValue();
        return infValue(x.inf ? x.negative : y.negative);
    }
    if (x.exponent < y.exponent) std::swap(x, y);
    // x has the larger exponent: scale it up while it fits, else round y down.
    const u128 limit = pow10(37);
    while (x.exponent > y.exponent && x.coefficient < limit) {
        x.coefficient *= 10;
        --x.exponent;
    }
    bool sticky = false;
    if (x.exponent > y.exponent) {
        int diff = x.exponent - y.exponent;
        if (diff > 38) {
            sticky = y.coefficient != 0;
            y.coefficient = 0;
        } else {
            // Truncate (remembering lost digits): the sum is rounded again to 34 digits
            // at least three digits higher, where only the sticky information matters.
            u128 scale = pow10(diff);
            sticky = y.coefficient % scale != 0;
            y.coefficient /= scale;
        }
        y.exponent = x.exponent;
    }
    bool negative;
    u128 c;
    if (x.negative == y.negative) {
        negative = x.negative;
        c = x.coefficient + y.coefficient;
    } else if (x.coefficient >= y.coefficient) {
        negative = x.negative;
        c = x.coefficient - y.coefficient;
    } else {
        negative = y.negative;
        c = y.coefficient - x.coefficient;
    }
    if (c == 0) negative = x.negative && y.negative;
    return pack(negative, c, x.exponent, sticky);
}

Decimal128 decimalMul(Decimal128 a, Decimal128 b) {
    Unpacked x = unpack(a), y = unpack(b);
    bool negative = x.negative != y.negative;
    if (x.nan || y.nan) return nanValue();
    if (x.inf || y.inf) {
        if ((!x.inf && x.coefficient == 0) || (!y.inf && y.coefficient == 0)) return nanValue();
        return infValue(negative);
    }
    int exponent = x.exponent + y.exponent;
    bool sticky = false;
    // Keep the product within 128 bits (38 digits): drop low digits of the larger operand.
    while (digitsOf(x.coefficient) + digitsOf(y.coefficient) > 38) {
        Unpacked& big = digitsOf(x.coefficient) >= digitsOf(y.coefficient) ? x : y;
        bool st = false;
        u128 q = big.coefficient / 10;
        st = big.coefficient % 10 != 0;
        sticky = sticky || st;
        big.coefficient = q;
        ++exponent;
    }
    u128 c = x.coefficient * y.coefficient;
    return pack(negative, c, exponent, sticky);
}

bool applyArithmetic(ArithOp op, const BsonElement& a, const BsonElement& b, bson::BsonBuilder& out,
                     std::string_view name) {
    int rank = std::max(typeRank(a.type()), typeRank(b.type()));
    if (op == ArithOp::kAnd || op == ArithOp::kOr || op == ArithOp::kXor) {
        int64_t x = a.type() == BsonType::Int32 ? a.int32Value() : a.int64Value();
        int64_t y = b.type() == BsonType::Int32 ? b.int32Value() : b.int64Value();
        int64_t r = op == ArithOp::kAnd ? (x & y) : op == ArithOp::kOr ? (x | y) : (x ^ y);
        if (rank == 0) {
            out.appendInt32(name, static_cast<int32_t>(r));
        } else {
            out.appendInt64(name, r);
        }
        return true;
    }
    const bool add = op == ArithOp::kAdd;
    switch (rank) {
        case 0: {
            int64_t r = add ? int64_t{a.int32Value()} + b.int32Value()
                            : int64_t{a.int32Value()} * b.int32Value();
            if (r >= std::numeric_limits<int32_t>::min() &&
                r <= std::numeric_limits<int32_t>::max()) {
                out.appendInt32(name, static_cast<int32_t>(r));
            } else {
                out.appendInt64(name, r);
            }
            return true;
        }
        case 1: {
            int64_t x = a.numberLong(), y = b.numberLong(), r = 0;
            bool overflow =
                add ? __builtin_add_overflow(x, y, &r) : __builtin_mul_overflow(x, y, &r);
            if (overflow) return false;
            out.appendInt64(name, r);
            return true;
        }
        case 2: {
            double x = a.numberDouble(), y = b.numberDouble();
            out.appendDouble(name, add ? x + y : x * y);
            return true;
        }
        default: {
            Decimal128 x = toDecimal(a), y = toDecimal(b);
            out.appendDecimal(name, add ? decimalAdd(x, y) : decimalMul(x, y));
            return true;
        }
    }
}

std::string safeNumDebugString(const BsonElement& e) {
    switch (e.type()) {
        case BsonType::Int32:
            return "(NumberInt)" + mongoValueString(e);
        case BsonType::Int64:
            return "(NumberLong)" + mongoValueString(e);
        case BsonType::Double:
            return "(NumberDouble)" + mongoValueString(e);
        case BsonType::Decimal128:
            return "(NumberDecimal)" + e.decimalValue().toString();
        default:
            return "(EOO)";
    }
}

}  // namespace tessera::query
