#include "base/status.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <new>
#include <stdexcept>
#include <vector>

namespace tessera {
namespace {

TEST(Status, CodeNamesMatchMongoDB) {
    EXPECT_EQ(Status(ErrorCodes::CommandNotFound, "x").codeName(), "CommandNotFound");
    EXPECT_EQ(Status(ErrorCodes::DuplicateKey, "x").code(), 11000);
    EXPECT_EQ(Status(ErrorCodes::StaleConfig, "x").codeName(), "StaleConfig");
    EXPECT_EQ(Status(16755, "x").codeName(), "Location16755");
    EXPECT_TRUE(Status::OK().isOK());
    EXPECT_EQ(Status::OK().toString(), "OK");
}

StatusWith<int> parsePositive(int v) {
    if (v <= 0) return Status(ErrorCodes::BadValue, "not positive");
    return v;
}

Status doubleIt(int v, int* out) {
    ASSIGN_OR_RETURN(int x, parsePositive(v));
    *out = 2 * x;
    return Status::OK();
}

TEST(StatusWith, AssignOrReturnPropagatesErrors) {
    int out = 0;
    EXPECT_TRUE(doubleIt(4, &out).isOK());
    EXPECT_EQ(out, 8);
    Status s = doubleIt(-1, &out);
    EXPECT_TRUE(s.is(ErrorCodes::BadValue));
    EXPECT_EQ(s.reason(), "not positive");
}

TEST(Status, WithContextKeepsCode) {
    Status s = Status(ErrorCodes::BadValue, "inner").withContext("outer");
    EXPECT_TRUE(s.is(ErrorCodes::BadValue));
    EXPECT_EQ(s.reason(), "outer :: caused by :: inner");
}

// Running out of memory is ExceededMemoryLimit, never "unexpected exception" (1).
TEST(Status, FromCurrentExceptionNamesMemoryExhaustion) {
    auto statusOf = [](auto thrower) {
        try {
            thrower();
        } catch (...) {
            return statusFromCurrentException("a step");
        }
        return Status::OK();
    };
    Status oom = statusOf([] { throw std::bad_alloc(); });
    EXPECT_TRUE(oom.is(ErrorCodes::ExceededMemoryLimit)) << oom.toString();
    Status tooLong = statusOf([] { std::vector<int>().reserve(SIZE_MAX / 2); });
    EXPECT_TRUE(tooLong.is(ErrorCodes::ExceededMemoryLimit)) << tooLong.toString();
    Status other = statusOf([] { throw std::runtime_error("boom"); });
    EXPECT_TRUE(other.is(ErrorCodes::InternalError));
    EXPECT_NE(other.reason().find("a step"), std::string::npos);
    EXPECT_NE(other.reason().find("boom"), std::string::npos);
    Status unknown = statusOf([] { throw 7; });
    EXPECT_TRUE(unknown.is(ErrorCodes::InternalError));
}

}  // namespace
}  // namespace tessera
