// Transactions: own writes visible, nobody else's until commit, all at once at commit,
// first-writer-wins conflicts with transactions and plain writers, counts, unique indexes, abort.

#include "storage/transaction.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "storage/prepared_transactions.h"
#include "storage/storage_test_util.h"

namespace tessera::storage {
namespace {

using test::EngineTest;
using test::idKey;
using test::J;

constexpr const char* kRecord = "txn.prepared/test";

class TransactionTest : public EngineTest {
  protected:
    std::unique_ptr<Transaction> begin() {
        auto sw = engine->beginTransaction(std::nullopt, nullptr);
        EXPECT_TRUE(sw.isOK()) << sw.getStatus().toString();
        return std::move(sw.getValue());
    }
    CollectionWriter& writerOf(Transaction& txn, std::string_view ns) {
        auto sw = txn.writer(engine->getCollection(ns));
        EXPECT_TRUE(sw.isOK()) << sw.getStatus().toString();
        return *sw.getValue();
    }
    StatusWith<Timestamp> commit(Transaction& txn) { return txn.commit({}, WriteOptions{}); }
};

TEST_F(TransactionTest, OwnWritesAreVisibleOnlyToTheTransactionUntilCommit) {
    create("db.c");
    insert("db.c", R"({"_id": 1, "v": 1})");
    auto txn = begin();
    CollectionWriter& w = writerOf(*txn, "db.c");
    ASSERT_TRUE(w.insert(J(R"({"_id": 2, "v": 2})"), {}).isOK());
    ASSERT_TRUE(test::updateCurrent(w, idKey("1"), J(R"({"_id": 1, "v": 10})")).isOK());

    auto mine = txn->snapshot();
    EXPECT_EQ(scanAll(*mine, "db.c"), (std::vector<std::string>{R"({ "_id" : 1, "v" : 10 })",
                                                                R"({ "_id" : 2, "v" : 2 })"}));
    EXPECT_EQ(scanAll(*mine, "db.c", false).size(), 2u);
    auto coll = engine->getCollection("db.c");
    ASSERT_TRUE(mine->findByRecordKey(*coll, idKey("2")).has_value());
    EXPECT_EQ(scanAll("db.c"), std::vector<std::string>{R"({ "_id" : 1, "v" : 1 })"});
    EXPECT_EQ(engine->stats(*coll).count, 1);

    auto before = engine->snapshot();
    auto sw = commit(*txn);
    ASSERT_TRUE(sw.isOK()) << sw.getStatus().toString();
    EXPECT_GT(sw.getValue(), before->timestamp());
    EXPECT_EQ(scanAll(*before, "db.c").size(), 1u);  // an older snapshot sees none of it
    EXPECT_EQ(scanAll("db.c"), (std::vector<std::string>{R"({ "_id" : 1, "v" : 10 })",
                                                         R"({ "_id" : 2, "v" : 2 })"}));
    EXPECT_EQ(engine->stats(*coll).count, 2);
}

TEST_F(TransactionTest, AScanSeesOnlyItsCollectionAmongTheTransactionsWrites) {
    // Adjacent collection ids: the second's intents follow the first's range directly.
    create("db.a");
    create("db.b");
    IndexSpec byV;
    byV.name = "v_1";
    byV.keyPattern = J(R"({"v": 1})");
    ASSERT_TRUE(engine->createIndexes("db.a", {byV}).isOK());
    ASSERT_TRUE(engine->createIndexes("db.b", {byV}).isOK());
    insert("db.a", R"({"_id": 1, "v": 1})");
    auto txn = begin();
    ASSERT_TRUE(writerOf(*txn, "db.a").insert(J(R"({"_id": 2, "v": 2})"), {}).isOK());
    ASSERT_TRUE(writerOf(*txn, "db.b").insert(J(R"({"_id": 3, "v": 3})"), {}).isOK());
    ASSERT_TRUE(writerOf(*txn, "db.b").insert(J(R"({"_id": 0, "v": 0})"), {}).isOK());
    auto mine = txn->snapshot();
    std::vector<std::string> a = {R"({ "_id" : 1, "v" : 1 })", R"({ "_id" : 2, "v" : 2 })"};
    EXPECT_EQ(scanAll(*mine, "db.a"), a);
    EXPECT_EQ(scanAll(*mine, "db.a", /*forward=*/false), (std::vector<std::string>{a[1], a[0]}));
    EXPECT_EQ(scanAll(*mine, "db.b").size(), 2u);
    EXPECT_EQ(scanAll(*mine, "db.b", /*forward=*/false).size(), 2u);
    CollectionPtr coll = engine->getCollection("db.a");
    const IndexSpec* index = coll->findIndexByKeyPattern(J(R"({"v": 1})"));
    ASSERT_NE(index, nullptr);
    for (bool forward : {true, false}) {
        auto cursor = mine->indexScan(*coll, *index, KeyRange{}, forward);
        int n = 0;
        while (cursor->next()) ++n;
        EXPECT_EQ(n, 2) << (forward ? "forward" : "backward");
    }
}

TEST_F(TransactionTest, TheSnapshotDoesNotSeeLaterCommits) {
    create("db.c");
    insert("db.c", R"({"_id": 1})");
    auto txn = begin();
    insert("db.c", R"({"_id": 2})");
    EXPECT_EQ(scanAll(*txn->snapshot(), "db.c").size(), 1u);
}

TEST_F(TransactionTest, SecondWriterOfADocumentConflicts) {
    create("db.c");
    insert("db.c", R"({"_id": 1, "v": 0})");
    auto a = begin();
    auto b = begin();
    ASSERT_TRUE(
        test::updateCurrent(writerOf(*a, "db.c"), idKey("1"), J(R"({"_id": 1, "v": 1})")).isOK());
    auto conflict =
        test::updateCurrent(writerOf(*b, "db.c"), idKey("1"), J(R"({"_id": 1, "v": 2})"));
    EXPECT_TRUE(conflict.getStatus().is(ErrorCodes::WriteConflict));
    // A plain writer waits (WriteConflict, retried by the command layer) while a holds it.
    auto plain = writerFor("db.c");
    EXPECT_TRUE(test::updateCurrent(*plain, idKey("1"), J(R"({"_id": 1, "v": 3})"))
                    .getStatus()
                    .is(ErrorCodes::WriteConflict));
    plain.reset();
    ASSERT_TRUE(commit(*a).isOK());
    EXPECT_EQ(scanAll("db.c"), std::vector<std::string>{R"({ "_id" : 1, "v" : 1 })"});
    // After a's commit the plain writer goes on; b's snapshot is older than a's commit.
    plain = writerFor("db.c");
    EXPECT_TRUE(test::updateCurrent(*plain, idKey("1"), J(R"({"_id": 1, "v": 3})")).isOK());
    b->abort();
}

TEST_F(TransactionTest, ACommitAfterTheSnapshotIsAConflict) {
    create("db.c");
    insert("db.c", R"({"_id": 1, "v": 0})");
    auto txn = begin();
    auto plain = writerFor("db.c");
    ASSERT_TRUE(test::updateCurrent(*plain, idKey("1"), J(R"({"_id": 1, "v": 5})")).isOK());
    plain.reset();
    CollectionWriter& w = writerOf(*txn, "db.c");
    std::optional<bson::BsonObj> seen = w.current(idKey("1"));
    ASSERT_TRUE(seen.has_value());
    EXPECT_EQ(seen->getField("v").numberInt(), 0);  // the snapshot's version
    EXPECT_TRUE(w.update(idKey("1"), *seen, J(R"({"_id": 1, "v": 1})"), {})
                    .getStatus()
                    .is(ErrorCodes::WriteConflict));
    // Inserting an _id someone inserted after the snapshot conflicts too (not a duplicate the
    // snapshot could explain).
    insert("db.c", R"({"_id": 7})");
    EXPECT_TRUE(w.insert(J(R"({"_id": 7})"), {}).getStatus().is(ErrorCodes::WriteConflict));
}

TEST_F(TransactionTest, UniqueValuesAreClaimedAndChecked) {
    create("db.c");
    IndexSpec u;
    u.name = "u_1";
    u.keyPattern = J(R"({"u": 1})");
    u.unique = true;
    ASSERT_TRUE(engine->createIndexes("db.c", {u}).isOK());
    insert("db.c", R"({"_id": 1, "u": 1})");
    auto a = begin();
    CollectionWriter& w = writerOf(*a, "db.c");
    EXPECT_TRUE(w.insert(J(R"({"_id": 2, "u": 1})"), {}).getStatus().is(ErrorCodes::DuplicateKey));
    ASSERT_TRUE(w.insert(J(R"({"_id": 3, "u": 3})"), {}).isOK());
    EXPECT_TRUE(w.insert(J(R"({"_id": 4, "u": 3})"), {}).getStatus().is(ErrorCodes::DuplicateKey));
    // Another writer of the same unique value conflicts while a holds it.
    auto plain = writerFor("db.c");
    EXPECT_TRUE(
        plain->insert(J(R"({"_id": 5, "u": 3})"), {}).getStatus().is(ErrorCodes::WriteConflict));
    plain.reset();
    // The transaction's index scan sees its own entry.
    auto coll = engine->getCollection("db.c");
    auto cursor = a->snapshot()->indexScan(*coll, coll->indexes[1], KeyRange{});
    int entries = 0;
    while (cursor->next()) ++entries;
    EXPECT_EQ(entries, 2);
    a->abort();
    plain = writerFor("db.c");
    EXPECT_TRUE(plain->insert(J(R"({"_id": 5, "u": 3})"), {}).isOK());
}

TEST_F(TransactionTest, AbortWritesNothingAndReleasesTheKeys) {
    create("db.c");
    {
        auto txn = begin();
        ASSERT_TRUE(writerOf(*txn, "db.c").insert(J(R"({"_id": 1})"), {}).isOK());
    }  // destroyed uncommitted
    EXPECT_TRUE(scanAll("db.c").empty());
    EXPECT_EQ(engine->stats(*engine->getCollection("db.c")).count, 0);
    insert("db.c", R"({"_id": 1})");
    reopen();
    EXPECT_EQ(scanAll("db.c").size(), 1u);
}

TEST_F(TransactionTest, CommitIsDurableWithItsSideRecordsAndCounts) {
    create("db.c");
    create("db.d");
    auto txn = begin();
    ASSERT_TRUE(writerOf(*txn, "db.c").insert(J(R"({"_id": 1})"), {}).isOK());
    ASSERT_TRUE(writerOf(*txn, "db.d").insert(J(R"({"_id": 1})"), {}).isOK());
    CollectionWriter& d = writerOf(*txn, "db.d");
    ASSERT_TRUE(test::removeCurrent(d, idKey("1")).isOK());
    ASSERT_TRUE(d.insert(J(R"({"_id": 2, "x": 1})"), {}).isOK());
    ASSERT_TRUE(txn->commit({{"txntest", "committed"}}, WriteOptions{true}).isOK());
    txn.reset();  // before the engine, as every snapshot and writer
    reopen();
    EXPECT_EQ(scanAll("db.c").size(), 1u);
    EXPECT_EQ(scanAll("db.d"), std::vector<std::string>{R"({ "_id" : 2, "x" : 1 })"});
    EXPECT_EQ(engine->stats(*engine->getCollection("db.d")).count, 1);
    auto records = engine->sideRecords("txntest");
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].second, "committed");
}

