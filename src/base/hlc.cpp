#include "base/hlc.h"

#include <chrono>

namespace tessera {

uint32_t HybridLogicalClock::systemSeconds() {
    auto now = std::chrono::system_clock::now().time_since_epoch();
    return static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::seconds>(now).count());
}

Timestamp HybridLogicalClock::next() {
    uint64_t last = _last.load(std::memory_order_relaxed);
    for (;;) {
        Timestamp prev{last};
        uint32_t wall = _wallClock();
        Timestamp candidate =
            wall > prev.secs() ? Timestamp::fromParts(wall, 1) : Timestamp{prev.value + 1};
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
