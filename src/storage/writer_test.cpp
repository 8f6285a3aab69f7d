// CollectionWriter: CRUD, uniqueness, index maintenance, multikey, counts.

#include <gtest/gtest.h>

#include <functional>

#include "storage/storage_test_util.h"

namespace tessera::storage {
namespace {

using test::EngineTest;
using test::idKey;
using test::indexKey;
using test::J;
using test::removeCurrent;
using test::updateCurrent;

IndexSpec spec(std::string name, std::string_view keyPattern, bool unique = false,
               bool sparse = false) {
    IndexSpec s;
    s.name = std::move(name);
    s.keyPattern = J(keyPattern);
    s.unique = unique;
    s.sparse = sparse;
    return s;
}

class WriterTest : public EngineTest {
  protected:
    // (key, recordKey) pairs of an index at the latest state.
    std::vector<std::pair<std::string, std::string>> entries(std::string_view indexName) {
        auto coll = engine->getCollection("db.c");
        auto snap = engine->snapshot();
        std::vector<std::pair<std::string, std::string>> out;
        auto cursor = snap->indexScan(*coll, *coll->findIndex(indexName), {});
        while (auto e = cursor->next()) out.emplace_back(e->key, e->recordKey);
        return out;
    }
    CollectionStats stats() { return engine->stats(*engine->getCollection("db.c")); }
};

TEST_F(WriterTest, InsertFindUpdateRemove) {
    auto coll = create("db.c");
    auto w = writerFor("db.c");
    bson::BsonObj doc = J(R"({"_id": "k", "x": 1})");
    ASSERT_TRUE(w->insert(doc, {}).isOK());
    auto latest = w->latest();
    EXPECT_EQ(latest->findByRecordKey(*coll, idKey("\"k\""))->toJson(), doc.toJson());

    ASSERT_TRUE(
        updateCurrent(*w, idKey("\"k\""), J(R"({"_id": "k", "x": 2, "y": "long"})"), {}).isOK());
    EXPECT_EQ(w->latest()->findByRecordKey(*coll, idKey("\"k\""))->toJson(),
              R"({ "_id" : "k", "x" : 2, "y" : "long" })");
    EXPECT_EQ(updateCurrent(*w, idKey("\"k\""), J(R"({"_id": "other"})"), {}).getStatus().code(),
              66);
    EXPECT_EQ(updateCurrent(*w, idKey("\"zz\""), J(R"({"_id": "zz"})"), {}).getStatus().code(), 4);

    ASSERT_TRUE(removeCurrent(*w, idKey("\"k\""), {}).isOK());
    EXPECT_FALSE(w->latest()->findByRecordKey(*coll, idKey("\"k\"")).has_value());
    EXPECT_EQ(removeCurrent(*w, idKey("\"k\""), {}).getStatus().code(), 4);
    // Re-insert after delete.
    ASSERT_TRUE(w->insert(doc, {}).isOK());
    w.reset();
    EXPECT_EQ(scanAll("db.c"), std::vector<std::string>{doc.toJson()});
}

TEST_F(WriterTest, DuplicateIdIsRejected) {
    create("db.c");
    insert("db.c", R"({"_id": 1, "v": 1})");
    auto w = writerFor("db.c");
    auto sw = w->insert(J(R"({"_id": 1.0, "v": 2})"), {});
    ASSERT_EQ(sw.getStatus().code(), 11000);
    EXPECT_EQ(sw.getStatus().reason(),
              "E11000 duplicate key error collection: db.c index: _id_ dup key: { _id: 1.0 }");
    EXPECT_EQ(w->duplicateKeyInfo().toJson(),
              R"({ "keyPattern" : { "_id" : 1 }, "keyValue" : { "_id" : 1.0 } })");
    w.reset();
    EXPECT_EQ(scanAll("db.c"), std::vector<std::string>{R"({ "_id" : 1, "v" : 1 })"});
    EXPECT_EQ(stats().count, 1);
}

TEST_F(WriterTest, UniqueIndexViolationWritesNothing) {
    create("db.c");
    ASSERT_TRUE(
        engine
            ->createIndexes("db.c", {spec("a_1", R"({"a": 1})", true), spec("b_1", R"({"b": 1})")})
            .isOK());
    insert("db.c", R"({"_id": 1, "a": 1, "b": 1})");
    auto before = stats();
    auto w = writerFor("db.c");
    auto sw = w->insert(J(R"({"_id": 2, "a": 1, "b": 2})"), {});
    ASSERT_EQ(sw.getStatus().code(), 11000);
    EXPECT_EQ(sw.getStatus().reason(),
              "E11000 duplicate key error collection: db.c index: a_1 dup key: { a: 1 }");
    EXPECT_EQ(w->duplicateKeyInfo().toJson(),
              R"({ "keyPattern" : { "a" : 1 }, "keyValue" : { "a" : 1 } })");
    // Update into a duplicate is rejected too.
    ASSERT_TRUE(w->insert(J(R"({"_id": 3, "a": 3, "b": 3})"), {}).isOK());
    EXPECT_EQ(updateCurrent(*w, idKey("3"), J(R"({"_id": 3, "a": [5, 1]})"), {}).getStatus().code(),
              11000);
    EXPECT_EQ(w->duplicateKeyInfo()["keyValue"].objValue().toJson(), R"({ "a" : 1 })");
    w.reset();
    EXPECT_EQ(scanAll("db.c").size(), 2u);
    EXPECT_EQ(stats().count, before.count + 1);
    EXPECT_EQ(entries("b_1").size(), 2u);
    EXPECT_EQ(entries("a_1").size(), 2u);
    EXPECT_FALSE(engine->getCollection("db.c")->indexes[1].multikey);
    // A document may keep its own unique key, and a freed key can be reused.
    auto w2 = writerFor("db.c");
    EXPECT_TRUE(updateCurrent(*w2, idKey("1"), J(R"({"_id": 1, "a": 1, "b": 9})"), {}).isOK());
    EXPECT_TRUE(removeCurrent(*w2, idKey("1"), {}).isOK());
    EXPECT_TRUE(w2->insert(J(R"({"_id": 4, "a": 1})"), {}).isOK());
}

TEST_F(WriterTest, IndexMaintenanceOnInsertUpdateRemove) {
    create("db.c");
    ASSERT_TRUE(engine->createIndexes("db.c", {spec("a_1_b_-1", R"({"a": 1, "b": -1})")}).isOK());
    auto w = writerFor("db.c");
    ASSERT_TRUE(w->insert(J(R"({"_id": 1, "a": 1, "b": 2})"), {}).isOK());
    ASSERT_TRUE(w->insert(J(R"({"_id": 2, "a": 1, "b": 3})"), {}).isOK());
    using E = std::vector<std::pair<std::string, std::string>>;
    std::vector<bool> dirs{false, true};
    EXPECT_EQ(entries("a_1_b_-1"),
              (E{{indexKey("[1, 3]", dirs), idKey("2")}, {indexKey("[1, 2]", dirs), idKey("1")}}));
    ASSERT_TRUE(updateCurrent(*w, idKey("1"), J(R"({"_id": 1, "a": 0})"), {}).isOK());
    EXPECT_EQ(entries("a_1_b_-1"), (E{{indexKey("[0, null]", dirs), idKey("1")},
                                      {indexKey("[1, 3]", dirs), idKey("2")}}));
    ASSERT_TRUE(removeCurrent(*w, idKey("2"), {}).isOK());
    EXPECT_EQ(entries("a_1_b_-1"), (E{{indexKey("[0, null]", dirs), idKey("1")}}));
}

TEST_F(WriterTest, MultikeyIsSetPersistedAndPublished) {
    create("db.c");
    ASSERT_TRUE(engine->createIndexes("db.c", {spec("t_1", R"({"t": 1})")}).isOK());
    auto w = writerFor("db.c");
    ASSERT_TRUE(w->insert(J(R"({"_id": 1, "t": "x"})"), {}).isOK());
    EXPECT_FALSE(w->collection().indexes[1].multikey);
    ASSERT_TRUE(w->insert(J(R"({"_id": 2, "t": ["x", "y", "x"]})"), {}).isOK());
    EXPECT_TRUE(w->collection().indexes[1].multikey);
    EXPECT_TRUE(engine->getCollection("db.c")->indexes[1].multikey);
    EXPECT_EQ(entries("t_1").size(), 3u);  // x->1, x->2, y->2
    // Parallel arrays: rejected, nothing written.
    ASSERT_TRUE(engine->getCollection("db.c"));
    w.reset();
    ASSERT_TRUE(engine->createIndexes("db.c", {spec("p_1_q_1", R"({"p": 1, "q": 1})")}).isOK());
    w = writerFor("db.c");
    auto sw = w->insert(J(R"({"_id": 3, "p": [1], "q": [2]})"), {});
    EXPECT_EQ(sw.getStatus().code(), 171);
    EXPECT_FALSE(w->latest()->findByRecordKey(w->collection(), idKey("3")).has_value());
    w.reset();
    reopen();
    EXPECT_TRUE(engine->getCollection("db.c")->indexes[1].multikey);
    EXPECT_FALSE(engine->getCollection("db.c")->indexes[2].multikey);
}

TEST_F(WriterTest, SparseIndexSkipsDocumentsWithoutTheField) {
    create("db.c");
    ASSERT_TRUE(engine->createIndexes("db.c", {spec("s_1", R"({"s": 1})", true, true)}).isOK());
    insert("db.c", R"({"_id": 1})");
    insert("db.c", R"({"_id": 2})");  // a unique sparse index allows many missing
    insert("db.c", R"({"_id": 3, "s": 1})");
    EXPECT_EQ(entries("s_1").size(), 1u);
    auto w = writerFor("db.c");
    EXPECT_EQ(w->insert(J(R"({"_id": 4, "s": 1})"), {}).getStatus().code(), 11000);
    ASSERT_TRUE(updateCurrent(*w, idKey("3"), J(R"({"_id": 3})"), {}).isOK());
    w.reset();
    EXPECT_TRUE(entries("s_1").empty());
}

TEST_F(WriterTest, IndexBuildOverExistingDocuments) {
    create("db.c");
    for (int i = 0; i < 50; ++i)
        insert("db.c", "{\"_id\": " + std::to_string(i) + ", \"a\": " + std::to_string(i % 7) +
                           ", \"tags\": [" + std::to_string(i) + ", 100]}");
    auto r = engine->createIndexes("db.c",
                                   {spec("a_1", R"({"a": 1})"), spec("tags_1", R"({"tags": 1})")});
    ASSERT_TRUE(r.isOK()) << r.getStatus().toString();
    EXPECT_EQ(entries("a_1").size(), 50u);
    EXPECT_EQ(entries("tags_1").size(), 100u);
    EXPECT_FALSE(engine->getCollection("db.c")->findIndex("a_1")->multikey);
    EXPECT_TRUE(engine->getCollection("db.c")->findIndex("tags_1")->multikey);
}

TEST_F(WriterTest, UniqueIndexBuildOverDuplicatesFailsAndLeavesNothing) {
    create("db.c");
    insert("db.c", R"({"_id": 1, "a": 5})");
    insert("db.c", R"({"_id": 2, "a": 6})");
    insert("db.c", R"({"_id": 3, "a": 5})");
    auto r = engine->createIndexes("db.c",
                                   {spec("b_1", R"({"b": 1})"), spec("a_1", R"({"a": 1})", true)});
    ASSERT_EQ(r.getStatus().code(), 11000);
    EXPECT_EQ(r.getStatus().reason(),
              "E11000 duplicate key error collection: db.c index: a_1 dup key: { a: 5 }");
    auto coll = engine->getCollection("db.c");
    EXPECT_EQ(coll->indexes.size(), 1u);  // all-or-nothing
    EXPECT_EQ(engine->countVersionsForTest(*coll, true), 0u);
    // Two documents missing the field collide on null.
    insert("db.c", R"({"_id": 4})");
    insert("db.c", R"({"_id": 5})");
    EXPECT_EQ(engine->createIndexes("db.c", {spec("z_1", R"({"z": 1})", true)}).getStatus().code(),
              11000);
    EXPECT_TRUE(engine->createIndexes("db.c", {spec("z_1", R"({"z": 1})", true, true)}).isOK());
}

TEST_F(WriterTest, CountsAreExactAfterMixedOperationsAndReopen) {
    create("db.c");
    int64_t expectedSize = 0;
    {
        auto w = writerFor("db.c");
        for (int i = 0; i < 100; ++i) {
            bson::BsonObj d =
                J("{\"_id\": " + std::to_string(i) + ", \"pad\": \"" + std::string(i, 'x') + "\"}");
            ASSERT_TRUE(w->insert(d, {}).isOK());
            expectedSize += static_cast<int64_t>(d.size());
        }
        for (int i = 0; i < 100; i += 3) {
            bson::BsonObj old =
                *w->latest()->findByRecordKey(w->collection(), idKey(std::to_string(i)));
            ASSERT_TRUE(removeCurrent(*w, idKey(std::to_string(i)), {}).isOK());
            expectedSize -= static_cast<int64_t>(old.size());
        }
        for (int i = 1; i < 100; i += 3) {
            bson::BsonObj old =
                *w->latest()->findByRecordKey(w->collection(), idKey(std::to_string(i)));
            bson::BsonObj d = J("{\"_id\": " + std::to_string(i) + ", \"n\": 1}");
            ASSERT_TRUE(updateCurrent(*w, idKey(std::to_string(i)), d, {}).isOK());
            expectedSize += static_cast<int64_t>(d.size()) - static_cast<int64_t>(old.size());
        }
        // Failed operations change nothing.
        EXPECT_FALSE(w->insert(J(R"({"_id": 1})"), {}).isOK());
        EXPECT_FALSE(removeCurrent(*w, idKey("0"), {}).isOK());
    }
    EXPECT_EQ(stats().count, 66);
    EXPECT_EQ(stats().dataSize, expectedSize);
    EXPECT_EQ(static_cast<int64_t>(scanAll("db.c").size()), 66);
    reopen();
    EXPECT_EQ(stats().count, 66);
    EXPECT_EQ(stats().dataSize, expectedSize);
    auto s = stats();
    ASSERT_EQ(s.indexSizes.size(), 1u);
    EXPECT_EQ(s.indexSizes[0].first, "_id_");
    EXPECT_GT(engine->approximateDiskBytes("db"), 0);
}

TEST_F(WriterTest, WriterUsesCurrentMetadata) {
    auto stale = create("db.c");
    ASSERT_TRUE(engine->createIndexes("db.c", {spec("a_1", R"({"a": 1})")}).isOK());
    auto sw = engine->writer(stale);
    ASSERT_TRUE(sw.isOK());
    EXPECT_EQ(sw.getValue()->collection().indexes.size(), 2u);
    ASSERT_TRUE(sw.getValue()->insert(J(R"({"_id": 1, "a": 1})"), {}).isOK());
    sw.getValue().reset();
    EXPECT_EQ(entries("a_1").size(), 1u);
    ASSERT_TRUE(engine->dropCollection("db.c").isOK());
    EXPECT_EQ(engine->writer(stale).getStatus().code(), 26);
}

TEST_F(WriterTest, TimestampsSurviveRestartEvenIfTheClockGoesBack) {
    create("db.c");
    Timestamp t1 = insert("db.c", R"({"_id": 1})");
    engine.reset();
    HybridLogicalClock fresh;  // a new process: its clock starts from the wall clock
    fresh.setWallClockForTest([]() -> uint64_t { return 1000 * 1'000'000ull; });  // far in the past
    EngineOptions options;
    options.dbpath = dir.path();
    options.clock = &fresh;
    auto sw = Engine::open(options);
    ASSERT_TRUE(sw.isOK());
    engine = std::move(sw.getValue());
    Timestamp t2 = insert("db.c", R"({"_id": 2})");
    EXPECT_GT(t2, t1);
    EXPECT_EQ(scanAll("db.c").size(), 2u);
    engine.reset();
}

// A write observer that records one side record per document write, its value made by `fn`.
class RecordingObserver final : public WriteObserver {
  public:
    using Fn = std::function<std::string(Op, bson::BsonView, bson::BsonView)>;
    RecordingObserver(std::string key, Fn fn) : _key(std::move(key)), _fn(std::move(fn)) {}
    void onWrite(const CollectionInfo&, Op op, bson::BsonView before, bson::BsonView after,
                 std::vector<std::pair<std::string, std::string>>* out) override {
        out->emplace_back(_key, _fn(op, before, after));
    }

