// Threads: parallel writers, readers during writes, snapshot consistency across collections.

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "storage/storage_test_util.h"

namespace tessera::storage {
namespace {

using test::EngineTest;
using test::J;

using ConcurrencyTest = EngineTest;

std::string doc(int i) {
    return "{\"_id\": " + std::to_string(i) + ", \"a\": " + std::to_string(i % 13) + "}";
}

TEST_F(ConcurrencyTest, ParallelWritersOnDifferentCollections) {
    constexpr int kThreads = 4, kDocs = 1000;
    for (int t = 0; t < kThreads; ++t) create("db.c" + std::to_string(t));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            auto w = std::move(
                engine->writer(engine->getCollection("db.c" + std::to_string(t))).getValue());
            for (int i = 0; i < kDocs; ++i) ASSERT_TRUE(w->insert(J(doc(i)), {}).isOK());
        });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
        auto coll = engine->getCollection("db.c" + std::to_string(t));
        EXPECT_EQ(engine->stats(*coll).count, kDocs);
        EXPECT_EQ(scanAll(coll->ns()).size(), size_t{kDocs});
    }
}

TEST_F(ConcurrencyTest, WritersOnOneCollectionSerialize) {
    create("db.c");
    IndexSpec a;
    a.name = "a_1";
    a.keyPattern = J(R"({"a": 1})");
    ASSERT_TRUE(engine->createIndexes("db.c", {a}).isOK());
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 200; ++i) {
                auto w = std::move(engine->writer(engine->getCollection("db.c")).getValue());
                ASSERT_TRUE(w->insert(J(doc(t * 1000 + i)), {}).isOK());
            }
        });
    }
    for (auto& th : threads) th.join();
    auto coll = engine->getCollection("db.c");
    EXPECT_EQ(engine->stats(*coll).count, 800);
    auto snap = engine->snapshot();
    size_t entries = 0;
    auto cursor = snap->indexScan(*coll, coll->indexes[1], {});
    while (cursor->next()) ++entries;
    EXPECT_EQ(entries, 800u);
}

// A writer inserts document i into "a" and then into "b", and moves a counter document in "a";
// concurrent snapshots must never see b ahead of a, nor a record without its index entry.
TEST_F(ConcurrencyTest, ReadersSeeConsistentSnapshotsDuringWrites) {
    create("db.a");
    create("db.b");
    IndexSpec a;
    a.name = "a_1";
    a.keyPattern = J(R"({"a": 1})");
    ASSERT_TRUE(engine->createIndexes("db.a", {a}).isOK());
    std::atomic<bool> done{false};
    std::thread writer([&] {
        auto wa = std::move(engine->writer(engine->getCollection("db.a")).getValue());
        auto wb = std::move(engine->writer(engine->getCollection("db.b")).getValue());
        for (int i = 0; i < 1500; ++i) {
            ASSERT_TRUE(wa->insert(J(doc(i)), {}).isOK());
            ASSERT_TRUE(wb->insert(J(doc(i)), {}).isOK());
        }
        done = true;
    });
    auto count = [](ReadSnapshot& snap, const CollectionInfo& c) {
        size_t n = 0;
        auto cursor = snap.scan(c);
        while (cursor->next()) ++n;
        return n;
    };
    std::vector<std::thread> readers;
    std::atomic<int> checks{0};
    for (int r = 0; r < 2; ++r) {
        readers.emplace_back([&] {
            size_t lastA = 0;
            while (!done) {
                auto ca = engine->getCollection("db.a");
                auto cb = engine->getCollection("db.b");
                auto snap = engine->snapshot();
                size_t nb = count(*snap, *cb);  // read b first: a must be >= b
                size_t na = count(*snap, *ca);
                EXPECT_TRUE(na == nb || na == nb + 1) << na << " " << nb;
                EXPECT_GE(na, lastA);
                lastA = na;
                size_t entries = 0;
                auto ix = snap->indexScan(*ca, *ca->findIndex("a_1"), {});
                while (ix->next()) ++entries;
                EXPECT_EQ(entries, na);
                ++checks;
            }
        });
    }
    writer.join();
    for (auto& th : readers) th.join();
    EXPECT_GT(checks.load(), 0);
    EXPECT_EQ(scanAll("db.b").size(), 1500u);
}

}  // namespace
}  // namespace tessera::storage
