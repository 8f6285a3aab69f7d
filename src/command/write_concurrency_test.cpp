// Concurrent writes through the commands (document-level concurrency, first writer wins): no
// update is lost, a single-document write takes exactly one document, an upsert race on a unique
// key makes one document, and multi-updates racing with deletes stay exact.

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "command/crud_test_util.h"

namespace tessera::command::test {
namespace {

class WriteConcurrencyTest : public CrudFixture {
  protected:
    // Runs fn(thread) on `threads` threads at once.
    template <typename Fn>
    void parallel(int threads, Fn fn) {
        std::vector<std::thread> ts;
        for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] { fn(t); });
        for (auto& th : ts) th.join();
    }
};

TEST_F(WriteConcurrencyTest, ConcurrentIncrementsOfOneDocumentAreAllApplied) {
    ok(R"({"insert": "c", "documents": [{"_id": 1, "n": 0}]})");
    constexpr int kThreads = 6, kEach = 100;
    parallel(kThreads, [&](int) {
        for (int i = 0; i < kEach; ++i) {
            auto r =
                run(R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}]})");
            ASSERT_TRUE(r.ok()) << r.status.toString();
            ASSERT_EQ(r.reply["nModified"].numberLong(), 1) << r.reply.toJson();
        }
    });
    auto f = ok(R"({"find": "c", "filter": {"_id": 1}})");
    EXPECT_EQ(f["cursor"].objValue()["firstBatch"].objValue()["0"].objValue()["n"].numberLong(),
              kThreads * kEach);
}

// Workers each take one "new" job with updateOne: no job is taken twice, every job is taken.
TEST_F(WriteConcurrencyTest, UpdateOneTakesEachDocumentOnce) {
    constexpr int kJobs = 200, kWorkers = 6;
    for (int i = 0; i < kJobs; ++i) {
        ok("{\"insert\": \"jobs\", \"documents\": [{\"_id\": " + std::to_string(i) +
           ", \"state\": \"new\"}]}");
    }
    std::atomic<int> taken{0};
    parallel(kWorkers, [&](int w) {
        for (;;) {
            auto r =
                run("{\"findAndModify\": \"jobs\", \"query\": {\"state\": \"new\"}, "
                    "\"update\": {\"$set\": {\"state\": \"taken\", \"by\": " +
                    std::to_string(w) + "}}}");
            ASSERT_TRUE(r.ok()) << r.status.toString();
            if (r.reply["value"].isNull()) break;
            ++taken;
        }
    });
    EXPECT_EQ(taken.load(), kJobs);
    EXPECT_EQ(ok(R"({"count": "jobs", "query": {"state": "taken"}})")["n"].numberLong(), kJobs);
}

// Concurrent upserts of one key with a unique index: one document, every upsert succeeds.
TEST_F(WriteConcurrencyTest, UpsertRaceOnAUniqueKeyMakesOneDocument) {
    ok(R"({"insert": "u", "documents": [{"_id": "seed", "k": -1}]})");
    storage::IndexSpec k;
    k.name = "k_1";
    k.keyPattern = J(R"({"k": 1})");
    k.unique = true;
    ASSERT_TRUE(engine->createIndexes("test.u", {k}).isOK());
    constexpr int kThreads = 6, kKeys = 50;
    parallel(kThreads, [&](int) {
        for (int k = 0; k < kKeys; ++k) {
            auto r = run("{\"update\": \"u\", \"updates\": [{\"q\": {\"k\": " + std::to_string(k) +
                         "}, \"u\": {\"$inc\": {\"n\": 1}}, \"upsert\": true}]}");
            ASSERT_TRUE(r.ok()) << r.status.toString();
            ASSERT_FALSE(r.reply.hasField("writeErrors")) << r.reply.toJson();
        }
    });
    EXPECT_EQ(ok(R"({"count": "u"})")["n"].numberLong(), kKeys + 1);
    auto all = ok(
        R"({"aggregate": "u", "pipeline": [{"$group": {"_id": "$k", "c": {"$sum": 1}}}, {"$match": {"c": {"$gt": 1}}}], "cursor": {}})");
    EXPECT_EQ(all["cursor"].objValue()["firstBatch"].objValue().nFields(), 0) << all.toJson();
    auto agg =
        ok(R"({"aggregate": "u", "pipeline": [{"$group": {"_id": null, "n": {"$sum": "$n"}}}],
                     "cursor": {}})");
    EXPECT_EQ(agg["cursor"].objValue()["firstBatch"].objValue()["0"].objValue()["n"].numberLong(),
              kThreads * kKeys);
}

// A multi-update and deletes of the same documents race: every document is either deleted or
// updated exactly once, and the count is exact.
TEST_F(WriteConcurrencyTest, MultiUpdateRacingWithDeletesStaysExact) {
    constexpr int kDocs = 300;
    for (int i = 0; i < kDocs; ++i) {
        ok("{\"insert\": \"m\", \"documents\": [{\"_id\": " + std::to_string(i) + ", \"v\": 0}]}");
    }
    std::atomic<int64_t> deleted{0}, modified{0};
    parallel(3, [&](int t) {
        if (t == 0) {
            auto r = ok(
                R"({"update": "m", "updates": [{"q": {}, "u": {"$inc": {"v": 1}}, "multi": true}]})");
            modified += r["nModified"].numberLong();
        } else {
            for (int i = t - 1; i < kDocs; i += 2) {
                if (i % 3 != 0) continue;
                auto r =
                    ok("{\"delete\": \"m\", \"deletes\": [{\"q\": {\"_id\": " + std::to_string(i) +
                       "}, \"limit\": 1}]}");
                deleted += r["n"].numberLong();
            }
        }
    });
    EXPECT_EQ(deleted.load(), kDocs / 3);
    EXPECT_EQ(ok(R"({"count": "m"})")["n"].numberLong(), kDocs - kDocs / 3);
    int64_t updated = ok(R"({"count": "m", "query": {"v": 1}})")["n"].numberLong();
    EXPECT_EQ(ok(R"({"count": "m", "query": {"v": {"$gt": 1}}})")["n"].numberLong(), 0);
    EXPECT_EQ(updated, kDocs - kDocs / 3);  // every survivor was updated once
    EXPECT_GE(modified.load(), updated);
}

}  // namespace
}  // namespace tessera::command::test
