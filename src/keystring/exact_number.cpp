#include "keystring/exact_number.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string_view>

namespace tessera::keystring {
namespace {

static_assert(std::numeric_limits<long double>::digits >= 64,
              "int64 -> double floor computation needs an exact long double for int64");

// Parses "[-]ddd[.ddd][(e|E)[+-]ddd]" (the forms printf("%e") and libbson's decimal128 to_string
// produce) into the canonical exact form.
ExactDecimal parseScientific(std::string_view s) {
    ExactDecimal out;
    size_t i = 0;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) out.negative = s[i++] == '-';
    std::string digits;
    int64_t fractionDigits = 0;
    bool afterPoint = false;
    for (; i < s.size(); ++i) {
        char c = s[i];
        if (c == '.') {
            afterPoint = true;
        } else if (c >= '0' && c <= '9') {
            digits.push_back(c);
            if (afterPoint) ++fractionDigits;
        } else {
            break;
        }
    }
    int64_t exp = 0;
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E'))
        exp = std::strtoll(s.data() + i + 1, nullptr, 10);
    // value = integer(digits) * 10^(exp - fractionDigits)
    size_t firstNonZero = digits.find_first_not_of('0');
    if (firstNonZero == std::string::npos) {
        out.negative = false;
        return out;  // zero
    }
    int64_t n = static_cast<int64_t>(digits.size() - firstNonZero);
    out.exponent = static_cast<int32_t>(n + exp - fractionDigits);
    size_t lastNonZero = digits.find_last_not_of('0');
    out.digits = digits.substr(firstNonZero, lastNonZero - firstNonZero + 1);
    return out;
}

int compareMagnitude(const ExactDecimal& a, const ExactDecimal& b) {
    if (a.isZero() || b.isZero()) return a.isZero() == b.isZero() ? 0 : (a.isZero() ? -1 : 1);
    if (a.exponent != b.exponent) return a.exponent < b.exponent ? -1 : 1;
    int c = a.digits.compare(b.digits);  // shorter prefix is smaller: trailing zeros are stripped
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

}  // namespace

ExactDecimal ExactDecimal::fromInt64(int64_t v) {
    uint64_t mag = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    std::string s = std::to_string(mag);
    ExactDecimal out = parseScientific(s);
    out.negative = v < 0;
    return out;
}

ExactDecimal ExactDecimal::fromDouble(double d) {
    // glibc prints the exact binary value; 767 significant digits cover every double.
    char buf[820];
    std::snprintf(buf, sizeof buf, "%.767e", std::fabs(d));
    ExactDecimal out = parseScientific(buf);
    out.negative = !out.isZero() && std::signbit(d);
    return out;
}

ExactDecimal ExactDecimal::fromDecimal128(const bson::Decimal128& d) {
    return parseScientific(d.toString());
}

std::optional<int64_t> ExactDecimal::toInt64() const {
    if (isZero()) return int64_t{0};
    if (exponent < static_cast<int32_t>(digits.size()) || exponent > 19) return std::nullopt;
    unsigned __int128 v = 0;
    for (int32_t i = 0; i < exponent; ++i) {
        int digit = i < static_cast<int32_t>(digits.size()) ? digits[i] - '0' : 0;
        v = v * 10 + digit;
    }
    unsigned __int128 limit = static_cast<unsigned __int128>(1) << 63;
    if (negative) {
        if (v > limit) return std::nullopt;
        return static_cast<int64_t>(0 - static_cast<uint64_t>(v));
    }
    if (v >= limit) return std::nullopt;
    return static_cast<int64_t>(v);
}

std::string ExactDecimal::toDecimalString() const {
    if (isZero()) return "0";
    int64_t scale = static_cast<int64_t>(exponent) - static_cast<int64_t>(digits.size());
    std::string out = negative ? "-" : "";
    out += digits;
    out += "E";
    out += scale >= 0 ? "+" : "";
    out += std::to_string(scale);
    return out;
}

int compareExact(const ExactDecimal& a, const ExactDecimal& b) {
    bool aNeg = a.negative && !a.isZero(), bNeg = b.negative && !b.isZero();
    if (aNeg != bNeg) return aNeg ? -1 : 1;
    int c = compareMagnitude(a, b);
    return aNeg ? -c : c;
}

DoubleFloor doubleFloorOfInt64(int64_t v) {
    double d = static_cast<double>(v);  // round to nearest
    long double exact = static_cast<long double>(v);
    long double rounded = d;
    if (rounded == exact) return {d == 0 ? 0.0 : d, true};
    if (rounded > exact) d = std::nextafter(d, -std::numeric_limits<double>::infinity());
    return {d, false};
}

DoubleFloor doubleFloorOfDecimal(const ExactDecimal& x) {
    if (x.isZero()) return {0.0, true};
    std::string text = x.toDecimalString();
    double d = std::strtod(text.c_str(), nullptr);  // correctly rounded (glibc), may be +-inf/0
    int c;
    if (std::isinf(d)) {
        c = d > 0 ? -1 : 1;
    } else {
        c = compareExact(x, ExactDecimal::fromDouble(d));
    }
    if (c == 0) return {d == 0 ? 0.0 : d, true};
    if (c < 0) d = std::nextafter(d, -std::numeric_limits<double>::infinity());
    if (d == 0) d = 0.0;  // fold -0.0
    return {d, false};
}

}  // namespace tessera::keystring
