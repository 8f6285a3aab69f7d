// Latency histogram with HdrHistogram-style log-linear buckets.
//
// Values (nanoseconds) are grouped by their power of two ("magnitude"); each magnitude is split
// into kSubBuckets / 2 linear buckets, so the relative error of any reported percentile is at
// most 2 / kSubBuckets (~0.8 %), over the whole range 0 .. 2^64 - 1 ns. Recording is O(1) and
// allocation-free; a histogram is owned by one thread and merged into a total at the end.
#pragma once

#include <array>
#include <cstdint>

namespace tessera::bench {

class LatencyHistogram {
  public:
    static constexpr int kSubBucketBits = 8;
    static constexpr uint64_t kSubBuckets = uint64_t{1} << kSubBucketBits;  // 256
    // Values below kSubBuckets are exact; above, one group of kSubBuckets / 2 buckets per
    // further power of two.
    static constexpr int kGroups = 64 - kSubBucketBits + 1;
    static constexpr int kBucketCount = kSubBuckets + (kGroups - 1) * (kSubBuckets / 2);

    void record(uint64_t valueNanos);
    void merge(const LatencyHistogram& other);

    uint64_t count() const { return _count; }
    uint64_t min() const { return _count == 0 ? 0 : _min; }
    uint64_t max() const { return _max; }
    double mean() const { return _count == 0 ? 0.0 : static_cast<double>(_sum) / _count; }

    // The smallest recorded-bucket upper bound v such that at least fraction q (0 < q <= 1) of
    // the samples are <= v, clamped to [min(), max()]. Returns 0 when empty.
    uint64_t percentile(double q) const;

    // Bucket index of a value and the largest value that maps to a bucket (for tests).
    static int bucketIndex(uint64_t value);
    static uint64_t bucketUpperBound(int index);

  private:
    std::array<uint64_t, kBucketCount> _buckets{};
    uint64_t _count = 0;
    uint64_t _sum = 0;
    uint64_t _min = UINT64_MAX;
    uint64_t _max = 0;
};

}  // namespace tessera::bench
