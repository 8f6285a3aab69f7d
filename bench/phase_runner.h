// Runs one closed-loop benchmark phase: T threads each issue operations back to back until the
// phase's time budget or operation budget is spent, whichever comes first. Every operation is
// timed individually into a per-thread histogram; the histograms are merged at the end.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>

#include "phase_result.h"

namespace tessera::bench {

struct OpContext {
    uint64_t thread = 0;             // 0 .. threads-1
    uint64_t ticket = 0;             // unique per phase, 0 .. maxOps-1, in issue order
    std::mt19937_64* rng = nullptr;  // per-thread, seeded deterministically
    std::string error;               // set by a failing op
};

struct PhaseSpec {
    std::string tool;
    std::string phase;
    uint64_t threads = 1;
    double seconds = 10;
    uint64_t maxOps = UINT64_MAX;
    uint64_t bytesPerOp = 0;
    uint64_t seed = 1;
};

// `op` returns true on success; on failure it sets ctx.error and returns false (counted, not
// timed). `op` is called concurrently from spec.threads threads.
using PhaseOp = std::function<bool(OpContext& ctx)>;

PhaseResult runPhase(const PhaseSpec& spec, const PhaseOp& op);

}  // namespace tessera::bench
