#include "base/hlc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace tessera {
namespace {

uint32_t gFakeSeconds = 1000;
uint32_t gFakeMicros = 0;  // within the second
uint64_t fakeClock() { return uint64_t{gFakeSeconds} * 1'000'000 + gFakeMicros; }

TEST(HybridLogicalClock, StrictlyIncreasingWhenWallClockStandsStill) {
    HybridLogicalClock clock;
    clock.setWallClockForTest(&fakeClock);
    gFakeSeconds = 1000;
    Timestamp a = clock.next();
    Timestamp b = clock.next();
    EXPECT_EQ(a.secs(), 1000u);
    EXPECT_LT(a, b);
    EXPECT_EQ(b.inc(), a.inc() + 1);
}

TEST(HybridLogicalClock, NeverGoesBackwardsWhenWallClockDoes) {
    HybridLogicalClock clock;
    clock.setWallClockForTest(&fakeClock);
    gFakeSeconds = 2000;
    Timestamp a = clock.next();
    gFakeSeconds = 1500;
    Timestamp b = clock.next();
    EXPECT_LT(a, b);
    EXPECT_EQ(b.secs(), 2000u);
}

TEST(HybridLogicalClock, AdvanceToObservedTimestamp) {
    HybridLogicalClock clock;
    clock.setWallClockForTest(&fakeClock);
    gFakeSeconds = 10;
    Timestamp remote = Timestamp::fromParts(50, 7);
    clock.advanceTo(remote);
    EXPECT_GT(clock.next(), remote);
    clock.advanceTo(Timestamp::fromParts(1, 1));  // older: ignored
    EXPECT_GT(clock.current(), remote);
}

TEST(HybridLogicalClock, AMicrosecondLaterIsLaterThanEveryTickBefore) {
    // Two processes on clocks in step: one ticked many times, the other reads the clock a little
    // later in real time and is ahead (a router's read after a commit another router acknowledged).
    HybridLogicalClock busy;
    HybridLogicalClock idle;
    busy.setWallClockForTest(&fakeClock);
    idle.setWallClockForTest(&fakeClock);
    gFakeSeconds = 3000;
    gFakeMicros = 500;
    Timestamp last;
    for (int i = 0; i < 1000; ++i) last = busy.next();
    EXPECT_EQ(last.secs(), 3000u);
    gFakeMicros = 501;
    EXPECT_GT(idle.next(), last);
    // Ticks beyond a microsecond's 4096 carry on, still increasing, into the following ones.
    Timestamp before = busy.next();
    for (int i = 0; i < 10000; ++i) busy.next();
    EXPECT_GT(busy.next(), before);
    gFakeMicros = 0;
}

TEST(HybridLogicalClock, ConcurrentCallersGetDistinctTimestamps) {
    HybridLogicalClock clock;
    std::vector<std::vector<uint64_t>> seen(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 10000; ++i) seen[t].push_back(clock.next().value);
        });
    }
    for (auto& th : threads) th.join();
    std::vector<uint64_t> all;
    for (auto& s : seen) {
        for (size_t i = 1; i < s.size(); ++i) ASSERT_LT(s[i - 1], s[i]);
        all.insert(all.end(), s.begin(), s.end());
    }
    std::sort(all.begin(), all.end());
    EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
}

}  // namespace
}  // namespace tessera