  private:
    std::string _key;
    Fn _fn;
};

// An observer's side record is written in the same batch as the document write it observes:
// present when the write committed (also after a reopen), absent when the write failed, and
// never made by a writer opened without the observer's write unit.
TEST_F(WriterTest, SideRecordIsWrittenExactlyWithTheObservedWrites) {
    create("db.c");
    insert("db.c", R"({"_id": 1})");
    {
        RecordingObserver observer(
            "txn:a", [](WriteObserver::Op op, bson::BsonView, bson::BsonView doc) {
                return std::string(op == WriteObserver::Op::kInsert ? "insert " : "other ") +
                       doc["_id"].toString(false);
            });
        WriteUnit unit;
        unit.addObserver(&observer);
        auto w = writerFor("db.c", &unit);
        ASSERT_EQ(w->insert(J(R"({"_id": 1})"), {}).getStatus().code(), 11000);  // nothing written
        EXPECT_TRUE(engine->sideRecords("txn:").empty());
        ASSERT_TRUE(w->insert(J(R"({"_id": 2})"), {}).isOK());
    }
    insert("db.c", R"({"_id": 3})");  // another writer, no unit: no record
    {
        RecordingObserver observer(
            "txn:b", [](WriteObserver::Op op, bson::BsonView, bson::BsonView doc) {
                return std::string(op == WriteObserver::Op::kRemove ? "remove" : "other") +
                       (doc.isEmpty() ? "" : " with a document");
            });
        WriteUnit unit;
        unit.addObserver(&observer);
        auto w = writerFor("db.c", &unit);
        ASSERT_TRUE(removeCurrent(*w, idKey("3"), {}).isOK());
    }
    reopen();
    auto records = engine->sideRecords("txn:");
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[0], (std::pair<std::string, std::string>("txn:a", "insert 2")));
    EXPECT_EQ(records[1], (std::pair<std::string, std::string>("txn:b", "remove")));
    EXPECT_TRUE(engine->sideRecords("other:").empty());
}

// sideRecord reads one key exactly: not a longer key it is a prefix of, not a deleted one.
TEST_F(WriterTest, SideRecordReadsExactlyOneKey) {
    ASSERT_TRUE(engine->writeSideRecords({{"rec/1", "one"}, {"rec/10", "ten"}}).isOK());
    auto one = engine->sideRecord("rec/1");
    ASSERT_TRUE(one.isOK());
    EXPECT_EQ(one.getValue(), std::optional<std::string>("one"));
    ASSERT_TRUE(engine->writeSideRecords({{"rec/1", ""}}, false).isOK());  // deleted
    EXPECT_EQ(engine->sideRecord("rec/1").getValue(), std::nullopt);
    EXPECT_EQ(engine->sideRecord("rec/").getValue(), std::nullopt);
    reopen();
    EXPECT_EQ(engine->sideRecord("rec/10").getValue(), std::optional<std::string>("ten"));
    EXPECT_EQ(engine->sideRecord("rec/1").getValue(), std::nullopt);
}

// The observer sees the version a write replaces or removes (`before`) and the version it
// writes (`after`): {} / new for an insert, old / new for an update, old / {} for a remove.
TEST_F(WriterTest, ObserverSeesTheVersionBeforeAndAfterTheWrite) {
    create("db.c");
    insert("db.c", R"({"_id": 1, "a": 1})");
    std::vector<std::string> seen;
    RecordingObserver observer(
        "txn:u", [&seen](WriteObserver::Op op, bson::BsonView before, bson::BsonView after) {
            std::string s = op == WriteObserver::Op::kInsert   ? "insert"
                            : op == WriteObserver::Op::kUpdate ? "update"
                                                               : "remove";
            s += " " + before.toJson() + " " + after.toJson();
            seen.push_back(s);
            return s;
        });
    WriteUnit unit;
    unit.addObserver(&observer);
    {
        auto w = writerFor("db.c", &unit);
        ASSERT_TRUE(updateCurrent(*w, idKey("1"), J(R"({"_id": 1, "a": 2})"), {}).isOK());
        ASSERT_TRUE(w->insert(J(R"({"_id": 2, "b": 1})"), {}).isOK());
        ASSERT_TRUE(removeCurrent(*w, idKey("1"), {}).isOK());
    }
    ASSERT_EQ(seen.size(), 3u);
    EXPECT_EQ(seen[0], R"(update { "_id" : 1, "a" : 1 } { "_id" : 1, "a" : 2 })");
    EXPECT_EQ(seen[1], R"(insert { } { "_id" : 2, "b" : 1 })");
    EXPECT_EQ(seen[2], R"(remove { "_id" : 1, "a" : 2 } { })");
    reopen();
    auto records = engine->sideRecords("txn:");
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].second, seen[2]);
}

// First writer wins: an update or remove computed from a version that is no longer stored
// changes nothing and says WriteConflict.
TEST_F(WriterTest, StaleExpectedVersionIsAWriteConflict) {
    create("db.c");
    insert("db.c", R"({"_id": 1, "a": 1})");
    auto w = writerFor("db.c");
    bson::BsonObj v1 = *w->current(idKey("1"));
    ASSERT_TRUE(w->update(idKey("1"), v1, J(R"({"_id": 1, "a": 2})"), {}).isOK());
    EXPECT_EQ(w->update(idKey("1"), v1, J(R"({"_id": 1, "a": 3})"), {}).getStatus().code(), 112);
    EXPECT_EQ(w->remove(idKey("1"), v1, {}).getStatus().code(), 112);
    EXPECT_EQ(w->current(idKey("1"))->toJson(), R"({ "_id" : 1, "a" : 2 })");
    EXPECT_EQ(engine->stats(*engine->getCollection("db.c")).count, 1);
}

}  // namespace
}  // namespace tessera::storage
