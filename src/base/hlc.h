#pragma once

#include <atomic>
#include <cstdint>

namespace tessera {

// A hybrid-logical-clock timestamp in MongoDB's Timestamp layout: seconds since the epoch in the
// high 32 bits, the increment in the low 32 bits (HybridLogicalClock: the microsecond within
// the second, times 4096, plus a logical count). Comparing the raw 64-bit values orders
// timestamps, so it doubles as the MVCC commit timestamp and as BSON's `operationTime`.
struct Timestamp {
    uint64_t value = 0;

    static constexpr Timestamp max() { return Timestamp{~uint64_t{0}}; }
    static Timestamp fromParts(uint32_t secs, uint32_t inc) {
        return Timestamp{(uint64_t{secs} << 32) | inc};
    }
    uint32_t secs() const { return static_cast<uint32_t>(value >> 32); }
    uint32_t inc() const { return static_cast<uint32_t>(value); }
    bool isNull() const { return value == 0; }
    auto operator<=>(const Timestamp&) const = default;
};

// Hands out strictly increasing timestamps that stay close to wall-clock time and never move
// backwards, even when the wall clock does. `advanceTo` merges a timestamp seen from another
// process (cluster time gossip), so causally later events always get later timestamps.
// The increment carries the wall clock's microsecond (inc = microsecond × 4096 + a logical count,
// which may carry into the next microsecond's range): two processes on clocks in step order
// their timestamps by real time at microsecond resolution, so a router that has not heard of a
// commit another router acknowledged still draws a later time for a read that starts after it
// (with seconds alone, a clock's count within the second lagged another's by hundreds).
// Thread-safe and lock-free.
class HybridLogicalClock {
  public:
    // A fresh timestamp, greater than every timestamp this clock returned or observed before.
    Timestamp next();
    // The greatest timestamp handed out or observed so far (no new tick).
    Timestamp current() const { return Timestamp{_last.load(std::memory_order_acquire)}; }
    // Observes a timestamp from elsewhere: later next() calls return greater timestamps.
    void advanceTo(Timestamp observed);

    // For tests: replaces the wall clock (microseconds since the epoch).
    using WallClock = uint64_t (*)();
    void setWallClockForTest(WallClock clock) { _wallClock = clock; }

    static HybridLogicalClock& global();

  private:
    static uint64_t systemMicros();

    std::atomic<uint64_t> _last{0};
    WallClock _wallClock = &systemMicros;
};

}  // namespace tessera
