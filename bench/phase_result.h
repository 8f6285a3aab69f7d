// One measured phase of a bench tool, printed as a human line and as one flat JSON line
// (`{"tool":...,"phase":...,"ops_per_sec":...}`) that bench/run.sh greps.
#pragma once

#include <cstdint>
#include <string>

#include "histogram.h"

namespace tessera::bench {

struct PhaseResult {
    std::string tool;   // e.g. "tessera_loadgen"
    std::string phase;  // e.g. "point"
    uint64_t threads = 0;
    uint64_t ops = 0;     // successful operations
    uint64_t errors = 0;  // failed operations (not in the histogram)
    double seconds = 0;   // wall time of the measured phase
    uint64_t bytesPerOp = 0;
    LatencyHistogram latency;      // nanoseconds, successful operations only
    std::string firstError;        // first error message seen, if any
    double serverCpuUsPerOp = -1;  // the server's CPU per operation, when measured (>= 0)
    double clientCpuUsPerOp = -1;  // the load generator's own CPU per operation, when measured

    double opsPerSec() const { return seconds > 0 ? static_cast<double>(ops) / seconds : 0.0; }
};

// "tool phase: 12345 ops/s  p50 80.1 us  p99 310.0 us  (ops 123450, errors 0, 10.0 s, 16 thr)"
std::string formatText(const PhaseResult& r);
// One line of JSON, no trailing newline. Latencies in microseconds.
std::string formatJson(const PhaseResult& r);

}  // namespace tessera::bench
