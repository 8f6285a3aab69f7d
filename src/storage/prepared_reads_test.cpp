// Reads of a prepared transaction's documents (prepared_transactions.h): a read at or after its
// prepare timestamp that meets one of its keys — record or index, a scan's phantom insert
// included — waits for the decision and sees all of it or none of it, even through a RocksDB
// view taken before the commit; a read that meets none of its keys never waits. Where the
// operation's PrepareReads does not allow a wait, the read stops and the conflict is noted there.

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>

#include "storage/prepared_transactions.h"
#include "storage/storage_test_util.h"
#include "storage/transaction.h"

namespace tessera::storage {
namespace {

using test::EngineTest;
using test::idKey;
using test::indexKey;
using test::J;

constexpr const char* kRecord = "txn.prepared/test";

class PreparedReadsTest : public EngineTest {
  protected:
    void SetUp() override {
        EngineTest::SetUp();
        create("db.c");
        IndexSpec byV;
        byV.name = "v_1";
        byV.keyPattern = J(R"({"v": 1})");
        ASSERT_TRUE(engine->createIndexes("db.c", {byV}).isOK());
        insert("db.c", R"({"_id": 1, "v": 10})");
        insert("db.c", R"({"_id": 5, "v": 50})");
        create("db.other");
        insert("db.other", R"({"_id": 1})");
    }
    void TearDown() override {
        txn.reset();  // aborted while the engine is open
        EngineTest::TearDown();
    }

    // Prepares a transaction that moves _id 1 to v 11 and inserts _id 2 with v 20.
    Timestamp prepareTransfer() {
        auto sw = engine->beginTransaction(std::nullopt, nullptr);
        EXPECT_TRUE(sw.isOK());
        txn = std::move(sw.getValue());
        auto w = txn->writer(engine->getCollection("db.c"));
        EXPECT_TRUE(w.isOK());
        EXPECT_TRUE(
            test::updateCurrent(*w.getValue(), idKey("1"), J(R"({"_id": 1, "v": 11})")).isOK());
        EXPECT_TRUE(w.getValue()->insert(J(R"({"_id": 2, "v": 20})"), {}).isOK());
        auto prepared = txn->prepare(kRecord, J("{}"));
        EXPECT_TRUE(prepared.isOK()) << prepared.getStatus().toString();
        return prepared.getValue();
    }

    std::vector<std::string> indexed(ReadSnapshot& snap, const KeyRange& range, bool forward) {
        auto coll = engine->getCollection("db.c");
        std::vector<std::string> out;
        auto cursor = snap.indexScan(*coll, *coll->findIndex("v_1"), range, forward);
        while (auto e = cursor->next()) out.push_back(e->key);
        return out;
    }

    static KeyRange between(std::string_view low, std::string_view high) {
        KeyRange r;
        r.low = indexKey(low);
        r.high = indexKey(high);
        r.lowInclusive = r.highInclusive = true;
        return r;
    }

    // The reads of an operation on an io thread: they may not wait at all.
    static std::shared_ptr<PrepareReads> inlineReads() {
        return std::make_shared<PrepareReads>(PrepareReads::Policy::noWait());
    }
    // A read at the latest timestamp that runs again when it met a later commit.
    static PrepareReads::Policy restarting() {
        PrepareReads::Policy p;
        p.restartIfCommittedAfterRead = true;
        return p;
    }
    static bool wouldBlock(const PrepareReads& reads) {
        return reads.conflict().is(ErrorCodes::InlineWouldBlock);
    }

