#include "placement/hasher.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "bson/bson_builder.h"

namespace tessera::placement {
namespace {

using bson::BsonBuilder;
using bson::BsonObj;

// Vectors from MongoDB's src/mongo/db/hasher_test.cpp (BSONElementHasher::hash64, seed 0), which
// MongoDB keeps to guarantee that hashed indexes and hashed shard keys never change.
template <typename F>
int64_t hashOf(F&& append) {
    BsonBuilder b;
    append(b);
    BsonObj o = b.obj();
    return hashElement(o.firstElement());
}

int64_t hashJson(const char* json) { return hashElement(bson::fromJson(json).firstElement()); }

TEST(Hasher, IntLongAndDoubleSquashToTheSameHash) {
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendInt32("check", 42); }), -944302157085130861LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendDouble("check", 42.123); }),
              -944302157085130861LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendInt64("check", 42); }), -944302157085130861LL);

    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendInt32("check", 0); }), 4854801880128277513LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendDouble("check", 0.456); }),
              4854801880128277513LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) {
                  b.appendDouble("check", std::numeric_limits<double>::quiet_NaN());
              }),
              4854801880128277513LL);

    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendInt32("check", 1); }), 5902408780260971510LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendDouble("check", 1.0); }), 5902408780260971510LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendDouble("check", 1.987); }),
              5902408780260971510LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendInt64("check", 1); }), 5902408780260971510LL);
    EXPECT_EQ(
        hashOf([](BsonBuilder& b) { b.appendDecimal("check", bson::Decimal128::fromInt64(1)); }),
        5902408780260971510LL);

    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendInt32("check", -1); }), 1140205862565771219LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendDouble("check", -1.789); }),
              1140205862565771219LL);

    constexpr int32_t kIntMin = std::numeric_limits<int32_t>::min();
    constexpr int32_t kIntMax = std::numeric_limits<int32_t>::max();
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendInt32("check", kIntMin); }),
              6165898260261354870LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendDouble("check", kIntMin); }),
              6165898260261354870LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendInt64("check", kIntMax); }),
              1143184177162245883LL);
}

TEST(Hasher, LargeDoublesClampToInt64Bounds) {
    EXPECT_EQ(
        hashOf([](BsonBuilder& b) { b.appendDouble("check", std::numeric_limits<double>::max()); }),
        921523596458303250LL);
    EXPECT_EQ(
        hashOf([](BsonBuilder& b) { b.appendInt64("check", std::numeric_limits<int64_t>::max()); }),
        921523596458303250LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) {
                  b.appendDouble("check", -std::numeric_limits<double>::max());
              }),
              4532067210535695462LL);
    EXPECT_EQ(
        hashOf([](BsonBuilder& b) { b.appendInt64("check", std::numeric_limits<int64_t>::min()); }),
        4532067210535695462LL);
    // safeNumberLongForHash: the double 2^63 hashes as INT64_MIN, not INT64_MAX.
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendDouble("check", 9223372036854775808.0); }),
              4532067210535695462LL);
}

TEST(Hasher, SpecialValues) {
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendMinKey("check"); }), 7961148599568647290LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendMaxKey("check"); }), 5504842513779440750LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendUndefined("check"); }), 40158834000849533LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendNull("check"); }), 2338878944348059895LL);
}

TEST(Hasher, StringsAndSymbols) {
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendString("check", "abc"); }),
              8478485326885698097LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendSymbol("check", "abc"); }),
              8478485326885698097LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendString("check", ""); }), 2049396243249673340LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendSymbol("check", ""); }), 2049396243249673340LL);
}

TEST(Hasher, ObjectsAndArrays) {
    EXPECT_EQ(hashJson(R"({"check": {"a": "abc", "b": {"$numberLong": "123"}}})"),
              4771603801758380216LL);
    EXPECT_EQ(hashJson(R"({"check": {}})"), 7980500913326740417LL);
    EXPECT_EQ(hashJson(R"({"check": ["bar", "baz", "qux"]})"), -2938911267422831539LL);
    EXPECT_EQ(hashJson(R"({"check": []})"), 8849948234993459283LL);
    // Numbers are squashed inside documents too; field names and grouping matter.
    EXPECT_EQ(hashJson(R"({"x": {"a": 3, "b": [3.1, {"c": 3}]}})"),
              hashJson(R"({"x": {"a": 3.1, "b": [3, {"c": 3.0}]}})"));
    EXPECT_NE(hashJson(R"({"x": {"a": {}, "b": 1}})"), hashJson(R"({"x": {"a": {"b": 1}}})"));
    EXPECT_NE(hashJson(R"({"a": {"0": 0, "1": 1}})"), hashJson(R"({"a": [0, 1]})"));
}

