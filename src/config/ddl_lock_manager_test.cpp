#include "config/ddl_lock_manager.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

namespace tessera::config {
namespace {

using namespace std::chrono_literals;

// Another operation's request: DDL operations each run on their own thread.
template <typename Fn>
auto onAnotherThread(Fn fn) {
    return std::async(std::launch::async, fn).get();
}

TEST(DdlLockManager, DifferentCollectionsDoNotWaitForEachOther) {
    DdlLockManager locks;
    auto a = locks.lockCollection("db.a", "shardCollection db.a");
    ASSERT_TRUE(a.isOK());
    auto b = onAnotherThread([&] { return locks.lockCollection("db.b", "shardCollection db.b"); });
    ASSERT_TRUE(b.isOK()) << b.getStatus().toString();
    EXPECT_EQ(locks.describeHeld().size(), 4u);  // db shared twice, db.a, db.b
}

TEST(DdlLockManager, SameCollectionWaitsAndTimesOutWithTheHoldersReason) {
    DdlLockManager locks;
    auto a = locks.lockCollection("db.a", "moveRange db.a");
    ASSERT_TRUE(a.isOK());
    auto again = onAnotherThread([&] { return locks.lockCollection("db.a", "split db.a", 30ms); });
    ASSERT_FALSE(again.isOK());
    EXPECT_EQ(again.getStatus().code(), static_cast<int>(ErrorCodes::LockBusy));
    EXPECT_NE(again.getStatus().reason().find("moveRange db.a"), std::string::npos);
    // The failed attempt released the database it had taken.
    EXPECT_EQ(locks.describeHeld().size(), 2u);
}

TEST(DdlLockManager, DatabaseOperationsExcludeCollectionOperations) {
    DdlLockManager locks;
    auto coll = locks.lockCollection("db.a", "shardCollection db.a");
    ASSERT_TRUE(coll.isOK());
    EXPECT_FALSE(
        onAnotherThread([&] { return locks.lockDatabase("db", "dropDatabase", 20ms); }).isOK());
    EXPECT_TRUE(
        onAnotherThread([&] { return locks.lockDatabase("other", "dropDatabase", 20ms); }).isOK());

    std::atomic<bool> dropped{false};
    std::thread drop([&] {
        auto g = locks.lockDatabase("db", "dropDatabase db", 5s);
        EXPECT_TRUE(g.isOK());
        dropped = true;
    });
    // Once the drop waits, it holds back new shared requests (no starvation of dropDatabase).
    while (locks.databaseWaiters("db") == 0) std::this_thread::yield();
    EXPECT_FALSE(
        onAnotherThread([&] { return locks.lockCollection("db.b", "create", 20ms); }).isOK());
    EXPECT_FALSE(dropped.load());
    coll.getValue().release();
    drop.join();
    EXPECT_TRUE(dropped.load());
    EXPECT_TRUE(locks.describeHeld().empty());
}

// The hang of {_configsvrDropCollection: "keep"}: a namespace without a dot took the database
// "keep" shared, then waited for "keep" exclusively — held by itself. Malformed names are now
// refused before any lock, and databases and collections never share a lock name.
TEST(DdlLockManager, MalformedNamespacesAreRefusedBeforeAnyLock) {
    DdlLockManager locks;
    for (const char* ns : {"keep", ".c", "db.", "", "d$b.c", "db.$c", "a b.c"}) {
        auto g = locks.lockCollection(ns, "dropCollection", 20ms);
        ASSERT_FALSE(g.isOK()) << ns;
        EXPECT_EQ(g.getStatus().code(), static_cast<int>(ErrorCodes::InvalidNamespace)) << ns;
    }
    EXPECT_FALSE(locks.lockDatabase("a.b", "dropDatabase", 20ms).isOK());
    EXPECT_TRUE(locks.describeHeld().empty());
    auto db = locks.lockDatabase("keep", "dropDatabase keep");
    ASSERT_TRUE(db.isOK());
    EXPECT_EQ(locks.describeHeld().size(), 1u);
}

// An operation asking again for a lock it holds would wait on itself forever: refused at once.
TEST(DdlLockManager, AnOperationNeverWaitsOnItsOwnLock) {
    DdlLockManager locks;
    auto coll = locks.lockCollection("db.a", "moveRange db.a");
    ASSERT_TRUE(coll.isOK());
#ifdef NDEBUG
    auto db = locks.lockDatabase("db", "dropDatabase db", 5s);
    ASSERT_FALSE(db.isOK());
    EXPECT_EQ(db.getStatus().code(), static_cast<int>(ErrorCodes::LockFailed));
    auto same = locks.lockCollection("db.a", "split db.a", 5s);
    ASSERT_FALSE(same.isOK());
    EXPECT_EQ(same.getStatus().code(), static_cast<int>(ErrorCodes::LockFailed));
    EXPECT_EQ(locks.describeHeld().size(), 2u);
#else
    EXPECT_DEATH((void)locks.lockDatabase("db", "dropDatabase db", 5s), "requested again");
#endif
}

// Many threads on a few collections: at most one holder per collection at any time, and all
// finish (no lost wake-up, no dangling state once everything is released).
TEST(DdlLockManager, ExclusionUnderContention) {
    DdlLockManager locks;
    std::atomic<int> inside[3] = {0, 0, 0};
    std::atomic<int> violations{0}, done{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 12; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 50; ++i) {
                int c = (t + i) % 3;
                if (t % 4 == 0 && i % 10 == 0) {
                    auto g = locks.lockDatabase("db", "dropDatabase", 10s);
                    ASSERT_TRUE(g.isOK());
                    continue;
                }
                auto g = locks.lockCollection("db.c" + std::to_string(c), "op", 10s);
                ASSERT_TRUE(g.isOK());
                if (inside[c].fetch_add(1) != 0) ++violations;
                std::this_thread::yield();
                inside[c].fetch_sub(1);
            }
            ++done;
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(done.load(), 12);
    EXPECT_EQ(violations.load(), 0);
    EXPECT_TRUE(locks.describeHeld().empty());
}

}  // namespace
}  // namespace tessera::config
