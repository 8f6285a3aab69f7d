// Collation through the commands: find/count/distinct/aggregate/update/delete/findAndModify with
// a `collation` argument, collection default collations, and collation-aware indexes.

#include <gtest/gtest.h>

#include "command/crud_test_util.h"
#include "command/registry.h"

namespace tessera::command::test {
namespace {

class CollationCommandsTest : public CrudFixture {
  protected:
    void SetUp() override {
        CrudFixture::SetUp();
        registerCollectionCommands(registry);
        registerIndexCommands(registry);
    }
    void seed(std::string_view coll = "c") {
        ok(R"({"insert": ")" + std::string(coll) + R"(", "documents": [
              {"_id": 1, "s": "apple"}, {"_id": 2, "s": "Apple"}, {"_id": 3, "s": "APPLE"},
              {"_id": 4, "s": "banana"}, {"_id": 5, "s": "Banana"}, {"_id": 6, "s": "cherry"},
              {"_id": 7, "s": "10"}, {"_id": 8, "s": "9"}]})");
    }
    std::vector<int> ids(std::string_view findJson) {
        std::vector<int> out;
        for (const auto& d : findAll(findJson)) out.push_back(J(d)["_id"].numberInt());
        return out;
    }
    int64_t n(std::string_view json) { return ok(json)["n"].numberLong(); }
};

constexpr const char* kCi = R"({"locale": "en", "strength": 2})";

std::string withCi(std::string_view prefix) {
    return std::string(prefix) + R"(, "collation": )" + kCi + "}";
}

TEST_F(CollationCommandsTest, FindMatchesAndSortsByTheCollation) {
    seed();
    EXPECT_EQ(ids(R"({"find": "c", "filter": {"s": "apple"}})"), (std::vector<int>{1}));
    EXPECT_EQ(ids(withCi(R"({"find": "c", "filter": {"s": "apple"}, "sort": {"_id": 1})")),
              (std::vector<int>{1, 2, 3}));
    EXPECT_EQ(ids(withCi(R"({"find": "c", "filter": {"s": {"$in": ["BANANA"]}})")),
              (std::vector<int>{4, 5}));
    // Numeric ordering sorts "9" before "10".
    EXPECT_EQ(ids(R"({"find": "c", "filter": {"_id": {"$gte": 7}}, "sort": {"s": 1},
                      "collation": {"locale": "en", "numericOrdering": true}})"),
              (std::vector<int>{8, 7}));
    EXPECT_EQ(ids(R"({"find": "c", "filter": {"_id": {"$gte": 7}}, "sort": {"s": 1}})"),
              (std::vector<int>{7, 8}));
    // Binary order puts "Banana" before "apple"; English puts it after.
    auto sorted = ids(R"({"find": "c", "filter": {"_id": {"$in": [1, 5]}}, "sort": {"s": 1},
                          "collation": {"locale": "en"}})");
    EXPECT_EQ(sorted, (std::vector<int>{1, 5}));
    EXPECT_EQ(ids(R"({"find": "c", "filter": {"_id": {"$in": [1, 5]}}, "sort": {"s": 1}})"),
              (std::vector<int>{5, 1}));
}

TEST_F(CollationCommandsTest, BadCollationsAreRefused) {
    seed();
    CommandResult r = run(R"({"find": "c", "collation": {"locale": "zz_nope"}})");
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status.is(ErrorCodes::BadValue));
    EXPECT_EQ(r.status.reason(), "Field 'locale' is invalid in: { locale: \"zz_nope\" }");
    r = run(R"({"aggregate": "c", "pipeline": [], "cursor": {},
                "collation": {"locale": "en", "strength": 6}})");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status.code(), 51024);
    r = run(R"({"count": "c", "collation": 5})");
    EXPECT_TRUE(r.status.is(ErrorCodes::TypeMismatch));
    // A write statement's bad collation fails that statement.
    bson::BsonObj u = ok(R"({"update": "c", "updates": [
        {"q": {}, "u": {"$set": {"x": 1}}, "collation": {"locale": "en", "bogus": 1}}]})");
    EXPECT_TRUE(u.hasField("writeErrors"));
    // simple is binary.
    EXPECT_EQ(ids(R"({"find": "c", "filter": {"s": "apple"}, "collation": {"locale": "simple"}})"),
              (std::vector<int>{1}));
}

