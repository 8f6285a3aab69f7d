// Retryable-write records expire with their session: the statement records (side records) and
// the config.transactions document of an idle session are deleted, the others kept, and a
// restart restores none of the deleted.
#include "txn/session_record_reaper.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "storage/engine.h"
#include "storage/storage_test_util.h"
#include "txn/session_records.h"

namespace tessera::txn {
namespace {

using namespace std::chrono_literals;

std::string lsidBytes(char c) { return std::string(16, c); }

class SessionRecordReaperTest : public storage::test::EngineTest {
  protected:
    void record(const std::string& lsid, int64_t txnNumber, StmtId stmtId) {
        bson::BsonObj result = bson::fromJson(R"({"n": 1})");
        ASSERT_TRUE(
            engine
                ->writeSideRecords({{statementRecordKey(lsid, stmtId),
                                     statementRecordValue(lsid, txnNumber, stmtId, result)}})
                .isOK());
        table.restore(lsid, txnNumber, stmtId, result);
    }
    size_t recordsOf(const std::string& lsid) {
        return engine->sideRecords(std::string(kStatementRecordPrefix) + lsid + "#").size();
    }

    TransactionTable table;
    std::vector<bson::BsonObj> commands;  // what the reaper ran locally
};

TEST_F(SessionRecordReaperTest, AnIdleSessionsRecordsAreDeletedAndOthersKept) {
    const std::string idle = lsidBytes('a'), busy = lsidBytes('b');
    record(idle, 7, 0);
    record(idle, 7, 1);
    record(idle, 5, 2);  // an older txnNumber's statement, kept on disk until now
    // `idle` was last used at or before `between`, `busy` strictly after it.
    const auto between = TransactionTable::Clock::now();
    while (TransactionTable::Clock::now() == between) {
    }
    record(busy, 3, 0);

    SessionRecordReaper reaper(
        table, *engine,
        [&](std::string_view db, const bson::BsonObj& cmd) {
            EXPECT_EQ(db, "config");
            commands.push_back(cmd);
            return Status::OK();
        },
        /*idleLimit=*/20ms);
    // As if 20 ms and one tick had passed since `between`: older than the limit is `idle` alone.
    EXPECT_EQ(reaper.sweepAt(between + 20ms + TransactionTable::Clock::duration(1)), 1u);
    EXPECT_EQ(recordsOf(idle), 0u);
    EXPECT_EQ(recordsOf(busy), 1u);
    // Its config.transactions document (a whole reply, e.g. a bulkWrite's) goes too.
    ASSERT_EQ(commands.size(), 1u);
    EXPECT_EQ(commands[0]["delete"].stringValue(), kTransactionsCollection);
    bson::BsonView q = commands[0]["deletes"].objValue()["0"].objValue()["q"].objValue();
    EXPECT_EQ(q["_id"].objValue()["id"].binaryValue().data, idle);
    EXPECT_EQ(table.size(), 1u);

    // After a restart, only the kept session is restored.
    reopen();
    TransactionTable restored;
    EXPECT_EQ(restoreStatementRecords(*engine, restored), 1u);
    EXPECT_EQ(restored.size(), 1u);
}

TEST_F(SessionRecordReaperTest, TheThreadSweepsUntilStopped) {
    const std::string idle = lsidBytes('c');
    record(idle, 1, 0);
    SessionRecordReaper reaper(
        table, *engine, [](std::string_view, const bson::BsonObj&) { return Status::OK(); },
        /*idleLimit=*/1ms, /*sweepEvery=*/5ms);
    reaper.start();
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (table.size() > 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(5ms);
    }
    EXPECT_EQ(table.size(), 0u);
    EXPECT_EQ(recordsOf(idle), 0u);
    reaper.stop();
}

}  // namespace
}  // namespace tessera::txn
