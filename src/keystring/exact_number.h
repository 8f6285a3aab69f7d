#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "bson/bson_types.h"

namespace tessera::keystring {

// A finite number written exactly in decimal: (-1)^negative * 0.d1d2d3... * 10^exponent, with
// no leading or trailing zero digits. Zero has empty `digits`. Every int64, every finite double
// and every finite decimal128 has exactly one such form, so two numbers of any types compare
// exactly through it.
struct ExactDecimal {
    bool negative = false;
    std::string digits;  // '1'..'9' first and last
    int32_t exponent = 0;

    bool isZero() const { return digits.empty(); }
    static ExactDecimal fromInt64(int64_t v);
    static ExactDecimal fromDouble(double d);  // d finite
    // `d` finite (not NaN, not infinite).
    static ExactDecimal fromDecimal128(const bson::Decimal128& d);
    // The integer value, when this is an integer that fits int64.
    std::optional<int64_t> toInt64() const;
    // A string libbson parses back into the same decimal128 ("-123E-5").
    std::string toDecimalString() const;
};

// <0, 0, >0 by numeric value.
int compareExact(const ExactDecimal& a, const ExactDecimal& b);

// The position of a number relative to the doubles: `floor` is the largest double <= x (with
// -0.0 folded into +0.0; -inf when x is below -DBL_MAX), and `exact` says x == floor.
struct DoubleFloor {
    double floor = 0;
    bool exact = true;
};
DoubleFloor doubleFloorOfInt64(int64_t v);
DoubleFloor doubleFloorOfDecimal(const ExactDecimal& x);

}  // namespace tessera::keystring
