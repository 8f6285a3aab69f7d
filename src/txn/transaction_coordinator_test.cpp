// A participant acknowledges a prepared transaction's commit before journaling it
// (SessionTransactions::noteUnsyncedCommit); its participant-recovery thread journals it within
// kSyncCommitsWithin, long before the coordinator may forget the decision.
#include "txn/transaction_coordinator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "command/transactions.h"
#include "net/remote_client.h"
#include "storage/engine.h"
#include "storage/storage_test_util.h"

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
        transactions = std::make_unique<command::SessionTransactions>(engine.get());
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
    std::unique_ptr<command::SessionTransactions> transactions;
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
        before, 5 * std::chrono::milliseconds(command::SessionTransactions::kSyncCommitsWithin)));
    EXPECT_FALSE(transactions->takeUnsyncedCommits());  // taken by the thread
}

TEST_F(CoordinatorThreadsTest, OneTakeCoversEveryEarlierNote) {
    EXPECT_FALSE(transactions->takeUnsyncedCommits());
    transactions->noteUnsyncedCommit();
    EXPECT_TRUE(transactions->takeUnsyncedCommits());
    EXPECT_FALSE(transactions->takeUnsyncedCommits());  // one sync covers every earlier commit
}

}  // namespace
}  // namespace tessera::txn
