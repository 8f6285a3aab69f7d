#include "storage/index_keys.h"

#include <gtest/gtest.h>

#include "storage/storage_test_util.h"

namespace tessera::storage {
namespace {

using test::indexKey;
using test::J;

std::vector<std::string> keysOf(std::string_view pattern, std::string_view doc,
                                bool* multikey = nullptr, bool sparse = false) {
    IndexKeyGenerator gen(J(pattern), sparse);
    std::vector<std::string> keys;
    bool mk = false;
    Status s = gen.getKeys(J(doc), &keys, &mk);
    EXPECT_TRUE(s.isOK()) << s.toString();
    if (multikey) *multikey = mk;
    return keys;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
}

TEST(IndexKeys, SingleFieldScalar) {
    bool mk = true;
    EXPECT_EQ(keysOf(R"({"a": 1})", R"({"_id": 1, "a": 5})", &mk),
              std::vector<std::string>{indexKey("[5]")});
    EXPECT_FALSE(mk);
}

TEST(IndexKeys, MissingFieldIsNull) {
    EXPECT_EQ(keysOf(R"({"a": 1})", R"({"_id": 1})"), std::vector<std::string>{indexKey("[null]")});
    EXPECT_EQ(keysOf(R"({"a.b": 1})", R"({"a": 3})"), std::vector<std::string>{indexKey("[null]")});
}

TEST(IndexKeys, DottedPathThroughDocuments) {
    EXPECT_EQ(keysOf(R"({"a.b.c": 1})", R"({"a": {"b": {"c": "x"}}})"),
              std::vector<std::string>{indexKey(R"(["x"])")});
}

TEST(IndexKeys, ArrayYieldsOneKeyPerElementAndMultikey) {
    bool mk = false;
    auto keys = keysOf(R"({"a": 1})", R"({"a": [3, 1, 2, 1]})", &mk);
    EXPECT_TRUE(mk);
    EXPECT_EQ(keys, sorted({indexKey("[1]"), indexKey("[2]"), indexKey("[3]")}));
}

TEST(IndexKeys, EmptyArrayIsUndefinedAndMultikey) {
    bool mk = false;
    auto keys = keysOf(R"({"a": 1})", R"({"a": []})", &mk);
    EXPECT_TRUE(mk);
    EXPECT_EQ(keys, std::vector<std::string>{indexKey(R"([{"$undefined": true}])")});
    // The path continues into the empty array: null.
    EXPECT_EQ(keysOf(R"({"a.b": 1})", R"({"a": []})"),
              std::vector<std::string>{indexKey("[null]")});
}

TEST(IndexKeys, ArrayOfDocumentsOnDottedPath) {
    bool mk = false;
    auto keys = keysOf(R"({"a.b": 1})", R"({"a": [{"b": 1}, {"b": 2}, {"c": 3}, 7]})", &mk);
    EXPECT_TRUE(mk);
    EXPECT_EQ(keys, sorted({indexKey("[1]"), indexKey("[2]"), indexKey("[null]")}));
}

TEST(IndexKeys, NestedArrayAtEndIsIndexedAsArray) {
    auto keys = keysOf(R"({"a": 1})", R"({"a": [[1, 2], 3]})");
    EXPECT_EQ(keys, sorted({indexKey("[[1, 2]]"), indexKey("[3]")}));
}

TEST(IndexKeys, PositionalPathDoesNotExpand) {
    bool mk = true;
    auto keys = keysOf(R"({"a.1": 1})", R"({"a": [5, 6, 7]})", &mk);
    EXPECT_EQ(keys, std::vector<std::string>{indexKey("[6]")});
    EXPECT_FALSE(mk);
}

TEST(IndexKeys, CompoundWithDirections) {
    auto keys = keysOf(R"({"a": 1, "b.c": -1})", R"({"a": 1, "b": {"c": 2}})");
    EXPECT_EQ(keys, std::vector<std::string>{indexKey("[1, 2]", {false, true})});
}

TEST(IndexKeys, CompoundWithOneArray) {
    bool mk = false;
    auto keys = keysOf(R"({"a": 1, "b": 1})", R"({"a": "x", "b": [1, 2]})", &mk);
    EXPECT_TRUE(mk);
    EXPECT_EQ(keys, sorted({indexKey(R"(["x", 1])"), indexKey(R"(["x", 2])")}));
}

TEST(IndexKeys, CompoundSharingOneArrayPairsElements) {
    auto keys = keysOf(R"({"a.b": 1, "a.c": 1})", R"({"a": [{"b": 1, "c": 2}, {"b": 3, "c": 4}]})");
    EXPECT_EQ(keys, sorted({indexKey("[1, 2]"), indexKey("[3, 4]")}));
}

TEST(IndexKeys, ParallelArraysAreRejected) {
    IndexKeyGenerator gen(J(R"({"a": 1, "b": 1})"), false);
    std::vector<std::string> keys;
    bool mk;
    Status s = gen.getKeys(J(R"({"a": [1, 2], "b": [3, 4]})"), &keys, &mk);
    EXPECT_EQ(s.code(), 171);
    EXPECT_EQ(s.reason(), "cannot index parallel arrays [b] [a]");
}

TEST(IndexKeys, SparseSkipsDocumentsMissingAllFields) {
    EXPECT_TRUE(keysOf(R"({"a": 1})", R"({"b": 1})", nullptr, true).empty());
    EXPECT_TRUE(keysOf(R"({"a": 1, "c": 1})", R"({"b": 1})", nullptr, true).empty());
    // One present field is enough; the missing one is null.
    EXPECT_EQ(keysOf(R"({"a": 1, "c": 1})", R"({"c": 1})", nullptr, true),
              std::vector<std::string>{indexKey("[null, 1]")});
    // Explicit null is present.
    EXPECT_EQ(keysOf(R"({"a": 1})", R"({"a": null})", nullptr, true),
              std::vector<std::string>{indexKey("[null]")});
}

TEST(IndexKeys, ValuesForDuplicateReports) {
    IndexKeyGenerator gen(J(R"({"a": 1, "b": -1})"), false);
    std::vector<std::string> keys;
    std::vector<bson::BsonObj> values;
    ASSERT_TRUE(gen.getKeys(J(R"({"a": [1, 2], "b": "x"})"), &keys, nullptr, &values).isOK());
    ASSERT_EQ(values.size(), 2u);
    EXPECT_EQ(formatKeyForMessage(values[0]), R"({ a: 1, b: "x" })");
    EXPECT_EQ(formatKeyForMessage(values[1]), R"({ a: 2, b: "x" })");
}

TEST(IndexKeys, KeyPatternValidationAndNames) {
    EXPECT_TRUE(validateKeyPattern(J(R"({"a": 1, "b": -1})")).isOK());
    EXPECT_EQ(validateKeyPattern(J(R"({})")).code(), 67);
    EXPECT_EQ(validateKeyPattern(J(R"({"a": 0})")).code(), 67);
    EXPECT_EQ(validateKeyPattern(J(R"({"a": true})")).code(), 67);
    EXPECT_TRUE(validateKeyPattern(J(R"({"a": "hashed"})")).isOK());
    EXPECT_EQ(validateKeyPattern(J(R"({"a": "2dsphere"})")).code(), 67);
    EXPECT_EQ(defaultIndexName(J(R"({"a": 1, "b.c": -1})")), "a_1_b.c_-1");
}

TEST(IndexKeys, MessageFormatting) {
    EXPECT_EQ(formatKeyForMessage(J(R"({"a": 1})")), "{ a: 1 }");
    EXPECT_EQ(formatKeyForMessage(J(R"({"a": 1.5, "b": null, "c": true})")),
              "{ a: 1.5, b: null, c: true }");
    EXPECT_EQ(formatKeyForMessage(J(R"({"_id": {"$oid": "0123456789abcdef01234567"}})")),
              "{ _id: ObjectId('0123456789abcdef01234567') }");
}

}  // namespace
}  // namespace tessera::storage
