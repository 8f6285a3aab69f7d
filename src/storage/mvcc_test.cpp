// MVCC reads: versions, reads at past timestamps, snapshot stability, index scans and ranges.

#include <gtest/gtest.h>

#include "storage/storage_test_util.h"

namespace tessera::storage {
namespace {

using test::EngineTest;
using test::idKey;
using test::indexKey;
using test::J;
using test::removeCurrent;
using test::updateCurrent;

using MvccTest = EngineTest;

IndexSpec spec(std::string name, std::string_view keyPattern, bool unique = false) {
    IndexSpec s;
    s.name = std::move(name);
    s.keyPattern = J(keyPattern);
    s.unique = unique;
    return s;
}

std::vector<std::string> indexKeys(ReadSnapshot& snap, const CollectionInfo& coll,
                                   std::string_view indexName, const KeyRange& range = {},
                                   bool forward = true) {
    std::vector<std::string> out;
    auto cursor = snap.indexScan(coll, *coll.findIndex(indexName), range, forward);
    while (auto e = cursor->next()) out.push_back(e->key);
    return out;
}

TEST_F(MvccTest, ReadsAtPastTimestamps) {
    auto coll = create("db.c");
    auto w = writerFor("db.c");
    Timestamp t1 = w->insert(J(R"({"_id": 1, "v": 1})"), {}).getValue();
    Timestamp t2 = updateCurrent(*w, idKey("1"), J(R"({"_id": 1, "v": 2})"), {}).getValue();
    Timestamp t3 = removeCurrent(*w, idKey("1"), {}).getValue();
    Timestamp t4 = w->insert(J(R"({"_id": 1, "v": 4})"), {}).getValue();
    w.reset();
    EXPECT_LT(t1, t2);
    EXPECT_LT(t2, t3);
    EXPECT_LT(t3, t4);

    auto at = [&](Timestamp ts) -> std::string {
        auto snap = engine->snapshot(ts);
        EXPECT_EQ(snap->timestamp(), ts);
        auto doc = snap->findByRecordKey(*coll, idKey("1"));
        auto all = scanAll(*snap, "db.c");
        auto back = scanAll(*snap, "db.c", false);
        EXPECT_EQ(all, back);
        EXPECT_EQ(all.size(), doc ? 1u : 0u);
        return doc ? doc->toJson() : "none";
    };
    EXPECT_EQ(at(Timestamp{t1.value - 1}), "none");
    EXPECT_EQ(at(t1), R"({ "_id" : 1, "v" : 1 })");
    EXPECT_EQ(at(t2), R"({ "_id" : 1, "v" : 2 })");
    EXPECT_EQ(at(Timestamp{t3.value - 1}), R"({ "_id" : 1, "v" : 2 })");
    EXPECT_EQ(at(t3), "none");
    EXPECT_EQ(at(t4), R"({ "_id" : 1, "v" : 4 })");
    auto latest = engine->snapshot();
    EXPECT_GE(latest->timestamp(), t4);
    EXPECT_EQ(latest->findByRecordKey(*coll, idKey("1"))->toJson(), R"({ "_id" : 1, "v" : 4 })");
    EXPECT_GE(engine->lastCommitTimestamp(), t4);
}

TEST_F(MvccTest, SnapshotDoesNotSeeLaterWrites) {
    auto coll = create("db.c");
    insert("db.c", R"({"_id": 1})");
    auto snap = engine->snapshot();
    insert("db.c", R"({"_id": 2})");
    {
        auto w = writerFor("db.c");
        ASSERT_TRUE(removeCurrent(*w, idKey("1"), {}).isOK());
    }
    EXPECT_EQ(scanAll(*snap, "db.c"), std::vector<std::string>{R"({ "_id" : 1 })"});
    EXPECT_TRUE(snap->findByRecordKey(*coll, idKey("1")).has_value());
    EXPECT_FALSE(snap->findByRecordKey(*coll, idKey("2")).has_value());
    EXPECT_EQ(scanAll("db.c"), std::vector<std::string>{R"({ "_id" : 2 })"});
}

TEST_F(MvccTest, FindByIdAndScanOrder) {
    auto coll = create("db.c");
    for (std::string id : {"3", "1", "\"a\"", "2.5", "{\"$oid\": \"0123456789abcdef01234567\"}"})
        insert("db.c", "{\"_id\": " + id + "}");
    auto snap = engine->snapshot();
    auto id = J(R"({"_id": 2.5})");
    auto rec = snap->findById(*coll, id.firstElement());
    ASSERT_TRUE(rec.has_value());
    EXPECT_EQ(rec->recordKey, idKey("2.5"));
    EXPECT_EQ(rec->doc.toJson(), R"({ "_id" : 2.5 })");
    EXPECT_FALSE(snap->findById(*coll, J(R"({"_id": 9})").firstElement()).has_value());
    // Numbers, then strings, then ObjectIds (MongoDB's order).
    auto all = scanAll(*snap, "db.c");
    ASSERT_EQ(all.size(), 5u);
    EXPECT_EQ(all[0], R"({ "_id" : 1 })");
    EXPECT_EQ(all[1], R"({ "_id" : 2.5 })");
    EXPECT_EQ(all[2], R"({ "_id" : 3 })");
    EXPECT_EQ(all[3], R"({ "_id" : "a" })");
    auto back = scanAll(*snap, "db.c", false);
    std::reverse(back.begin(), back.end());
    EXPECT_EQ(all, back);
}

TEST_F(MvccTest, CollectionsDoNotSeeEachOther) {
    create("db.a");
    create("db.b");
    insert("db.a", R"({"_id": 1})");
    insert("db.b", R"({"_id": 2})");
    EXPECT_EQ(scanAll("db.a"), std::vector<std::string>{R"({ "_id" : 1 })"});
    EXPECT_EQ(scanAll("db.b", false), std::vector<std::string>{R"({ "_id" : 2 })"});
}

TEST_F(MvccTest, IndexEntriesAreVersioned) {
    create("db.c");
    ASSERT_TRUE(engine->createIndexes("db.c", {spec("a_1", R"({"a": 1})")}).isOK());
    auto coll = engine->getCollection("db.c");
    auto w = writerFor("db.c");
    Timestamp t1 = w->insert(J(R"({"_id": 1, "a": 1})"), {}).getValue();
    Timestamp t2 = updateCurrent(*w, idKey("1"), J(R"({"_id": 1, "a": 2})"), {}).getValue();
    Timestamp t3 = removeCurrent(*w, idKey("1"), {}).getValue();
    w.reset();
    EXPECT_EQ(indexKeys(*engine->snapshot(t1), *coll, "a_1"),
              std::vector<std::string>{indexKey("[1]")});
    EXPECT_EQ(indexKeys(*engine->snapshot(t2), *coll, "a_1"),
              std::vector<std::string>{indexKey("[2]")});
    EXPECT_EQ(indexKeys(*engine->snapshot(t2), *coll, "a_1", {}, false),
              std::vector<std::string>{indexKey("[2]")});
    EXPECT_TRUE(indexKeys(*engine->snapshot(t3), *coll, "a_1").empty());
    EXPECT_TRUE(indexKeys(*engine->snapshot(t3), *coll, "a_1", {}, false).empty());
}

class IndexRangeTest : public EngineTest {
  protected:
    void SetUp() override {
        EngineTest::SetUp();
        create("db.c");
        ASSERT_TRUE(engine
                        ->createIndexes("db.c", {spec("a_1", R"({"a": 1})"),
                                                 spec("u_-1", R"({"u": -1})", true)})
                        .isOK());
        auto w = writerFor("db.c");
        for (int i = 1; i <= 10; ++i) {
            std::string doc = "{\"_id\": " + std::to_string(i) +
                              ", \"a\": " + std::to_string(i % 5) +
                              ", \"u\": " + std::to_string(i) + "}";
            ASSERT_TRUE(w->insert(J(doc), {}).isOK());
        }
        coll = engine->getCollection("db.c");
    }
    // The `a` values (decoded from record keys via findByRecordKey) of a scan.
    std::vector<std::string> ids(std::string_view index, KeyRange range, bool forward = true) {
        auto snap = engine->snapshot();
        std::vector<std::string> out;
        auto cursor = snap->indexScan(*coll, *coll->findIndex(index), range, forward);
        while (auto e = cursor->next()) {
            auto doc = snap->findByRecordKey(*coll, e->recordKey);
            out.push_back(doc->getField("_id").toString(false));
        }
        return out;
    }
    CollectionPtr coll;
};

TEST_F(IndexRangeTest, NonUniqueInclusiveExclusiveBothDirections) {
    using V = std::vector<std::string>;
    // a = i % 5: a=1 -> {1,6}, a=2 -> {2,7}, a=3 -> {3,8}
    KeyRange r{indexKey("[1]"), true, indexKey("[3]"), true};
    EXPECT_EQ(ids("a_1", r), (V{"1", "6", "2", "7", "3", "8"}));
    EXPECT_EQ(ids("a_1", r, false), (V{"8", "3", "7", "2", "6", "1"}));
    r = KeyRange{indexKey("[1]"), false, indexKey("[3]"), false};
    EXPECT_EQ(ids("a_1", r), (V{"2", "7"}));
    EXPECT_EQ(ids("a_1", r, false), (V{"7", "2"}));
    r = KeyRange{indexKey("[1]"), true, indexKey("[3]"), false};
    EXPECT_EQ(ids("a_1", r), (V{"1", "6", "2", "7"}));
    r = KeyRange{"", true, indexKey("[1]"), true};
    EXPECT_EQ(ids("a_1", r), (V{"5", "10", "1", "6"}));
    r = KeyRange{indexKey("[4]"), false, "", true};
    EXPECT_TRUE(ids("a_1", r).empty());
    r = KeyRange{indexKey("[3]"), true, "", true};
    EXPECT_EQ(ids("a_1", r, false), (V{"9", "4", "8", "3"}));
    // Empty range (low > high).
    r = KeyRange{indexKey("[3]"), true, indexKey("[1]"), true};
    EXPECT_TRUE(ids("a_1", r).empty());
    EXPECT_TRUE(ids("a_1", r, false).empty());
    EXPECT_EQ(ids("a_1", {}).size(), 10u);
}

TEST_F(IndexRangeTest, UniqueDescendingIndex) {
    using V = std::vector<std::string>;
    // Descending keys: [u: 8] sorts before [u: 3].
    KeyRange r{indexKey("[8]", {true}), true, indexKey("[3]", {true}), false};
    EXPECT_EQ(ids("u_-1", r), (V{"8", "7", "6", "5", "4"}));
    EXPECT_EQ(ids("u_-1", r, false), (V{"4", "5", "6", "7", "8"}));
    EXPECT_EQ(ids("u_-1", {}).front(), "10");
}

TEST_F(IndexRangeTest, IdIndexScan) {
    using V = std::vector<std::string>;
    KeyRange r{indexKey("[2]"), false, indexKey("[5]"), true};
    EXPECT_EQ(ids("_id_", r), (V{"3", "4", "5"}));
    EXPECT_EQ(ids("_id_", r, false), (V{"5", "4", "3"}));
    auto snap = engine->snapshot();
    auto cursor = snap->indexScan(*coll, coll->indexes[0], r);
    auto e = cursor->next();
    ASSERT_TRUE(e);
    EXPECT_EQ(e->key, idKey("3"));
    EXPECT_EQ(e->recordKey, idKey("3"));
}

TEST_F(MvccTest, OpenSnapshotRejectsTimestampsOlderThanTheWindow) {
    create("db.c");
    Timestamp t1 = insert("db.c", R"({"_id": 1})");
    EXPECT_TRUE(engine->openSnapshot(t1).isOK());
    advanceSeconds(1000);
    insert("db.c", R"({"_id": 2})");
    auto sw = engine->openSnapshot(t1);
    EXPECT_EQ(sw.getStatus().code(), 239);
    EXPECT_TRUE(engine->openSnapshot(std::nullopt).isOK());
}

TEST_F(MvccTest, SnapshotInTheFutureMakesLaterCommitsLater) {
    create("db.c");
    Timestamp future = Timestamp::fromParts(test::fakeSeconds() + 100, 0);
    auto snap = engine->snapshot(future);
    Timestamp t = insert("db.c", R"({"_id": 1})");
    EXPECT_GT(t, future);
    EXPECT_TRUE(scanAll(*snap, "db.c").empty());
}

}  // namespace
}  // namespace tessera::storage
