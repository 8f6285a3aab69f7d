// Sharded collections clustered by their shard key on a shard: _shardsvrClusterCollection,
// natural order, ownership-filtered reads, contiguous range paging and deletion.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "command/crud_test_util.h"
#include "shard/ownership_filter.h"
#include "shard/range_ops.h"
#include "shard/shard_test_util.h"
#include "shard/sharding_state.h"

namespace tessera::shard {
namespace {

using command::test::CrudFixture;

using test::FixedHooks;

class ShardClusterTest : public CrudFixture {
  protected:
    void SetUp() override {
        CrudFixture::SetUp();
        registerShardServerCommands(registry);
        // s0 owns a in [10, 20); s1 owns the rest.
        table = test::makeTable("test.c", R"({"a": 1})", {R"({"a": 10})", R"({"a": 20})"},
                                {"s1", "s0", "s1"});
        hooks.filter = std::make_shared<ChunkOwnershipFilter>(table, "s0");
        // _id i has a = perm[i]: _id order is not a order.
        std::vector<int> perm(30);
        for (int i = 0; i < 30; ++i) perm[i] = i;
        std::shuffle(perm.begin(), perm.end(), std::mt19937(3));
        std::string docs;
        for (int i = 0; i < 30; ++i) {
            docs += (i ? "," : "") + std::string(R"({"_id": )") + std::to_string(i) + R"(, "a": )" +
                    std::to_string(perm[i]) + "}";
        }
        ok(R"({"insert": "c", "documents": [)" + docs + "]}");
    }
    void cluster() {
        bson::BsonObj r = ok(R"({"_shardsvrClusterCollection": "c", "key": {"a": 1}})");
        EXPECT_EQ(r["clusterKey"].objValue().toJson(), R"({ "a" : 1 })");
    }
    // The `a` values of find({}) without sort, in the order returned.
    std::vector<int64_t> naturalA(std::string_view filter = "{}") {
        bson::BsonObj r =
            ok(R"({"find": "c", "batchSize": 1000, "filter": )" + std::string(filter) + "}");
        std::vector<int64_t> out;
        for (auto e : r["cursor"].objValue()["firstBatch"].objValue()) {
            out.push_back(e.objValue()["a"].numberLong());
        }
        return out;
    }
    static std::vector<int64_t> iota(int from, int to) {
        std::vector<int64_t> v;
        for (int i = from; i < to; ++i) v.push_back(i);
        return v;
    }

    std::shared_ptr<const placement::RoutingTable> table;
    FixedHooks hooks;
};

TEST_F(ShardClusterTest, ClusterCommandMakesTheNaturalOrderTheShardKeyOrder) {
    std::vector<int64_t> before = naturalA();
    EXPECT_NE(before, iota(0, 30));  // _id order
    cluster();
    auto coll = engine->getCollection("test.c");
    EXPECT_EQ(coll->clusterKey.toJson(), R"({ "a" : 1 })");
    EXPECT_EQ(naturalA(), iota(0, 30));
    // Idempotent: nothing is rewritten the second time.
    cluster();
    EXPECT_EQ(engine->getCollection("test.c")->id, coll->id);
    // Bad keys are refused.
    EXPECT_FALSE(run(R"({"_shardsvrClusterCollection": "c", "key": {"a": -1}})").ok());
    EXPECT_FALSE(run(R"({"_shardsvrClusterCollection": "c", "key": 1})").ok());

    // Reads through the ownership filter keep working on the new record keys.
    service.hooks = &hooks;
    EXPECT_EQ(naturalA(), iota(10, 20));
    EXPECT_EQ(ok(R"({"count": "c"})")["n"].numberLong(), 10);
    EXPECT_EQ(ok(R"({"count": "c", "query": {"a": {"$gte": 15}}})")["n"].numberLong(), 5);
    createIndex("test.c", R"({"a": 1})", "a_1");
    EXPECT_EQ(naturalA(R"({"a": {"$gte": 5, "$lt": 25}})"), iota(10, 20));
    service.hooks = nullptr;
    // findById (IDHACK) goes through the _id_ index now.
    for (int id = 0; id < 30; ++id) {
        bson::BsonObj r = ok(R"({"find": "c", "filter": {"_id": )" + std::to_string(id) + "}}");
        EXPECT_FALSE(r["cursor"].objValue()["firstBatch"].objValue().isEmpty()) << id;
    }
    // An update that changes the shard key moves the document in the natural order.
    bson::BsonObj r = ok(R"({"update": "c", "updates": [{"q": {"a": 0}, "u": {"$set":
                            {"a": 100}}}]})");
    EXPECT_EQ(r["nModified"].numberLong(), 1);
    std::vector<int64_t> moved = iota(1, 30);
    moved.push_back(100);
    EXPECT_EQ(naturalA(), moved);
    EXPECT_EQ(naturalA(R"({"a": {"$gt": 50}})"), std::vector<int64_t>{100});
    // Duplicate _id is still rejected (the _id_ index is unique).
    bson::BsonObj dup = ok(R"({"insert": "c", "documents": [{"_id": 3, "a": 77}]})");
    ASSERT_TRUE(dup["writeErrors"].isArray()) << dup.toJson();
    EXPECT_EQ(dup["writeErrors"].objValue().firstElement().objValue()["code"].numberLong(), 11000);
    EXPECT_EQ(ok(R"({"count": "c"})")["n"].numberLong(), 30);
}

