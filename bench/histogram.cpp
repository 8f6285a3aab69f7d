#include "histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace tessera::bench {

int LatencyHistogram::bucketIndex(uint64_t value) {
    if (value < kSubBuckets) {
        return static_cast<int>(value);
    }
    // magnitude >= kSubBucketBits: the top kSubBucketBits bits select the sub-bucket, whose
    // upper half (the top bit is always set) is the bucket within the group.
    int magnitude = 63 - std::countl_zero(value);
    int shift = magnitude - (kSubBucketBits - 1);
    auto sub = static_cast<int>(value >> shift);  // in [kSubBuckets/2, kSubBuckets)
    int group = shift;                            // >= 1
    return static_cast<int>(kSubBuckets) + (group - 1) * static_cast<int>(kSubBuckets / 2) +
           (sub - static_cast<int>(kSubBuckets / 2));
}

uint64_t LatencyHistogram::bucketUpperBound(int index) {
    if (index < static_cast<int>(kSubBuckets)) {
        return static_cast<uint64_t>(index);
    }
    int rel = index - static_cast<int>(kSubBuckets);
    int group = rel / static_cast<int>(kSubBuckets / 2) + 1;
    uint64_t sub = kSubBuckets / 2 + static_cast<uint64_t>(rel % (kSubBuckets / 2));
    uint64_t lower = sub << group;
    uint64_t width = uint64_t{1} << group;
    return lower + (width - 1);
}

void LatencyHistogram::record(uint64_t valueNanos) {
    ++_buckets[bucketIndex(valueNanos)];
    ++_count;
    _sum += valueNanos;
    _min = std::min(_min, valueNanos);
    _max = std::max(_max, valueNanos);
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
    for (int i = 0; i < kBucketCount; ++i) {
        _buckets[i] += other._buckets[i];
    }
    _count += other._count;
    _sum += other._sum;
    _min = std::min(_min, other._min);
    _max = std::max(_max, other._max);
}

uint64_t LatencyHistogram::percentile(double q) const {
    if (_count == 0) {
        return 0;
    }
    q = std::clamp(q, 0.0, 1.0);
    auto target = static_cast<uint64_t>(std::ceil(q * static_cast<double>(_count)));
    target = std::max<uint64_t>(target, 1);
    uint64_t seen = 0;
    for (int i = 0; i < kBucketCount; ++i) {
        seen += _buckets[i];
        if (seen >= target) {
            return std::clamp(bucketUpperBound(i), min(), _max);
        }
    }
    return _max;
}

}  // namespace tessera::bench
