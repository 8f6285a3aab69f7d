// SessionTransactions across a restart: a committed transaction's record comes back before the
// process serves (a retried commit is answered committed, not NoSuchTransaction), and goes
// away with its session.

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "command/transactions.h"
#include "storage/storage_test_util.h"

namespace tessera::command {
namespace {

using storage::test::J;

class SessionTransactionsTest : public storage::test::EngineTest {
  protected:
    // Runs transaction `txnNumber` of `lsid` to its commit: one insert into db.c.
    void commitInsert(SessionTransactions& transactions, const std::string& lsid, int64_t txnNumber,
                      int id) {
        auto checkout = transactions.beginStatement(lsid, txnNumber, true, std::nullopt, "insert");
        ASSERT_TRUE(checkout.isOK()) << checkout.getStatus().toString();
        auto writer = checkout.getValue()->txn->writer(engine->getCollection("db.c"));
        ASSERT_TRUE(writer.isOK()) << writer.getStatus().toString();
        ASSERT_TRUE(
            writer.getValue()->insert(J("{\"_id\": " + std::to_string(id) + "}"), {}).isOK());
        ASSERT_TRUE(SessionTransactions::commit(*checkout.getValue()).isOK());
    }

    size_t commitRecords() const {
        return engine->sideRecords(SessionTransactions::kCommittedRecordPrefix).size();
    }

    const std::string lsid = std::string(16, '\x07');
};

TEST_F(SessionTransactionsTest, ACommitIsAnsweredCommittedAfterARestart) {
    create("db.c");
    {
        SessionTransactions transactions(engine.get());
        commitInsert(transactions, lsid, 3, 1);
        // A read-only transaction of another session records nothing.
        auto readOnly =
            transactions.beginStatement(std::string(16, '\x08'), 1, true, std::nullopt, "find");
        ASSERT_TRUE(readOnly.isOK());
        ASSERT_TRUE(SessionTransactions::commit(*readOnly.getValue()).isOK());
    }
    reopen();
    SessionTransactions transactions(engine.get());
    auto restored = transactions.restoreCommitted();
    ASSERT_TRUE(restored.isOK());
    EXPECT_EQ(restored.getValue(), 1u);
    // A commit retried through another router asks the shard: committed.
    auto outcome = transactions.committedElseAbort(lsid, 3);
    ASSERT_TRUE(outcome.isOK()) << outcome.getStatus().toString();
    EXPECT_TRUE(outcome.getValue());
    {
        // The driver's own retry of commitTransaction: ok again.
        auto retry = transactions.beginStatement(lsid, 3, false, std::nullopt, "commitTransaction");
        ASSERT_TRUE(retry.isOK()) << retry.getStatus().toString();
        EXPECT_TRUE(SessionTransactions::commit(*retry.getValue()).isOK());
    }
    // An older transaction of the session is too old; the next one starts as usual.
    EXPECT_TRUE(transactions.beginStatement(lsid, 2, false, std::nullopt, "commitTransaction")
                    .getStatus()
                    .is(ErrorCodes::TransactionTooOld));
    commitInsert(transactions, lsid, 4, 2);
    EXPECT_EQ(commitRecords(), 1u);  // one per session, overwritten
}

TEST_F(SessionTransactionsTest, TheRecordGoesWithTheExpiredSession) {
    create("db.c");
    SessionTransactions transactions(engine.get(), std::chrono::milliseconds(1));
    commitInsert(transactions, lsid, 1, 1);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (commitRecords() != 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(commitRecords(), 0u) << "the reaper kept the record of an expired session";
}

}  // namespace
}  // namespace tessera::command
