// Garbage collection of MVCC versions below the history window (fake clock).

#include <gtest/gtest.h>

#include "storage/storage_test_util.h"

namespace tessera::storage {
namespace {

using test::EngineTest;
using test::idKey;
using test::J;
using test::removeCurrent;
using test::updateCurrent;

class GcTest : public EngineTest {
  protected:
    void SetUp() override {
        EngineTest::SetUp();
        coll = create("db.c");
        IndexSpec a;
        a.name = "a_1";
        a.keyPattern = J(R"({"a": 1})");
        ASSERT_TRUE(engine->createIndexes("db.c", {a}).isOK());
        coll = engine->getCollection("db.c");
        create("db.other");
    }
    // Moves the clock past the window: a write elsewhere makes the clock observe the new time.
    void passWindow(uint32_t seconds = 400) {
        advanceSeconds(seconds);
        insert("db.other", "{\"_id\": " + std::to_string(++_tick) + "}");
    }
    size_t records() { return engine->countVersionsForTest(*coll, false); }
    size_t indexEntries() { return engine->countVersionsForTest(*coll, true); }
    CollectionPtr coll;
    int _tick = 0;
};

TEST_F(GcTest, DropsVersionsOlderThanTheNewestBeyondTheWindow) {
    {
        auto w = writerFor("db.c");
        ASSERT_TRUE(w->insert(J(R"({"_id": 1, "a": 1})"), {}).isOK());
        ASSERT_TRUE(updateCurrent(*w, idKey("1"), J(R"({"_id": 1, "a": 2})"), {}).isOK());
        ASSERT_TRUE(updateCurrent(*w, idKey("1"), J(R"({"_id": 1, "a": 3})"), {}).isOK());
    }
    EXPECT_EQ(records(), 3u);
    EXPECT_EQ(indexEntries(), 5u);  // +1, (-1 +2), (-2 +3)
    // Within the window: nothing is dropped.
    ASSERT_TRUE(engine->collectGarbageForTest().isOK());
    EXPECT_EQ(records(), 3u);
    EXPECT_EQ(indexEntries(), 5u);

    passWindow();
    ASSERT_TRUE(engine->collectGarbageForTest().isOK());
    EXPECT_EQ(records(), 1u);
    EXPECT_EQ(indexEntries(), 1u);  // only the live a=3 entry
    EXPECT_EQ(scanAll("db.c"), std::vector<std::string>{R"({ "_id" : 1, "a" : 3 })"});
    auto snap = engine->snapshot();
    auto cursor = snap->indexScan(*coll, *coll->findIndex("a_1"), {});
    ASSERT_TRUE(cursor->next().has_value());
    EXPECT_FALSE(cursor->next().has_value());
}

TEST_F(GcTest, KeepsVersionsInsideTheWindow) {
    Timestamp t1 = insert("db.c", R"({"_id": 1, "a": 1})");
    passWindow();
    Timestamp t2;
    {
        auto w = writerFor("db.c");
        t2 = updateCurrent(*w, idKey("1"), J(R"({"_id": 1, "a": 2})"), {}).getValue();
    }
    ASSERT_TRUE(engine->collectGarbageForTest().isOK());
    // v1 is the newest version at the horizon: a read inside the window may need it.
    EXPECT_EQ(records(), 2u);
    passWindow(100);  // horizon now between t1 and t2
    ASSERT_TRUE(engine->collectGarbageForTest().isOK());
    EXPECT_EQ(records(), 2u);
    passWindow(400);
    ASSERT_TRUE(engine->collectGarbageForTest().isOK());
    EXPECT_EQ(records(), 1u);
    EXPECT_EQ(engine->snapshot()->findByRecordKey(*coll, idKey("1"))->toJson(),
              R"({ "_id" : 1, "a" : 2 })");
    (void)t1;
    (void)t2;
}

TEST_F(GcTest, DeletedDocumentsDisappearCompletely) {
    {
        auto w = writerFor("db.c");
        ASSERT_TRUE(w->insert(J(R"({"_id": 1, "a": 1})"), {}).isOK());
        ASSERT_TRUE(w->insert(J(R"({"_id": 2, "a": 2})"), {}).isOK());
        ASSERT_TRUE(removeCurrent(*w, idKey("1"), {}).isOK());
    }
    EXPECT_EQ(records(), 3u);
    passWindow();
    ASSERT_TRUE(engine->collectGarbageForTest().isOK());
    EXPECT_EQ(records(), 1u);       // doc 2 only; doc 1's insert and tombstone are gone
    EXPECT_EQ(indexEntries(), 1u);  // a=2 only
    EXPECT_EQ(scanAll("db.c"), std::vector<std::string>{R"({ "_id" : 2, "a" : 2 })"});
}

TEST_F(GcTest, LiveSnapshotPinsItsVersions) {
    Timestamp t1 = insert("db.c", R"({"_id": 1, "a": 1})");
    auto old = engine->snapshot(t1);
    {
        auto w = writerFor("db.c");
        ASSERT_TRUE(updateCurrent(*w, idKey("1"), J(R"({"_id": 1, "a": 2})"), {}).isOK());
    }
    passWindow(1000);
    ASSERT_TRUE(engine->collectGarbageForTest().isOK());
    EXPECT_EQ(records(), 2u);
    EXPECT_EQ(old->findByRecordKey(*coll, idKey("1"))->toJson(), R"({ "_id" : 1, "a" : 1 })");
    old.reset();
    ASSERT_TRUE(engine->collectGarbageForTest().isOK());
    EXPECT_EQ(records(), 1u);
}

TEST_F(GcTest, GcSurvivesReopen) {
    {
        auto w = writerFor("db.c");
        ASSERT_TRUE(w->insert(J(R"({"_id": 1, "a": 1})"), {}).isOK());
        ASSERT_TRUE(updateCurrent(*w, idKey("1"), J(R"({"_id": 1, "a": 2})"), {}).isOK());
    }
    reopen();
    coll = engine->getCollection("db.c");
    passWindow();
    ASSERT_TRUE(engine->collectGarbageForTest().isOK());
    EXPECT_EQ(records(), 1u);
    EXPECT_EQ(engine->stats(*coll).count, 1);
}

}  // namespace
}  // namespace tessera::storage
