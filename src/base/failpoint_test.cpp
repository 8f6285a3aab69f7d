#include "base/failpoint.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TESSERA_FAIL_POINT_DEFINE(testOnlyFailPoint);

TEST(FailPoint, OffByDefaultAndFoundByName) {
    EXPECT_FALSE(testOnlyFailPoint.shouldFail());
    EXPECT_EQ(FailPointRegistry::global().find("testOnlyFailPoint"), &testOnlyFailPoint);
    EXPECT_EQ(FailPointRegistry::global().find("noSuchFailPoint"), nullptr);
}

TEST(FailPoint, TimesFiresExactlyNTimes) {
    testOnlyFailPoint.configure(FailPoint::Mode::kTimes, 2, "payload");
    EXPECT_EQ(testOnlyFailPoint.shouldFail(), std::optional<std::string>("payload"));
    EXPECT_TRUE(testOnlyFailPoint.shouldFail());
    EXPECT_FALSE(testOnlyFailPoint.shouldFail());
    EXPECT_FALSE(testOnlyFailPoint.active());
    EXPECT_EQ(testOnlyFailPoint.timesEntered(), 2);
}

TEST(FailPoint, SkipThenAlwaysFires) {
    testOnlyFailPoint.configure(FailPoint::Mode::kSkip, 1, "");
    EXPECT_FALSE(testOnlyFailPoint.shouldFail());
    EXPECT_TRUE(testOnlyFailPoint.shouldFail());
    EXPECT_TRUE(testOnlyFailPoint.shouldFail());
    testOnlyFailPoint.configure(FailPoint::Mode::kOff, 0, "");
    EXPECT_FALSE(testOnlyFailPoint.shouldFail());
}

TEST(FailPoint, PredicateDecidesWhichEvaluationsCount) {
    testOnlyFailPoint.configure(FailPoint::Mode::kTimes, 1, "insert");
    auto isFind = [](const std::string& data) { return data == "find"; };
    auto isInsert = [](const std::string& data) { return data == "insert"; };
    EXPECT_FALSE(testOnlyFailPoint.shouldFailIf(isFind));
    EXPECT_TRUE(testOnlyFailPoint.shouldFailIf(isInsert));
    EXPECT_FALSE(testOnlyFailPoint.shouldFailIf(isInsert));
}

}  // namespace
}  // namespace tessera
