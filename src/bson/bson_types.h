#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::bson {

// BSON element type bytes (bsonspec.org).
enum class BsonType : int8_t {
    MinKey = -1,
    EOO = 0,
    Double = 1,
    String = 2,
    Object = 3,
    Array = 4,
    BinData = 5,
    Undefined = 6,
    ObjectId = 7,
    Bool = 8,
    Date = 9,
    Null = 10,
    Regex = 11,
    DBPointer = 12,
    Code = 13,
    Symbol = 14,
    CodeWScope = 15,
    Int32 = 16,
    Timestamp = 17,
    Int64 = 18,
    Decimal128 = 19,
    MaxKey = 127,
};

// MongoDB's type name as `$type` accepts and error messages print ("double", "objectId", ...).
std::string_view typeName(BsonType t);
// True for the byte values above.
bool isValidType(int8_t t);

// A 12-byte ObjectId.
struct ObjectId {
    uint8_t bytes[12] = {};
    static ObjectId generate();
    std::string toHex() const;
    auto operator<=>(const ObjectId&) const = default;
};

// IEEE 754-2008 decimal128 in BID encoding, as BSON stores it (little-endian low, high).
struct Decimal128 {
    uint64_t low = 0;
    uint64_t high = 0;
    static Decimal128 fromString(std::string_view s);  // NaN on bad input
    static Decimal128 fromDouble(double d);
    static Decimal128 fromInt64(int64_t v);
    std::string toString() const;
    bool isNaN() const;
    bool isInfinite() const;
    bool isNegative() const;
    // The value as long double (exact for integers below 2^64 and most short decimals).
    long double toLongDouble() const;
    auto operator<=>(const Decimal128&) const = default;
};

}  // namespace tessera::bson
