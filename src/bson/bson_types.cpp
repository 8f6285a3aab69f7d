#include "bson/bson_types.h"

#include <bson/bson.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace tessera::bson {

std::string_view typeName(BsonType t) {
    switch (t) {
        case BsonType::MinKey:
            return "minKey";
        case BsonType::EOO:
            return "missing";
        case BsonType::Double:
            return "double";
        case BsonType::String:
            return "string";
        case BsonType::Object:
            return "object";
        case BsonType::Array:
            return "array";
        case BsonType::BinData:
            return "binData";
        case BsonType::Undefined:
            return "undefined";
        case BsonType::ObjectId:
            return "objectId";
        case BsonType::Bool:
            return "bool";
        case BsonType::Date:
            return "date";
        case BsonType::Null:
            return "null";
        case BsonType::Regex:
            return "regex";
        case BsonType::DBPointer:
            return "dbPointer";
        case BsonType::Code:
            return "javascript";
        case BsonType::Symbol:
            return "symbol";
        case BsonType::CodeWScope:
            return "javascriptWithScope";
        case BsonType::Int32:
            return "int";
        case BsonType::Timestamp:
            return "timestamp";
        case BsonType::Int64:
            return "long";
        case BsonType::Decimal128:
            return "decimal";
        case BsonType::MaxKey:
            return "maxKey";
    }
    return "unknown";
}

bool isValidType(int8_t t) { return (t >= 0 && t <= 19) || t == -1 || t == 127; }

ObjectId ObjectId::generate() {
    bson_oid_t oid;
    bson_oid_init(&oid, nullptr);
    ObjectId out;
    std::memcpy(out.bytes, oid.bytes, 12);
    return out;
}

std::string ObjectId::toHex() const {
    static const char* kHex = "0123456789abcdef";
    std::string out(24, '0');
    for (int i = 0; i < 12; ++i) {
        out[2 * i] = kHex[bytes[i] >> 4];
        out[2 * i + 1] = kHex[bytes[i] & 0xf];
    }
    return out;
}

Decimal128 Decimal128::fromString(std::string_view s) {
    std::string copy(s);
    bson_decimal128_t dec;
    if (!bson_decimal128_from_string(copy.c_str(), &dec)) {
        bson_decimal128_from_string("NaN", &dec);
    }
    return Decimal128{dec.low, dec.high};
}

Decimal128 Decimal128::fromDouble(double d) {
    if (std::isnan(d)) return fromString("NaN");
    if (std::isinf(d)) return fromString(d > 0 ? "Infinity" : "-Infinity");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.15g", d);  // MongoDB converts doubles with 15 digits
    return fromString(buf);
}

Decimal128 Decimal128::fromInt64(int64_t v) { return fromString(std::to_string(v)); }

namespace {

// IEEE 754-2008: a coefficient above 10^34 - 1 is non-canonical and its value is zero (libbson
// prints the coefficient as it is up to 2^113, a 35th digit no reader accepts). Such a decimal
// reads as zero with its sign and exponent, as MongoDB's decimal library reads it.
bson_decimal128_t canonical(uint64_t low, uint64_t high) {
    constexpr uint64_t kMaxCoefficientHigh = 0x1ed09bead87c0ull;  // 10^34 - 1, high 49 bits
    constexpr uint64_t kMaxCoefficientLow = 0x378d8e63ffffffffull;
    const bool firstForm = (high & 0x6000000000000000ull) != 0x6000000000000000ull;
    const uint64_t coefficientHigh = high & 0x1ffffffffffffull;
    if (firstForm && (coefficientHigh > kMaxCoefficientHigh ||
                      (coefficientHigh == kMaxCoefficientHigh && low > kMaxCoefficientLow))) {
        return bson_decimal128_t{0, high & 0xfffe000000000000ull};
    }
    return bson_decimal128_t{low, high};
}

}  // namespace

std::string Decimal128::toString() const {
    bson_decimal128_t dec = canonical(low, high);
    char buf[BSON_DECIMAL128_STRING];
    bson_decimal128_to_string(&dec, buf);
    return buf;
}

bool Decimal128::isNaN() const { return (high & 0x7c00000000000000ull) == 0x7c00000000000000ull; }

bool Decimal128::isInfinite() const {
    return (high & 0x7c00000000000000ull) == 0x7800000000000000ull;
}

bool Decimal128::isNegative() const { return (high >> 63) != 0; }

long double Decimal128::toLongDouble() const {
    if (isNaN()) return std::nanl("");
    if (isInfinite()) return isNegative() ? -HUGE_VALL : HUGE_VALL;
    std::string s = toString();
    return std::strtold(s.c_str(), nullptr);
}

}  // namespace tessera::bson
