// CriticalSections' two kinds: a migration's catch-up holds back writes only (reads pass and are
// not waited for), its commit holds back reads too (without draining those in flight).

#include "shard/critical_section.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

namespace tessera::shard {
namespace {

using Clock = std::chrono::steady_clock;
using Block = CriticalSections::Block;
const std::string kKey = CriticalSections::collectionKey("db.c");

TEST(CriticalSectionsTest, WritesOnlySectionLetsReadsThrough) {
    CriticalSections cs;
    ASSERT_TRUE(cs.tryAdmit(kKey, /*isWrite=*/false));  // a long read in flight
    ASSERT_TRUE(cs.enter(kKey, "m", Clock::now() + std::chrono::seconds(1), Block::kWrites).isOK())
        << "entering for writes does not wait for reads";
    EXPECT_TRUE(cs.blocks(kKey, true));
    EXPECT_FALSE(cs.blocks(kKey, false));
    EXPECT_FALSE(cs.tryAdmit(kKey, true));
    ASSERT_TRUE(cs.tryAdmit(kKey, false));
    cs.leave(kKey, false);
    // Upgrading without draining reads: the read in flight does not hold it up.
    ASSERT_TRUE(cs.enter(kKey, "m", Clock::now() + std::chrono::seconds(1), Block::kAll,
                         /*drainReads=*/false)
                    .isOK());
    EXPECT_TRUE(cs.blocks(kKey, false));
    EXPECT_FALSE(cs.tryAdmit(kKey, false));
    // Entering for writes again never downgrades.
    ASSERT_TRUE(cs.enter(kKey, "m", Clock::now() + std::chrono::seconds(1), Block::kWrites).isOK());
    EXPECT_EQ(cs.entered(kKey), Block::kAll);
    cs.leave(kKey, false);
    cs.exit(kKey);
    EXPECT_FALSE(cs.isEntered(kKey));
    EXPECT_TRUE(cs.tryAdmit(kKey, true));
    cs.leave(kKey, true);
}

TEST(CriticalSectionsTest, EnteringWaitsForWritesInFlightAndAReadWaitsOnlyForAll) {
    CriticalSections cs;
    ASSERT_TRUE(cs.tryAdmit(kKey, true));
    EXPECT_EQ(
        cs.enter(kKey, "m", Clock::now() + std::chrono::milliseconds(30), Block::kWrites).code(),
        static_cast<int>(ErrorCodes::LockTimeout));
    EXPECT_FALSE(cs.isEntered(kKey)) << "a failed entry leaves";
    auto entering = std::async(std::launch::async, [&] {
        return cs.enter(kKey, "m", Clock::now() + std::chrono::seconds(5), Block::kWrites);
    });
    // The section is marked entered before the entry waits for the write in flight.
    while (!cs.isEntered(kKey)) std::this_thread::yield();
    EXPECT_EQ(entering.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
        << "entering waits while the write is in flight";
    cs.leave(kKey, true);  // the write ends
    ASSERT_TRUE(entering.get().isOK());
    // A read does not wait for a writes-only section; a write does (until the deadline).
    EXPECT_TRUE(cs.waitForExit(kKey, Clock::now() + std::chrono::milliseconds(5), nullptr, nullptr,
                               /*isWrite=*/false));
    EXPECT_FALSE(cs.waitForExit(kKey, Clock::now() + std::chrono::milliseconds(5), nullptr, nullptr,
                                /*isWrite=*/true));
    cs.exit(kKey);
}

}  // namespace
}  // namespace tessera::shard