TEST(Hasher, BinaryObjectIdBoolDate) {
    const char bytes[] = {0, 1, 2, 3, 4, 6};
    EXPECT_EQ(hashOf([&](BsonBuilder& b) {
                  b.appendBinary("check", 0, {bytes, 6});
              }),
              7252465090394235301LL);
    EXPECT_EQ(hashOf([&](BsonBuilder& b) {
                  b.appendBinary("check", 128, {bytes, 6});
              }),
              5736670452907618262LL);
    const char uuid[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    EXPECT_EQ(hashOf([&](BsonBuilder& b) {
                  b.appendBinary("check", 4, {uuid, 16});
              }),
              6084661258071355978LL);

    EXPECT_EQ(hashJson(R"({"check": {"$oid": "010203040506070809101112"}})"),
              -5588663249627035708LL);
    EXPECT_EQ(hashJson(R"({"check": {"$oid": "000000000000000000000000"}})"),
              -4293118519463489418LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendBool("check", true); }), 6405873908747105701LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendBool("check", false); }), 6289544573401934092LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendDate("check", 0x5566778811223344LL); }),
              4476222765095560467LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendDate("check", 0); }), -1178696894582842035LL);
    // Timestamps have their own canonical type (47) since MongoDB 3.0: unlike the 2.x vectors,
    // a Timestamp no longer hashes like the Date with the same bytes.
    EXPECT_NE(hashOf([](BsonBuilder& b) { b.appendTimestamp("check", 0); }),
              -1178696894582842035LL);
}

TEST(Hasher, RegexDbPointerCode) {
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendRegex("check", "mongodb", ""); }),
              -7275792090268217043LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendRegex("check", ".*", "i"); }),
              7095855029187981886LL);
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendCode("check", "func f() { return 1; }"); }),
              6861638109178014270LL);
    EXPECT_EQ(
        hashJson(
            R"({"check": {"$dbPointer": {"$ref": "c", "$id": {"$oid": "010203040506070809101112"}}}})"),
        940175826736461384LL);
    EXPECT_EQ(
        hashJson(
            R"({"check": {"$dbPointer": {"$ref": "db.c", "$id": {"$oid": "010203040506070809101112"}}}})"),
        2426768198104018194LL);
    EXPECT_EQ(hashJson(R"({"check": {"$code": "func f() { return 1; }", "$scope": {"c": true}}})"),
              501342939894575968LL);
}

TEST(Hasher, FieldNameIsNotHashedAndSeedMatters) {
    EXPECT_EQ(hashOf([](BsonBuilder& b) { b.appendInt32("x", 7); }),
              hashOf([](BsonBuilder& b) { b.appendInt32("y", 7); }));
    BsonObj o = bson::fromJson(R"({"a": 4})");
    EXPECT_NE(hashElement(o.firstElement(), 0), hashElement(o.firstElement(), 1));
    EXPECT_NE(hashJson(R"({"a": 3})"), hashJson(R"({"a": "3"})"));
}

TEST(Hasher, DecimalsRoundHalfToEven) {
    auto dec = [](const char* s) {
        return hashOf(
            [&](BsonBuilder& b) { b.appendDecimal("d", bson::Decimal128::fromString(s)); });
    };
    auto i64 = [](int64_t v) { return hashOf([&](BsonBuilder& b) { b.appendInt64("d", v); }); };
    EXPECT_EQ(dec("2.5"), i64(2));
    EXPECT_EQ(dec("3.5"), i64(4));
    EXPECT_EQ(dec("-7"), i64(-7));
    EXPECT_EQ(dec("NaN"), i64(0));
    EXPECT_EQ(dec("1E+30"), i64(std::numeric_limits<int64_t>::max()));
}

}  // namespace
}  // namespace tessera::placement
