// Hashed indexes through the commands: createIndexes/listIndexes, writes, and find/count/update
// planned on the hashed index (explain shows the IXSCAN; results are re-checked by the filter).

#include <gtest/gtest.h>

#include "command/crud_test_util.h"
#include "command/registry.h"

namespace tessera::command::test {
namespace {

class HashedIndexCommandsTest : public CrudFixture {
  protected:
    void SetUp() override {
        CrudFixture::SetUp();
        registerCollectionCommands(registry);
        registerIndexCommands(registry);
    }
    std::vector<int> ids(std::string_view findJson) {
        std::vector<int> out;
        for (const auto& d : findAll(findJson)) out.push_back(J(d)["_id"].numberInt());
        return out;
    }
    std::string explain(std::string_view findJson) {
        return ok(R"({"explain": )" + std::string(findJson) + "}").toJson();
    }
};

TEST_F(HashedIndexCommandsTest, CreateListAndQuery) {
    ok(R"({"insert": "c", "documents": [
          {"_id": 1, "a": 1}, {"_id": 2, "a": 1.0}, {"_id": 3, "a": {"$numberLong": "1"}},
          {"_id": 4, "a": 1.5}, {"_id": 5, "a": "x"}, {"_id": 6}, {"_id": 7, "a": null},
          {"_id": 8, "a": 2}]})");
    bson::BsonObj created = ok(R"({"createIndexes": "c", "indexes": [{"key": {"a": "hashed"}}]})");
    EXPECT_EQ(created["numIndexesAfter"].numberInt(), 2);

    bson::BsonObj list = ok(R"({"listIndexes": "c"})");
    std::string listJson = list.toJson();
    EXPECT_NE(listJson.find(R"("key" : { "a" : "hashed" }, "name" : "a_hashed")"),
              std::string::npos)
        << listJson;

    // Equality: every numeric type equal to 1, not 1.5 (same hash, filtered by the matcher).
    std::string eq = R"({"find": "c", "filter": {"a": 1}, "sort": {"_id": 1}})";
    EXPECT_EQ(ids(eq), (std::vector<int>{1, 2, 3}));
    std::string ex = explain(R"({"find": "c", "filter": {"a": 1}})");
    EXPECT_NE(ex.find("IXSCAN"), std::string::npos) << ex;
    EXPECT_NE(ex.find(R"("keyPattern" : { "a" : "hashed" })"), std::string::npos) << ex;
    EXPECT_NE(ex.find(R"("indexName" : "a_hashed")"), std::string::npos) << ex;

    EXPECT_EQ(ids(R"({"find": "c", "filter": {"a": {"$in": [1.5, "x"]}}, "sort": {"_id": 1}})"),
              (std::vector<int>{4, 5}));
    EXPECT_EQ(ids(R"({"find": "c", "filter": {"a": null}, "sort": {"_id": 1}})"),
              (std::vector<int>{6, 7}));
    EXPECT_NE(explain(R"({"find": "c", "filter": {"a": null}})").find("IXSCAN"), std::string::npos);

    // Ranges and sorts do not use the hashed order.
    std::string range = R"({"find": "c", "filter": {"a": {"$gte": 1.5}}, "sort": {"a": 1}})";
    EXPECT_EQ(ids(range), (std::vector<int>{4, 8}));
    EXPECT_EQ(explain(range).find("IXSCAN"), std::string::npos);
    // Hinted with a sort: still correct (the sort is done after the scan).
    EXPECT_EQ(ids(R"({"find": "c", "filter": {}, "sort": {"a": -1, "_id": 1},
                      "hint": {"a": "hashed"}, "limit": 3})"),
              (std::vector<int>{5, 8, 4}));

    // Writes keep the index current.
    ok(R"({"update": "c", "updates": [{"q": {"a": 2}, "u": {"$set": {"a": 1}}}]})");
    EXPECT_EQ(ids(eq), (std::vector<int>{1, 2, 3, 8}));
    ok(R"({"delete": "c", "deletes": [{"q": {"a": 1}, "limit": 0}]})");
    EXPECT_TRUE(ids(eq).empty());
    EXPECT_EQ(ok(R"({"count": "c", "query": {"a": "x"}})")["n"].numberLong(), 1);
}

