// A participant acknowledges a prepared transaction's commit before journaling it
// (SessionTransactions::noteUnsyncedCommit); its participant-recovery thread journals it within
// kSyncCommitsWithin, long before the coordinator may forget the decision.
#include "txn/transaction_coordinator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "base/mutex.h"
#include "net/remote_client.h"
#include "net/running_server.h"
#include "net/server.h"
#include "storage/engine.h"
#include "storage/storage_test_util.h"
#include "txn/session_transactions.h"

namespace tessera::txn {
namespace {

class CoordinatorThreadsTest : public ::testing::Test {
  protected:
    void SetUp() override {
        storage::EngineOptions options;
        options.dbpath = dir.path();
        options.blockCacheBytes = 16 << 20;
        auto sw = storage::Engine::open(options);
        ASSERT_TRUE(sw.isOK()) << sw.getStatus().toString();
        engine = std::move(sw.getValue());
        transactions = std::make_unique<txn::SessionTransactions>(engine.get());
        transactions->enableParticipantMode(nullptr);
        local = std::make_unique<LocalParticipant>(*transactions, [] { return "shard0"; });
        coordinator = std::make_unique<TransactionCoordinator>(*engine, client);
        coordinator->setLocalParticipant(local.get());
    }
    void TearDown() override {
        coordinator.reset();
        local.reset();
        transactions.reset();
        engine.reset();
    }

    // Polls until the engine ran more WAL syncs than `before`, for at most `limit`.
    bool syncedSince(uint64_t before, std::chrono::milliseconds limit) {
        auto deadline = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < deadline) {
            if (engine->walSyncCount() > before) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return engine->walSyncCount() > before;
    }

    storage::test::TempDir dir;
    std::unique_ptr<storage::Engine> engine;
    std::unique_ptr<txn::SessionTransactions> transactions;
    std::unique_ptr<LocalParticipant> local;
    net::RemoteClient client;
    std::unique_ptr<TransactionCoordinator> coordinator;
};

TEST_F(CoordinatorThreadsTest, AnUnjournaledParticipantCommitIsJournaledWithinTheBound) {
    coordinator->start();
    transactions->noteUnsyncedCommit();
    uint64_t before = engine->walSyncCount();
    // The bound, with room for a slow machine; a missing sync would never come.
    EXPECT_TRUE(syncedSince(
        before, 5 * std::chrono::milliseconds(txn::SessionTransactions::kSyncCommitsWithin)));
    EXPECT_FALSE(transactions->takeUnsyncedCommits());  // taken by the thread
}

TEST_F(CoordinatorThreadsTest, OneTakeCoversEveryEarlierNote) {
    EXPECT_FALSE(transactions->takeUnsyncedCommits());
    transactions->noteUnsyncedCommit();
    EXPECT_TRUE(transactions->takeUnsyncedCommits());
    EXPECT_FALSE(transactions->takeUnsyncedCommits());  // one sync covers every earlier commit
}

// Staged commit (docs/protocols/two-phase-commit.md "Staged commit"): this shard coordinates and is
// a participant; the other participant is at an address nobody listens on.
class StagedCommitTest : public CoordinatorThreadsTest {
  protected:
    void SetUp() override {
        CoordinatorThreadsTest::SetUp();
        ASSERT_TRUE(engine->createCollection("db.c", bson::BsonObj()).isOK());
    }

    // Transaction `txnNumber` of `lsid`: one insert here, left in progress.
    void insertInTransaction(int64_t txnNumber, int id) {
        auto checkout = transactions->beginStatement(lsid, txnNumber, true, std::nullopt, "insert");
        ASSERT_TRUE(checkout.isOK()) << checkout.getStatus().toString();
        auto writer = checkout.getValue()->txn->writer(engine->getCollection("db.c"));
        ASSERT_TRUE(writer.isOK()) << writer.getStatus().toString();
        ASSERT_TRUE(writer.getValue()
                        ->insert(storage::test::J("{\"_id\": " + std::to_string(id) + "}"), {})
                        .isOK());
    }

    // Whether transaction 1 of `lsid` is prepared here (waiting for its decision).
    bool prepared() {
        for (const auto& p : transactions->preparedLongerThan(std::chrono::milliseconds(0))) {
            if (p.lsid == lsid && p.txnNumber == 1) return true;
        }
        return false;
    }
    // Whether it committed (false: aborted — asking aborts one still in progress).
    bool committed() {
        auto outcome = transactions->committedElseAbort(lsid, 1);
        return outcome.isOK() && outcome.getValue();
    }

