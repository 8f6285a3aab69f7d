// Collections with a cluster key: record keys, CRUD, moves, MVCC, secondary and _id_ indexes.

#include "storage/cluster_key.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <thread>

#include "base/failpoint.h"
#include "bson/bson_builder.h"
#include "bson/element_hash.h"
#include "storage/storage_test_util.h"

namespace tessera::storage {
namespace {

using test::EngineTest;
using test::idKey;
using test::J;
using test::removeCurrent;
using test::updateCurrent;

IndexSpec spec(std::string name, std::string_view keyPattern, bool unique = false) {
    IndexSpec s;
    s.name = std::move(name);
    s.keyPattern = J(keyPattern);
    s.unique = unique;
    return s;
}

std::string enc(std::string_view valuesJson) { return test::indexKey(valuesJson); }

TEST(ClusterKeyTest, NormalizeAcceptsShardKeyPatternsOnly) {
    EXPECT_TRUE(normalizeClusterKey(J("{}")).getValue().isEmpty());
    EXPECT_TRUE(normalizeClusterKey(J(R"({"_id": 1})")).getValue().isEmpty());
    EXPECT_EQ(normalizeClusterKey(J(R"({"k": 1})")).getValue().toJson(), R"({ "k" : 1 })");
    EXPECT_EQ(normalizeClusterKey(J(R"({"h": "hashed", "x": 1})")).getValue().toJson(),
              R"({ "h" : "hashed", "x" : 1 })");
    EXPECT_TRUE(normalizeClusterKey(J(R"({"_id": "hashed"})")).isOK());
    // A trailing _id: 1 is the layout without it (the record key ends with _id anyway).
    EXPECT_EQ(normalizeClusterKey(J(R"({"k": 1, "_id": 1})")).getValue().toJson(),
              R"({ "k" : 1 })");
    EXPECT_EQ(normalizeClusterKey(J(R"({"h": "hashed", "_id": 1})")).getValue().toJson(),
              R"({ "h" : "hashed" })");
    EXPECT_EQ(normalizeClusterKey(J(R"({"_id": 1, "k": 1})")).getValue().toJson(),
              R"({ "_id" : 1, "k" : 1 })");
    for (const char* bad : {R"({"a": -1})", R"({"a": "hashed", "b": "hashed"})", R"({"a": "text"})",
                            R"({"a.": 1})", R"({"$a": 1})"}) {
        EXPECT_EQ(normalizeClusterKey(J(bad)).getStatus().code(),
                  static_cast<int>(ErrorCodes::BadValue))
            << bad;
    }
}

TEST(ClusterKeyTest, RecordKeyIsShardKeyThenId) {
    EXPECT_EQ(makeRecordKey(bson::BsonObj(), J(R"({"_id": 7, "k": 1})")).getValue(), idKey("7"));
    EXPECT_EQ(makeRecordKey(J(R"({"k": 1})"), J(R"({"_id": 7, "k": 2})")).getValue(),
              enc("[2, 7]"));
    // Missing, or blocked by a scalar: null (as a shard key).
    EXPECT_EQ(makeRecordKey(J(R"({"k": 1})"), J(R"({"_id": 7})")).getValue(), enc("[null, 7]"));
    EXPECT_EQ(makeRecordKey(J(R"({"a.b": 1})"), J(R"({"_id": 7, "a": 3})")).getValue(),
              enc("[null, 7]"));
    EXPECT_EQ(makeRecordKey(J(R"({"a.b": 1, "c": 1})"), J(R"({"_id": 7, "a": {"b": "x"}, "c": 1})"))
                  .getValue(),
              enc(R"(["x", 1, 7])"));
    // Numbers by value: 1, 1.0 and Long(1) are one cluster key value.
    EXPECT_EQ(makeRecordKey(J(R"({"k": 1})"), J(R"({"_id": 7, "k": 1.0})")).getValue(),
              enc("[1, 7]"));
    bson::BsonObj h = J(R"({"v": "abc"})");
    bson::BsonBuilder hb;
    hb.appendInt64("", bson::hashElement(h.firstElement()));
    hb.appendInt32("", 7);
    bson::BsonObj expected = hb.obj();
    keystring::Builder kb;
    for (bson::BsonElement e : expected) kb.append(e);
    EXPECT_EQ(makeRecordKey(J(R"({"h": "hashed"})"), J(R"({"_id": 7, "h": "abc"})")).getValue(),
              kb.key());
    EXPECT_EQ(makeRecordKey(J(R"({"k": 1})"), J(R"({"_id": 7, "k": [1]})")).getStatus().code(),
              static_cast<int>(ErrorCodes::ShardKeyNotFound));
    EXPECT_EQ(
        makeRecordKey(J(R"({"a.b": 1})"), J(R"({"_id": 7, "a": [{"b": 1}]})")).getStatus().code(),
        static_cast<int>(ErrorCodes::ShardKeyNotFound));
    EXPECT_EQ(
        makeRecordKey(J(R"({"h": "hashed"})"), J(R"({"_id": 7, "h": [1]})")).getStatus().code(),
        static_cast<int>(ErrorCodes::ShardKeyNotFound));
}

class ClusteredTest : public EngineTest {
  protected:
    CollectionPtr coll() { return engine->getCollection("db.c"); }
    void createClustered(std::string_view key) {
        create("db.c");
        Status s = engine->clusterCollection("db.c", J(key));
        ASSERT_TRUE(s.isOK()) << s.toString();
    }
    // The value of `field` of every document, in natural (record-key) order.
    std::vector<std::string> naturalOrder(std::string_view field, ReadSnapshot* snap = nullptr) {
        std::unique_ptr<ReadSnapshot> own;
        if (!snap) {
            own = engine->snapshot();
            snap = own.get();
        }
        std::vector<std::string> out;
        auto cursor = snap->scan(*coll());
        while (auto r = cursor->next()) out.push_back(r->doc.view()[field].toString(false));
        return out;
    }
    std::optional<std::string> byId(std::string_view idJson, ReadSnapshot* snap = nullptr) {
        std::unique_ptr<ReadSnapshot> own;
        if (!snap) {
            own = engine->snapshot();
            snap = own.get();
        }
        bson::BsonObj holder = J(std::string("{\"_id\": ") + std::string(idJson) + "}");
        auto rec = snap->findById(*coll(), holder.firstElement());
        if (!rec) return std::nullopt;
        return rec->doc.toJson();
    }
    // The documents an index scan (whole index) yields, as their _id values.
    std::vector<std::string> indexOrder(std::string_view indexName) {
        auto snap = engine->snapshot();
        auto c = coll();
        std::vector<std::string> out;
        auto cursor = snap->indexScan(*c, *c->findIndex(indexName), {});
        while (auto e = cursor->next()) {
            auto doc = snap->findByRecordKey(*c, e->recordKey);
            out.push_back(doc ? doc->view()["_id"].toString(false) : "<dangling>");
        }
        return out;
    }
};

TEST_F(ClusteredTest, InsertsAreStoredInClusterKeyOrder) {
    createClustered(R"({"k": 1})");
    EXPECT_EQ(coll()->clusterKey.toJson(), R"({ "k" : 1 })");
    EXPECT_NE(coll()->indexes[0].id, 0u);
    std::vector<int> ks(50);
    for (int i = 0; i < 50; ++i) ks[i] = i;
    std::shuffle(ks.begin(), ks.end(), std::mt19937(42));
    {
        auto w = writerFor("db.c");
        for (int i = 0; i < 50; ++i) {
            // _id order is the reverse of k order.
            bson::BsonObj doc =
                bson::BsonBuilder().appendInt32("_id", 1000 - ks[i]).appendInt32("k", ks[i]).obj();
            ASSERT_TRUE(w->insert(doc, {}).isOK());
        }
    }
    std::vector<std::string> expected;
    for (int i = 0; i < 50; ++i) expected.push_back(std::to_string(i));
    EXPECT_EQ(naturalOrder("k"), expected);
    EXPECT_EQ(byId("990"), R"({ "_id" : 990, "k" : 10 })");
    EXPECT_FALSE(byId("1").has_value());
    // The _id_ index is a real index: a scan is in _id order (k descending here).
    std::vector<std::string> ids = indexOrder("_id_");
    ASSERT_EQ(ids.size(), 50u);
    EXPECT_EQ(ids.front(), "951");
    EXPECT_EQ(ids.back(), "1000");
    EXPECT_EQ(engine->stats(*coll()).count, 50);
}

TEST_F(ClusteredTest, DuplicateIdIsRejectedWhateverTheClusterKey) {
    createClustered(R"({"k": 1})");
    insert("db.c", R"({"_id": 1, "k": 1})");
    auto w = writerFor("db.c");
    auto sw = w->insert(J(R"({"_id": 1.0, "k": 2})"), {});
    ASSERT_EQ(sw.getStatus().code(), 11000);
    EXPECT_EQ(sw.getStatus().reason(),
              "E11000 duplicate key error collection: db.c index: _id_ dup key: { _id: 1.0 }");
    EXPECT_EQ(w->duplicateKeyInfo().toJson(),
              R"({ "keyPattern" : { "_id" : 1 }, "keyValue" : { "_id" : 1.0 } })");
    EXPECT_EQ(w->insert(J(R"({"_id": 1, "k": 1})"), {}).getStatus().code(), 11000);
    EXPECT_EQ(w->insert(J(R"({"_id": 2, "k": [1]})"), {}).getStatus().code(),
              static_cast<int>(ErrorCodes::ShardKeyNotFound));
    w.reset();
    EXPECT_EQ(scanAll("db.c"), std::vector<std::string>{R"({ "_id" : 1, "k" : 1 })"});
    EXPECT_EQ(engine->stats(*coll()).count, 1);
}

TEST_F(ClusteredTest, UpdateThatChangesTheClusterKeyMovesTheRecord) {
    createClustered(R"({"k": 1})");
    ASSERT_TRUE(
        engine
            ->createIndexes("db.c", {spec("b_1", R"({"b": 1})"), spec("u_1", R"({"u": 1})", true)})
            .isOK());
    insert("db.c", R"({"_id": "a", "k": 1, "b": 1, "u": 1})");
    insert("db.c", R"({"_id": "b", "k": 2, "b": 2, "u": 2})");
    Timestamp before = insert("db.c", R"({"_id": "c", "k": 3, "b": 3, "u": 3})");
    auto old = engine->snapshot(before);

    std::string keyA = makeRecordKey(*coll(), J(R"({"_id": "a", "k": 1})")).getValue();
    {
        auto w = writerFor("db.c");
        // Same cluster key: updated in place.
        ASSERT_TRUE(
            updateCurrent(*w, keyA, J(R"({"_id": "a", "k": 1, "b": 10, "u": 1})"), {}).isOK());
        // k 1 -> 5 moves "a" after "c"; b and u keep pointing at it.
        ASSERT_TRUE(
            updateCurrent(*w, keyA, J(R"({"_id": "a", "k": 5, "b": 10, "u": 1})"), {}).isOK());
        EXPECT_FALSE(w->latest()->findByRecordKey(*coll(), keyA).has_value());
        // A move onto a unique key someone else holds fails and changes nothing.
        std::string keyB = makeRecordKey(*coll(), J(R"({"_id": "b", "k": 2})")).getValue();
        auto dup = updateCurrent(*w, keyB, J(R"({"_id": "b", "k": 9, "b": 2, "u": 3})"), {});
        EXPECT_EQ(dup.getStatus().code(), 11000);
        // _id stays immutable.
        EXPECT_EQ(updateCurrent(*w, keyB, J(R"({"_id": "z", "k": 2})"), {}).getStatus().code(),
                  static_cast<int>(ErrorCodes::ImmutableField));
        EXPECT_EQ(updateCurrent(*w, keyB, J(R"({"_id": "b", "k": [2]})"), {}).getStatus().code(),
                  static_cast<int>(ErrorCodes::ShardKeyNotFound));
    }
    EXPECT_EQ(naturalOrder("_id"), (std::vector<std::string>{"\"b\"", "\"c\"", "\"a\""}));
    EXPECT_EQ(byId("\"a\""), R"({ "_id" : "a", "k" : 5, "b" : 10, "u" : 1 })");
    EXPECT_EQ(indexOrder("b_1"), (std::vector<std::string>{"\"b\"", "\"c\"", "\"a\""}));
    EXPECT_EQ(indexOrder("u_1"), (std::vector<std::string>{"\"a\"", "\"b\"", "\"c\""}));
    EXPECT_EQ(indexOrder("_id_"), (std::vector<std::string>{"\"a\"", "\"b\"", "\"c\""}));
    EXPECT_EQ(engine->stats(*coll()).count, 3);

    // The snapshot from before sees the old placement and the old version.
    EXPECT_EQ(naturalOrder("_id", old.get()),
              (std::vector<std::string>{"\"a\"", "\"b\"", "\"c\""}));
    EXPECT_EQ(byId("\"a\"", old.get()), R"({ "_id" : "a", "k" : 1, "b" : 1, "u" : 1 })");
    auto c = coll();
    auto cursor = old->indexScan(*c, *c->findIndex("b_1"), {});
    std::vector<std::string> oldB;
    while (auto e = cursor->next()) {
        oldB.push_back(old->findByRecordKey(*c, e->recordKey)->view()["b"].toString(false));
    }
    EXPECT_EQ(oldB, (std::vector<std::string>{"1", "2", "3"}));
    old.reset();

    // Remove a moved record: every index forgets it.
    {
        auto w = writerFor("db.c");
        std::string keyA5 = makeRecordKey(*coll(), J(R"({"_id": "a", "k": 5})")).getValue();
        ASSERT_TRUE(removeCurrent(*w, keyA5, {}).isOK());
    }
    EXPECT_FALSE(byId("\"a\"").has_value());
    EXPECT_EQ(indexOrder("b_1"), (std::vector<std::string>{"\"b\"", "\"c\""}));
    EXPECT_EQ(indexOrder("u_1"), (std::vector<std::string>{"\"b\"", "\"c\""}));
    EXPECT_EQ(indexOrder("_id_"), (std::vector<std::string>{"\"b\"", "\"c\""}));
    insert("db.c", R"({"_id": "a", "k": 0, "u": 1})");  // its _id and u are free again
    EXPECT_EQ(naturalOrder("_id"), (std::vector<std::string>{"\"a\"", "\"b\"", "\"c\""}));
}

TEST_F(ClusteredTest, ScanRangeSeeksToTheClusterKeyRange) {
    createClustered(R"({"k": 1})");
    for (int i = 0; i < 20; ++i) {
        auto w = writerFor("db.c");
        bson::BsonObj doc =
            bson::BsonBuilder().appendInt32("_id", i).appendInt32("k", (i * 7) % 20).obj();
        ASSERT_TRUE(w->insert(doc, {}).isOK());
    }
    KeyRange range;
    range.low = enc("[5]");
    range.high = enc("[9]");
    range.highInclusive = false;
    auto snap = engine->snapshot();
    auto cursor = snap->scanRange(*coll(), range);
    std::vector<std::string> ks;
    while (auto r = cursor->next()) ks.push_back(r->doc.view()["k"].toString(false));
    EXPECT_EQ(ks, (std::vector<std::string>{"5", "6", "7", "8"}));
}

TEST_F(ClusteredTest, HashedAndCompoundClusterKeys) {
    createClustered(R"({"h": "hashed", "x": 1})");
    std::vector<std::tuple<int64_t, int, int>> expected;  // (hash(h), x, _id)
    {
        auto w = writerFor("db.c");
        for (int i = 0; i < 30; ++i) {
            bson::BsonObj doc = bson::BsonBuilder()
                                    .appendInt32("_id", i)
                                    .appendString("h", "v" + std::to_string(i % 10))
                                    .appendInt32("x", 30 - i)
                                    .obj();
            ASSERT_TRUE(w->insert(doc, {}).isOK());
            expected.emplace_back(bson::hashElement(doc.view()["h"]), 30 - i, i);
        }
    }
    std::sort(expected.begin(), expected.end());
    std::vector<std::string> want;
    for (auto& [h, x, id] : expected) want.push_back(std::to_string(id));
    EXPECT_EQ(naturalOrder("_id"), want);
    EXPECT_EQ(byId("17"), R"({ "_id" : 17, "h" : "v7", "x" : 13 })");

    ASSERT_TRUE(engine->clusterCollection("db.c", J(R"({"x": 1, "h": 1})")).isOK());
    std::vector<std::string> byX;
    for (int x = 1; x <= 30; ++x) byX.push_back(std::to_string(x));
    EXPECT_EQ(naturalOrder("x"), byX);
    EXPECT_EQ(byId("17"), R"({ "_id" : 17, "h" : "v7", "x" : 13 })");
}

TEST_F(ClusteredTest, ReclusterKeepsEveryDocumentAndIndex) {
    create("db.c");
    ASSERT_TRUE(
        engine
            ->createIndexes("db.c", {spec("b_1", R"({"b": 1})"), spec("u_1", R"({"u": 1})", true)})
            .isOK());
    std::vector<int> ks(40);
    for (int i = 0; i < 40; ++i) ks[i] = i;
    std::shuffle(ks.begin(), ks.end(), std::mt19937(7));
    Timestamp last;
    {
        auto w = writerFor("db.c");
        for (int i = 0; i < 40; ++i) {
            bson::BsonObj doc = bson::BsonBuilder()
                                    .appendInt32("_id", i)
                                    .appendInt32("k", ks[i])
                                    .appendInt32("b", i % 4)
                                    .appendInt32("u", 100 + i)
                                    .obj();
            last = w->insert(doc, {}).getValue();
        }
    }
    CollectionPtr before = coll();
    CollectionStats statsBefore = engine->stats(*before);
    ASSERT_TRUE(engine->clusterCollection("db.c", J(R"({"k": 1})")).isOK());
    CollectionPtr after = coll();
    EXPECT_NE(after->id, before->id);
    EXPECT_EQ(after->uuid, before->uuid);
    ASSERT_EQ(after->indexes.size(), before->indexes.size());
    for (size_t i = 0; i < after->indexes.size(); ++i) {
        EXPECT_EQ(after->indexes[i].spec.toJson(), before->indexes[i].spec.toJson());
    }
    EXPECT_EQ(engine->stats(*after).count, 40);
    EXPECT_EQ(engine->stats(*after).dataSize, statsBefore.dataSize);
    std::vector<std::string> byK;
    for (int i = 0; i < 40; ++i) byK.push_back(std::to_string(i));
    EXPECT_EQ(naturalOrder("k"), byK);
    for (int i = 0; i < 40; ++i) EXPECT_TRUE(byId(std::to_string(i)).has_value()) << i;
    EXPECT_EQ(indexOrder("b_1").size(), 40u);
    EXPECT_EQ(indexOrder("u_1").size(), 40u);
    EXPECT_EQ(indexOrder("_id_").size(), 40u);
    for (const std::string& id : indexOrder("u_1")) EXPECT_NE(id, "<dangling>");
    // The unique index still enforces uniqueness after the rewrite.
    {
        auto w = writerFor("db.c");
        EXPECT_EQ(w->insert(J(R"({"_id": 99, "k": 5, "u": 105})"), {}).getStatus().code(), 11000);
    }
    // A snapshot at a timestamp before the recluster sees the documents (latest versions).
    auto old = engine->snapshot(last);
    EXPECT_EQ(naturalOrder("k", old.get()), byK);
    old.reset();
    // A writer for the CollectionPtr resolved before the rewrite writes the current collection.
    {
        auto sw = engine->writer(before);
        ASSERT_TRUE(sw.isOK()) << sw.getStatus().toString();
        EXPECT_EQ(sw.getValue()->collection().id, after->id);
        ASSERT_TRUE(sw.getValue()->insert(J(R"({"_id": 40, "k": -1})"), {}).isOK());
    }
    EXPECT_EQ(naturalOrder("k").front(), "-1");
    // The old id's records are gone.
    EXPECT_EQ(engine->countVersionsForTest(*before, false), 0u);

    // Back to _id.
    ASSERT_TRUE(engine->clusterCollection("db.c", J(R"({"_id": 1})")).isOK());
    EXPECT_FALSE(coll()->isClustered());
    EXPECT_EQ(coll()->indexes[0].id, 0u);
    EXPECT_EQ(naturalOrder("_id").front(), "0");
    EXPECT_EQ(naturalOrder("_id").size(), 41u);
    EXPECT_EQ(indexOrder("u_1").size(), 41u);  // _id 40 has u: null
}

TEST_F(ClusteredTest, ReclusterFailsCleanlyOnArrayKeys) {
    create("db.c");
    insert("db.c", R"({"_id": 1, "k": 1})");
    insert("db.c", R"({"_id": 2, "k": [1, 2]})");
    EXPECT_EQ(engine->clusterCollection("db.c", J(R"({"k": 1})")).code(),
              static_cast<int>(ErrorCodes::ShardKeyNotFound));
    EXPECT_FALSE(coll()->isClustered());
    EXPECT_EQ(scanAll("db.c").size(), 2u);
    EXPECT_EQ(engine->clusterCollection("db.c", J(R"({"k": -1})")).code(),
              static_cast<int>(ErrorCodes::BadValue));
    EXPECT_EQ(engine->clusterCollection("db.nope", J(R"({"k": 1})")).code(),
              static_cast<int>(ErrorCodes::NamespaceNotFound));
}

TEST_F(ClusteredTest, RestartKeepsTheClusterKeyAndDropForgetsIt) {
    createClustered(R"({"k": 1})");
    insert("db.c", R"({"_id": 1, "k": 3})");
    insert("db.c", R"({"_id": 2, "k": 1})");
    bson::BsonObj optionsBefore = coll()->options;
    reopen();
    EXPECT_EQ(coll()->clusterKey.toJson(), R"({ "k" : 1 })");
    EXPECT_EQ(coll()->options.toJson(), optionsBefore.toJson());
    insert("db.c", R"({"_id": 3, "k": 2})");
    EXPECT_EQ(naturalOrder("_id"), (std::vector<std::string>{"2", "3", "1"}));
    EXPECT_EQ(byId("3"), R"({ "_id" : 3, "k" : 2 })");
    // Idempotent: same key, nothing changes.
    uint64_t id = coll()->id;
    ASSERT_TRUE(engine->clusterCollection("db.c", J(R"({"k": 1})")).isOK());
    EXPECT_EQ(coll()->id, id);

    ASSERT_TRUE(engine->dropCollection("db.c").isOK());
    create("db.c");
    EXPECT_FALSE(coll()->isClustered());
    EXPECT_EQ(coll()->indexes[0].id, 0u);
    insert("db.c", R"({"_id": 2, "k": 1})");
    insert("db.c", R"({"_id": 1, "k": 3})");
    EXPECT_EQ(naturalOrder("_id"), (std::vector<std::string>{"1", "2"}));
}

TEST_F(ClusteredTest, ReopenDeletesTheCopyOfAnInterruptedRecluster) {
    create("db.c");
    for (int i = 0; i < 50; ++i) {
        insert("db.c", "{\"_id\": " + std::to_string(i) + ", \"k\": " + std::to_string(-i) + "}");
    }
    FailPoint* stop = FailPointRegistry::global().find("reclusterStopBeforeSwap");
    ASSERT_NE(stop, nullptr);
    stop->configure(FailPoint::Mode::kTimes, 1, "");
    EXPECT_FALSE(engine->clusterCollection("db.c", J(R"({"k": 1})")).isOK());
    // The partial copy lives under the id the rewrite took: the one after the collection's.
    CollectionInfo copy = *coll();
    copy.id = coll()->id + 1;
    ASSERT_GT(engine->countVersionsForTest(copy, false), 0u);

    reopen();  // as after a crash at that point
    EXPECT_FALSE(coll()->isClustered());
    EXPECT_EQ(scanAll("db.c").size(), 50u);
    EXPECT_EQ(engine->countVersionsForTest(copy, false), 0u);
    EXPECT_EQ(engine->countVersionsForTest(copy, true), 0u);
    // And the rewrite can run again.
    ASSERT_TRUE(engine->clusterCollection("db.c", J(R"({"k": 1})")).isOK());
    EXPECT_EQ(naturalOrder("_id").front(), "49");
}

TEST_F(ClusteredTest, WritersRacingAReclusterLoseNothing) {
    create("db.c");
    for (int i = 0; i < 200; ++i) {
        insert("db.c",
               "{\"_id\": " + std::to_string(i) + ", \"k\": " + std::to_string(199 - i) + "}");
    }
    // Each writer resolves the collection before the swap may happen; those blocked on the
    // write lock during the rewrite must land in the new layout.
    CollectionPtr stale = coll();
    std::thread writerThread([&] {
        for (int i = 200; i < 400; ++i) {
            auto w = engine->writer(stale);
            ASSERT_TRUE(w.isOK()) << w.getStatus().toString();
            bson::BsonObj doc = bson::BsonBuilder().appendInt32("_id", i).appendInt32("k", i).obj();
            ASSERT_TRUE(w.getValue()->insert(doc, {}).isOK());
        }
    });
    ASSERT_TRUE(engine->clusterCollection("db.c", J(R"({"k": 1})")).isOK());
    writerThread.join();
    std::vector<std::string> byK;
    for (int i = 0; i < 400; ++i) byK.push_back(std::to_string(i));
    EXPECT_EQ(naturalOrder("k"), byK);
    EXPECT_EQ(engine->stats(*coll()).count, 400);
    EXPECT_EQ(indexOrder("_id_").size(), 400u);
}

}  // namespace
}  // namespace tessera::storage
