#include <gtest/gtest.h>

#include "bson/bson_builder.h"
#include "bson/bson_obj.h"

namespace tessera::bson {
namespace {

TEST(BsonBuilder, BuildsNestedDocumentsInPlace) {
    BsonBuilder b;
    b.append("ok", 1.0);
    b.startObject("cursor").append("id", int64_t{42}).append("ns", "db.c");
    b.startArray("firstBatch").append("0", 1).append("1", "two").end();
    b.end();
    b.appendNull("n");
    BsonObj obj = b.obj();
    EXPECT_EQ(
        obj.toJson(),
        R"({ "ok" : 1.0, "cursor" : { "id" : 42, "ns" : "db.c", "firstBatch" : [ 1, "two" ] }, "n" : null })");
    EXPECT_EQ(obj["cursor"].objValue()["id"].int64Value(), 42);
    EXPECT_EQ(obj["cursor"].objValue()["firstBatch"].objValue().nFields(), 2u);
    EXPECT_TRUE(obj["n"].isNull());
    EXPECT_TRUE(obj["missing"].eoo());
}

TEST(BsonBuilder, ReusableAfterObj) {
    BsonBuilder b;
    b.append("a", 1);
    BsonObj first = b.obj();
    b.append("b", 2);
    BsonObj second = b.obj();
    EXPECT_EQ(first.toJson(), R"({ "a" : 1 })");
    EXPECT_EQ(second.toJson(), R"({ "b" : 2 })");
}

TEST(BsonBuilder, ArrayBuilderNumbersKeys) {
    BsonArrayBuilder arr;
    arr.append(1).append("x").appendNull();
    BsonBuilder b;
    b.appendArray("a", arr.arr());
    EXPECT_EQ(b.obj().toJson(), R"({ "a" : [ 1, "x", null ] })");
}

TEST(BsonBuilder, AppendElementAsRenames) {
    BsonObj src = fromJson(R"({"x": {"y": [1, 2]}})");
    BsonBuilder b;
    b.appendElementAs(src["x"], "z");
    b.appendElement(src["x"]);
    EXPECT_TRUE(b.hasField("z"));
    EXPECT_FALSE(b.hasField("q"));
    EXPECT_EQ(b.obj().toJson(), R"({ "z" : { "y" : [ 1, 2 ] }, "x" : { "y" : [ 1, 2 ] } })");
}

TEST(BsonObj, ExtendedJsonRoundTrip) {
    BsonObj obj = fromJson(
        R"({"i": 1, "l": {"$numberLong": "5000000000"}, "d": 1.5, "s": "str", "b": true,
            "o": {"$oid": "0123456789abcdef01234567"}, "dec": {"$numberDecimal": "1.10"},
            "dt": {"$date": {"$numberLong": "1000"}}, "bin": {"$binary": {"base64": "AQI=", "subType": "00"}},
            "re": {"$regularExpression": {"pattern": "^a", "options": "i"}}, "ts": {"$timestamp": {"t": 5, "i": 6}},
            "mn": {"$minKey": 1}, "mx": {"$maxKey": 1}})");
    EXPECT_EQ(obj["i"].type(), BsonType::Int32);
    EXPECT_EQ(obj["l"].int64Value(), 5000000000);
    EXPECT_DOUBLE_EQ(obj["d"].doubleValue(), 1.5);
    EXPECT_EQ(obj["s"].stringValue(), "str");
    EXPECT_TRUE(obj["b"].boolValue());
    EXPECT_EQ(obj["o"].oidValue().toHex(), "0123456789abcdef01234567");
    EXPECT_EQ(obj["dec"].decimalValue().toString(), "1.10");
    EXPECT_EQ(obj["dt"].dateValue(), 1000);
    EXPECT_EQ(obj["bin"].binaryValue().data, std::string_view("\x01\x02", 2));
    EXPECT_EQ(obj["re"].regexValue().pattern, "^a");
    EXPECT_EQ(obj["re"].regexValue().options, "i");
    EXPECT_EQ(obj["ts"].timestampValue(), (uint64_t{5} << 32) | 6);
    EXPECT_EQ(obj["mn"].type(), BsonType::MinKey);
    EXPECT_EQ(obj["mx"].type(), BsonType::MaxKey);
    EXPECT_EQ(obj.nFields(), 13u);
    BsonObj copy = obj.copy();
    EXPECT_EQ(copy, obj);
    EXPECT_NE(copy.data(), obj.data());
}

TEST(BsonElement, NumberHelpers) {
    BsonObj obj = fromJson(R"({"a": 3.0, "b": 3.5, "c": {"$numberLong": "7"}, "d": "x", "e": 0})");
    EXPECT_TRUE(obj["a"].isIntegral());
    EXPECT_FALSE(obj["b"].isIntegral());
    EXPECT_EQ(obj["b"].numberLong(), 3);
    EXPECT_EQ(obj["c"].numberInt(), 7);
    EXPECT_FALSE(obj["d"].isNumber());
    EXPECT_FALSE(obj["e"].trueValue());
    EXPECT_TRUE(obj["d"].trueValue());
    EXPECT_FALSE(obj["missing"].trueValue());
    EXPECT_EQ(obj["b"].toString(), R"({ "b" : 3.5 })");
    EXPECT_EQ(obj["d"].toString(false), R"("x")");
}

// A variable-length accessor asked for another type answers empty: an ObjectId's first four bytes
// read as a string length once asked for gigabytes (refine of a zoned collection, config.tags
// {_id: ObjectId}).
TEST(BsonElement, VariableLengthAccessorsOfAnotherTypeAreEmpty) {
    BsonBuilder b;
    b.appendOid("oid", ObjectId::generate()).appendNumber("n", int64_t{0x7fffffff});
    b.appendString("s", "text");
    BsonObj obj = b.obj();
    for (std::string_view f : {"oid", "n", "missing"}) {
        EXPECT_TRUE(obj[f].stringValue().empty()) << f;
        EXPECT_TRUE(obj[f].objValue().isEmpty()) << f;
        EXPECT_TRUE(obj[f].binaryValue().data.empty()) << f;
        EXPECT_TRUE(obj[f].regexValue().pattern.empty()) << f;
        EXPECT_TRUE(obj[f].dbPointerValue().ns.empty()) << f;
    }
    EXPECT_EQ(obj["s"].stringValue(), "text");
    EXPECT_TRUE(obj["s"].objValue().isEmpty());
}

TEST(BsonObj, FromJsonRejectsGarbage) {
    auto sw = BsonObj::fromJson("{not json");
    ASSERT_FALSE(sw.isOK());
    EXPECT_TRUE(sw.getStatus().is(ErrorCodes::FailedToParse));
}

TEST(ObjectId, GeneratedIdsAreUniqueAndIncreasing) {
    ObjectId a = ObjectId::generate(), b = ObjectId::generate();
    EXPECT_LT(a, b);
    EXPECT_EQ(a.toHex().size(), 24u);
}

}  // namespace
}  // namespace tessera::bson
