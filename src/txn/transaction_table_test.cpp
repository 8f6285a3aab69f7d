#include "txn/transaction_table.h"

#include <gtest/gtest.h>

#include <future>

#include "bson/bson_obj.h"

namespace tessera::txn {
namespace {

bson::BsonObj J(std::string_view json) { return bson::fromJson(json); }
using Clock = std::chrono::steady_clock;

Clock::time_point soon() { return Clock::now() + std::chrono::seconds(5); }

TEST(TransactionTable, RetryReturnsStoredReplyWithoutExecuting) {
    TransactionTable t;
    std::vector<int64_t> persisted;
    t.setPersister([&](const std::string&, int64_t txn, const bson::BsonObj&) {
        persisted.push_back(txn);
        return Status::OK();
    });
    auto first = t.begin("L1", 5, soon());
    ASSERT_TRUE(first.isOK());
    EXPECT_FALSE(first.getValue().has_value());  // execute
    bson::BsonObj reply = J(R"({"n": 1, "ok": 1.0})");
    t.finish("L1", 5, &reply);
    EXPECT_EQ(persisted, std::vector<int64_t>{5});

    auto retry = t.begin("L1", 5, soon());
    ASSERT_TRUE(retry.isOK());
    ASSERT_TRUE(retry.getValue().has_value());
    EXPECT_TRUE(retry.getValue()->binaryEqual(reply));

    // Another session is independent.
    auto other = t.begin("L2", 5, soon());
    ASSERT_TRUE(other.isOK());
    EXPECT_FALSE(other.getValue().has_value());
}

TEST(TransactionTable, OlderTxnNumberIsTooOld) {
    TransactionTable t;
    bson::BsonObj reply = J(R"({"n": 1, "ok": 1.0})");
    ASSERT_TRUE(t.begin("L", 7, soon()).isOK());
    t.finish("L", 7, &reply);
    EXPECT_EQ(t.begin("L", 6, soon()).getStatus().code(),
              static_cast<int>(ErrorCodes::TransactionTooOld));
    auto next = t.begin("L", 8, soon());
    ASSERT_TRUE(next.isOK());
    EXPECT_FALSE(next.getValue().has_value());
}

TEST(TransactionTable, FailedAttemptCanBeRetriedAndKeepsPreviousReply) {
    TransactionTable t;
    bson::BsonObj reply = J(R"({"n": 1, "ok": 1.0})");
    ASSERT_TRUE(t.begin("L", 1, soon()).isOK());
    t.finish("L", 1, &reply);
    ASSERT_TRUE(t.begin("L", 2, soon()).isOK());
    t.finish("L", 2, nullptr);  // failed as a whole: nothing written
    auto again = t.begin("L", 2, soon());
    ASSERT_TRUE(again.isOK());
    EXPECT_FALSE(again.getValue().has_value());  // executes again
    t.finish("L", 2, nullptr);
    auto old = t.begin("L", 1, soon());  // txn 1 still replays
    ASSERT_TRUE(old.isOK());
    ASSERT_TRUE(old.getValue().has_value());
}

TEST(TransactionTable, ConcurrentRetryWaitsForTheFirstExecution) {
    TransactionTable t;
    ASSERT_TRUE(t.begin("L", 3, soon()).isOK());
    auto retry = std::async(std::launch::async, [&] { return t.begin("L", 3, soon()); });
    EXPECT_EQ(retry.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
    bson::BsonObj reply = J(R"({"n": 3, "ok": 1.0})");
    t.finish("L", 3, &reply);
    auto r = retry.get();
    ASSERT_TRUE(r.isOK());
    ASSERT_TRUE(r.getValue().has_value());
    EXPECT_TRUE(r.getValue()->binaryEqual(reply));
}

TEST(TransactionTable, ConcurrentRetryTimesOut) {
    TransactionTable t;
    ASSERT_TRUE(t.begin("L", 3, soon()).isOK());
    auto r = t.begin("L", 3, Clock::now() + std::chrono::milliseconds(20));
    EXPECT_EQ(r.getStatus().code(), static_cast<int>(ErrorCodes::MaxTimeMSExpired));
}

TEST(TransactionTable, RestoreKeepsTheNewest) {
    TransactionTable t;
    t.restore("L", 9, J(R"({"n": 9})"));
    t.restore("L", 4, J(R"({"n": 4})"));
    auto r = t.begin("L", 9, soon());
    ASSERT_TRUE(r.isOK());
    ASSERT_TRUE(r.getValue().has_value());
    EXPECT_EQ((*r.getValue())["n"].numberLong(), 9);
    EXPECT_EQ(t.begin("L", 4, soon()).getStatus().code(),
              static_cast<int>(ErrorCodes::TransactionTooOld));
}

}  // namespace
}  // namespace tessera::txn
