// KeySampler: split points by bytes from one pass, with bounded memory.
#include "shard/key_sampler.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "bson/bson_obj.h"

namespace tessera::shard {
namespace {

// Keys "k000123" encode in key order as themselves.
std::string encoded(int i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "k%07d", i);
    return buf;
}
bson::BsonObj key(int i) { return bson::fromJson("{\"x\": " + std::to_string(i) + "}"); }
int keyOf(const bson::BsonObj& k) { return k["x"].numberInt(); }

TEST(KeySamplerTest, PointsCutTheBytesIntoEqualPieces) {
    KeySampler s;
    for (int i = 0; i < 100000; ++i) s.add(encoded(i), key(i), 100);  // 10 MB
    EXPECT_EQ(s.bytes(), 10000000);
    EXPECT_FALSE(s.oneKey());
    std::vector<bson::BsonObj> p = s.points(4);
    ASSERT_EQ(p.size(), 3u);
    // Within one sampling step (16 KB = 164 documents here) of each quarter.
    for (int q = 1; q <= 3; ++q) {
        EXPECT_GE(keyOf(p[q - 1]), q * 25000);
        EXPECT_LE(keyOf(p[q - 1]), q * 25000 + 170);
    }
}

TEST(KeySamplerTest, MemoryStaysBoundedAndPointsStayAccurateOnHugeRanges) {
    KeySampler s;
    for (int i = 0; i < 40000; ++i) s.add(encoded(i), key(i), 64 * 1024);  // 2.5 GB, every doc
    std::vector<bson::BsonObj> p = s.points(2);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_NEAR(keyOf(p[0]), 20000, 40000.0 / KeySampler::kMaxSamples + 1);
    EXPECT_EQ(s.points(1000).size(), 999u);
}

TEST(KeySamplerTest, OneKeyIsJumboAndARareSecondKeyIsStillFound) {
    KeySampler one;
    for (int i = 0; i < 1000; ++i) one.add(encoded(7), key(7), 100);
    EXPECT_TRUE(one.oneKey());

    // Every sampled key is the first one; the only other key is one small document at the end.
    KeySampler rare;
    for (int i = 0; i < 1000; ++i) rare.add(encoded(7), key(7), 100);
    rare.add(encoded(8), key(8), 10);
    EXPECT_FALSE(rare.oneKey());
    EXPECT_TRUE(rare.points(2).empty());
    ASSERT_TRUE(rare.secondKey().has_value());
    EXPECT_EQ(keyOf(*rare.secondKey()), 8);
}

TEST(KeySamplerTest, PointsNeverRepeatAKeyNorUseTheFirst) {
    KeySampler s;
    // Three keys, the first holding half the bytes: at most two distinct points, both after it.
    for (int i = 0; i < 3000; ++i)
        s.add(encoded(i < 1500 ? 1 : i < 2250 ? 2 : 3), key(i < 1500 ? 1 : i < 2250 ? 2 : 3), 1000);
    std::vector<bson::BsonObj> p = s.points(8);
    ASSERT_FALSE(p.empty());
    EXPECT_LE(p.size(), 2u);
    int previous = 1;
    for (const bson::BsonObj& k : p) {
        EXPECT_GT(keyOf(k), previous);
        previous = keyOf(k);
    }
}

}  // namespace
}  // namespace tessera::shard
