#include "config/ddl_lock_manager.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace tessera::config {
namespace {

using namespace std::chrono_literals;

TEST(DdlLockManager, DifferentCollectionsDoNotWaitForEachOther) {
    DdlLockManager locks;
    auto a = locks.lockCollection("db.a", "shardCollection db.a");
    ASSERT_TRUE(a.isOK());
    auto b = locks.lockCollection("db.b", "shardCollection db.b", 50ms);
    ASSERT_TRUE(b.isOK()) << b.getStatus().toString();
    EXPECT_EQ(locks.describeHeld().size(), 4u);  // db shared twice, db.a, db.b
}

TEST(DdlLockManager, SameCollectionWaitsAndTimesOutWithTheHoldersReason) {
    DdlLockManager locks;
    auto a = locks.lockCollection("db.a", "moveRange db.a");
    ASSERT_TRUE(a.isOK());
    auto again = locks.lockCollection("db.a", "split db.a", 30ms);
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
    EXPECT_FALSE(locks.lockDatabase("db", "dropDatabase db", 20ms).isOK());
    EXPECT_TRUE(locks.lockDatabase("other", "dropDatabase other", 20ms).isOK());

    std::atomic<bool> dropped{false};
    std::thread drop([&] {
        auto g = locks.lockDatabase("db", "dropDatabase db", 5s);
        EXPECT_TRUE(g.isOK());
        dropped = true;
    });
    // A waiting exclusive request holds back new shared ones (no starvation).
    std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(locks.lockCollection("db.b", "create db.b", 20ms).isOK());
    EXPECT_FALSE(dropped.load());
    coll.getValue().release();
    drop.join();
    EXPECT_TRUE(dropped.load());
    EXPECT_TRUE(locks.describeHeld().empty());
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
