#include "txn/transaction_table.h"

#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <thread>

#include "bson/bson_obj.h"

namespace tessera::txn {
namespace {

bson::BsonObj J(std::string_view json) { return bson::fromJson(json); }
using Clock = std::chrono::steady_clock;

Clock::time_point soon() { return Clock::now() + std::chrono::seconds(5); }

TEST(TransactionTable, ARetrySeesTheStatementsTheFirstAttemptExecuted) {
    TransactionTable t;
    auto first = t.begin("L1", 5, soon());
    ASSERT_TRUE(first.isOK());
    EXPECT_TRUE(first.getValue().empty());  // execute everything
    t.finish("L1", 5, {{0, J(R"({"n": 1})")}, {2, J(R"({"n": 1})")}});

    auto retry = t.begin("L1", 5, soon());
    ASSERT_TRUE(retry.isOK());
    EXPECT_EQ(retry.getValue().size(), 2u);
    EXPECT_TRUE(retry.getValue().count(0) && retry.getValue().count(2));
    // A second sub-command of the same txnNumber adds its statements.
    t.finish("L1", 5, {{1, J(R"({"n": 1})")}});
    auto third = t.begin("L1", 5, soon());
    ASSERT_TRUE(third.isOK());
    EXPECT_EQ(third.getValue().size(), 3u);
    t.finish("L1", 5, {});

    EXPECT_TRUE(t.executed("L1", 5, 1, soon()).getValue());
    EXPECT_FALSE(t.executed("L1", 5, 3, soon()).getValue());
    EXPECT_FALSE(t.executed("L1", 6, 0, soon()).getValue());

    // Another session is independent.
    auto other = t.begin("L2", 5, soon());
    ASSERT_TRUE(other.isOK());
    EXPECT_TRUE(other.getValue().empty());
}

TEST(TransactionTable, ANewerTxnNumberForgetsTheOlderAndTheOlderIsTooOld) {
    TransactionTable t;
    ASSERT_TRUE(t.begin("L", 7, soon()).isOK());
    t.finish("L", 7, {{0, J(R"({"n": 1})")}});
    auto next = t.begin("L", 8, soon());
    ASSERT_TRUE(next.isOK());
    EXPECT_TRUE(next.getValue().empty());
    t.finish("L", 8, {});
    EXPECT_EQ(t.begin("L", 7, soon()).getStatus().code(),
              static_cast<int>(ErrorCodes::TransactionTooOld));
    EXPECT_EQ(t.executed("L", 7, 0, soon()).getStatus().code(),
              static_cast<int>(ErrorCodes::TransactionTooOld));
}

TEST(TransactionTable, AFailedStatementIsExecutedAgain) {
    TransactionTable t;
    ASSERT_TRUE(t.begin("L", 2, soon()).isOK());
    t.finish("L", 2, {});  // the command failed: nothing recorded
    auto again = t.begin("L", 2, soon());
    ASSERT_TRUE(again.isOK());
    EXPECT_TRUE(again.getValue().empty());
    t.finish("L", 2, {});
}

TEST(TransactionTable, AConcurrentAttemptWaitsForTheFirst) {
    TransactionTable t;
    ASSERT_TRUE(t.begin("L", 3, soon()).isOK());
    auto retry = std::async(std::launch::async, [&] { return t.begin("L", 3, soon()); });
    EXPECT_EQ(retry.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
    auto probe = std::async(std::launch::async, [&] { return t.executed("L", 3, 0, soon()); });
    EXPECT_EQ(probe.wait_for(std::chrono::milliseconds(20)), std::future_status::timeout);
    t.finish("L", 3, {{0, J(R"({"n": 3})")}});
    auto r = retry.get();
    ASSERT_TRUE(r.isOK());
    ASSERT_EQ(r.getValue().size(), 1u);
    EXPECT_EQ(r.getValue().at(0)["n"].numberLong(), 3);
    t.finish("L", 3, {});
    EXPECT_TRUE(probe.get().getValue());
}

TEST(TransactionTable, WithoutWaitingARunningAttemptIsInlineWouldBlock) {
    TransactionTable t;
    ASSERT_TRUE(t.begin("L", 3, soon()).isOK());
    EXPECT_EQ(t.begin("L", 3, soon(), /*mayWait=*/false).getStatus().code(),
              static_cast<int>(ErrorCodes::InlineWouldBlock));
    t.finish("L", 3, {});
    EXPECT_TRUE(t.begin("L", 3, soon(), /*mayWait=*/false).isOK());
    t.finish("L", 3, {});
}

TEST(TransactionTable, WithoutWaitingWhetherARunningStatementExecutedIsInlineWouldBlock) {
    TransactionTable t;
    ASSERT_TRUE(t.begin("L", 3, soon()).isOK());
    EXPECT_EQ(t.executed("L", 3, 0, soon(), /*mayWait=*/false).getStatus().code(),
              static_cast<int>(ErrorCodes::InlineWouldBlock));
    t.finish("L", 3, ExecutedStatements{{0, bson::BsonObj()}});
    auto done = t.executed("L", 3, 0, soon(), /*mayWait=*/false);
    ASSERT_TRUE(done.isOK());
    EXPECT_TRUE(done.getValue());
}

TEST(TransactionTable, AConcurrentAttemptTimesOut) {
    TransactionTable t;
    ASSERT_TRUE(t.begin("L", 3, soon()).isOK());
    auto r = t.begin("L", 3, Clock::now() + std::chrono::milliseconds(20));
    EXPECT_EQ(r.getStatus().code(), static_cast<int>(ErrorCodes::MaxTimeMSExpired));
}

TEST(TransactionTable, RestoreKeepsTheStatementsOfTheNewestTxnNumber) {
    TransactionTable t;
    t.restore("L", 9, 0, J(R"({"n": 9})"));
    t.restore("L", 4, 1, J(R"({"n": 4})"));
    t.restore("L", 9, kWholeCommand, J(R"({"n": 10})"));
    auto r = t.begin("L", 9, soon());
    ASSERT_TRUE(r.isOK());
    ASSERT_EQ(r.getValue().size(), 2u);
    EXPECT_EQ(r.getValue().at(0)["n"].numberLong(), 9);
    EXPECT_EQ(r.getValue().at(kWholeCommand)["n"].numberLong(), 10);
    t.finish("L", 9, {});
    EXPECT_EQ(t.begin("L", 4, soon()).getStatus().code(),
              static_cast<int>(ErrorCodes::TransactionTooOld));
    // A newer one restored later replaces them.
    t.restore("L", 12, 3, J(R"({"n": 12})"));
    EXPECT_FALSE(t.executed("L", 12, 0, soon()).getValue());
    EXPECT_TRUE(t.executed("L", 12, 3, soon()).getValue());
}

TEST(TransactionTable, IdleSessionsExpireAndTheirRetriesRunAsNewWrites) {
    TransactionTable t;
    ASSERT_TRUE(t.begin("Old", 3, soon()).isOK());
    t.finish("Old", 3, {{0, J(R"({"n": 1})")}});
    auto cut = Clock::now();
    ASSERT_TRUE(t.begin("New", 1, soon()).isOK());
    t.finish("New", 1, {{0, J(R"({"n": 1})")}});
    ASSERT_TRUE(t.begin("Running", 1, soon()).isOK());  // not finished: never expires

    std::vector<std::string> forgotten;
    EXPECT_EQ(t.expireIdle(cut + std::chrono::microseconds(1),
                           [&](const std::string& lsid) { forgotten.push_back(lsid); }),
              1u);
    EXPECT_EQ(forgotten, std::vector<std::string>{"Old"});
    EXPECT_EQ(t.size(), 2u);
    // Forgotten: the same txnNumber is a new write, an older one no longer TransactionTooOld.
    EXPECT_FALSE(t.executed("Old", 3, 0, soon()).getValue());
    auto again = t.begin("Old", 2, soon());
    ASSERT_TRUE(again.isOK());
    EXPECT_TRUE(again.getValue().empty());
    t.finish("Old", 2, {});
    // The others were kept, with their statements.
    EXPECT_TRUE(t.executed("New", 1, 0, soon()).getValue());
    t.finish("Running", 1, {});
}

TEST(TransactionTable, AnAttemptWaitsWhileItsSessionsRecordsAreDeleted) {
    TransactionTable t;
    ASSERT_TRUE(t.begin("L", 3, soon()).isOK());
    t.finish("L", 3, {{0, J(R"({"n": 1})")}});
    std::promise<void> deleting, release;
    auto expiry = std::async(std::launch::async, [&] {
        return t.expireIdle(Clock::now() + std::chrono::seconds(1), [&](const std::string&) {
            deleting.set_value();
            release.get_future().wait();
        });
    });
    deleting.get_future().wait();
    // A new write of the session (and a migration's adoption) would write records that the
    // deletion under way must not take: it waits for it.
    auto attempt = std::async(std::launch::async, [&] { return t.begin("L", 4, soon()); });
    auto adopted =
        std::async(std::launch::async, [&] { return t.adopt("L", 4, 1, J(R"({"n": 2})")); });
    EXPECT_EQ(attempt.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
    EXPECT_EQ(adopted.wait_for(std::chrono::milliseconds(10)), std::future_status::timeout);
    EXPECT_EQ(t.begin("L", 4, soon(), /*mayWait=*/false).getStatus().code(),
              static_cast<int>(ErrorCodes::InlineWouldBlock));
    release.set_value();
    EXPECT_EQ(expiry.get(), 1u);
    EXPECT_TRUE(adopted.get());
    auto r = attempt.get();
    ASSERT_TRUE(r.isOK());
    t.finish("L", 4, {});
    EXPECT_TRUE(t.executed("L", 4, 1, soon()).getValue());
}

// Until `pred` holds or 5 s pass.
bool eventually(const std::function<bool()>& pred) {
    for (auto end = soon(); Clock::now() < end;) {
        if (pred()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return pred();
}

// A statement answered with WouldChangeOwningShard: its retry waits for the router's move and
// is answered from the record the move's transaction adopted at its commit.
TEST(TransactionTable, ARetryOfAMovingStatementWaitsForItsRecord) {
    TransactionTable t;
    ASSERT_TRUE(t.begin("L", 5, soon()).isOK());
    t.finish("L", 5, {}, /*moving=*/{0});
    EXPECT_EQ(t.movingStatements(), 1u);
    EXPECT_EQ(t.begin("L", 5, soon(), /*mayWait=*/false).getStatus().code(),
              static_cast<int>(ErrorCodes::InlineWouldBlock));
    auto retry = std::async(std::launch::async, [&] { return t.begin("L", 5, soon()); });
    auto probe = std::async(std::launch::async, [&] { return t.executed("L", 5, 0, soon()); });
    EXPECT_TRUE(eventually([&] { return t.retriesWaitingForMove() == 2; }));
    auto token = t.claimMove("L", 5, 0);
    ASSERT_TRUE(token.isOK());
    EXPECT_NE(token.getValue(), 0u);
    EXPECT_EQ(retry.wait_for(std::chrono::milliseconds(20)), std::future_status::timeout);
    ASSERT_TRUE(t.adopt("L", 5, 0, J(R"({"n": 1, "nModified": 1})")));
    auto r = retry.get();
    ASSERT_TRUE(r.isOK());
    ASSERT_EQ(r.getValue().count(0), 1u);
    t.finish("L", 5, {});
    EXPECT_TRUE(probe.get().getValue());
    EXPECT_EQ(t.movingStatements(), 0u);
    // Executed: a late claim (another router's move of the same statement) conflicts.
    EXPECT_EQ(t.claimMove("L", 5, 0).getStatus().code(),
              static_cast<int>(ErrorCodes::WriteConflict));
}

// The move's transaction aborted: the statement is not moving any more and its retry runs it.
// Only the claiming transaction's token releases it; a second claim conflicts.
TEST(TransactionTable, AnAbortedMoveLetsTheRetryRunTheStatement) {
    TransactionTable t;
    ASSERT_TRUE(t.begin("L", 5, soon()).isOK());
    t.finish("L", 5, {}, {0});
    auto token = t.claimMove("L", 5, 0);
    ASSERT_TRUE(token.isOK());
    EXPECT_EQ(t.claimMove("L", 5, 0).getStatus().code(),
              static_cast<int>(ErrorCodes::WriteConflict));
    auto retry = std::async(std::launch::async, [&] { return t.begin("L", 5, soon()); });
    EXPECT_TRUE(eventually([&] { return t.retriesWaitingForMove() == 1; }));
    t.releaseMove("L", 5, 0, token.getValue() + 1);  // not its claim
    t.releaseMove("L", 5, 0, 0);
    EXPECT_EQ(retry.wait_for(std::chrono::milliseconds(20)), std::future_status::timeout);
    t.releaseMove("L", 5, 0, token.getValue());
    auto r = retry.get();
    ASSERT_TRUE(r.isOK());
    EXPECT_TRUE(r.getValue().empty());  // run it again
    t.finish("L", 5, {});
    EXPECT_FALSE(t.executed("L", 5, 0, soon()).getValue());
}

// A statement nobody claims (its router died after the answer) stops holding its retries after
// the limit; a claim then holds nothing (token 0).
TEST(TransactionTable, AnUnclaimedMoveEndsAfterItsLimit) {
    TransactionTable t(std::chrono::milliseconds(100));
    ASSERT_TRUE(t.begin("L", 5, soon()).isOK());
    t.finish("L", 5, {}, {0});
    auto started = Clock::now();
    auto r = t.begin("L", 5, soon());
    ASSERT_TRUE(r.isOK());
    EXPECT_GE(Clock::now() - started, std::chrono::milliseconds(90));
    EXPECT_TRUE(r.getValue().empty());
    t.finish("L", 5, {});
    EXPECT_EQ(t.claimMove("L", 5, 0).getValue(), 0u);
    EXPECT_EQ(t.movingStatements(), 0u);
    // A waiting retry with an earlier deadline times out.
    ASSERT_TRUE(t.begin("L", 5, soon()).isOK());
    t.finish("L", 5, {}, {1});
    EXPECT_EQ(t.begin("L", 5, Clock::now() + std::chrono::milliseconds(20)).getStatus().code(),
              static_cast<int>(ErrorCodes::MaxTimeMSExpired));
}

// The session's next write does not wait for an older txnNumber's move, and from then on that
// move cannot record the older write (TransactionTooOld), nor does its record count.
TEST(TransactionTable, ANewerTxnNumberDoesNotWaitForAnOlderMove) {
    TransactionTable t;
    ASSERT_TRUE(t.begin("L", 5, soon()).isOK());
    t.finish("L", 5, {}, {0});
    auto next = t.begin("L", 6, soon(), /*mayWait=*/false);
    ASSERT_TRUE(next.isOK());
    t.finish("L", 6, {});
    EXPECT_EQ(t.movingStatements(), 0u);
    EXPECT_EQ(t.claimMove("L", 5, 0).getStatus().code(),
              static_cast<int>(ErrorCodes::TransactionTooOld));
    EXPECT_FALSE(t.adopt("L", 5, 0, J(R"({"n": 1, "nModified": 1})")));
    EXPECT_FALSE(t.executed("L", 6, 0, soon()).getValue());
}

// A prepared transaction restored after a restart holds the statement it records as moving
// until it is decided: its abort releases it, its commit's adoption answers the retry.
TEST(TransactionTable, ARestoredPreparedMoveHoldsItsStatement) {
    TransactionTable t;
    t.restore("L", 4, 0, J(R"({"n": 1, "nModified": 1})"));
    EXPECT_EQ(t.holdMove("L", 3, 0), 0u);  // the session has a newer txnNumber
    uint64_t token = t.holdMove("L", 5, 0);
    ASSERT_NE(token, 0u);
    EXPECT_EQ(t.movingStatements(), 1u);
    EXPECT_EQ(t.begin("L", 5, soon(), /*mayWait=*/false).getStatus().code(),
              static_cast<int>(ErrorCodes::InlineWouldBlock));
    auto retry = std::async(std::launch::async, [&] { return t.begin("L", 5, soon()); });
    EXPECT_TRUE(eventually([&] { return t.retriesWaitingForMove() == 1; }));
    ASSERT_TRUE(t.adopt("L", 5, 0, J(R"({"n": 1, "nModified": 1})")));
    auto r = retry.get();
    ASSERT_TRUE(r.isOK());
    EXPECT_EQ(r.getValue().count(0), 1u);
    t.finish("L", 5, {});
    EXPECT_EQ(t.holdMove("L", 5, 0), 0u);  // recorded already
    // Aborted instead: released, the retry runs the statement.
    token = t.holdMove("L", 6, 1);
    ASSERT_NE(token, 0u);
    t.releaseMove("L", 6, 1, token);
    auto again = t.begin("L", 6, soon(), /*mayWait=*/false);
    ASSERT_TRUE(again.isOK());
    EXPECT_TRUE(again.getValue().empty());
    t.finish("L", 6, {});
}

}  // namespace
}  // namespace tessera::txn
