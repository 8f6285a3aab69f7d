// Catalog (DDL) behaviour of the engine: names, create/drop/rename, indexes, persistence.

#include <gtest/gtest.h>

#include <fstream>

#include "bson/bson_builder.h"
#include "storage/storage_test_util.h"

namespace tessera::storage {
namespace {

using test::EngineTest;
using test::J;

IndexSpec spec(std::string name, std::string_view keyPattern, bool unique = false,
               bool sparse = false) {
    IndexSpec s;
    s.name = std::move(name);
    s.keyPattern = J(keyPattern);
    s.unique = unique;
    s.sparse = sparse;
    return s;
}

using CatalogTest = EngineTest;

TEST_F(CatalogTest, CreateGetListDrop) {
    auto coll = create("db1.c");
    ASSERT_TRUE(coll);
    EXPECT_EQ(coll->db, "db1");
    EXPECT_EQ(coll->name, "c");
    EXPECT_EQ(coll->uuid.size(), 16u);
    ASSERT_EQ(coll->indexes.size(), 1u);
    EXPECT_TRUE(coll->indexes[0].isIdIndex());
    EXPECT_EQ(coll->indexes[0].spec.toJson(),
              R"({ "v" : 2, "key" : { "_id" : 1 }, "name" : "_id_" })");
    EXPECT_EQ(engine->getCollection("db1.c"), coll);
    EXPECT_EQ(engine->getCollection("db1.d"), nullptr);

    auto again = engine->createCollection("db1.c", bson::BsonObj());
    EXPECT_EQ(again.getStatus().code(), 48);
    EXPECT_EQ(again.getStatus().reason(), "Collection db1.c already exists.");

    create("db1.d");
    create("db2.x");
    EXPECT_EQ(engine->listDatabases(), (std::vector<std::string>{"db1", "db2"}));
    EXPECT_EQ(engine->listCollections("db1").size(), 2u);

    ASSERT_TRUE(engine->dropCollection("db1.c").isOK());
    EXPECT_EQ(engine->getCollection("db1.c"), nullptr);
    EXPECT_EQ(engine->dropCollection("db1.c").code(), 26);
    EXPECT_EQ(engine->listCollections("db1").size(), 1u);
}

TEST_F(CatalogTest, InvalidNamespaces) {
    for (std::string ns : std::vector<std::string>{
             "", "nodot", "db.", "a/b.c", "a b.c", "a$b.c", "a\"b.c", "db.c$x", "db..c",
             std::string(64, 'd') + ".c", "db." + std::string(260, 'c')}) {
        auto sw = engine->createCollection(ns, bson::BsonObj());
        EXPECT_EQ(sw.getStatus().code(), 73) << ns;
    }
    EXPECT_TRUE(engine->createCollection(std::string(63, 'd') + ".c", bson::BsonObj()).isOK());
    EXPECT_TRUE(engine->createCollection("db.system.views", bson::BsonObj()).isOK());
    EXPECT_TRUE(engine->createCollection("db.a.b.c", bson::BsonObj()).isOK());
}

TEST_F(CatalogTest, OptionsAreKept) {
    auto sw = engine->createCollection("db.c", J(R"({"capped": true, "size": 4096})"));
    ASSERT_TRUE(sw.isOK());
    EXPECT_EQ(sw.getValue()->options.toJson(), R"({ "capped" : true, "size" : 4096 })");
    reopen();
    EXPECT_EQ(engine->getCollection("db.c")->options.toJson(),
              R"({ "capped" : true, "size" : 4096 })");
}

TEST_F(CatalogTest, CollectionIdsAreNeverReused) {
    uint64_t first = create("db.c")->id;
    ASSERT_TRUE(engine->dropCollection("db.c").isOK());
    uint64_t second = create("db.c")->id;
    EXPECT_GT(second, first);
    reopen();
    EXPECT_GT(create("db.d")->id, second);
}

TEST_F(CatalogTest, DropRemovesDocumentsAndIndexEntries) {
    create("db.c");
    ASSERT_TRUE(engine->createIndexes("db.c", {spec("a_1", R"({"a": 1})")}).isOK());
    insert("db.c", R"({"_id": 1, "a": 1})");
    CollectionInfo old = *engine->getCollection("db.c");
    ASSERT_TRUE(engine->dropCollection("db.c").isOK());
    EXPECT_EQ(engine->countVersionsForTest(old, false), 0u);
    EXPECT_EQ(engine->countVersionsForTest(old, true), 0u);
    create("db.c");
    EXPECT_TRUE(scanAll("db.c").empty());
    EXPECT_EQ(engine->stats(*engine->getCollection("db.c")).count, 0);
}

TEST_F(CatalogTest, DropDatabaseDropsOnlyItsCollections) {
    create("a.x");
    create("a.y");
    create("b.x");
    insert("a.x", R"({"_id": 1})");
    insert("b.x", R"({"_id": 1})");
    ASSERT_TRUE(engine->dropDatabase("a").isOK());
    EXPECT_TRUE(engine->listCollections("a").empty());
    EXPECT_EQ(engine->listDatabases(), std::vector<std::string>{"b"});
    EXPECT_EQ(scanAll("b.x").size(), 1u);
    EXPECT_TRUE(engine->dropDatabase("nothing").isOK());
    reopen();
    EXPECT_EQ(engine->listDatabases(), std::vector<std::string>{"b"});
}

TEST_F(CatalogTest, SetCollectionOptionsPersists) {
    auto coll = create("db.v");
    insert("db.v", R"({"_id": 1})");
    ASSERT_TRUE(engine->setCollectionOptions("db.v", J(R"({"validator": {"x": 1}})")).isOK());
    auto updated = engine->getCollection("db.v");
    ASSERT_TRUE(updated);
    EXPECT_EQ(updated->id, coll->id);
    EXPECT_EQ(updated->options.toJson(), J(R"({"validator": {"x": 1}})").toJson());
    {
        auto writer = engine->writer(updated);
        ASSERT_TRUE(writer.isOK());
        EXPECT_EQ(writer.getValue()->collection().options.toJson(), updated->options.toJson());
    }
    EXPECT_EQ(engine->setCollectionOptions("db.missing", J("{}")).code(), 26);
    reopen();
    EXPECT_EQ(engine->getCollection("db.v")->options.toJson(),
              J(R"({"validator": {"x": 1}})").toJson());
    EXPECT_EQ(scanAll("db.v").size(), 1u);
}

TEST_F(CatalogTest, RenameCollection) {
    auto coll = create("db.a");
    insert("db.a", R"({"_id": 1, "x": 1})");
    ASSERT_TRUE(engine->renameCollection("db.a", "db2.b", false).isOK());
    EXPECT_EQ(engine->getCollection("db.a"), nullptr);
    auto renamed = engine->getCollection("db2.b");
    ASSERT_TRUE(renamed);
    EXPECT_EQ(renamed->id, coll->id);
    EXPECT_EQ(renamed->uuid, coll->uuid);
    EXPECT_EQ(scanAll("db2.b").size(), 1u);
    EXPECT_EQ(engine->stats(*renamed).count, 1);

    EXPECT_EQ(engine->renameCollection("db.a", "db.z", false).code(), 26);
    create("db.t");
    insert("db.t", R"({"_id": 7})");
    EXPECT_EQ(engine->renameCollection("db2.b", "db.t", false).code(), 48);
    EXPECT_EQ(engine->renameCollection("db2.b", "db.bad$", false).code(), 73);
    ASSERT_TRUE(engine->renameCollection("db2.b", "db.t", true).isOK());
    EXPECT_EQ(scanAll("db.t"), std::vector<std::string>{R"({ "_id" : 1, "x" : 1 })"});
    reopen();
    EXPECT_EQ(engine->getCollection("db2.b"), nullptr);
    EXPECT_EQ(scanAll("db.t"), std::vector<std::string>{R"({ "_id" : 1, "x" : 1 })"});
    EXPECT_EQ(engine->stats(*engine->getCollection("db.t")).count, 1);
}

TEST_F(CatalogTest, CreateIndexesConflictsAndNoOps) {
    create("db.c");
    auto r = engine->createIndexes("db.c", {spec("a_1", R"({"a": 1})")});
    ASSERT_TRUE(r.isOK());
    EXPECT_EQ(r.getValue().numIndexesBefore, 1);
    EXPECT_EQ(r.getValue().numIndexesAfter, 2);
    // Same name and key: no-op.
    r = engine->createIndexes("db.c", {spec("a_1", R"({"a": 1})")});
    ASSERT_TRUE(r.isOK());
    EXPECT_EQ(r.getValue().numIndexesBefore, 2);
    EXPECT_EQ(r.getValue().numIndexesAfter, 2);
    // Same name, other key.
    EXPECT_EQ(engine->createIndexes("db.c", {spec("a_1", R"({"b": 1})")}).getStatus().code(), 86);
    // Same key, other name.
    auto other = engine->createIndexes("db.c", {spec("other", R"({"a": 1})")});
    EXPECT_EQ(other.getStatus().code(), 85);
    EXPECT_EQ(other.getStatus().reason(), "Index already exists with a different name: a_1");
    // Same name and key, other options.
    EXPECT_EQ(engine->createIndexes("db.c", {spec("a_1", R"({"a": 1})", true)}).getStatus().code(),
              85);
    EXPECT_EQ(engine->createIndexes("db.c", {spec("bad", R"({"a": 0})")}).getStatus().code(), 67);
    EXPECT_EQ(engine->createIndexes("db.missing", {spec("a_1", R"({"a": 1})")}).getStatus().code(),
              26);
    // The _id index is a no-op; a default name is derived when none is given.
    r = engine->createIndexes("db.c", {spec("_id_", R"({"_id": 1})"), spec("", R"({"b": -1})")});
    ASSERT_TRUE(r.isOK()) << r.getStatus().toString();
    EXPECT_EQ(r.getValue().numIndexesAfter, 3);
    EXPECT_NE(engine->getCollection("db.c")->findIndex("b_-1"), nullptr);
    EXPECT_NE(engine->getCollection("db.c")->findIndexByKeyPattern(J(R"({"b": -1.0})")), nullptr);
}

TEST_F(CatalogTest, DropIndex) {
    create("db.c");
    ASSERT_TRUE(engine->createIndexes("db.c", {spec("a_1", R"({"a": 1})")}).isOK());
    insert("db.c", R"({"_id": 1, "a": 1})");
    EXPECT_EQ(engine->dropIndex("db.c", "_id_").code(), 72);
    EXPECT_EQ(engine->dropIndex("db.c", "nope").code(), 27);
    EXPECT_EQ(engine->dropIndex("db.nope", "a_1").code(), 26);
    CollectionInfo before = *engine->getCollection("db.c");
    EXPECT_EQ(engine->countVersionsForTest(before, true), 1u);
    ASSERT_TRUE(engine->dropIndex("db.c", "a_1").isOK());
    EXPECT_EQ(engine->getCollection("db.c")->indexes.size(), 1u);
    EXPECT_EQ(engine->countVersionsForTest(before, true), 0u);
    // A re-created index gets a fresh id and only fresh entries.
    ASSERT_TRUE(engine->createIndexes("db.c", {spec("a_1", R"({"a": 1})")}).isOK());
    auto coll = engine->getCollection("db.c");
    EXPECT_GT(coll->indexes[1].id, before.indexes[1].id);
    reopen();
    EXPECT_EQ(engine->getCollection("db.c")->indexes.size(), 2u);
}

TEST_F(CatalogTest, CatalogAndCountsPersistAcrossReopen) {
    auto coll = create("db.c");
    ASSERT_TRUE(engine
                    ->createIndexes("db.c", {spec("a_1", R"({"a": 1})", true),
                                             spec("t_1", R"({"t": 1})", false, true)})
                    .isOK());
    insert("db.c", R"({"_id": 1, "a": 1, "t": [1, 2]})");
    insert("db.c", R"({"_id": 2, "a": 2})");
    auto before = engine->stats(*engine->getCollection("db.c"));
    reopen();
    auto after = engine->getCollection("db.c");
    ASSERT_TRUE(after);
    EXPECT_EQ(after->uuid, coll->uuid);
    EXPECT_EQ(after->id, coll->id);
    ASSERT_EQ(after->indexes.size(), 3u);
    EXPECT_TRUE(after->indexes[1].unique);
    EXPECT_FALSE(after->indexes[1].multikey);
    EXPECT_TRUE(after->indexes[2].sparse);
    EXPECT_TRUE(after->indexes[2].multikey);
    auto stats = engine->stats(*after);
    EXPECT_EQ(stats.count, 2);
    EXPECT_EQ(stats.dataSize, before.dataSize);
    EXPECT_EQ(scanAll("db.c").size(), 2u);
}

TEST_F(CatalogTest, SecondOpenOfTheSameDbpathFails) {
    EngineOptions options;
    options.dbpath = dir.path();
    auto second = Engine::open(options);
    ASSERT_FALSE(second.isOK());
    EXPECT_EQ(second.getStatus().code(), 98);
    EXPECT_EQ(second.getStatus().codeName(), "DBPathInUse");
    EXPECT_NE(second.getStatus().reason().find(dir.path()), std::string::npos);
}

TEST(EngineOpen, RefusesMongoDataFiles) {
    test::TempDir dir;
    std::ofstream(dir.path() + "/WiredTiger") << "WiredTiger";
    EngineOptions options;
    options.dbpath = dir.path();
    auto sw = Engine::open(options);
    ASSERT_FALSE(sw.isOK());
    EXPECT_NE(sw.getStatus().reason().find("not a Tessera database"), std::string::npos);
}

TEST(EngineOpen, CreatesMissingDirectory) {
    test::TempDir dir;
    EngineOptions options;
    options.dbpath = dir.path() + "/nested/db";
    auto sw = Engine::open(options);
    ASSERT_TRUE(sw.isOK()) << sw.getStatus().toString();
}

}  // namespace
}  // namespace tessera::storage