TEST_F(ShardClusterTest, ReadRangePagesByRecordKeyInShardKeyOrder) {
    cluster();
    auto range = ShardKeyRange::make(table->shardKeyPattern(), test::J(R"({"a": 5})"),
                                     test::J(R"({"a": 15})"));
    ASSERT_TRUE(range.isOK());
    auto coll = engine->getCollection("test.c");
    ASSERT_TRUE(isClusteredBy(*coll, table->shardKeyPattern()));
    std::vector<int64_t> as;
    std::string afterKey;
    int pages = 0;
    for (;;) {
        auto snap = engine->snapshot();
        RangePage page = readRangePage(*snap, *coll, table->shardKeyPattern(), range.getValue(),
                                       bson::BsonElement(), afterKey, 60);  // ~2 docs per page
        ++pages;
        for (const auto& d : page.docs) as.push_back(d["a"].numberLong());
        if (page.done) break;
        ASSERT_TRUE(page.lastKey.has_value());
        ASSERT_TRUE(page.lastId.has_value());
        afterKey = *page.lastKey;
        ASSERT_LT(pages, 50);
    }
    EXPECT_EQ(as, iota(5, 15));
    EXPECT_GT(pages, 3);

    // The last chunk holds the global max: a document whose key is MaxKey is in it.
    ok(R"({"insert": "c", "documents": [{"_id": 99, "a": {"$maxKey": 1}}]})");
    auto last = ShardKeyRange::make(table->shardKeyPattern(), test::J(R"({"a": 28})"),
                                    test::J(R"({"a": {"$maxKey": 1}})"));
    auto snap = engine->snapshot();
    RangePage page =
        readRangePage(*snap, *engine->getCollection("test.c"), table->shardKeyPattern(),
                      last.getValue(), bson::BsonElement(), {}, 1 << 20);
    ASSERT_EQ(page.docs.size(), 3u);
    EXPECT_EQ(page.docs[2]["_id"].numberLong(), 99);
    EXPECT_TRUE(page.done);

    // A caller that pages by afterId only (an older recipient) is served by _id: the first page
    // by record key, the next ones after its last _id through the _id_ index; nothing is lost
    // only if every page continues by _id, so it must get _id order throughout.
    std::vector<int64_t> ids;
    bson::BsonObj after;
    for (;;) {
        auto s = engine->snapshot();
        RangePage p = readRangePage(
            *s, *engine->getCollection("test.c"), table->shardKeyPattern(), range.getValue(),
            after.isEmpty() ? bson::BsonElement() : after.firstElement(), {}, 60);
        for (const auto& d : p.docs) ids.push_back(d["_id"].numberLong());
        if (p.done) break;
        after = *p.lastId;
    }
    EXPECT_EQ(ids.size(), 10u);
}

TEST_F(ShardClusterTest, DeleteRangeOnAClusteredCollectionRemovesOnlyUnowned) {
    cluster();
    auto range = ShardKeyRange::make(table->shardKeyPattern(), test::J(R"({"a": 5})"),
                                     test::J(R"({"a": 25})"));
    ASSERT_TRUE(range.isOK());
    auto deleted = deleteUnownedInRange(*engine, "test.c", table->shardKeyPattern(),
                                        range.getValue(), hooks.filter.get());
    ASSERT_TRUE(deleted.isOK());
    EXPECT_EQ(deleted.getValue(), 10);  // 5..9 and 20..24; 10..19 are owned
    std::vector<int64_t> left = iota(0, 5);
    for (int64_t a : iota(10, 20)) left.push_back(a);
    for (int64_t a : iota(25, 30)) left.push_back(a);
    EXPECT_EQ(naturalA(), left);
}

// Not a test: a measurement of readRangePage on a large collection, clustered by the shard key
// or not (run with --gtest_also_run_disabled_tests --gtest_filter='*Measure*').
TEST_F(ShardClusterTest, DISABLED_MeasureReadRange) {
    constexpr int kDocs = 200000;
    {
        auto w = engine->writer(engine->getCollection("test.c")).getValue();
        std::mt19937 rng(1);
        std::string pad(100, 'x');
        for (int i = 30; i < kDocs; ++i) {
            bson::BsonBuilder b;
            b.appendInt32("_id", i).appendInt32("a", static_cast<int32_t>(rng() % kDocs));
            b.appendString("pad", pad);
            ASSERT_TRUE(w->insert(b.obj(), {}).isOK());
        }
    }
    // A 1% chunk.
    auto range = ShardKeyRange::make(table->shardKeyPattern(), test::J(R"({"a": 1000})"),
                                     test::J(R"({"a": 3000})"));
    auto measure = [&](const char* what) {
        auto coll = engine->getCollection("test.c");
        auto start = std::chrono::steady_clock::now();
        int64_t docs = 0, pages = 0;
        std::string afterKey;
        bson::BsonObj after;
        for (;;) {
            auto snap = engine->snapshot();
            RangePage page = readRangePage(
                *snap, *coll, table->shardKeyPattern(), range.getValue(),
                after.isEmpty() ? bson::BsonElement() : after.firstElement(), afterKey, 4 << 20);
            docs += static_cast<int64_t>(page.docs.size());
            ++pages;
            if (page.done) break;
            if (page.lastKey) afterKey = *page.lastKey;
            after = *page.lastId;
        }
        auto ms = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count() /
                  1000.0;
        std::printf("%s: %lld docs in %lld pages, %.1f ms\n", what, static_cast<long long>(docs),
                    static_cast<long long>(pages), ms);
    };
    measure("clustered by _id (filtering an _id scan)");
    cluster();
    measure("clustered by the shard key (one seek)");
}

}  // namespace
}  // namespace tessera::shard
