// SessionTransactions across a restart: a committed transaction's record comes back before the
// process serves (a retried commit is answered committed, not NoSuchTransaction), and goes
// away with its session. And one order of txnNumbers per session for its transactions and its
// retryable writes (beginRetryableWrite), as MongoDB's.

#include "txn/session_transactions.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "storage/storage_test_util.h"

namespace tessera::txn {
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
        ASSERT_TRUE(transactions.commit(*checkout.getValue()).isOK());
    }

    // One insert of `id` in transaction `txnNumber` of `lsid` (begun here if `start`), then its
    // prepare for coordinator shardA (participant mode); *prepareTs, if given, gets its
    // timestamp.
    void prepareInsert(SessionTransactions& transactions, const std::string& lsid,
                       int64_t txnNumber, int id, bool start, Timestamp* prepareTs = nullptr) {
        auto checkout = transactions.beginStatement(lsid, txnNumber, start, std::nullopt, "insert");
        ASSERT_TRUE(checkout.isOK()) << checkout.getStatus().toString();
        auto writer = checkout.getValue()->txn->writer(engine->getCollection("db.c"));
        ASSERT_TRUE(writer.isOK()) << writer.getStatus().toString();
        ASSERT_TRUE(
            writer.getValue()->insert(J("{\"_id\": " + std::to_string(id) + "}"), {}).isOK());
        auto prepared = SessionTransactions::prepare(*checkout.getValue(), {"shardA", "h:1"});
        ASSERT_TRUE(prepared.isOK()) << prepared.getStatus().toString();
        if (prepareTs) *prepareTs = prepared.getValue();
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
        ASSERT_TRUE(transactions.commit(*readOnly.getValue()).isOK());
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
        EXPECT_TRUE(transactions.commit(*retry.getValue()).isOK());
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

int codeOf(const Status& s) { return static_cast<int>(s.code()); }

TEST_F(SessionTransactionsTest, TransactionsAndRetryableWritesShareOneOrderOfNumbers) {
    create("db.c");
    SessionTransactions transactions(engine.get());
    // A retryable write 5: its retry (or another sub-command) is fine; a transaction may not
    // reuse its number (50911) nor take an older one (TransactionTooOld).
    ASSERT_TRUE(transactions.beginRetryableWrite(lsid, 5).isOK());
    ASSERT_TRUE(transactions.beginRetryableWrite(lsid, 5).isOK());
    EXPECT_EQ(
        codeOf(transactions.beginStatement(lsid, 5, true, std::nullopt, "insert").getStatus()),
        50911);
    auto older = transactions.beginStatement(lsid, 4, true, std::nullopt, "insert");
    EXPECT_EQ(codeOf(older.getStatus()), static_cast<int>(ErrorCodes::TransactionTooOld));
    EXPECT_NE(older.getStatus().reason().find("retryable write 5"), std::string::npos);
    // Continuing "transaction" 5 finds none.
    EXPECT_EQ(
        codeOf(transactions.beginStatement(lsid, 5, false, std::nullopt, "insert").getStatus()),
        static_cast<int>(ErrorCodes::NoSuchTransaction));

    // Transaction 6: a retryable write may neither reuse its number (217) nor be older (225).
    commitInsert(transactions, lsid, 6, 1);
    EXPECT_EQ(codeOf(transactions.beginRetryableWrite(lsid, 6)),
              static_cast<int>(ErrorCodes::IncompleteTransactionHistory));
    EXPECT_EQ(codeOf(transactions.beginRetryableWrite(lsid, 5)),
              static_cast<int>(ErrorCodes::TransactionTooOld));
}

TEST_F(SessionTransactionsTest, ANewerRetryableWriteAbortsTheUnfinishedTransaction) {
    create("db.c");
    SessionTransactions transactions(engine.get());
    {
        auto checkout = transactions.beginStatement(lsid, 3, true, std::nullopt, "insert");
        ASSERT_TRUE(checkout.isOK());
        auto writer = checkout.getValue()->txn->writer(engine->getCollection("db.c"));
        ASSERT_TRUE(writer.isOK());
        ASSERT_TRUE(writer.getValue()->insert(J("{\"_id\": 1}"), {}).isOK());
    }
    ASSERT_TRUE(transactions.beginRetryableWrite(lsid, 4).isOK());
    // Transaction 3 is gone, its insert with it: its next statement and its commit are too old.
    for (const char* command : {"insert", "commitTransaction"}) {
        EXPECT_EQ(
            codeOf(transactions.beginStatement(lsid, 3, false, std::nullopt, command).getStatus()),
            static_cast<int>(ErrorCodes::TransactionTooOld));
    }
    EXPECT_TRUE(scanAll("db.c").empty());
}

TEST_F(SessionTransactionsTest, WithoutWaitingABusySessionIsInlineWouldBlock) {
    create("db.c");
    SessionTransactions transactions(engine.get());
    auto checkout = transactions.beginStatement(lsid, 3, true, std::nullopt, "insert");
    ASSERT_TRUE(checkout.isOK());
    EXPECT_EQ(codeOf(transactions.beginRetryableWrite(lsid, 4, /*mayWait=*/false)),
              static_cast<int>(ErrorCodes::InlineWouldBlock));
}

TEST_F(SessionTransactionsTest, TheOrderSurvivesARestart) {
    create("db.c");
    {
        SessionTransactions transactions(engine.get());
        commitInsert(transactions, lsid, 2, 1);
    }
    reopen();
    SessionTransactions transactions(engine.get());
    // A --replSet node restores its retryable writes first, then the commit records.
    transactions.restoreRetryableWrite(lsid, 7);
    ASSERT_TRUE(transactions.restoreCommitted().isOK());
    EXPECT_EQ(
        codeOf(transactions.beginStatement(lsid, 7, true, std::nullopt, "insert").getStatus()),
        50911);
    EXPECT_TRUE(transactions.beginRetryableWrite(lsid, 7).isOK());  // its retry
}

// A shard acknowledges a two-phase commit before every participant heard the decision, so the
// session's next transaction may arrive while the previous one is still prepared here: it begins
// beside it at once, and the prepared one's decision still reaches it by its number.
TEST_F(SessionTransactionsTest, ThePreparedTransactionIsSetAsideForTheNextOne) {
    create("db.c");
    SessionTransactions transactions(engine.get());
    transactions.enableParticipantMode(nullptr);
    Timestamp prepareTs;
    ASSERT_NO_FATAL_FAILURE(prepareInsert(transactions, lsid, 5, 1, true, &prepareTs));
    // Transaction 6 begins without waiting and holds the session while 5 is decided.
    {
        auto next = transactions.beginStatement(lsid, 6, true, std::nullopt, "insert");
        ASSERT_TRUE(next.isOK()) << next.getStatus().toString();
        auto writer = next.getValue()->txn->writer(engine->getCollection("db.c"));
        ASSERT_TRUE(writer.isOK());
        ASSERT_TRUE(writer.getValue()->insert(J("{\"_id\": 2}"), {}).isOK());
        // Both are open; 5 is still prepared (participant recovery would ask about it).
        EXPECT_EQ(transactions.currentOps().size(), 2u);
        auto late = transactions.preparedLongerThan(std::chrono::milliseconds(0));
        ASSERT_EQ(late.size(), 1u);
        EXPECT_EQ(late[0].txnNumber, 5);
        EXPECT_EQ(late[0].coordinator.shard, "shardA");
        // A statement of 5 other than its end is still refused; its prepare again answers its
        // timestamp; its commit reaches it.
        EXPECT_EQ(
            codeOf(transactions.beginStatement(lsid, 5, false, std::nullopt, "insert").getStatus()),
            static_cast<int>(ErrorCodes::PreparedTransactionInProgress));
        {
            auto again =
                transactions.beginStatement(lsid, 5, false, std::nullopt, "prepareTransaction");
            ASSERT_TRUE(again.isOK()) << again.getStatus().toString();
            auto ts = SessionTransactions::prepare(*again.getValue());
            ASSERT_TRUE(ts.isOK());
            EXPECT_EQ(ts.getValue(), prepareTs);
        }
        {
            auto commit =
                transactions.beginStatement(lsid, 5, false, std::nullopt, "commitTransaction");
            ASSERT_TRUE(commit.isOK()) << commit.getStatus().toString();
            ASSERT_TRUE(transactions.commit(*commit.getValue(), prepareTs).isOK());
        }
        EXPECT_EQ(transactions.currentOps().size(), 1u);
        ASSERT_TRUE(transactions.commit(*next.getValue()).isOK());
    }
    EXPECT_EQ(scanAll("db.c").size(), 2u);
    // One commit record: the session's newest (6), which the older commit did not overwrite.
    ASSERT_EQ(commitRecords(), 1u);
    reopen();
    SessionTransactions restarted(engine.get());
    ASSERT_TRUE(restarted.restoreCommitted().isOK());
    auto outcome = restarted.committedElseAbort(lsid, 6);
    ASSERT_TRUE(outcome.isOK()) << outcome.getStatus().toString();
    EXPECT_TRUE(outcome.getValue());
}

// Two prepared transactions of one session (the second prepared while the first was set aside)
// both come back prepared after a restart, each decided by its own number.
TEST_F(SessionTransactionsTest, TwoPreparedTransactionsOfASessionSurviveARestart) {
    create("db.c");
    std::vector<std::pair<std::string, std::string>> records;
    {
        SessionTransactions transactions(engine.get());
        transactions.enableParticipantMode(nullptr);
        for (int txnNumber : {5, 6}) {
            ASSERT_NO_FATAL_FAILURE(prepareInsert(transactions, lsid, txnNumber, txnNumber, true));
        }
        // Each has its own record (a process stopping aborts them: a crash would leave them).
        records = engine->sideRecords(SessionTransactions::kPreparedRecordPrefix);
        ASSERT_EQ(records.size(), 2u);
    }
    ASSERT_TRUE(engine->writeSideRecords(records).isOK());
    reopen();
    SessionTransactions transactions(engine.get());
    transactions.enableParticipantMode(nullptr);
    auto recovered = transactions.recoverPrepared();
    ASSERT_TRUE(recovered.isOK()) << recovered.getStatus().toString();
    EXPECT_EQ(recovered.getValue(), 2u);
    EXPECT_EQ(transactions.preparedLongerThan(std::chrono::milliseconds(0)).size(), 2u);
    {
        auto abort = transactions.beginStatement(lsid, 5, false, std::nullopt, "abortTransaction");
        ASSERT_TRUE(abort.isOK()) << abort.getStatus().toString();
        ASSERT_TRUE(SessionTransactions::abort(*abort.getValue()).isOK());
    }
    {
        auto commit =
            transactions.beginStatement(lsid, 6, false, std::nullopt, "commitTransaction");
        ASSERT_TRUE(commit.isOK()) << commit.getStatus().toString();
        ASSERT_TRUE(transactions.commit(*commit.getValue(), commit.getValue()->prepareTs).isOK());
    }
    std::vector<std::string> docs = scanAll("db.c");
    ASSERT_EQ(docs.size(), 1u);
    EXPECT_NE(docs[0].find("6"), std::string::npos);
}

}  // namespace
}  // namespace tessera::txn

