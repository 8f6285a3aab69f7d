#include "phase_runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

namespace tessera::bench {
namespace {

TEST(PhaseRunnerTest, StopsAtOpBudgetWithUniqueTickets) {
    std::mutex m;
    std::set<uint64_t> tickets;
    PhaseSpec spec{"t", "p", 4, 60.0, 1000, 10, 1};
    PhaseResult r = runPhase(spec, [&](OpContext& ctx) {
        std::lock_guard lock(m);
        EXPECT_TRUE(tickets.insert(ctx.ticket).second);
        EXPECT_LT(ctx.thread, 4u);
        return true;
    });
    EXPECT_EQ(r.ops, 1000u);
    EXPECT_EQ(r.errors, 0u);
    EXPECT_EQ(r.latency.count(), 1000u);
    EXPECT_EQ(tickets.size(), 1000u);
    EXPECT_EQ(*tickets.rbegin(), 999u);
    EXPECT_LT(r.seconds, 30.0);  // did not wait for the time budget
}

TEST(PhaseRunnerTest, StopsAtTimeBudget) {
    PhaseSpec spec{"t", "p", 2, 0.2, UINT64_MAX, 0, 1};
    PhaseResult r = runPhase(spec, [](OpContext&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return true;
    });
    EXPECT_GE(r.seconds, 0.2);
    EXPECT_LT(r.seconds, 2.0);
    EXPECT_GT(r.ops, 10u);
    EXPECT_GT(r.opsPerSec(), 0.0);
    // Each op slept >= 1 ms, so the median latency is at least that.
    EXPECT_GE(r.latency.percentile(0.5), 1'000'000u);
}

TEST(PhaseRunnerTest, CountsErrorsAndKeepsFirstMessage) {
    PhaseSpec spec{"t", "p", 3, 60.0, 300, 0, 1};
    PhaseResult r = runPhase(spec, [](OpContext& ctx) {
        if (ctx.ticket % 3 == 0) {
            ctx.error = "boom";
            return false;
        }
        return true;
    });
    EXPECT_EQ(r.errors, 100u);
    EXPECT_EQ(r.ops, 200u);
    EXPECT_EQ(r.latency.count(), 200u);
    EXPECT_EQ(r.firstError, "boom");
    std::string json = formatJson(r);
    EXPECT_NE(json.find("\"errors\":100"), std::string::npos) << json;
    EXPECT_NE(json.find("\"first_error\":\"boom\""), std::string::npos) << json;
}

TEST(PhaseResultTest, JsonIsOneFlatLineWithEscaping) {
    PhaseResult r;
    r.tool = "tool";
    r.phase = "point";
    r.threads = 16;
    r.ops = 1000;
    r.seconds = 2.0;
    r.latency.record(50'000);
    r.firstError = "bad \"quote\"\n";
    std::string json = formatJson(r);
    EXPECT_EQ(json.find('\n'), std::string::npos);
    EXPECT_NE(json.find("\"ops_per_sec\":500.0"), std::string::npos) << json;
    EXPECT_NE(json.find("\"p50_us\":50.0"), std::string::npos) << json;
    EXPECT_NE(json.find("bad \\\"quote\\\"\\n"), std::string::npos) << json;
}

}  // namespace
}  // namespace tessera::bench