    std::unique_ptr<Transaction> txn;
};

TEST_F(PreparedReadsTest, AReadThatMeetsNoneOfItsKeysDoesNotWait) {
    prepareTransfer();
    auto reads = inlineReads();  // any wait would be a conflict
    auto snap = engine->snapshot(std::nullopt, reads);
    auto coll = engine->getCollection("db.c");
    auto five = snap->findByRecordKey(*coll, idKey("5"));
    ASSERT_TRUE(five.has_value());
    EXPECT_EQ(scanAll(*snap, "db.other").size(), 1u);
    EXPECT_EQ(indexed(*snap, between("[40]", "[60]"), true),
              std::vector<std::string>{indexKey("[50]")});
    EXPECT_EQ(indexed(*snap, between("[40]", "[60]"), false).size(), 1u);
    EXPECT_EQ(engine->readersWaitingForPreparedForTest(), 0u);
    EXPECT_TRUE(reads->conflict().isOK());
}

TEST_F(PreparedReadsTest, AReadOfOneOfItsKeysWaitsWhereItMayNotWaitItSaysSo) {
    prepareTransfer();
    auto coll = engine->getCollection("db.c");
    // Each read on a snapshot of its own, so that each conflict is its own.
    auto conflicts = [&](const std::function<void(ReadSnapshot&)>& read) {
        auto reads = inlineReads();
        auto snap = engine->snapshot(std::nullopt, reads);
        read(*snap);
        return wouldBlock(*reads);
    };
    EXPECT_TRUE(conflicts(
        [&](ReadSnapshot& s) { EXPECT_FALSE(s.findByRecordKey(*coll, idKey("1")).has_value()); }));
    EXPECT_TRUE(conflicts([&](ReadSnapshot& s) {  // its insert
        EXPECT_FALSE(s.findByRecordKey(*coll, idKey("2")).has_value());
    }));
    // A scan stops where it meets the first of its keys: before _id 1.
    EXPECT_TRUE(conflicts([&](ReadSnapshot& s) { EXPECT_EQ(scanAll(s, "db.c").size(), 0u); }));
    // A range that holds only its inserted index key (a phantom): held too.
    EXPECT_TRUE(conflicts(
        [&](ReadSnapshot& s) { EXPECT_EQ(indexed(s, between("[15]", "[25]"), true).size(), 0u); }));
    EXPECT_TRUE(conflicts([&](ReadSnapshot& s) {
        EXPECT_EQ(indexed(s, between("[15]", "[25]"), false).size(), 0u);
    }));
    // A deadline: the wait ends there, with the operation's time limit as the conflict.
    PrepareReads::Policy untilNow;
    untilNow.deadline = PrepareReads::Clock::now();
    untilNow.deadlineIsMaxTime = true;
    auto bounded = std::make_shared<PrepareReads>(untilNow);
    auto snap = engine->snapshot(std::nullopt, bounded);
    EXPECT_FALSE(snap->findByRecordKey(*coll, idKey("1")).has_value());
    EXPECT_TRUE(bounded->conflict().is(ErrorCodes::MaxTimeMSExpired));
    // The next operation on the same snapshot (a cursor's getMore) starts without one.
    bounded->reset(PrepareReads::Policy::noWait());
    EXPECT_TRUE(bounded->conflict().isOK());
    EXPECT_TRUE(snap->findByRecordKey(*coll, idKey("5")).has_value());
    EXPECT_TRUE(bounded->conflict().isOK());
}

TEST_F(PreparedReadsTest, AReaderWaitsThenSeesTheCommitThroughAViewTakenBeforeIt) {
    Timestamp prepareTs = prepareTransfer();
    auto snap = engine->snapshot();
    ASSERT_GE(snap->timestamp(), prepareTs);
    // Cursors opened now share a RocksDB snapshot without the commit; they wait when they
    // reach the first of its keys.
    auto coll = engine->getCollection("db.c");
    auto records = snap->scan(*coll, true);
    auto backward = snap->scan(*coll, false);
    auto first = backward->next();  // _id 5: not one of its keys
    ASSERT_TRUE(first.has_value());
    std::atomic<bool> done{false};
    std::vector<std::string> seen;
    std::thread reader([&] {
        while (auto r = records->next()) seen.push_back(r->doc.toJson());
        done = true;
    });
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (engine->readersWaitingForPreparedForTest() == 0 &&
           std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
    }
    ASSERT_EQ(engine->readersWaitingForPreparedForTest(), 1u);
    EXPECT_FALSE(done.load());
    ASSERT_TRUE(txn->commitPrepared(prepareTs, {}, WriteOptions{}).isOK());
    reader.join();
    EXPECT_EQ(seen,
              (std::vector<std::string>{R"({ "_id" : 1, "v" : 11 })", R"({ "_id" : 2, "v" : 20 })",
                                        R"({ "_id" : 5, "v" : 50 })"}));
    std::vector<std::string> back;
    while (auto r = backward->next()) back.push_back(r->doc.toJson());
    EXPECT_EQ(back, (std::vector<std::string>{R"({ "_id" : 2, "v" : 20 })",
                                              R"({ "_id" : 1, "v" : 11 })"}));
    EXPECT_EQ(indexed(*snap, between("[0]", "[100]"), true),
              (std::vector<std::string>{indexKey("[11]"), indexKey("[20]"), indexKey("[50]")}));
    EXPECT_EQ(snap->findByRecordKey(*coll, idKey("2"))->toJson(), R"({ "_id" : 2, "v" : 20 })");
}

TEST_F(PreparedReadsTest, ACommitAboveTheReadTimestampOrAnAbortIsNotSeen) {
    Timestamp prepareTs = prepareTransfer();
    auto early = engine->snapshot();  // at or after the prepare, below the commit
    auto coll = engine->getCollection("db.c");
    auto cursor = early->scan(*coll, true);
    ASSERT_TRUE(insert("db.other", R"({"_id": 2})") > early->timestamp());
    Timestamp commitTs = engine->lastCommitTimestamp();
    ASSERT_GT(commitTs, early->timestamp());
    ASSERT_TRUE(txn->commitPrepared(commitTs, {}, WriteOptions{}).isOK());
    std::vector<std::string> seen;
    while (auto r = cursor->next()) seen.push_back(r->doc.toJson());
    EXPECT_EQ(seen, (std::vector<std::string>{R"({ "_id" : 1, "v" : 10 })",
                                              R"({ "_id" : 5, "v" : 50 })"}));
    EXPECT_FALSE(early->findByRecordKey(*coll, idKey("2")).has_value());
    EXPECT_EQ(scanAll("db.c").size(), 3u);  // a later read sees it all
    (void)prepareTs;

    // An abort: the reader's own view decides.
    auto sw = engine->beginTransaction(std::nullopt, nullptr);
    ASSERT_TRUE(sw.isOK());
    txn = std::move(sw.getValue());
    auto w = txn->writer(coll);
    ASSERT_TRUE(w.isOK());
    ASSERT_TRUE(test::removeCurrent(*w.getValue(), idKey("5")).isOK());
    ASSERT_TRUE(txn->prepare(kRecord, J("{}")).isOK());
    auto during = engine->snapshot();
    auto scan = during->scan(*coll, true);
    txn->abort();
    std::vector<std::string> after;
    while (auto r = scan->next()) after.push_back(r->doc.toJson());
    EXPECT_EQ(after.size(), 3u);
}

TEST_F(PreparedReadsTest, ARestartableReadThatMeetsACommitAboveItsTimestampStops) {
    // The participant of a cross-shard commit already acknowledged to the client: a read at the
    // latest timestamp, taken between this part's prepare and the commit timestamp (another
    // participant's later prepare), must run again rather than miss the commit.
    prepareTransfer();
    auto reads = std::make_shared<PrepareReads>();
    auto early = engine->snapshot(std::nullopt, reads);
    auto coll = engine->getCollection("db.c");
    ASSERT_TRUE(insert("db.other", R"({"_id": 2})") > early->timestamp());
    Timestamp commitTs = engine->lastCommitTimestamp();
    ASSERT_GT(commitTs, early->timestamp());
    ASSERT_TRUE(txn->commitPrepared(commitTs, {}, WriteOptions{}).isOK());

    reads->reset(restarting());
    EXPECT_FALSE(early->findByRecordKey(*coll, idKey("1")).has_value());
    EXPECT_TRUE(reads->conflict().is(ErrorCodes::ReadMetLaterCommit));
    reads->reset(restarting());
    EXPECT_EQ(scanAll(*early, "db.c").size(), 0u) << "the scan stops at _id 1";
    EXPECT_TRUE(reads->conflict().is(ErrorCodes::ReadMetLaterCommit));
    // Keys it did not write never restart a read.
    reads->reset(restarting());
    EXPECT_TRUE(early->findByRecordKey(*coll, idKey("5")).has_value());
    EXPECT_TRUE(reads->conflict().isOK());
    // Run again at the latest timestamp, now past the commit: all of it.
    auto again = engine->snapshot(std::nullopt, reads);
    EXPECT_EQ(again->findByRecordKey(*coll, idKey("1"))->toJson(), R"({ "_id" : 1, "v" : 11 })");
    EXPECT_EQ(scanAll(*again, "db.c").size(), 3u);

    // Without the restart the early view keeps its timestamp: none of it.
    reads->reset(PrepareReads::Policy{});
    EXPECT_EQ(early->findByRecordKey(*coll, idKey("1"))->toJson(), R"({ "_id" : 1, "v" : 10 })");
    EXPECT_TRUE(reads->conflict().isOK());
}

TEST_F(PreparedReadsTest, ATransactionBegunDuringThePrepareWaitsOnlyForItsKeys) {
    Timestamp prepareTs = prepareTransfer();
    auto sw = engine->beginTransaction(std::nullopt, nullptr);
    ASSERT_TRUE(sw.isOK());
    std::unique_ptr<Transaction> other = std::move(sw.getValue());
    ASSERT_GE(other->readTimestamp(), prepareTs);
    auto coll = engine->getCollection("db.c");
    {
        auto reads = inlineReads();  // this statement's
        other->bindPrepareReads(reads);
        auto snap = other->snapshot();
        EXPECT_TRUE(snap->findByRecordKey(*coll, idKey("5")).has_value());
        EXPECT_TRUE(reads->conflict().isOK());
        EXPECT_FALSE(snap->findByRecordKey(*coll, idKey("1")).has_value());
        EXPECT_TRUE(wouldBlock(*reads));
    }
    ASSERT_TRUE(txn->commitPrepared(prepareTs, {}, WriteOptions{}).isOK());
    other->bindPrepareReads(nullptr);  // the next statement waits as long as it takes
    auto snap = other->snapshot();
    EXPECT_EQ(snap->findByRecordKey(*coll, idKey("1"))->toJson(), R"({ "_id" : 1, "v" : 11 })");
}

}  // namespace
}  // namespace tessera::storage
