// Hashed index keys (MongoDB's ExpressionKeysPrivate::getHashKeys) and hashed index DDL.

#include <gtest/gtest.h>

#include "bson/bson_builder.h"
#include "bson/element_hash.h"
#include "keystring/keystring.h"
#include "storage/index_keys.h"
#include "storage/storage_test_util.h"

namespace tessera::storage {
namespace {

using test::EngineTest;
using test::J;

int64_t hashOf(std::string_view json) { return bson::hashElement(J(json).firstElement()); }

// The encoded key of one hashed value (ascending).
std::string hashKey(int64_t h) {
    bson::BsonObj o = bson::BsonBuilder().appendInt64("", h).obj();
    keystring::Builder b;
    b.append(o.firstElement(), false);
    return b.release();
}

StatusWith<std::vector<std::string>> hashedKeys(std::string_view pattern, std::string_view doc,
                                                bool sparse = false) {
    IndexKeyGenerator gen(J(pattern), sparse);
    std::vector<std::string> keys;
    bool multikey = true;
    TRY_STATUS(gen.getKeys(J(doc), &keys, &multikey));
    EXPECT_FALSE(multikey);  // hashed indexes are never multikey
    return keys;
}

std::vector<std::string> keysOk(std::string_view pattern, std::string_view doc,
                                bool sparse = false) {
    auto sw = hashedKeys(pattern, doc, sparse);
    EXPECT_TRUE(sw.isOK()) << sw.getStatus().toString();
    return sw.isOK() ? sw.getValue() : std::vector<std::string>{};
}

TEST(HashedIndexKeys, KeyIsTheNumberLongHashOfTheValue) {
    IndexKeyGenerator gen(J(R"({"a": "hashed"})"), false);
    EXPECT_TRUE(gen.isHashed());
    EXPECT_EQ(keysOk(R"({"a": "hashed"})", R"({"_id": 1, "a": "x"})"),
              std::vector<std::string>{hashKey(hashOf(R"({"": "x"})"))});
    EXPECT_EQ(keysOk(R"({"a.b": "hashed"})", R"({"a": {"b": {"c": 1}}})"),
              std::vector<std::string>{hashKey(hashOf(R"({"": {"c": 1}})"))});
    // Different values give different keys.
    EXPECT_NE(keysOk(R"({"a": "hashed"})", R"({"a": 1})"),
              keysOk(R"({"a": "hashed"})", R"({"a": 2})"));
}

TEST(HashedIndexKeys, EqualNumbersOfEveryTypeHashEqually) {
    auto expected = keysOk(R"({"a": "hashed"})", R"({"a": 1})");
    ASSERT_EQ(expected.size(), 1u);
    for (const char* doc :
         {R"({"a": {"$numberLong": "1"}})", R"({"a": 1.0})", R"({"a": {"$numberDecimal": "1"}})",
          R"({"a": {"$numberDouble": "1"}})"}) {
        EXPECT_EQ(keysOk(R"({"a": "hashed"})", doc), expected) << doc;
    }
    // As MongoDB, doubles are truncated to an integer before hashing.
    EXPECT_EQ(keysOk(R"({"a": "hashed"})", R"({"a": 1.9})"), expected);
}

TEST(HashedIndexKeys, MissingHashesAsNull) {
    auto null = keysOk(R"({"a": "hashed"})", R"({"a": null})");
    EXPECT_EQ(null, std::vector<std::string>{hashKey(hashOf(R"({"": null})"))});
    EXPECT_EQ(keysOk(R"({"a": "hashed"})", R"({"b": 1})"), null);
    EXPECT_EQ(keysOk(R"({"a.b": "hashed"})", R"({"a": 5})"), null);
    // Sparse: no key when every indexed field is missing; explicit null is present.
    EXPECT_TRUE(keysOk(R"({"a": "hashed"})", R"({"b": 1})", true).empty());
    EXPECT_EQ(keysOk(R"({"a": "hashed"})", R"({"a": null})", true), null);
}

TEST(HashedIndexKeys, ArraysAreRejected) {
    auto check = [](std::string_view pattern, std::string_view doc, std::string_view path) {
        auto sw = hashedKeys(pattern, doc);
        ASSERT_FALSE(sw.isOK()) << doc;
        EXPECT_EQ(sw.getStatus().code(), 16766);
        EXPECT_EQ(sw.getStatus().reason(),
                  "Error: hashed indexes do not currently support array values. Found array at "
                  "path: " +
                      std::string(path));
    };
    check(R"({"a": "hashed"})", R"({"a": [1, 2]})", "a");
    check(R"({"a": "hashed"})", R"({"a": []})", "a");
    check(R"({"a.b": "hashed"})", R"({"a": [{"b": 1}]})", "a");
    check(R"({"a.b.c": "hashed"})", R"({"a": {"b": [1]}})", "a.b");
    check(R"({"a.0": "hashed"})", R"({"a": [1]})", "a");
    // Arrays in the non-hashed fields of a compound hashed index too (never multikey).
    check(R"({"x": 1, "a": "hashed"})", R"({"x": [1], "a": 1})", "x");
    // An array nested inside an indexed document is part of the value: fine.
    EXPECT_EQ(keysOk(R"({"a": "hashed"})", R"({"a": {"b": [1]}})").size(), 1u);
}

TEST(HashedIndexKeys, CompoundWithOneHashedField) {
    bson::BsonObj values = J(R"({"v": [5, "z"]})");
    keystring::Builder b;
    auto it = values.firstElement().objValue().begin();
    b.append(*it, true);  // x: -1
    bson::BsonObj h = bson::BsonBuilder().appendInt64("", hashOf(R"({"": "k"})")).obj();
    b.append(h.firstElement(), false);
    ++it;
    b.append(*it, false);
    std::string expected = b.release();
    EXPECT_EQ(keysOk(R"({"x": -1, "a": "hashed", "y": 1})", R"({"y": "z", "a": "k", "x": 5})"),
              std::vector<std::string>{expected});

    IndexKeyGenerator gen(J(R"({"x": 1, "a": "hashed"})"), false);
    std::vector<std::string> keys;
    std::vector<bson::BsonObj> reported;
    ASSERT_TRUE(gen.getKeys(J(R"({"x": 2, "a": "k"})"), &keys, nullptr, &reported).isOK());
    ASSERT_EQ(reported.size(), 1u);
    EXPECT_EQ(reported[0]["x"].numberLong(), 2);
    EXPECT_EQ(reported[0]["a"].int64Value(), hashOf(R"({"": "k"})"));
}

TEST(HashedIndexKeys, KeyPatternValidationAndNames) {
    EXPECT_TRUE(validateKeyPattern(J(R"({"a": "hashed"})")).isOK());
    EXPECT_TRUE(validateKeyPattern(J(R"({"a": 1, "b": "hashed", "c": -1})")).isOK());
    Status two = validateKeyPattern(J(R"({"a": "hashed", "b": "hashed"})"));
    EXPECT_EQ(two.code(), 31303);
    EXPECT_EQ(two.reason(),
              "A maximum of one index field is allowed to be hashed but found 2 for 'key' "
              "{ a: \"hashed\", b: \"hashed\" }");
    EXPECT_EQ(validateKeyPattern(J(R"({"a": "text"})")).code(), 67);
    EXPECT_EQ(validateKeyPattern(J(R"({"a": "Hashed"})")).code(), 67);
    EXPECT_TRUE(isHashedKeyPattern(J(R"({"a": 1, "b": "hashed"})")));
    EXPECT_FALSE(isHashedKeyPattern(J(R"({"a": 1})")));
    EXPECT_EQ(validateHashedIndexOptions(J(R"({"a": "hashed"})"), true).code(), 16764);
    EXPECT_TRUE(validateHashedIndexOptions(J(R"({"a": "hashed"})"), false).isOK());
    EXPECT_TRUE(validateHashedIndexOptions(J(R"({"a": 1})"), true).isOK());
    EXPECT_EQ(defaultIndexName(J(R"({"a": "hashed"})")), "a_hashed");
    EXPECT_EQ(defaultIndexName(J(R"({"a": 1, "b": "hashed"})")), "a_1_b_hashed");
}

IndexSpec hashedSpec(std::string_view pattern, bool unique = false) {
    IndexSpec s;
    s.keyPattern = J(pattern);
    s.unique = unique;
    return s;
}

using HashedIndexEngineTest = EngineTest;

TEST_F(HashedIndexEngineTest, BuildInsertAndScan) {
    create("db.c");
    insert("db.c", R"({"_id": 1, "a": "x"})");
    insert("db.c", R"({"_id": 2})");
    auto r = engine->createIndexes("db.c", {hashedSpec(R"({"a": "hashed"})")});
    ASSERT_TRUE(r.isOK()) << r.getStatus().toString();
    insert("db.c", R"({"_id": 3, "a": "x"})");
    CollectionPtr coll = engine->getCollection("db.c");
    const IndexSpec* ix = coll->findIndex("a_hashed");
    ASSERT_NE(ix, nullptr);
    EXPECT_FALSE(ix->unique);
    EXPECT_FALSE(ix->multikey);
    EXPECT_EQ(ix->spec["key"].objValue().toJson(), R"({ "a" : "hashed" })");

    // Inserting an array into the hashed field fails and leaves nothing behind.
    auto w = writerFor("db.c");
    auto bad = w->insert(J(R"({"_id": 4, "a": [1]})"), WriteOptions{});
    ASSERT_FALSE(bad.isOK());
    EXPECT_EQ(bad.getStatus().code(), 16766);

    auto snap = engine->snapshot();
    auto count = [&](const std::string& key) {
        KeyRange range{key, true, keystring::prefixSuccessor(key), false};
        auto cursor = snap->indexScan(*coll, *ix, range);
        int n = 0;
        while (cursor->next()) ++n;
        return n;
    };
    EXPECT_EQ(count(hashKey(hashOf(R"({"": "x"})"))), 2);
    EXPECT_EQ(count(hashKey(hashOf(R"({"": null})"))), 1);
    EXPECT_EQ(scanAll("db.c").size(), 3u);
}

TEST_F(HashedIndexEngineTest, BuildFailsOnArraysAndUniqueIsRefused) {
    create("db.c");
    insert("db.c", R"({"_id": 1, "a": [1, 2]})");
    auto r = engine->createIndexes("db.c", {hashedSpec(R"({"a": "hashed"})")});
    ASSERT_FALSE(r.isOK());
    EXPECT_EQ(r.getStatus().code(), 16766);
    EXPECT_EQ(engine->getCollection("db.c")->indexes.size(), 1u);

    auto u = engine->createIndexes("db.c", {hashedSpec(R"({"b": "hashed"})", true)});
    ASSERT_FALSE(u.isOK());
    EXPECT_EQ(u.getStatus().code(), 16764);

    // {_id: "hashed"} is an ordinary hashed index, not a second unique _id index.
    auto id = engine->createIndexes("db.c", {hashedSpec(R"({"_id": "hashed"})")});
    ASSERT_TRUE(id.isOK()) << id.getStatus().toString();
    const IndexSpec* ix = engine->getCollection("db.c")->findIndex("_id_hashed");
    ASSERT_NE(ix, nullptr);
    EXPECT_FALSE(ix->unique);
}

}  // namespace
}  // namespace tessera::storage
