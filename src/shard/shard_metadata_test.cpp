#include "shard/shard_metadata.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "placement/stale_info.h"
#include "shard/shard_test_util.h"

namespace tessera::shard {
namespace {

using placement::ChunkVersion;
using placement::DatabaseVersion;
using test::gen;
using test::J;
using test::makeTable;
using Clock = std::chrono::steady_clock;

const std::string kNs = "db.c";

class ShardMetadataTest : public ::testing::Test {
  protected:
    void SetUp() override {
        // s0 owns chunk 0 (1|0) and chunk 2 (1|2): shard version 1|2. s1 owns chunk 1 (1|1).
        source.setTable(kNs, makeTable(kNs, R"({"a": 1})", {R"({"a": 0})", R"({"a": 10})"},
                                       {"s0", "s1", "s0"}));
    }
    Status check(const ChunkVersion& v, bson::BsonObj* extra,
                 std::optional<Clock::time_point> deadline = std::nullopt) {
        Status st = md.checkShardVersion(kNs, v, deadline, extra);
        if (st.isOK()) md.criticalSections().leave(CriticalSections::collectionKey(kNs));
        return st;
    }

    test::FakePlacementSource source;
    ShardMetadata md{"s0", source};
};

TEST_F(ShardMetadataTest, MatchingVersionPassesAndMinorIsIgnored) {
    bson::BsonObj extra;
    EXPECT_TRUE(check(ChunkVersion(gen(), 1, 2), &extra).isOK());
    EXPECT_TRUE(check(ChunkVersion(gen(), 1, 0), &extra).isOK());  // same major
    EXPECT_TRUE(check(ChunkVersion::ignored(), &extra).isOK());
    EXPECT_EQ(source.collectionLoads.load(), 1);  // loaded once, on first use
}

// The shard's durable copy may answer only a first load (after a restart): a reload of what memory
// holds must reach the config server or fail, keeping the table in memory — else a migration's
// commit could be "learned" as the pre-commit placement.
TEST_F(ShardMetadataTest, AReloadNeverAnswersFromTheOwnCopyAndAFailedOneKeepsMemory) {
    ASSERT_TRUE(md.collection(kNs).isOK());
    EXPECT_TRUE(source.lastMayUseOwnCopy);  // first load
    auto before = md.collection(kNs).getValue();
    source.error = Status(ErrorCodes::HostUnreachable, "config server down");
    EXPECT_EQ(md.refreshCollection(kNs).code(), static_cast<int>(ErrorCodes::HostUnreachable));
    EXPECT_FALSE(source.lastMayUseOwnCopy);
    EXPECT_EQ(md.collection(kNs).getValue(), before);
    source.error = Status::OK();
    ASSERT_FALSE(md.databaseVersion("db").has_value());  // first load: the database is unknown
    EXPECT_TRUE(source.lastMayUseOwnCopy);
    source.error = Status(ErrorCodes::HostUnreachable, "config server down");
    EXPECT_FALSE(md.refreshDatabase("db").isOK());
    EXPECT_FALSE(source.lastMayUseOwnCopy);
}

TEST_F(ShardMetadataTest, OlderMajorIsStaleWithoutRefresh) {
    source.setTable(
        kNs, makeTable(kNs, R"({"a": 1})", {R"({"a": 0})", R"({"a": 10})"}, {"s0", "s1", "s0"}, 3));
    ASSERT_TRUE(md.refreshCollection(kNs).isOK());
    int loads = source.collectionLoads.load();
    bson::BsonObj extra;
    Status st = check(ChunkVersion(gen(), 2, 0), &extra);
    EXPECT_EQ(st.code(), static_cast<int>(ErrorCodes::StaleConfig));
    EXPECT_EQ(source.collectionLoads.load(), loads);  // the router is stale, not us
    auto info = placement::StaleConfigInfo::parse(extra);
    ASSERT_TRUE(info.isOK()) << extra.toJson();
    EXPECT_EQ(info.getValue().ns, kNs);
    EXPECT_EQ(info.getValue().shardId, "s0");
    EXPECT_EQ(info.getValue().received, ChunkVersion(gen(), 2, 0));
    ASSERT_TRUE(info.getValue().wanted.has_value());
    EXPECT_EQ(*info.getValue().wanted, ChunkVersion(gen(), 3, 2));
}

TEST_F(ShardMetadataTest, NewerVersionTriggersRefreshThenPasses) {
    bson::BsonObj extra;
    ASSERT_TRUE(check(ChunkVersion(gen(), 1, 2), &extra).isOK());
    // A migration committed on the config server; this shard was not told yet.
    source.setTable(
        kNs, makeTable(kNs, R"({"a": 1})", {R"({"a": 0})", R"({"a": 10})"}, {"s0", "s1", "s0"}, 2));
    EXPECT_TRUE(check(ChunkVersion(gen(), 2, 2), &extra).isOK());
    EXPECT_EQ(source.collectionLoads.load(), 2);
}

TEST_F(ShardMetadataTest, NewGenerationTriggersRefresh) {
    bson::BsonObj extra;
    ASSERT_TRUE(check(ChunkVersion(gen(), 1, 2), &extra).isOK());
    auto g2 = gen(2, 200);
    source.setTable(kNs, makeTable(kNs, R"({"a": 1})", {R"({"a": 0})", R"({"a": 10})"},
                                   {"s0", "s1", "s0"}, 1, g2));
    EXPECT_TRUE(check(ChunkVersion(g2, 1, 2), &extra).isOK());
    // And now the old generation is stale.
    EXPECT_EQ(check(ChunkVersion(gen(), 1, 2), &extra).code(),
              static_cast<int>(ErrorCodes::StaleConfig));
}

TEST_F(ShardMetadataTest, UnshardedCollection) {
    bson::BsonObj extra;
    EXPECT_TRUE(
        md.checkShardVersion("db.u", ChunkVersion::unsharded(), std::nullopt, &extra).isOK());
    md.criticalSections().leave(CriticalSections::collectionKey("db.u"));
    EXPECT_EQ(md.checkShardVersion("db.u", ChunkVersion(gen(), 1, 0), std::nullopt, &extra).code(),
              static_cast<int>(ErrorCodes::StaleConfig));
    // A router that thinks kNs is unsharded is stale.
    EXPECT_EQ(check(ChunkVersion::unsharded(), &extra).code(),
              static_cast<int>(ErrorCodes::StaleConfig));
    EXPECT_EQ(md.ownershipFilter("db.u").getValue(), nullptr);
    EXPECT_NE(md.ownershipFilter(kNs).getValue(), nullptr);
}

TEST_F(ShardMetadataTest, UnknownPlacementIsStaleWithoutWanted) {
    source.error = Status(ErrorCodes::HostUnreachable, "config down");
    bson::BsonObj extra;
    EXPECT_EQ(check(ChunkVersion(gen(), 1, 2), &extra).code(),
              static_cast<int>(ErrorCodes::StaleConfig));
    auto info = placement::StaleConfigInfo::parse(extra);
    ASSERT_TRUE(info.isOK());
    EXPECT_FALSE(info.getValue().wanted.has_value());
    // Unknown and unloadable: an error, never an unfiltered read.
    auto filter = md.ownershipFilter(kNs);
    ASSERT_FALSE(filter.isOK());
    EXPECT_EQ(filter.getStatus().code(), static_cast<int>(ErrorCodes::HostUnreachable));
    source.error = Status::OK();
    EXPECT_TRUE(check(ChunkVersion(gen(), 1, 2), &extra).isOK());
}

TEST_F(ShardMetadataTest, DatabaseVersionOnlyOnPrimary) {
    placement::Uuid uuid{};
    uuid[0] = 7;
    DatabaseVersion v(uuid, Timestamp::fromParts(5, 1), 1);
    source.setDb({"db", "s0", v});
    bson::BsonObj extra;
    EXPECT_TRUE(md.checkDatabaseVersion("db", v, std::nullopt, &extra).isOK());
    md.criticalSections().leave(CriticalSections::databaseKey("db"));
    EXPECT_EQ(md.checkDatabaseVersion("db", v.makeUpdated(), std::nullopt, &extra).code(),
              static_cast<int>(ErrorCodes::StaleDbVersion));  // refreshed once, still 1: stale
    // movePrimary to s1: s0 has no version any more.
    source.setDb({"db", "s1", v.makeUpdated()});
    ASSERT_TRUE(md.refreshDatabase("db").isOK());
    Status st = md.checkDatabaseVersion("db", v, std::nullopt, &extra);
    EXPECT_EQ(st.code(), static_cast<int>(ErrorCodes::StaleDbVersion));
    auto info = placement::StaleDbVersionInfo::parse(extra);
    ASSERT_TRUE(info.isOK()) << extra.toJson();
    EXPECT_FALSE(info.getValue().wanted.has_value());
}

TEST_F(ShardMetadataTest, CriticalSectionBlocksThenRechecksAfterCommit) {
    bson::BsonObj extra;
    ASSERT_TRUE(check(ChunkVersion(gen(), 1, 2), &extra).isOK());
    const std::string key = CriticalSections::collectionKey(kNs);
    ASSERT_TRUE(md.criticalSections()
                    .enter(key, "migration", Clock::now() + std::chrono::seconds(5))
                    .isOK());
    auto waiter = std::async(std::launch::async, [&] {
        bson::BsonObj e;
        Status st = md.checkShardVersion(kNs, ChunkVersion(gen(), 1, 2), std::nullopt, &e);
        if (st.isOK()) md.criticalSections().leave(key);
        return std::make_pair(st, e);
    });
    // The waiter blocks while the section is held.
    while (md.criticalSections().blockedWaiters() < 1) std::this_thread::yield();
    EXPECT_EQ(waiter.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
    // Commit: the donor's version moves to 2|1 (control chunk); then exit.
    source.setTable(
        kNs, makeTable(kNs, R"({"a": 1})", {R"({"a": 0})", R"({"a": 10})"}, {"s0", "s1", "s1"}, 2));
    md.criticalSections().exit(key);
    auto [st, e] = waiter.get();
    EXPECT_EQ(st.code(), static_cast<int>(ErrorCodes::StaleConfig)) << st.toString();
    auto info = placement::StaleConfigInfo::parse(e);
    ASSERT_TRUE(info.isOK());
    EXPECT_EQ(*info.getValue().wanted, ChunkVersion(gen(), 2, 0));
}

// An operation on an io thread (mayWait false) never waits or loads: an unknown placement, a
// critical section and a version that may need a refresh are InlineWouldBlock (the operation
// moves to the pool), and nothing is admitted.
TEST_F(ShardMetadataTest, WithoutWaitingEverythingThatWouldWaitIsInlineWouldBlock) {
    bson::BsonObj extra;
    auto noWait = [&](const ChunkVersion& v) {
        Status st = md.checkShardVersion(kNs, v, std::nullopt, &extra, /*mayWait=*/false);
        if (st.isOK()) md.criticalSections().leave(CriticalSections::collectionKey(kNs));
        return st;
    };
    EXPECT_EQ(noWait(ChunkVersion(gen(), 1, 2)).code(),
              static_cast<int>(ErrorCodes::InlineWouldBlock));  // not loaded yet
    EXPECT_EQ(source.collectionLoads.load(), 0);
    EXPECT_EQ(md.ownershipFilter(kNs, false).getStatus().code(),
              static_cast<int>(ErrorCodes::InlineWouldBlock));
    ASSERT_TRUE(check(ChunkVersion(gen(), 1, 2), &extra).isOK());  // loads
    EXPECT_TRUE(noWait(ChunkVersion(gen(), 1, 2)).isOK());
    EXPECT_TRUE(md.ownershipFilter(kNs, false).isOK());
    // A newer version than ours may mean ours is stale: a refresh, so not inline.
    EXPECT_EQ(noWait(ChunkVersion(gen(), 5, 0)).code(),
              static_cast<int>(ErrorCodes::InlineWouldBlock));
    // An older one is the router's problem: StaleConfig at once, inline too.
    source.setTable(
        kNs, makeTable(kNs, R"({"a": 1})", {R"({"a": 0})", R"({"a": 10})"}, {"s0", "s1", "s0"}, 3));
    ASSERT_TRUE(md.refreshCollection(kNs).isOK());
    EXPECT_EQ(noWait(ChunkVersion(gen(), 2, 0)).code(), static_cast<int>(ErrorCodes::StaleConfig));
    const std::string key = CriticalSections::collectionKey(kNs);
    ASSERT_TRUE(
        md.criticalSections().enter(key, "m", Clock::now() + std::chrono::seconds(5)).isOK());
    // Returns while this thread still holds the section: it did not wait for the exit.
    EXPECT_EQ(noWait(ChunkVersion(gen(), 3, 0)).code(),
              static_cast<int>(ErrorCodes::InlineWouldBlock));
    EXPECT_EQ(md.criticalSections().blockedWaiters(), 0);
    md.criticalSections().exit(key);
    EXPECT_TRUE(noWait(ChunkVersion(gen(), 3, 0)).isOK());
}

TEST_F(ShardMetadataTest, CriticalSectionWaitHonorsDeadline) {
    bson::BsonObj extra;
    const std::string key = CriticalSections::collectionKey(kNs);
    ASSERT_TRUE(
        md.criticalSections().enter(key, "m", Clock::now() + std::chrono::seconds(5)).isOK());
    auto start = Clock::now();
    Status st =
        check(ChunkVersion(gen(), 1, 2), &extra, Clock::now() + std::chrono::milliseconds(50));
    EXPECT_EQ(st.code(), static_cast<int>(ErrorCodes::StaleConfig));
    // It waited until its deadline (and returned while this thread still holds the section).
    EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(50));
    md.criticalSections().exit(key);
}

TEST_F(ShardMetadataTest, EnterWaitsForAdmittedOperations) {
    bson::BsonObj extra;
    const std::string key = CriticalSections::collectionKey(kNs);
    ASSERT_TRUE(md.checkShardVersion(kNs, ChunkVersion(gen(), 1, 2), std::nullopt, &extra).isOK());
    EXPECT_EQ(md.criticalSections().inFlight(key), 1);
    // Cannot enter while the admitted write runs.
    EXPECT_EQ(
        md.criticalSections().enter(key, "m", Clock::now() + std::chrono::milliseconds(30)).code(),
        static_cast<int>(ErrorCodes::LockTimeout));
    EXPECT_FALSE(md.criticalSections().isEntered(key));
    auto entering = std::async(std::launch::async, [&] {
        return md.criticalSections().enter(key, "m", Clock::now() + std::chrono::seconds(5));
    });
    // Marked entered first, then waiting for the admitted write.
    while (!md.criticalSections().isEntered(key)) std::this_thread::yield();
    EXPECT_EQ(entering.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
    md.criticalSections().leave(key);  // the write ends
    EXPECT_TRUE(entering.get().isOK());
    md.criticalSections().exit(key);
}

TEST_F(ShardMetadataTest, WaitersShareOneRefreshAndAreCapped) {
    bson::BsonObj extra;
    ASSERT_TRUE(check(ChunkVersion(gen(), 1, 2), &extra).isOK());
    const std::string key = CriticalSections::collectionKey(kNs);
    ASSERT_TRUE(
        md.criticalSections().enter(key, "m", Clock::now() + std::chrono::seconds(5)).isOK());
    std::vector<std::future<Status>> waiters;
    for (int i = 0; i < CriticalSections::kMaxBlockedWaiters; ++i) {
        waiters.push_back(std::async(std::launch::async, [&] {
            bson::BsonObj e;
            Status st = md.checkShardVersion(kNs, ChunkVersion(gen(), 1, 2), std::nullopt, &e);
            if (st.isOK()) md.criticalSections().leave(key);
            return st;
        }));
    }
    auto deadline = Clock::now() + std::chrono::seconds(5);
    while (md.criticalSections().blockedWaiters() < CriticalSections::kMaxBlockedWaiters &&
           Clock::now() < deadline) {
        std::this_thread::yield();
    }
    ASSERT_EQ(md.criticalSections().blockedWaiters(), CriticalSections::kMaxBlockedWaiters);
    // One more would take a worker thread the section's exit may need: rejected at once
    // (StaleConfig without vWanted: the router retries).
    // (It returns while this thread holds the section: it did not wait for the exit.)
    EXPECT_EQ(check(ChunkVersion(gen(), 1, 2), &extra).code(),
              static_cast<int>(ErrorCodes::StaleConfig));
    for (auto& w : waiters) {
        EXPECT_EQ(w.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
    }
    int before = source.collectionLoads.load();
    md.criticalSections().exit(key);
    for (auto& w : waiters) EXPECT_TRUE(w.get().isOK());
    // The waiters released by one exit share one refresh that started after it.
    EXPECT_EQ(source.collectionLoads.load() - before, 1);
}

}  // namespace
}  // namespace tessera::shard
