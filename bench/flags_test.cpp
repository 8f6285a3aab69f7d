#include "flags.h"

#include <gtest/gtest.h>

namespace tessera::bench {
namespace {

Flags makeFlags() { return Flags({"threads", "uri", "seconds"}, {"json"}); }

TEST(FlagsTest, ParsesSeparateAndInlineValuesAndSwitches) {
    Flags f = makeFlags();
    const char* argv[] = {"prog", "--threads", "8", "--uri=mongodb://x", "--json"};
    std::string err;
    ASSERT_TRUE(f.parse(5, argv, &err)) << err;
    uint64_t threads = 0;
    ASSERT_TRUE(f.getUint("threads", 16, &threads, &err));
    EXPECT_EQ(threads, 8u);
    EXPECT_EQ(f.getString("uri", ""), "mongodb://x");
    EXPECT_TRUE(f.has("json"));
    double seconds = 0;
    ASSERT_TRUE(f.getDouble("seconds", 2.5, &seconds, &err));
    EXPECT_DOUBLE_EQ(seconds, 2.5);
}

TEST(FlagsTest, RejectsUnknownMissingAndStray) {
    std::string err;
    {
        Flags f = makeFlags();
        const char* argv[] = {"prog", "--nope", "1"};
        EXPECT_FALSE(f.parse(3, argv, &err));
        EXPECT_NE(err.find("unknown flag --nope"), std::string::npos);
    }
    {
        Flags f = makeFlags();
        const char* argv[] = {"prog", "--threads"};
        EXPECT_FALSE(f.parse(2, argv, &err));
        EXPECT_NE(err.find("needs a value"), std::string::npos);
    }
    {
        Flags f = makeFlags();
        const char* argv[] = {"prog", "stray"};
        EXPECT_FALSE(f.parse(2, argv, &err));
    }
    {
        Flags f = makeFlags();
        const char* argv[] = {"prog", "--json=1"};
        EXPECT_FALSE(f.parse(2, argv, &err));
    }
}

TEST(FlagsTest, RejectsBadNumbers) {
    Flags f = makeFlags();
    const char* argv[] = {"prog", "--threads", "-3", "--seconds", "abc"};
    std::string err;
    ASSERT_TRUE(f.parse(5, argv, &err));
    uint64_t threads = 0;
    EXPECT_FALSE(f.getUint("threads", 16, &threads, &err));
    double seconds = 0;
    EXPECT_FALSE(f.getDouble("seconds", 1, &seconds, &err));
    EXPECT_NE(err.find("abc"), std::string::npos);
}

}  // namespace
}  // namespace tessera::bench
