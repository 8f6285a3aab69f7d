#include "shard/foreground_latency.h"

#include <algorithm>
#include <vector>

#include "base/mutex.h"

namespace tessera::shard {

void ForegroundLatency::record(std::chrono::microseconds latency) {
    auto now = Clock::now();
    MutexLock lk(_mutex);
    _samples[_next % kSamples] = {now, latency.count()};
    ++_next;
}

int64_t ForegroundLatency::p99Micros(std::chrono::milliseconds window) const {
    std::vector<int64_t> recent;
    {
        MutexLock lk(_mutex);
        auto since = Clock::now() - window;
        size_t n = std::min(_next, kSamples);
        recent.reserve(n);
        for (size_t i = 0; i < n; ++i) {
            if (_samples[i].at >= since) recent.push_back(_samples[i].micros);
        }
    }
    if (recent.empty()) return 0;
    size_t k = (recent.size() * 99) / 100;
    if (k >= recent.size()) k = recent.size() - 1;
    std::nth_element(recent.begin(), recent.begin() + static_cast<std::ptrdiff_t>(k), recent.end());
    return recent[k];
}

}  // namespace tessera::shard
