#include "base/status.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tessera