TEST_F(CollationCommandsTest, CountDistinctAggregate) {
    seed();
    EXPECT_EQ(n(withCi(R"({"count": "c", "query": {"s": "apple"})")), 3);
    EXPECT_EQ(n(R"({"count": "c", "query": {"s": "apple"}})"), 1);
    bson::BsonObj d = ok(withCi(R"({"distinct": "c", "key": "s", "query": {"_id": {"$lte": 6}})"));
    EXPECT_EQ(d["values"].objValue().nFields(), 3u);  // apple, banana, cherry
    bson::BsonObj d2 = ok(R"({"distinct": "c", "key": "s", "query": {"_id": {"$lte": 6}}})");
    EXPECT_EQ(d2["values"].objValue().nFields(), 6u);
    bson::BsonObj a =
        ok(withCi(R"({"aggregate": "c", "pipeline": [{"$match": {"s": "BANANA"}}], "cursor": {})"));
    EXPECT_EQ(bson::BsonView(a["cursor"].objValue())["firstBatch"].objValue().nFields(), 2u);
}

TEST_F(CollationCommandsTest, WritesUseTheCollation) {
    seed();
    bson::BsonObj u = ok(
        R"({"update": "c", "updates": [{"q": {"s": "apple"}, "u": {"$set": {"hit": true}},
             "multi": true, "collation": {"locale": "en", "strength": 2}}]})");
    EXPECT_EQ(u["n"].numberLong(), 3);
    bson::BsonObj del = ok(R"({"delete": "c", "deletes": [{"q": {"s": "BANANA"}, "limit": 0,
                               "collation": {"locale": "en", "strength": 1}}]})");
    EXPECT_EQ(del["n"].numberLong(), 2);
    bson::BsonObj fam = ok(withCi(R"({"findAndModify": "c", "query": {"s": "CHERRY"},
                                      "remove": true)"));
    EXPECT_EQ(bson::BsonView(fam["value"].objValue())["_id"].numberInt(), 6);
}

TEST_F(CollationCommandsTest, CollectionDefaultCollation) {
    ok(R"({"create": "d", "collation": {"locale": "en", "strength": 2}})");
    seed("d");
    EXPECT_EQ(ids(R"({"find": "d", "filter": {"s": "apple"}, "sort": {"_id": 1}})"),
              (std::vector<int>{1, 2, 3}));
    // An explicit simple collation overrides the default.
    EXPECT_EQ(ids(R"({"find": "d", "filter": {"s": "apple"}, "collation": {"locale": "simple"}})"),
              (std::vector<int>{1}));
    // Stored resolved, shown by listCollections.
    bson::BsonObj lc = ok(R"({"listCollections": 1, "filter": {"name": "d"}})");
    bson::BsonView entry =
        bson::BsonView(lc["cursor"].objValue())["firstBatch"].objValue().firstElement().objValue();
    bson::BsonView coll = bson::BsonView(entry["options"].objValue())["collation"].objValue();
    EXPECT_EQ(coll["strength"].numberInt(), 2);
    EXPECT_EQ(coll["caseFirst"].stringValue(), "off");
    EXPECT_EQ(coll["version"].stringValue(), "57.1");
    // Indexes inherit it.
    ok(R"({"createIndexes": "d", "indexes": [{"key": {"s": 1}, "name": "s_1"}]})");
    bson::BsonObj li = ok(R"({"listIndexes": "d"})");
    bool found = false;
    for (auto e : bson::BsonView(li["cursor"].objValue())["firstBatch"].objValue()) {
        bson::BsonView ix = e.objValue();
        if (ix["name"].stringValue() == "s_1") {
            found = true;
            EXPECT_EQ(bson::BsonView(ix["collation"].objValue())["locale"].stringValue(), "en");
        }
    }
    EXPECT_TRUE(found);
    EXPECT_EQ(ids(R"({"find": "d", "filter": {"s": "BANANA"}, "sort": {"_id": 1}})"),
              (std::vector<int>{4, 5}));
}

