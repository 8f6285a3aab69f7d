#include "phase_runner.h"

#include <atomic>
#include <barrier>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::bench {

PhaseResult runPhase(const PhaseSpec& spec, const PhaseOp& op) {
    using Clock = std::chrono::steady_clock;
    const uint64_t threads = spec.threads == 0 ? 1 : spec.threads;

    std::atomic<uint64_t> nextTicket{0};
    std::atomic<bool> stop{false};
    std::vector<PhaseResult> perThread(threads);
    std::mutex errorMutex;
    std::string firstError;
    Clock::time_point start;
    Clock::time_point deadline;
    std::barrier startLine(static_cast<std::ptrdiff_t>(threads), [&]() noexcept {
        start = Clock::now();
        deadline = start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(spec.seconds));
    });

    auto worker = [&](uint64_t t) {
        std::mt19937_64 rng(spec.seed * 0x9E3779B97F4A7C15ULL + t);
        PhaseResult& mine = perThread[t];
        OpContext ctx;
        ctx.thread = t;
        ctx.rng = &rng;
        startLine.arrive_and_wait();
        while (!stop.load(std::memory_order_relaxed)) {
            uint64_t ticket = nextTicket.fetch_add(1, std::memory_order_relaxed);
            if (ticket >= spec.maxOps) {
                break;
            }
            ctx.ticket = ticket;
            auto t0 = Clock::now();
            bool ok = op(ctx);
            auto t1 = Clock::now();
            if (ok) {
                ++mine.ops;
                mine.latency.record(static_cast<uint64_t>(
                    std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()));
            } else {
                ++mine.errors;
                if (mine.errors == 1) {
                    std::lock_guard lock(errorMutex);
                    if (firstError.empty()) {
                        firstError = ctx.error.empty() ? "unknown error" : ctx.error;
                    }
                }
                ctx.error.clear();
            }
            if (t1 >= deadline) {
                stop.store(true, std::memory_order_relaxed);
            }
        }
    };

    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (uint64_t t = 0; t < threads; ++t) {
        pool.emplace_back(worker, t);
    }
    for (auto& th : pool) {
        th.join();
    }
    auto end = Clock::now();

    PhaseResult total;
    total.tool = spec.tool;
    total.phase = spec.phase;
    total.threads = threads;
    total.bytesPerOp = spec.bytesPerOp;
    total.seconds = std::chrono::duration<double>(end - start).count();
    for (const auto& r : perThread) {
        total.ops += r.ops;
        total.errors += r.errors;
        total.latency.merge(r.latency);
    }
    total.firstError = firstError;
    return total;
}

}  // namespace tessera::bench