TEST_F(TransactionTest, DdlWaitingForTheCollectionIsALockTimeoutForTheTransaction) {
    create("db.c");
    auto plain = writerFor("db.c");  // DDL would wait for it; a transaction must not
    std::thread ddl([&] { EXPECT_TRUE(engine->dropCollection("db.c").isOK()); });
    // Poll until the drop waits (it holds back new writers).
    auto coll = engine->getCollection("db.c");
    Status s = Status::OK();
    for (int i = 0; i < 2000; ++i) {
        auto txn = begin();
        s = txn->writer(coll).getStatus();
        if (!s.isOK()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_TRUE(s.is(ErrorCodes::LockTimeout)) << s.toString();
    plain.reset();
    ddl.join();
}

// Two-phase commit: a read at or after the prepare timestamp waits for the decision and then sees
// the whole transaction; a read below it goes on and sees none of it.
TEST_F(TransactionTest, PreparedTransactionHoldsReadersAtOrAfterItsPrepareTimestamp) {
    create("db.c");
    insert("db.c", R"({"_id": 1, "v": 0})");
    auto before = engine->snapshot();
    auto txn = begin();
    CollectionWriter& w = writerOf(*txn, "db.c");
    ASSERT_TRUE(test::updateCurrent(w, idKey("1"), J(R"({"_id": 1, "v": 1})")).isOK());
    ASSERT_TRUE(w.insert(J(R"({"_id": 2, "v": 1})"), {}).isOK());
    auto prepared = txn->prepare(kRecord, J("{}"));
    ASSERT_TRUE(prepared.isOK()) << prepared.getStatus().toString();
    EXPECT_TRUE(txn->isPrepared());
    EXPECT_GT(prepared.getValue(), before->timestamp());
    EXPECT_EQ(engine->preparedTransactionCount(), 1u);
    EXPECT_EQ(scanAll(*before, "db.c").size(), 1u);  // an older snapshot is not held

    // A later read of its documents waits; where it may not wait it says so instead.
    {
        auto inlineReads = std::make_shared<PrepareReads>(PrepareReads::Policy::noWait());
        auto snap = engine->snapshot(std::nullopt, inlineReads);
        EXPECT_TRUE(scanAll(*snap, "db.c").empty());
        EXPECT_TRUE(inlineReads->conflict().is(ErrorCodes::InlineWouldBlock));
    }
    std::atomic<bool> readDone{false};
    std::vector<std::string> seen;
    std::thread reader([&] {
        seen = scanAll("db.c");
        readDone = true;
    });
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (engine->readersWaitingForPreparedForTest() == 0 &&
           std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
    }
    ASSERT_EQ(engine->readersWaitingForPreparedForTest(), 1u);
    EXPECT_FALSE(readDone.load());
    // The decision: this prepare timestamp (the greatest of all participants'), which is at or
    // below the waiting reader's timestamp: the reader sees the whole transaction.
    Timestamp commitTs = prepared.getValue();
    auto committed = txn->commitPrepared(commitTs, {}, WriteOptions{});
    ASSERT_TRUE(committed.isOK()) << committed.getStatus().toString();
    EXPECT_EQ(committed.getValue(), commitTs);
    reader.join();
    EXPECT_EQ(seen,
              (std::vector<std::string>{R"({ "_id" : 1, "v" : 1 })", R"({ "_id" : 2, "v" : 1 })"}));
    EXPECT_EQ(engine->preparedTransactionCount(), 0u);
    // The next write is later than the commit.
    EXPECT_GT(insert("db.c", R"({"_id": 3})"), commitTs);
    EXPECT_EQ(engine->stats(*engine->getCollection("db.c")).count, 3);
}

TEST_F(TransactionTest, APreparedTransactionCommitsBelowLaterCommitsOfOtherDocuments) {
    create("db.c");
    insert("db.c", R"({"_id": 1, "v": 0})");
    auto txn = begin();
    ASSERT_TRUE(
        test::updateCurrent(writerOf(*txn, "db.c"), idKey("1"), J(R"({"_id": 1, "v": 1})")).isOK());
    auto prepared = txn->prepare(kRecord, J("{}"));
    ASSERT_TRUE(prepared.isOK());
    // Another document is written after the prepare (its writer reads nothing of the prepared
    // transaction's), so its commit timestamp is above the prepare timestamp.
    std::thread other([&] { insert("db.c", R"({"_id": 2})"); });
    // The coordinator's decision: the prepare timestamp itself, below that later commit.
    auto committed = txn->commitPrepared(prepared.getValue(), {}, WriteOptions{});
    ASSERT_TRUE(committed.isOK()) << committed.getStatus().toString();
    other.join();
    auto snap = engine->snapshot();
    EXPECT_EQ(scanAll(*snap, "db.c"),
              (std::vector<std::string>{R"({ "_id" : 1, "v" : 1 })", R"({ "_id" : 2 })"}));
    auto at = engine->snapshot(Timestamp{prepared.getValue().value - 1});
    EXPECT_EQ(scanAll(*at, "db.c"), (std::vector<std::string>{R"({ "_id" : 1, "v" : 0 })"}));
}

TEST_F(TransactionTest, AReaderBelowTheCommitTimestampSeesNoneOfTheTransaction) {
    create("db.c");
    insert("db.c", R"({"_id": 1, "v": 0})");
    auto txn = begin();
    CollectionWriter& w = writerOf(*txn, "db.c");
    ASSERT_TRUE(test::updateCurrent(w, idKey("1"), J(R"({"_id": 1, "v": 1})")).isOK());
    ASSERT_TRUE(w.insert(J(R"({"_id": 2, "v": 1})"), {}).isOK());
    auto prepared = txn->prepare(kRecord, J("{}"));
    ASSERT_TRUE(prepared.isOK());
    std::vector<std::string> seen;
    std::thread reader([&] { seen = scanAll("db.c"); });  // reads at the prepare timestamp
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (engine->readersWaitingForPreparedForTest() == 0 &&
           std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
    }
    // Another participant prepared later: the decision is above the reader's timestamp.
    Timestamp commitTs = Timestamp{prepared.getValue().value + 5};
    ASSERT_TRUE(txn->commitPrepared(commitTs, {}, WriteOptions{}).isOK());
    reader.join();
    EXPECT_EQ(seen, std::vector<std::string>{R"({ "_id" : 1, "v" : 0 })"});
    EXPECT_EQ(scanAll("db.c").size(), 2u);  // a read after the commit sees all of it
    EXPECT_GT(insert("db.c", R"({"_id": 3})"), commitTs);
}

TEST_F(TransactionTest, AbortOfAPreparedTransactionReleasesItsReadersAndKeys) {
    create("db.c");
    insert("db.c", R"({"_id": 1, "v": 0})");
    auto txn = begin();
    ASSERT_TRUE(
        test::updateCurrent(writerOf(*txn, "db.c"), idKey("1"), J(R"({"_id": 1, "v": 1})")).isOK());
    ASSERT_TRUE(txn->prepare(kRecord, J("{}")).isOK());
    EXPECT_TRUE(txn->commit({}, WriteOptions{}).getStatus().is(ErrorCodes::InvalidOptions));
    std::vector<std::string> seen;
    std::thread reader([&] { seen = scanAll("db.c"); });
    txn->abort();
    reader.join();
    EXPECT_EQ(seen, std::vector<std::string>{R"({ "_id" : 1, "v" : 0 })"});
    auto plain = writerFor("db.c");
    EXPECT_TRUE(test::updateCurrent(*plain, idKey("1"), J(R"({"_id": 1, "v": 2})")).isOK());
}

TEST_F(TransactionTest, AReadOnlyTransactionPreparesWithoutHoldingReaders) {
    create("db.c");
    auto txn = begin();
    auto prepared = txn->prepare(kRecord, J("{}"));
    ASSERT_TRUE(prepared.isOK());
    EXPECT_EQ(prepared.getValue(), txn->readTimestamp());
    EXPECT_FALSE(txn->isPrepared());
    EXPECT_EQ(engine->preparedTransactionCount(), 0u);
    EXPECT_TRUE(txn->commitPrepared(prepared.getValue(), {}, WriteOptions{}).isOK());
}

// A placement change fences the transactions writing what it moves: an unprepared one is doomed
// (its writes and commit fail, nothing of it is written), one writing elsewhere is untouched, and
// a prepared one is waited for until its decision.
TEST_F(TransactionTest, AFenceDoomsUnpreparedWritersOfTheCollectionAndAwaitsPreparedOnes) {
    create("db.c");
    create("db.other");
    insert("db.c", R"({"_id": 1, "v": 0})");
    auto isC = [](const CollectionInfo& coll) { return coll.ns() == "db.c"; };
    auto soon = [] { return std::chrono::steady_clock::now() + std::chrono::milliseconds(200); };

    auto doomed = begin();
    ASSERT_TRUE(
        test::updateCurrent(writerOf(*doomed, "db.c"), idKey("1"), J(R"({"_id": 1, "v": 1})"))
            .isOK());
    auto elsewhere = begin();
    ASSERT_TRUE(writerOf(*elsewhere, "db.other").insert(J(R"({"_id": 1})"), {}).isOK());
    auto fenced = engine->fenceTransactionWriters(isC, "db.c moves", soon());
    ASSERT_TRUE(fenced.isOK()) << fenced.getStatus().toString();
    EXPECT_EQ(fenced.getValue(), 1u);
    EXPECT_TRUE(doomed->writer(engine->getCollection("db.c"))
                    .getStatus()
                    .is(ErrorCodes::NoSuchTransaction));
    auto committed = commit(*doomed);
    ASSERT_TRUE(committed.getStatus().is(ErrorCodes::NoSuchTransaction));
    EXPECT_NE(committed.getStatus().reason().find("db.c moves"), std::string::npos);
    EXPECT_TRUE(commit(*elsewhere).isOK());
    EXPECT_EQ(scanAll("db.c"), std::vector<std::string>{R"({ "_id" : 1, "v" : 0 })"});
    // Its claims went with it: a plain writer of the document goes on.
    EXPECT_TRUE(
        test::updateCurrent(*writerFor("db.c"), idKey("1"), J(R"({"_id": 1, "v": 2})")).isOK());

    // A prepared writer cannot be doomed: the fence waits for its decision.
    auto prepared = begin();
    ASSERT_TRUE(
        test::updateCurrent(writerOf(*prepared, "db.c"), idKey("1"), J(R"({"_id": 1, "v": 3})"))
            .isOK());
    auto prepareTs = prepared->prepare(kRecord, J("{}"));
    ASSERT_TRUE(prepareTs.isOK());
    EXPECT_TRUE(engine->fenceTransactionWriters(isC, "db.c moves", soon())
                    .getStatus()
                    .is(ErrorCodes::LockTimeout));
    std::thread decide([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        ASSERT_TRUE(prepared->commitPrepared(prepareTs.getValue(), {}, WriteOptions{}).isOK());
    });
    auto waited = engine->fenceTransactionWriters(
        isC, "db.c moves", std::chrono::steady_clock::now() + std::chrono::seconds(10));
    decide.join();
    ASSERT_TRUE(waited.isOK()) << waited.getStatus().toString();
    EXPECT_EQ(waited.getValue(), 0u);
    EXPECT_EQ(scanAll("db.c"), std::vector<std::string>{R"({ "_id" : 1, "v" : 3 })"});
}

// A prepared transaction survives a crash: its record prepares it again at startup (intents
// claimed, readers held), and its commit then writes it with its counts.
TEST_F(TransactionTest, APreparedTransactionIsPreparedAgainAfterARestart) {
    create("db.c");
    insert("db.c", R"({"_id": 1, "v": 0})");
    Timestamp prepareTs;
    std::vector<std::pair<std::string, std::string>> record;
    {
        auto txn = begin();
        CollectionWriter& w = writerOf(*txn, "db.c");
        ASSERT_TRUE(test::updateCurrent(w, idKey("1"), J(R"({"_id": 1, "v": 1})")).isOK());
        ASSERT_TRUE(w.insert(J(R"({"_id": 2, "v": 1})"), {}).isOK());
        auto prepared = txn->prepare(kRecord, J(R"({"lsid": "s", "txnNumber": 7})"));
        ASSERT_TRUE(prepared.isOK()) << prepared.getStatus().toString();
        prepareTs = prepared.getValue();
        record = engine->sideRecords("txn.prepared/");
        ASSERT_EQ(record.size(), 1u);
    }  // destroyed: aborted, its record deleted; a crash would have left it
    EXPECT_TRUE(engine->sideRecords("txn.prepared/").empty());
    ASSERT_TRUE(engine->writeSideRecords(record).isOK());  // the state a crash leaves
    reopen();

    auto recovered = engine->recoverPreparedTransactions("txn.prepared/", nullptr);
    ASSERT_TRUE(recovered.isOK()) << recovered.getStatus().toString();
    ASSERT_EQ(recovered.getValue().size(), 1u);
    Engine::RecoveredTransaction& r = recovered.getValue()[0];
    EXPECT_EQ(r.meta["txnNumber"].numberInt(), 7);
    EXPECT_EQ(r.prepareTs, prepareTs);
    EXPECT_TRUE(r.txn->isPrepared());
    EXPECT_EQ(engine->preparedTransactionCount(), 1u);
    {
        auto inlineReads = std::make_shared<PrepareReads>(PrepareReads::Policy::noWait());
        auto snap = engine->snapshot(std::nullopt, inlineReads);
        EXPECT_TRUE(scanAll(*snap, "db.c").empty());
        EXPECT_TRUE(inlineReads->conflict().is(ErrorCodes::InlineWouldBlock));
    }
    auto before = engine->snapshot(Timestamp{prepareTs.value - 1});
    EXPECT_EQ(scanAll(*before, "db.c"), std::vector<std::string>{R"({ "_id" : 1, "v" : 0 })"});
    // Its keys are claimed again: a plain writer of the document conflicts.
    auto plain = writerFor("db.c");
    EXPECT_TRUE(test::updateCurrent(*plain, idKey("1"), J(R"({"_id": 1, "v": 9})"))
                    .getStatus()
                    .is(ErrorCodes::WriteConflict));
    plain.reset();
    before.reset();

    auto committed = r.txn->commitPrepared(prepareTs, {}, WriteOptions{true});
    ASSERT_TRUE(committed.isOK()) << committed.getStatus().toString();
    r.txn.reset();
    EXPECT_EQ(scanAll("db.c"),
              (std::vector<std::string>{R"({ "_id" : 1, "v" : 1 })", R"({ "_id" : 2, "v" : 1 })"}));
    EXPECT_EQ(engine->stats(*engine->getCollection("db.c")).count, 2);
    EXPECT_TRUE(engine->sideRecords("txn.prepared/").empty());
    recovered.getValue().clear();
    reopen();
    auto again = engine->recoverPreparedTransactions("txn.prepared/", nullptr);
    ASSERT_TRUE(again.isOK());
    EXPECT_TRUE(again.getValue().empty());
    EXPECT_EQ(scanAll("db.c").size(), 2u);
}

// A side record added to a transaction is written by its commit, with its documents, and by
// nothing else: not by an abort, and a prepared transaction keeps it across a restart. A
// transaction whose only write is such a record is not read-only: it is prepared like any other.
TEST_F(TransactionTest, AnAddedSideRecordCommitsWithTheTransactionAndOnlyThen) {
    create("db.c");
    {
        auto aborted = begin();
        ASSERT_TRUE(aborted->addSideRecord("rec/a", "aborted").isOK());
        EXPECT_TRUE(aborted->hasWrites());
        aborted->abort();
        EXPECT_TRUE(aborted->addSideRecord("rec/b", "late").is(ErrorCodes::NoSuchTransaction));
    }
    EXPECT_TRUE(engine->sideRecords("rec/").empty());
    {
        auto committed = begin();
        ASSERT_TRUE(writerOf(*committed, "db.c").insert(J(R"({"_id": 1})"), {}).isOK());
        ASSERT_TRUE(committed->addSideRecord("rec/c", "committed").isOK());
        EXPECT_TRUE(committed->addSideRecord("rec/d", "").is(ErrorCodes::BadValue));
        ASSERT_TRUE(committed->commit({}, WriteOptions{}).isOK());
    }
    using Records = std::vector<std::pair<std::string, std::string>>;
    EXPECT_EQ(engine->sideRecords("rec/"), (Records{{"rec/c", "committed"}}));

    // Only a side record: prepared (not finished as read-only), kept across a restart.
    Timestamp prepareTs;
    Records prepareRecord;
    {
        auto txn = begin();
        ASSERT_TRUE(txn->addSideRecord("rec/e", "prepared").isOK());
        auto prepared = txn->prepare(kRecord, J(R"({"txnNumber": 3})"));
        ASSERT_TRUE(prepared.isOK()) << prepared.getStatus().toString();
        EXPECT_TRUE(txn->isPrepared());
        EXPECT_TRUE(txn->addSideRecord("rec/f", "after").is(ErrorCodes::NoSuchTransaction));
        prepareTs = prepared.getValue();
        prepareRecord = engine->sideRecords("txn.prepared/");
    }
    EXPECT_EQ(engine->sideRecords("rec/"), (Records{{"rec/c", "committed"}}));
    ASSERT_TRUE(engine->writeSideRecords(prepareRecord).isOK());  // the state a crash leaves
    reopen();
    auto recovered = engine->recoverPreparedTransactions("txn.prepared/", nullptr);
    ASSERT_TRUE(recovered.isOK()) << recovered.getStatus().toString();
    ASSERT_EQ(recovered.getValue().size(), 1u);
    std::unique_ptr<Transaction>& txn = recovered.getValue()[0].txn;
    EXPECT_EQ(txn->addedSideRecords(), (Records{{"rec/e", "prepared"}}));
    ASSERT_TRUE(txn->commitPrepared(prepareTs, {}, WriteOptions{}).isOK());
    EXPECT_EQ(engine->sideRecords("rec/"),
              (Records{{"rec/c", "committed"}, {"rec/e", "prepared"}}));
    EXPECT_TRUE(engine->sideRecords("txn.prepared/").empty());
}

// onAbort runs once for every way a transaction ends without committing — abort(), destruction
// while open, a prepared transaction's abort — at once when registered after such an end, and
// never for a commit (plain or prepared).
TEST_F(TransactionTest, OnAbortRunsForEveryEndButACommit) {
    create("db.c");
    int runs = 0;
    auto count = [&] { ++runs; };
    {
        auto txn = begin();
        txn->onAbort(count);
        txn->abort();
        EXPECT_EQ(runs, 1);
        txn->abort();  // ended already: not again
        EXPECT_EQ(runs, 1);
        txn->onAbort(count);  // after an abort: at once
        EXPECT_EQ(runs, 2);
    }
    EXPECT_EQ(runs, 2);
    {
        auto txn = begin();
        txn->onAbort(count);
    }  // destroyed open
    EXPECT_EQ(runs, 3);
    {
        auto txn = begin();
        ASSERT_TRUE(writerOf(*txn, "db.c").insert(J(R"({"_id": 1})"), {}).isOK());
        txn->onAbort(count);
        ASSERT_TRUE(txn->prepare(kRecord, J(R"({"txnNumber": 1})")).isOK());
        txn->abort();
    }
    EXPECT_EQ(runs, 4);
    {
        auto txn = begin();
        ASSERT_TRUE(writerOf(*txn, "db.c").insert(J(R"({"_id": 2})"), {}).isOK());
        txn->onAbort(count);
        ASSERT_TRUE(txn->commit({}, WriteOptions{}).isOK());
        txn->onAbort(count);  // after a commit: never
    }
    {
        auto txn = begin();
        ASSERT_TRUE(writerOf(*txn, "db.c").insert(J(R"({"_id": 3})"), {}).isOK());
        txn->onAbort(count);
        auto prepared = txn->prepare(kRecord, J(R"({"txnNumber": 2})"));
        ASSERT_TRUE(prepared.isOK());
        ASSERT_TRUE(txn->commitPrepared(prepared.getValue(), {}, WriteOptions{}).isOK());
    }
    EXPECT_EQ(runs, 4);
}

// A coordinator's own part (txn/local_participant.h): its record goes to the WAL without a sync
// of its own (the decision's sync, later in the same log, makes it durable); a participant's
// prepare is synced before it answers.
TEST_F(TransactionTest, AnUnsyncedPrepareWritesItsRecordWithoutASync) {
    create("db.c");
    insert("db.c", R"({"_id": 1, "v": 0})");
    for (bool synced : {false, true}) {
        auto txn = begin();
        CollectionWriter& w = writerOf(*txn, "db.c");
        ASSERT_TRUE(test::updateCurrent(w, idKey("1"), J(R"({"_id": 1, "v": 1})")).isOK());
        uint64_t syncs = engine->walSyncCount();
        auto prepared = txn->prepare(kRecord, J(R"({"txnNumber": 1})"), synced);
        ASSERT_TRUE(prepared.isOK()) << prepared.getStatus().toString();
        EXPECT_EQ(engine->walSyncCount() - syncs, synced ? 1u : 0u) << "synced " << synced;
        EXPECT_EQ(engine->sideRecords("txn.prepared/").size(), 1u);
        EXPECT_EQ(engine->preparedTransactionCount(), 1u);
        txn->abort();
    }
}

}  // namespace
}  // namespace tessera::storage
