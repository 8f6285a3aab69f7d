#pragma once

#include <chrono>
#include <cstdint>

namespace tessera {

// Milliseconds since the Unix epoch by the system clock (BSON Date values: localTime, $$NOW).
// Not monotonic: for ordering use HybridLogicalClock, for durations std::chrono::steady_clock.
inline int64_t wallClockMillis() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace tessera
