#pragma once

#include <string>
#include <string_view>

#include "bson/bson_builder.h"
#include "bson/bson_obj.h"

namespace tessera::query {

// MongoDB's SafeNum arithmetic for $inc, $mul and $bit.
//
// Result type is the widest operand type (int32 < int64 < double < decimal128); int32 results
// that overflow become int64; int64 overflow makes the result invalid (the caller reports
// BadValue "Failed to apply $inc operations to current value ..."). Decimal arithmetic is exact
// up to 34 digits and rounds half-to-even beyond.
enum class ArithOp { kAdd, kMul, kAnd, kOr, kXor };

// Appends `a op b` as `name` to `out`; returns false (appending nothing) when invalid.
bool applyArithmetic(ArithOp op, const bson::BsonElement& a, const bson::BsonElement& b,
                     bson::BsonBuilder& out, std::string_view name);

// SafeNum::debugString: "(NumberInt)5", "(NumberLong)5", "(NumberDouble)1.5", "(NumberDecimal)1".
std::string safeNumDebugString(const bson::BsonElement& e);

bson::Decimal128 decimalAdd(bson::Decimal128 a, bson::Decimal128 b);
bson::Decimal128 decimalMul(bson::Decimal128 a, bson::Decimal128 b);

}  // namespace tessera::query
