#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>

#include "base/mutex.h"

namespace tessera::shard {

// The latencies of the shard's recent foreground operations (client CRUD commands, not the
// internal `_shardsvr*` ones), so that a migration can pace its clone by them
// (docs/protocols/migration.md, pacing). Keeps the last kSamples; p99 over those of the last
// `window`. Thread-safe.
class ForegroundLatency {
  public:
    using Clock = std::chrono::steady_clock;
    static constexpr size_t kSamples = 2048;

    void record(std::chrono::microseconds latency);
    // 0 when no operation ran within `window`.
    int64_t p99Micros(std::chrono::milliseconds window = std::chrono::milliseconds(2000)) const;

  private:
    struct Sample {
        Clock::time_point at;
        int64_t micros = 0;
    };
    mutable Mutex _mutex;
    std::array<Sample, kSamples> _samples GUARDED_BY(_mutex){};
    size_t _next GUARDED_BY(_mutex) = 0;
};

}  // namespace tessera::shard
