#include "base/hlc.h"

#include <chrono>

namespace tessera {

namespace {
// Logical ticks per microsecond of the increment: 1 000 000 × 4096 < 2^32.
constexpr uint32_t kLogicalBits = 12;
}  // namespace

uint64_t HybridLogicalClock::systemMicros() {
    auto now = std::chrono::system_clock::now().time_since_epoch();
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(now).count());
}

Timestamp HybridLogicalClock::next() {
    uint64_t last = _last.load(std::memory_order_relaxed);
    for (;;) {
        Timestamp prev{last};
        uint64_t micros = _wallClock();
        Timestamp physical =
            Timestamp::fromParts(static_cast<uint32_t>(micros / 1'000'000),
                                 (static_cast<uint32_t>(micros % 1'000'000) << kLogicalBits) + 1);
        Timestamp candidate = physical > prev ? physical : Timestamp{prev.value + 1};
        if (_last.compare_exchange_weak(last, candidate.value, std::memory_order_acq_rel)) {
            return candidate;
        }
    }
}

void HybridLogicalClock::advanceTo(Timestamp observed) {
    uint64_t last = _last.load(std::memory_order_relaxed);
    while (observed.value > last &&
           !_last.compare_exchange_weak(last, observed.value, std::memory_order_acq_rel)) {
    }
}

HybridLogicalClock& HybridLogicalClock::global() {
    static HybridLogicalClock clock;
    return clock;
}

}  // namespace tessera