namespace tessera::txn {
namespace {

// currentOp's view of the transactions: an open one is listed (idle between its statements,
// active while one runs, prepared with its coordinator), a finished one is not.
TEST_F(SessionTransactionsTest, CurrentOpListsOpenTransactionsOnly) {
    create("db.c");
    SessionTransactions transactions(engine.get());
    transactions.enableParticipantMode(nullptr);
    EXPECT_TRUE(transactions.currentOps().empty());
    {
        auto checkout = transactions.beginStatement(lsid, 5, true, std::nullopt, "insert");
        ASSERT_TRUE(checkout.isOK()) << checkout.getStatus().toString();
        std::vector<bson::BsonObj> ops = transactions.currentOps();
        ASSERT_EQ(ops.size(), 1u);
        EXPECT_EQ(ops[0]["type"].stringValue(), "op");  // its statement holds the session
        EXPECT_TRUE(ops[0]["active"].boolValue());
    }
    std::vector<bson::BsonObj> ops = transactions.currentOps();
    ASSERT_EQ(ops.size(), 1u);
    bson::BsonView op = ops[0].view();
    EXPECT_EQ(op["type"].stringValue(), "idleSession");
    EXPECT_EQ(op["desc"].stringValue(), "inactive transaction");
    EXPECT_EQ(op["lsid"].objValue()["id"].binaryValue().data, lsid);
    bson::BsonView txn = op["transaction"].objValue();
    EXPECT_EQ(txn["parameters"].objValue()["txnNumber"].numberLong(), 5);
    EXPECT_FALSE(txn["parameters"].objValue()["autocommit"].boolValue());
    EXPECT_EQ(txn["readTimestamp"].type(), bson::BsonType::Timestamp);
    EXPECT_EQ(txn["expiryTime"].type(), bson::BsonType::Date);
    EXPECT_GE(txn["timeOpenMicros"].numberLong(), 0);

    ASSERT_NO_FATAL_FAILURE(prepareInsert(transactions, lsid, 5, 1, /*start=*/false));
    ops = transactions.currentOps();
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(ops[0]["desc"].stringValue(), "prepared transaction");
    txn = ops[0]["transaction"].objValue();
    EXPECT_EQ(txn["coordinator"].stringValue(), "shardA");
    EXPECT_EQ(txn["prepareTimestamp"].type(), bson::BsonType::Timestamp);
    EXPECT_TRUE(txn["expiryTime"].eoo());  // a prepared transaction waits for its decision

    {
        auto checkout =
            transactions.beginStatement(lsid, 5, false, std::nullopt, "abortTransaction");
        ASSERT_TRUE(checkout.isOK());
        ASSERT_TRUE(SessionTransactions::abort(*checkout.getValue()).isOK());
    }
    EXPECT_TRUE(transactions.currentOps().empty());
}

}  // namespace
}  // namespace tessera::txn
