// Threads: parallel writers, readers during writes, snapshot consistency across collections.

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "storage/storage_test_util.h"

namespace tessera::storage {
namespace {

using test::EngineTest;
using test::J;

class ConcurrencyTest : public EngineTest {
  protected:
    // Polls (deadline 30 s) until a DDL of `ns` waits for the collection's writers: from then on
    // a writer that may not wait is refused with InlineWouldBlock. One opened earlier is closed
    // at once.
    bool waitUntilDdlWaits(const std::string& ns) {
        WriteUnit noWait;
        noWait.setMayWait(false);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (std::chrono::steady_clock::now() < deadline) {
            auto w = engine->writer(engine->getCollection(ns), &noWait);
            if (w.getStatus().code() == static_cast<int>(ErrorCodes::InlineWouldBlock)) return true;
            std::this_thread::yield();
        }
        return false;
    }
};

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

TEST_F(ConcurrencyTest, WritersOfOneCollectionRunTogether) {
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

// Writers of one collection hold their writers at the same time (document-level exclusion):
// while one writer is open and idle, another one of the same collection writes.
TEST_F(ConcurrencyTest, AnOpenWriterDoesNotBlockAnotherOfTheSameCollection) {
    create("db.c");
    auto first = std::move(engine->writer(engine->getCollection("db.c")).getValue());
    ASSERT_TRUE(first->insert(J(doc(1)), {}).isOK());
    std::atomic<bool> wrote{false};
    std::thread other([&] {
        auto w = std::move(engine->writer(engine->getCollection("db.c")).getValue());
        ASSERT_TRUE(w->insert(J(doc(2)), {}).isOK());
        wrote = true;
    });
    other.join();  // would deadlock with a collection-wide writer lock
    EXPECT_TRUE(wrote.load());
    ASSERT_TRUE(first->insert(J(doc(3)), {}).isOK());
    EXPECT_EQ(engine->stats(*engine->getCollection("db.c")).count, 3);
}

// Many threads insert values of a unique index, each value by several threads at once: exactly
// one insert per value wins, the others get DuplicateKey, and counts and index entries are exact.
TEST_F(ConcurrencyTest, UniqueIndexRacesHaveExactlyOneWinnerPerKey) {
    create("db.c");
    IndexSpec email;
    email.name = "email_1";
    email.keyPattern = J(R"({"email": 1})");
    email.unique = true;
    ASSERT_TRUE(engine->createIndexes("db.c", {email}).isOK());
    constexpr int kThreads = 8, kValues = 300;
    std::atomic<int> winners{0}, duplicates{0}, other{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            auto w = std::move(engine->writer(engine->getCollection("db.c")).getValue());
            for (int v = 0; v < kValues; ++v) {
                std::string d = "{\"_id\": " + std::to_string(t * kValues + v) +
                                ", \"email\": \"u" + std::to_string(v) + "@x\"}";
                auto r = w->insert(J(d), {});
                if (r.isOK()) {
                    ++winners;
                } else if (r.getStatus().code() == 11000) {
                    ++duplicates;
                } else {
                    ++other;
                }
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(winners.load(), kValues);
    EXPECT_EQ(duplicates.load(), (kThreads - 1) * kValues);
    EXPECT_EQ(other.load(), 0);
    auto coll = engine->getCollection("db.c");
    EXPECT_EQ(engine->stats(*coll).count, kValues);
    EXPECT_EQ(scanAll("db.c").size(), size_t{kValues});
    {
        auto snap = engine->snapshot();
        size_t entries = 0;
        auto cursor = snap->indexScan(*coll, *coll->findIndex("email_1"), {});
        while (cursor->next()) ++entries;
        EXPECT_EQ(entries, size_t{kValues});
    }
    // The counts survive a restart exactly (merged deltas).
    coll.reset();
    reopen();
    EXPECT_EQ(engine->stats(*engine->getCollection("db.c")).count, kValues);
}

// Concurrent read-modify-writes of one document never lose an update: each writer retries on
// WriteConflict from the version it lost to.
TEST_F(ConcurrencyTest, ConcurrentUpdatesOfOneDocumentLoseNothing) {
    create("db.c");
    insert("db.c", R"({"_id": 1, "n": 0})");
    constexpr int kThreads = 6, kIncrements = 200;
    std::atomic<int> conflicts{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&] {
            auto w = std::move(engine->writer(engine->getCollection("db.c")).getValue());
            std::string key = test::idKey("1");
            for (int i = 0; i < kIncrements; ++i) {
                for (;;) {
                    bson::BsonObj cur = *w->current(key);
                    int64_t n = cur["n"].numberLong();
                    auto r = w->update(key, cur,
                                       J("{\"_id\": 1, \"n\": " + std::to_string(n + 1) + "}"), {});
                    if (r.isOK()) break;
                    ASSERT_EQ(r.getStatus().code(), 112) << r.getStatus().toString();
                    ++conflicts;
                }
            }
        });
    }
    for (auto& th : threads) th.join();
    auto w = std::move(engine->writer(engine->getCollection("db.c")).getValue());
    EXPECT_EQ((*w->current(test::idKey("1")))["n"].numberLong(), kThreads * kIncrements);
    EXPECT_EQ(engine->stats(*engine->getCollection("db.c")).count, 1);
}

// DDL waits for the open writers of its collection and holds back new ones until it is done.
TEST_F(ConcurrencyTest, IndexBuildWaitsForOpenWriters) {
    create("db.c");
    auto w = std::move(engine->writer(engine->getCollection("db.c")).getValue());
    ASSERT_TRUE(w->insert(J(doc(1)), {}).isOK());
    std::atomic<bool> built{false};
    std::thread ddl([&] {
        IndexSpec a;
        a.name = "a_1";
        a.keyPattern = J(R"({"a": 1})");
        ASSERT_TRUE(engine->createIndexes("db.c", {a}).isOK());
        built = true;
    });
    // The build cannot finish while `w` is open: once it waits, it has not built.
    ASSERT_TRUE(waitUntilDdlWaits("db.c"));
    EXPECT_FALSE(built.load());
    ASSERT_TRUE(w->insert(J(doc(2)), {}).isOK());
    w.reset();
    ddl.join();
    EXPECT_TRUE(built.load());
    auto coll = engine->getCollection("db.c");
    auto snap = engine->snapshot();
    size_t entries = 0;
    auto cursor = snap->indexScan(*coll, *coll->findIndex("a_1"), {});
    while (cursor->next()) ++entries;
    EXPECT_EQ(entries, 2u);
}

// A writer for an operation that must not wait (an io thread's, WriteUnit::setMayWait(false)):
// while DDL holds or waits for the collection, Engine::writer fails with InlineWouldBlock at
// once instead of waiting; afterwards it opens as usual.
TEST_F(ConcurrencyTest, AWriterThatMayNotWaitYieldsToDdl) {
    create("db.c");
    WriteUnit noWait;
    noWait.setMayWait(false);
    auto open = engine->writer(engine->getCollection("db.c"));  // held: the DDL below waits
    ASSERT_TRUE(open.isOK());
    std::thread ddl([&] {
        IndexSpec a;
        a.name = "a_1";
        a.keyPattern = J(R"({"a": 1})");
        ASSERT_TRUE(engine->createIndexes("db.c", {a}).isOK());
    });
    // From the moment the DDL waits, a no-wait writer is refused (and returns while this thread
    // holds `open`: it did not wait).
    ASSERT_TRUE(waitUntilDdlWaits("db.c"));
    EXPECT_EQ(engine->writer(engine->getCollection("db.c"), &noWait).getStatus().code(),
              static_cast<int>(ErrorCodes::InlineWouldBlock));
    open.getValue().reset();
    ddl.join();
    EXPECT_TRUE(engine->writer(engine->getCollection("db.c"), &noWait).isOK());
}

}  // namespace
}  // namespace tessera::storage