    const std::string lsid = std::string(16, '\x05');
    const std::vector<TransactionCoordinator::Participant> participants{
        {"shard0", "127.0.0.1:28000"}, {"shard1", "127.0.0.1:1"}};
};

TEST_F(StagedCommitTest, TheRoutersDecisionCommitsTheStagedRecord) {
    insertInTransaction(1, 1);
    TransactionCoordinator::Staged staged = coordinator->stage(lsid, 1, participants);
    ASSERT_FALSE(staged.decided) << staged.outcome.toString();
    EXPECT_FALSE(staged.readOnly);
    EXPECT_TRUE(prepared());
    // The router heard both prepares; shard1 "prepared" later than this shard.
    TransactionCoordinator::RouterDecision decision;
    decision.commit = true;
    decision.commitTs = Timestamp{staged.prepareTs.value + 5};
    decision.writers = {"shard0", "shard1"};
    Timestamp commitTs;
    ASSERT_TRUE(coordinator->decideStaged(lsid, 1, decision, &commitTs).isOK());
    EXPECT_EQ(commitTs, decision.commitTs);
    EXPECT_TRUE(committed());
    // A retried stage (the router's retried commit) is answered from the record.
    TransactionCoordinator::Staged again = coordinator->stage(lsid, 1, participants);
    ASSERT_TRUE(again.decided);
    EXPECT_TRUE(again.outcome.isOK()) << again.outcome.toString();
    EXPECT_EQ(again.commitTs, decision.commitTs);
}

TEST_F(StagedCommitTest, AnUnreachablePartLeavesTheStagedRecordUndecided) {
    insertInTransaction(1, 1);
    TransactionCoordinator::Staged staged = coordinator->stage(lsid, 1, participants);
    ASSERT_FALSE(staged.decided) << staged.outcome.toString();
    // No decision came; the router retries its commit, which resolves the record: shard1 does
    // not answer, and its router may have heard it prepared — so nothing is decided.
    Timestamp commitTs;
    Status outcome = coordinator->coordinate(lsid, 1, participants, &commitTs);
    EXPECT_TRUE(outcome.is(ErrorCodes::HostUnreachable)) << outcome.toString();
    EXPECT_TRUE(prepared());
    // The router's decision still commits it.
    TransactionCoordinator::RouterDecision decision;
    decision.commit = true;
    decision.commitTs = staged.prepareTs;
    decision.writers = {"shard0", "shard1"};
    EXPECT_TRUE(coordinator->decideStaged(lsid, 1, decision, &commitTs).isOK());
    EXPECT_TRUE(committed());
}

// A shard that answers every command NoSuchTransaction: a participant whose part is gone.
class ForgetfulShard : public net::RequestHandler {
  public:
    bson::BsonObj handleRequest(const net::Request&, net::ClientContext&) override {
        bson::BsonBuilder b;
        b.append("ok", 0.0).append("errmsg", "Transaction 1 has been aborted.");
        b.appendInt32("code", static_cast<int>(ErrorCodes::NoSuchTransaction));
        return b.obj();
    }
};

TEST_F(StagedCommitTest, APartThatNoLongerKnowsTheTransactionAbortsTheStagedRecord) {
    ForgetfulShard handler;
    net::test::RunningServer shard1(handler);
    const std::vector<TransactionCoordinator::Participant> both{
        participants[0], {"shard1", "127.0.0.1:" + std::to_string(shard1.port())}};
    insertInTransaction(1, 1);
    ASSERT_FALSE(coordinator->stage(lsid, 1, both).decided);
    // The resolution prepares shard1 again, which answers that it has no such transaction: no
    // router can have heard it prepared, so the transaction aborts, on this shard too.
    Timestamp commitTs;
    Status outcome = coordinator->coordinate(lsid, 1, both, &commitTs);
    EXPECT_TRUE(outcome.is(ErrorCodes::NoSuchTransaction)) << outcome.toString();
    EXPECT_NE(outcome.reason().find("shard1"), std::string::npos) << outcome.toString();
    EXPECT_FALSE(prepared());
    EXPECT_FALSE(committed());
    // A late commit decision does not change it.
    TransactionCoordinator::RouterDecision decision;
    decision.commit = true;
    decision.commitTs = Timestamp{1};
    decision.writers = {"shard0", "shard1"};
    EXPECT_TRUE(
        coordinator->decideStaged(lsid, 1, decision, &commitTs).is(ErrorCodes::NoSuchTransaction));
}

TEST_F(StagedCommitTest, APartThatCannotPrepareAbortsAtOnce) {
    // No transaction in progress here: the stage fails, decided abort.
    TransactionCoordinator::Staged staged = coordinator->stage(lsid, 1, participants);
    ASSERT_TRUE(staged.decided);
    EXPECT_TRUE(staged.outcome.is(ErrorCodes::NoSuchTransaction)) << staged.outcome.toString();
}

// Durable-prepare notices (docs/protocols/two-phase-commit.md "Staged commit", step 2 without
// journal): the router sends no decision; the other participants tell this coordinator when their
// parts are durable.
TEST_F(StagedCommitTest, EveryOtherPartsDurableNoticeCommitsTheStagedRecord) {
    insertInTransaction(1, 1);
    TransactionCoordinator::Staged staged = coordinator->stage(lsid, 1, participants);
    ASSERT_FALSE(staged.decided) << staged.outcome.toString();
    EXPECT_TRUE(prepared());
    // shard1 prepared later than this shard: the commit is at its prepare timestamp.
    const Timestamp later{staged.prepareTs.value + 5};
    coordinator->participantDurable(lsid, 1, "shard1", later);
    EXPECT_FALSE(prepared());
    EXPECT_TRUE(committed());
    TransactionCoordinator::Staged again = coordinator->stage(lsid, 1, participants);
    ASSERT_TRUE(again.decided);
    EXPECT_TRUE(again.outcome.isOK()) << again.outcome.toString();
    EXPECT_EQ(again.commitTs, later);
}

TEST_F(StagedCommitTest, ANoticeThatOvertakesTheStageIsKeptForIt) {
    insertInTransaction(1, 1);
    coordinator->participantDurable(lsid, 1, "shard1", Timestamp{1});
    TransactionCoordinator::Staged staged = coordinator->stage(lsid, 1, participants);
    ASSERT_FALSE(staged.decided) << staged.outcome.toString();
    EXPECT_TRUE(committed());
    TransactionCoordinator::Staged again = coordinator->stage(lsid, 1, participants);
    ASSERT_TRUE(again.decided);
    EXPECT_EQ(again.commitTs, staged.prepareTs);  // this shard's prepare was the later one
}

TEST_F(StagedCommitTest, NoCommitBeforeEveryOtherPartIsDurable) {
    const std::vector<TransactionCoordinator::Participant> three{
        participants[0], participants[1], {"shard2", "127.0.0.1:2"}};
    insertInTransaction(1, 1);
    ASSERT_FALSE(coordinator->stage(lsid, 1, three).decided);
    coordinator->participantDurable(lsid, 1, "shard1", Timestamp{1});
    coordinator->participantDurable(lsid, 1, "shardX", Timestamp{1});  // not a participant
    EXPECT_TRUE(prepared());
    coordinator->participantDurable(lsid, 1, "shard2", Timestamp{1});
    EXPECT_TRUE(committed());
}

// A coordinator that records the commands it receives and answers ok.
class RecordingShard : public net::RequestHandler {
  public:
    bson::BsonObj handleRequest(const net::Request& request, net::ClientContext&) override {
        MutexLock lk(mutex);
        received.push_back(request.msg->body.copy());
        bson::BsonBuilder b;
        b.append("ok", 1.0);
        return b.obj();
    }
    Mutex mutex;
    std::vector<bson::BsonObj> received;
};

TEST_F(StagedCommitTest, APartPreparedUnsyncedSyncsThenTellsItsCoordinator) {
    RecordingShard handler;
    net::test::RunningServer other(handler);
    const uint64_t before = engine->walSyncCount();
    // Without start(), the notice runs before notifyWhenDurable returns.
    coordinator->notifyWhenDurable(lsid, 3, {"shard9", "127.0.0.1:" + std::to_string(other.port())},
                                   Timestamp{42});
    EXPECT_GT(engine->walSyncCount(), before);
    MutexLock lk(handler.mutex);
    ASSERT_EQ(handler.received.size(), 1u);
    bson::BsonView cmd = handler.received[0];
    EXPECT_EQ(cmd.firstElement().fieldName(), "_shardsvrCoordinateCommitTransaction");
    EXPECT_EQ(cmd["txnNum"].numberLong(), 3);
    EXPECT_EQ(cmd["lsid"].objValue()["id"].binaryValue().data, lsid);
    bson::BsonView notice = cmd["durablePrepare"].objValue();
    EXPECT_EQ(notice["shard"].stringValue(), "shard0");
    EXPECT_EQ(Timestamp{notice["prepareTimestamp"].timestampValue()}, Timestamp{42});
}

}  // namespace
}  // namespace tessera::txn
