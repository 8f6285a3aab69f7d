#include "wire/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace tessera::wire {
namespace {

// Vectors from RFC 3720 (iSCSI) appendix B.4 and the common "123456789" check value.
TEST(Crc32c, KnownVectors) {
    EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
    EXPECT_EQ(crc32cSoftware("123456789", 9), 0xE3069283u);
    std::vector<uint8_t> zeros(32, 0), ones(32, 0xFF), inc(32), dec(32);
    for (int i = 0; i < 32; ++i) {
        inc[i] = static_cast<uint8_t>(i);
        dec[i] = static_cast<uint8_t>(31 - i);
    }
    for (auto fn : {&crc32c, &crc32cSoftware}) {
        EXPECT_EQ(fn(zeros.data(), 32, 0), 0x8A9136AAu);
        EXPECT_EQ(fn(ones.data(), 32, 0), 0x62A8AB43u);
        EXPECT_EQ(fn(inc.data(), 32, 0), 0x46DD794Eu);
        EXPECT_EQ(fn(dec.data(), 32, 0), 0x113FDB5Cu);
        EXPECT_EQ(fn("", 0, 0), 0u);
    }
}

TEST(Crc32c, HardwareMatchesSoftwareAtEveryLengthAndAlignment) {
    std::mt19937 rng(42);
    std::vector<uint8_t> data(1000);
    for (auto& b : data) b = static_cast<uint8_t>(rng());
    for (size_t offset = 0; offset < 8; ++offset) {
        for (size_t len = 0; len + offset <= 300; ++len) {
            ASSERT_EQ(crc32c(data.data() + offset, len), crc32cSoftware(data.data() + offset, len))
                << "offset " << offset << " len " << len;
        }
    }
}

TEST(Crc32c, ChainingEqualsOneShot) {
    const std::string s = "The quick brown fox jumps over the lazy dog";
    for (size_t split = 0; split <= s.size(); ++split) {
        uint32_t a = crc32c(s.data(), split);
        EXPECT_EQ(crc32c(s.data() + split, s.size() - split, a), crc32c(s.data(), s.size()));
        uint32_t b = crc32cSoftware(s.data(), split);
        EXPECT_EQ(crc32cSoftware(s.data() + split, s.size() - split, b),
                  crc32c(s.data(), s.size()));
    }
    EXPECT_EQ(crc32c(s.data(), s.size()), 0x22620404u);
}

}  // namespace
}  // namespace tessera::wire