TEST_F(HashedIndexCommandsTest, ArraysAreRejected) {
    ok(R"({"createIndexes": "c", "indexes": [{"key": {"a.b": "hashed"}, "name": "ab"}]})");
    bson::BsonObj r = ok(R"({"insert": "c", "documents": [{"_id": 1, "a": [{"b": 1}]}]})");
    ASSERT_TRUE(r["writeErrors"].isArray()) << r.toJson();
    bson::BsonView err = r["writeErrors"].objValue().firstElement().objValue();
    EXPECT_EQ(err["code"].numberInt(), 16766);
    EXPECT_EQ(err["errmsg"].stringValue(),
              "Error: hashed indexes do not currently support array values. Found array at "
              "path: a");
    EXPECT_EQ(r["n"].numberInt(), 0);

    // An index build over an existing array fails and leaves no index.
    ok(R"({"insert": "d", "documents": [{"_id": 1, "a": [1]}]})");
    CommandResult build =
        run(R"({"createIndexes": "d", "indexes": [{"key": {"x": 1, "a": "hashed"}}]})");
    EXPECT_EQ(build.status.code(), 16766);
    EXPECT_EQ(engine->getCollection("test.d")->indexes.size(), 1u);
}

TEST_F(HashedIndexCommandsTest, SpecValidation) {
    CommandResult unique =
        run(R"({"createIndexes": "c", "indexes": [{"key": {"a": "hashed"}, "unique": true}]})");
    EXPECT_EQ(unique.status.code(), 16764);
    CommandResult two = run(R"({"createIndexes": "c", "indexes": [
                                  {"key": {"a": "hashed", "b": "hashed"}}]})");
    EXPECT_EQ(two.status.code(), 31303);
    CommandResult unknown = run(R"({"createIndexes": "c", "indexes": [{"key": {"a": "hash"}}]})");
    EXPECT_EQ(unknown.status.code(), 67);
    EXPECT_EQ(unknown.status.reason(), "Unknown index plugin 'hash'");
    EXPECT_EQ(run(R"({"createIndexes": "c", "indexes": [{"key": {"a": "text"}}]})").status.code(),
              67);

    // Compound with one hashed field, sparse: fine; listIndexes shows it as given.
    ok(R"({"createIndexes": "c", "indexes": [{"key": {"x": 1, "a": "hashed"}, "sparse": true}]})");
    std::string list = ok(R"({"listIndexes": "c"})").toJson();
    EXPECT_NE(list.find(R"("key" : { "x" : 1, "a" : "hashed" }, "name" : "x_1_a_hashed")"),
              std::string::npos)
        << list;
    // {_id: "hashed"} is a separate, non-unique index.
    ok(R"({"createIndexes": "c", "indexes": [{"key": {"_id": "hashed"}}]})");
    const storage::IndexSpec* id = engine->getCollection("test.c")->findIndex("_id_hashed");
    ASSERT_NE(id, nullptr);
    EXPECT_FALSE(id->unique);
    ok(R"({"insert": "c", "documents": [{"_id": 1, "x": 1, "a": 2}]})");
    EXPECT_EQ(ids(R"({"find": "c", "filter": {"_id": {"$in": [1, 2]}}, "hint": "_id_hashed"})"),
              (std::vector<int>{1}));
    ok(R"({"dropIndexes": "c", "index": {"x": 1, "a": "hashed"}})");
    EXPECT_EQ(engine->getCollection("test.c")->findIndex("x_1_a_hashed"), nullptr);
}

}  // namespace
}  // namespace tessera::command::test
