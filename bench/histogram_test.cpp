#include "histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace tessera::bench {
namespace {

TEST(LatencyHistogramTest, EmptyReportsZero) {
    LatencyHistogram h;
    EXPECT_EQ(h.count(), 0u);
    EXPECT_EQ(h.percentile(0.5), 0u);
    EXPECT_EQ(h.min(), 0u);
    EXPECT_EQ(h.max(), 0u);
}

TEST(LatencyHistogramTest, SmallValuesAreExact) {
    LatencyHistogram h;
    for (uint64_t v = 1; v <= 100; ++v) {
        h.record(v);
    }
    EXPECT_EQ(h.count(), 100u);
    EXPECT_EQ(h.percentile(0.50), 50u);
    EXPECT_EQ(h.percentile(0.99), 99u);
    EXPECT_EQ(h.percentile(1.0), 100u);
    EXPECT_EQ(h.min(), 1u);
    EXPECT_EQ(h.max(), 100u);
    EXPECT_DOUBLE_EQ(h.mean(), 50.5);
}

TEST(LatencyHistogramTest, BucketsCoverEveryValueMonotonically) {
    // Each value maps into a bucket whose upper bound is >= the value, and within 1/128 of it.
    std::mt19937_64 rng(5);
    for (int i = 0; i < 200000; ++i) {
        uint64_t v = rng() >> (rng() % 64);
        int b = LatencyHistogram::bucketIndex(v);
        ASSERT_GE(b, 0);
        ASSERT_LT(b, LatencyHistogram::kBucketCount);
        uint64_t upper = LatencyHistogram::bucketUpperBound(b);
        ASSERT_GE(upper, v);
        ASSERT_LE(upper - v, v / 128) << v;
        if (b > 0) {
            ASSERT_LT(LatencyHistogram::bucketUpperBound(b - 1), v) << v;
        }
    }
    EXPECT_EQ(LatencyHistogram::bucketIndex(UINT64_MAX), LatencyHistogram::kBucketCount - 1);
    EXPECT_EQ(LatencyHistogram::bucketUpperBound(LatencyHistogram::kBucketCount - 1), UINT64_MAX);
}

TEST(LatencyHistogramTest, PercentilesMatchExactWithinOnePercent) {
    std::mt19937_64 rng(7);
    std::lognormal_distribution<double> dist(11.0, 1.0);  // ~60 us median, long tail
    LatencyHistogram h;
    std::vector<uint64_t> all;
    for (int i = 0; i < 100000; ++i) {
        auto v = static_cast<uint64_t>(dist(rng));
        h.record(v);
        all.push_back(v);
    }
    std::sort(all.begin(), all.end());
    for (double q : {0.5, 0.9, 0.99, 0.999}) {
        uint64_t exact = all[static_cast<size_t>(q * all.size()) - 1];
        uint64_t approx = h.percentile(q);
        EXPECT_GE(approx, exact) << q;
        EXPECT_LE(static_cast<double>(approx), exact * 1.01) << q;
    }
    EXPECT_EQ(h.max(), all.back());
}

TEST(LatencyHistogramTest, MergeEqualsRecordingEverything) {
    LatencyHistogram a, b, both;
    for (uint64_t v = 0; v < 5000; v += 3) {
        a.record(v * 1000);
        both.record(v * 1000);
    }
    for (uint64_t v = 0; v < 900; v += 7) {
        b.record(v * 100000);
        both.record(v * 100000);
    }
    a.merge(b);
    EXPECT_EQ(a.count(), both.count());
    EXPECT_EQ(a.max(), both.max());
    EXPECT_EQ(a.min(), both.min());
    for (double q : {0.1, 0.5, 0.99}) {
        EXPECT_EQ(a.percentile(q), both.percentile(q));
    }
}

}  // namespace
}  // namespace tessera::bench