TEST_F(CollationCommandsTest, CollatedIndexServesTheSameCollation) {
    seed();
    ok(R"({"createIndexes": "c", "indexes": [{"key": {"s": 1}, "name": "s_ci",
           "collation": {"locale": "en", "strength": 2}}]})");
    bson::BsonObj li = ok(R"({"listIndexes": "c"})");
    bson::BsonView ix = bson::BsonView(li["cursor"].objValue())["firstBatch"].objValue();
    bson::BsonView second = *(++ix.begin()) ? (*(++ix.begin())).objValue() : bson::BsonView();
    EXPECT_EQ(bson::BsonView(second["collation"].objValue()).toJson(),
              J(R"({"locale": "en", "caseLevel": false, "caseFirst": "off", "strength": 2,
                    "numericOrdering": false, "alternate": "non-ignorable",
                    "maxVariable": "punct", "normalization": false, "backwards": false,
                    "version": "57.1"})")
                  .toJson());
    // The index answers case-insensitive equality and ranges (explain shows the IXSCAN).
    std::string q = withCi(R"({"find": "c", "filter": {"s": "APPLE"}, "sort": {"_id": 1})");
    EXPECT_EQ(ids(q), (std::vector<int>{1, 2, 3}));
    bson::BsonObj ex = ok(R"({"explain": {"find": "c", "filter": {"s": "APPLE"},
                                "collation": {"locale": "en", "strength": 2}}})");
    EXPECT_NE(ex.toJson().find("IXSCAN"), std::string::npos) << ex.toJson();
    EXPECT_EQ(ids(withCi(R"({"find": "c", "filter": {"s": {"$gt": "apple", "$lt": "CHERRY"}},
                             "sort": {"_id": 1})")),
              (std::vector<int>{4, 5}));
    // Sorted by the index in collation order.
    EXPECT_EQ(ids(withCi(R"({"find": "c", "filter": {"s": {"$gte": "b"}}, "sort": {"s": 1},
                             "hint": "s_ci", "projection": {"_id": 1})"))
                  .back(),
              6);
    // A simple-collation query must not use the collated index for bounds.
    bson::BsonObj ex2 = ok(R"({"explain": {"find": "c", "filter": {"s": "APPLE"}}})");
    EXPECT_EQ(ex2.toJson().find("IXSCAN"), std::string::npos) << ex2.toJson();
    EXPECT_EQ(ids(R"({"find": "c", "filter": {"s": "APPLE"}})"), (std::vector<int>{3}));
    // Hinted anyway: still correct (full index scan, matcher decides).
    EXPECT_EQ(ids(R"({"find": "c", "filter": {"s": "APPLE"}, "hint": "s_ci"})"),
              (std::vector<int>{3}));
    // Regex stays binary and still works over the collated index's collation.
    EXPECT_EQ(ids(withCi(R"({"find": "c", "filter": {"s": {"$regex": "^App"}})")),
              (std::vector<int>{2}));
    // Writes keep the index up to date.
    ok(R"({"insert": "c", "documents": [{"_id": 9, "s": "aPpLe"}]})");
    EXPECT_EQ(ids(q), (std::vector<int>{1, 2, 3, 9}));
    ok(R"({"delete": "c", "deletes": [{"q": {"_id": 9}, "limit": 1}]})");
    EXPECT_EQ(ids(q), (std::vector<int>{1, 2, 3}));
}

TEST_F(CollationCommandsTest, UniqueCollatedIndexTreatsEquivalentStringsAsDuplicates) {
    ok(R"({"createIndexes": "u", "indexes": [{"key": {"k": 1}, "name": "k_ci", "unique": true,
           "collation": {"locale": "en", "strength": 2}}]})");
    ok(R"({"insert": "u", "documents": [{"_id": 1, "k": "Hello"}]})");
    bson::BsonObj r = ok(R"({"insert": "u", "documents": [{"_id": 2, "k": "HELLO"}]})");
    ASSERT_TRUE(r.hasField("writeErrors")) << r.toJson();
    EXPECT_EQ(
        bson::BsonView(r["writeErrors"].objValue()).firstElement().objValue()["code"].numberInt(),
        11000);
    // Same key pattern with another collation and another name is a different index.
    ok(R"({"createIndexes": "u", "indexes": [{"key": {"k": 1}, "name": "k_1"}]})");
    ok(R"({"insert": "u", "documents": [{"_id": 3, "k": "hello!"}]})");
}

}  // namespace
}  // namespace tessera::command::test
