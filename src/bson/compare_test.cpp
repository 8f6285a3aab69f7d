#include "bson/compare.h"

#include <gtest/gtest.h>

#include <limits>

#include "bson/bson_builder.h"

namespace tessera::bson {
namespace {

// Each document {v: X}; the list is in ascending MongoDB order; equal neighbours are marked.
int cmpValues(const BsonObj& a, const BsonObj& b) { return compareElementValues(a["v"], b["v"]); }

TEST(Compare, CrossTypeOrder) {
    std::vector<std::string> ascending = {
        R"({"v": {"$minKey": 1}})",
        R"({"v": null})",
        R"({"v": {"$numberDouble": "NaN"}})",
        R"({"v": -1e300})",
        R"({"v": {"$numberLong": "-5"}})",
        R"({"v": 1})",
        R"({"v": 1.5})",
        R"({"v": {"$numberDecimal": "2"}})",
        R"({"v": {"$numberLong": "9007199254740993"}})",
        R"({"v": ""})",
        R"({"v": "a"})",
        R"({"v": "b"})",
        R"({"v": {}})",
        R"({"v": {"a": 1}})",
        R"({"v": []})",
        R"({"v": [1]})",
        R"({"v": {"$binary": {"base64": "AQ==", "subType": "00"}}})",
        R"({"v": {"$oid": "000000000000000000000000"}})",
        R"({"v": false})",
        R"({"v": true})",
        R"({"v": {"$date": {"$numberLong": "-1"}}})",
        R"({"v": {"$date": {"$numberLong": "1"}}})",
        R"({"v": {"$timestamp": {"t": 1, "i": 1}}})",
        R"({"v": {"$regularExpression": {"pattern": "a", "options": ""}}})",
        R"({"v": {"$code": "x"}})",
        R"({"v": {"$maxKey": 1}})",
    };
    for (size_t i = 0; i + 1 < ascending.size(); ++i) {
        BsonObj a = fromJson(ascending[i]), b = fromJson(ascending[i + 1]);
        EXPECT_LT(cmpValues(a, b), 0) << ascending[i] << " < " << ascending[i + 1];
        EXPECT_GT(cmpValues(b, a), 0) << ascending[i + 1] << " > " << ascending[i];
    }
}

TEST(Compare, NumbersCompareByValueAcrossTypes) {
    EXPECT_EQ(cmpValues(fromJson(R"({"v": 1})"), fromJson(R"({"v": 1.0})")), 0);
    EXPECT_EQ(cmpValues(fromJson(R"({"v": {"$numberLong": "1"}})"),
                        fromJson(R"({"v": {"$numberDecimal": "1.000"}})")),
              0);
    EXPECT_EQ(cmpValues(fromJson(R"({"v": -0.0})"), fromJson(R"({"v": 0})")), 0);
    // 2^53 + 1 is not a double: the long must compare above the double 2^53.
    EXPECT_GT(cmpValues(fromJson(R"({"v": {"$numberLong": "9007199254740993"}})"),
                        fromJson(R"({"v": 9007199254740992.0})")),
              0);
    EXPECT_EQ(cmpValues(fromJson(R"({"v": null})"), fromJson(R"({"v": null})")), 0);
}

TEST(Compare, ObjectsCompareFieldNamesAndLength) {
    EXPECT_LT(compareObjects(fromJson(R"({"a": 1})"), fromJson(R"({"b": 1})")), 0);
    EXPECT_LT(compareObjects(fromJson(R"({"a": 1})"), fromJson(R"({"a": 1, "b": 0})")), 0);
    EXPECT_EQ(compareObjects(fromJson(R"({"a": 1})"), fromJson(R"({"a": 1.0})")), 0);
    EXPECT_LT(compareObjects(fromJson(R"({"a": 1})"), fromJson(R"({"a": "1"})")), 0);
}

}  // namespace

// A coefficient above 10^34 - 1 is non-canonical: its value is zero (IEEE 754-2008), as
// MongoDB reads it; it was printed with a 35th digit that the keystring could not decode.
TEST(Decimal128Canonical, ANonCanonicalCoefficientReadsAsZero) {
    // Coefficient 2^113 - 2^64 (above 10^34 - 1, below 2^113), exponent 6735 - 6176 = 559.
    Decimal128 d;
    d.high = (uint64_t{0x1a4f} << 49) | (0x2000000000000ull - 1);
    d.low = 0;
    EXPECT_EQ(d.toString().find_first_not_of("0E+-0123456789"), std::string::npos);
    EXPECT_EQ(d.toString()[0], '0') << d.toString();
    Decimal128 zero = Decimal128::fromString("0");
    bson::BsonBuilder a, b;
    a.appendDecimal("x", d);
    b.appendDecimal("x", zero);
    EXPECT_EQ(compareElementValues(a.obj().firstElement(), b.obj().firstElement()), 0);
    // The largest canonical coefficient is still itself.
    Decimal128 max = Decimal128::fromString("9999999999999999999999999999999999");
    EXPECT_EQ(max.toString(), "9999999999999999999999999999999999");
}

}  // namespace tessera::bson
