#include "placement/shard_key_pattern.h"

#include <gtest/gtest.h>

#include "bson/compare.h"
#include "placement/hasher.h"
#include "placement/test_util.h"

namespace tessera::placement {
namespace {

using test::obj;
using test::pattern;

void expectInvalid(const char* json, const char* messagePart) {
    auto p = ShardKeyPattern::parse(obj(json));
    ASSERT_FALSE(p.isOK()) << json;
    EXPECT_EQ(p.getStatus().code(), static_cast<int>(ErrorCodes::BadValue)) << json;
    EXPECT_NE(p.getStatus().reason().find(messagePart), std::string::npos)
        << json << ": " << p.getStatus().reason();
}

TEST(ShardKeyPattern, AcceptsRangedHashedAndCompound) {
    EXPECT_FALSE(pattern(R"({"a": 1})").isHashed());
    ShardKeyPattern h = pattern(R"({"_id": "hashed"})");
    EXPECT_TRUE(h.isHashed());
    EXPECT_TRUE(h.hasHashedPrefix());
    ShardKeyPattern c = pattern(R"({"a": 1, "b.c": "hashed", "d": 1.0})");
    EXPECT_EQ(c.numFields(), 3u);
    EXPECT_EQ(c.fieldPath(1), "b.c");
    EXPECT_EQ(c.hashedFieldIndex(), std::optional<size_t>(1));
    EXPECT_FALSE(c.hasHashedPrefix());
    EXPECT_EQ(c.rangedIndexPattern(), obj(R"({"a": 1, "b.c": 1, "d": 1})"));
    EXPECT_EQ(pattern(R"({"x$": 1, "x.y$": 1, "r.$id": 1})").numFields(), 3u);
}

// Bounds of a key's prefix (zones given on a refined key's old fields) are extended as MongoDB
// does: MinKey for the missing fields, MaxKey after a global max.
TEST(ShardKeyPattern, ExtendRangeBoundFillsTheMissingFields) {
    ShardKeyPattern p = pattern(R"({"a": 1, "b": 1, "c": 1})");
    EXPECT_EQ(p.extendRangeBound(obj(R"({"a": 5})")).getValue(),
              obj(R"({"a": 5, "b": {"$minKey": 1}, "c": {"$minKey": 1}})"));
    EXPECT_EQ(p.extendRangeBound(obj(R"({"a": 5, "b": 2})")).getValue(),
              obj(R"({"a": 5, "b": 2, "c": {"$minKey": 1}})"));
    EXPECT_EQ(p.extendRangeBound(obj(R"({"a": {"$maxKey": 1}})")).getValue(),
              obj(R"({"a": {"$maxKey": 1}, "b": {"$maxKey": 1}, "c": {"$maxKey": 1}})"));
    EXPECT_EQ(p.extendRangeBound(obj(R"({"a": 1, "b": 2, "c": 3})")).getValue(),
              obj(R"({"a": 1, "b": 2, "c": 3})"));
    for (const char* bad : {R"({})", R"({"b": 1})", R"({"a": 1, "c": 1})",
                            R"({"a": 1, "b": 1, "c": 1, "d": 1})", R"({"a": [1]})"}) {
        EXPECT_FALSE(p.extendRangeBound(obj(bad)).isOK()) << bad;
    }
}

// A unique index each shard can enforce alone: the shard key's fields are its prefix (or it
// starts with _id, MongoDB's exception).
TEST(ShardKeyPattern, UniqueIndexCompatibility) {
    ShardKeyPattern hashedId = pattern(R"({"_id": "hashed"})");
    EXPECT_FALSE(hashedId.isUniqueIndexCompatible(obj(R"({"email": 1})")));
    EXPECT_TRUE(hashedId.isUniqueIndexCompatible(obj(R"({"_id": 1})")));
    EXPECT_TRUE(hashedId.isUniqueIndexCompatible(obj(R"({"_id": 1, "email": 1})")));
    ShardKeyPattern ck = pattern(R"({"customerId": 1, "createdAt": 1})");
    EXPECT_TRUE(ck.isUniqueIndexCompatible(obj(R"({"customerId": 1, "createdAt": -1, "n": 1})")));
    EXPECT_FALSE(ck.isUniqueIndexCompatible(obj(R"({"customerId": 1})")));
    EXPECT_FALSE(ck.isUniqueIndexCompatible(obj(R"({"createdAt": 1, "customerId": 1})")));
    ShardKeyPattern hashedA = pattern(R"({"a": "hashed"})");
    EXPECT_TRUE(hashedA.isUniqueIndexCompatible(obj(R"({"a": 1, "b": 1})")));
    EXPECT_FALSE(hashedA.isUniqueIndexCompatible(obj(R"({"ab": 1})")));
    EXPECT_FALSE(hashedA.isUniqueIndexCompatible(obj(R"({"a.b": 1})")));
}

TEST(ShardKeyPattern, RejectsWhatShardCollectionRejects) {
    expectInvalid("{}", "Shard key is empty");
    expectInvalid(R"({"a": "hashed", "b": "hashed"})", "at most one 'hashed' field");
    expectInvalid(R"({"a": -1})", "at most one 'hashed' field");
    expectInvalid(R"({"a": 2})", "Failed to parse field a");
    expectInvalid(R"({"a": 1.5})", "Failed to parse field a");
    expectInvalid(R"({"a": "text"})", "Failed to parse field a");
    expectInvalid(R"({"a": true})", "Failed to parse field a");
    expectInvalid(R"({"": 1})", "is empty");
    expectInvalid(R"({"a.": 1})", "extra dot");
    expectInvalid(R"({".a": 1})", "extra dot");
    expectInvalid(R"({"a..b": 1})", "empty parts");
    expectInvalid(R"({"$x": 1})", "starts with '$'");
    expectInvalid(R"({"x.$y": 1})", "starts with '$'");
    expectInvalid(R"({"$**": 1})", "starts with '$'");
    expectInvalid(R"({"a": 1, "a": 1})", "more than once");
}

TEST(ShardKeyPattern, ExtractsFromDocuments) {
    ShardKeyPattern p = pattern(R"({"a": 1, "b.c": 1})");
    auto key = p.extractShardKeyFromDoc(obj(R"({"_id": 1, "b": {"c": "x", "d": 2}, "a": 5})"));
    ASSERT_TRUE(key.isOK());
    EXPECT_EQ(key.getValue(), obj(R"({"a": 5, "b.c": "x"})"));
    // Missing fields, and paths through scalars, are null.
    EXPECT_EQ(p.extractShardKeyFromDoc(obj(R"({"b": 3})")).getValue(),
              obj(R"({"a": null, "b.c": null})"));
    // Embedded documents are whole values.
    EXPECT_EQ(pattern(R"({"a": 1})").extractShardKeyFromDoc(obj(R"({"a": {"x": 1}})")).getValue(),
              obj(R"({"a": {"x": 1}})"));
}

TEST(ShardKeyPattern, ArraysAreRejected) {
    ShardKeyPattern p = pattern(R"({"a": 1, "b.c": 1})");
    for (const char* doc :
         {R"({"a": [1, 2]})", R"({"a": 1, "b": [{"c": 1}]})", R"({"a": 1, "b": {"c": []}})"}) {
        auto key = p.extractShardKeyFromDoc(obj(doc));
        ASSERT_FALSE(key.isOK()) << doc;
        EXPECT_EQ(key.getStatus().code(), 61) << doc;
        EXPECT_EQ(key.getStatus().codeName(), "ShardKeyNotFound");
        EXPECT_EQ(key.getStatus().reason(),
                  "Shard key cannot contain array values or array descendants.");
    }
    // An array elsewhere in the document is fine.
    EXPECT_TRUE(p.extractShardKeyFromDoc(obj(R"({"a": 1, "z": [1]})")).isOK());
}

TEST(ShardKeyPattern, HashedFieldsHoldTheHash) {
    ShardKeyPattern p = pattern(R"({"a": 1, "h": "hashed"})");
    auto key = p.extractShardKeyFromDoc(obj(R"({"h": "abc", "a": 2})"));
    ASSERT_TRUE(key.isOK());
    EXPECT_EQ(key.getValue()["h"].type(), bson::BsonType::Int64);
    EXPECT_EQ(key.getValue()["h"].int64Value(), 8478485326885698097LL);
    // Missing hashes as null (2338878944348059895 is MongoDB's hash of null).
    EXPECT_EQ(p.extractShardKeyFromDoc(obj(R"({"a": 2})")).getValue()["h"].int64Value(),
              2338878944348059895LL);
    EXPECT_TRUE(p.validateKey(key.getValue()).isOK());
}

TEST(ShardKeyPattern, ExtractsExactKeyFromQueries) {
    ShardKeyPattern p = pattern(R"({"a": 1, "b.c": 1})");
    auto exact = [&](const char* filter) {
        auto k = p.extractShardKeyFromQuery(obj(filter));
        EXPECT_TRUE(k.isOK()) << filter;
        return k.getValue();
    };
    EXPECT_EQ(exact(R"({"a": 1, "b.c": 2, "z": 3})"), obj(R"({"a": 1, "b.c": 2})"));
    EXPECT_EQ(exact(R"({"$and": [{"a": {"$eq": 1}}, {"b.c": {"$in": [2]}}]})"),
              obj(R"({"a": 1, "b.c": 2})"));
    EXPECT_EQ(exact(R"({"a": 1, "b": {"c": 2, "d": 1}})"), obj(R"({"a": 1, "b.c": 2})"));
    EXPECT_EQ(exact(R"({"a": null, "b.c": 2})"), obj(R"({"a": null, "b.c": 2})"));
    // Not pinned: no key, no error.
    EXPECT_TRUE(exact(R"({"a": 1})").isEmpty());
    EXPECT_TRUE(exact(R"({"a": 1, "b.c": {"$gt": 2}})").isEmpty());
    EXPECT_TRUE(exact(R"({"a": 1, "b.c": {"$in": [2, 3]}})").isEmpty());
    EXPECT_TRUE(exact(R"({"$or": [{"a": 1, "b.c": 2}]})").isEmpty());
    EXPECT_TRUE(exact(R"({"a": [1], "b.c": 2})").isEmpty());
    EXPECT_TRUE(exact(R"({"a": {"$regex": "^x"}, "b.c": 2})").isEmpty());
    // Parse errors are errors.
    EXPECT_FALSE(p.extractShardKeyFromQuery(obj(R"({"a": {"$foo": 1}})")).isOK());

    ShardKeyPattern h = pattern(R"({"x": "hashed"})");
    auto hashed = h.extractShardKeyFromQuery(obj(R"({"x": 1.0})"));
    ASSERT_TRUE(hashed.isOK());
    EXPECT_EQ(hashed.getValue()["x"].int64Value(), 5902408780260971510LL);
}

TEST(ShardKeyPattern, ValidatesKeysAndBounds) {
    ShardKeyPattern p = pattern(R"({"a": 1, "h": "hashed"})");
    EXPECT_TRUE(p.validateKey(p.globalMin()).isOK());
    EXPECT_TRUE(p.validateKey(p.globalMax()).isOK());
    EXPECT_TRUE(p.validateKey(obj(R"({"a": "x", "h": {"$numberLong": "5"}})")).isOK());
    EXPECT_FALSE(p.validateKey(obj(R"({"a": "x", "h": 5})")).isOK());  // hash must be a Long
    EXPECT_FALSE(p.validateKey(obj(R"({"a": "x"})")).isOK());
    EXPECT_FALSE(p.validateKey(obj(R"({"h": {"$numberLong": "5"}, "a": 1})")).isOK());
    EXPECT_FALSE(p.validateKey(obj(R"({"a": [1], "h": {"$numberLong": "5"}})")).isOK());
    EXPECT_FALSE(p.validateKey(obj(R"({"a": 1, "h": {"$numberLong": "5"}, "z": 1})")).isOK());
}

TEST(ShardKeyPattern, EncodingOrdersKeysLikeBson) {
    ShardKeyPattern p = pattern(R"({"a": 1, "b": 1})");
    const char* keys[] = {
        R"({"a": {"$minKey": 1}, "b": {"$minKey": 1}})",
        R"({"a": null, "b": 5})",
        R"({"a": 1, "b": {"$minKey": 1}})",
        R"({"a": 1, "b": "x"})",
        R"({"a": 2.5, "b": 0})",
        R"({"a": {"$numberLong": "3"}, "b": 0})",
        R"({"a": "a", "b": 0})",
        R"({"a": {"x": 1}, "b": 0})",
        R"({"a": {"$maxKey": 1}, "b": {"$maxKey": 1}})",
    };
    for (size_t i = 0; i + 1 < std::size(keys); ++i) {
        EXPECT_LT(p.encodeKey(obj(keys[i])), p.encodeKey(obj(keys[i + 1])))
            << keys[i] << " < " << keys[i + 1];
    }
    EXPECT_EQ(p.encodeKey(obj(R"({"a": 1, "b": 2})")),
              p.encodeKey(obj(R"({"a": 1.0, "b": {"$numberLong": "2"}})")));
}

}  // namespace
}  // namespace tessera::placement
