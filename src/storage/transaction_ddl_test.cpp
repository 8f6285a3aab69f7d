// Collections and indexes created inside a transaction: invisible to everyone else until the
// commit, gone with an abort, never the second of two creators, never prepared, and durable
// with the commit's batch.

#include <gtest/gtest.h>

#include "storage/storage_test_util.h"
#include "storage/transaction.h"

namespace tessera::storage {
namespace {

using test::EngineTest;
using test::J;

class TransactionDdlTest : public EngineTest {
  protected:
    std::unique_ptr<Transaction> begin() {
        auto sw = engine->beginTransaction(std::nullopt, nullptr);
        EXPECT_TRUE(sw.isOK()) << sw.getStatus().toString();
        return std::move(sw.getValue());
    }
    CollectionPtr createIn(Transaction& txn, std::string_view ns) {
        auto sw = txn.createCollection(ns, bson::BsonObj());
        EXPECT_TRUE(sw.isOK()) << sw.getStatus().toString();
        return sw.isOK() ? sw.getValue() : nullptr;
    }
    void insertIn(Transaction& txn, const CollectionPtr& coll, std::string_view json) {
        auto w = txn.writer(coll);
        ASSERT_TRUE(w.isOK()) << w.getStatus().toString();
        auto sw = w.getValue()->insert(J(json), WriteOptions{});
        ASSERT_TRUE(sw.isOK()) << sw.getStatus().toString();
    }
    static IndexSpec spec(std::string name, std::string_view keyPattern, bool unique = false) {
        IndexSpec s;
        s.name = std::move(name);
        s.keyPattern = J(keyPattern);
        s.unique = unique;
        return s;
    }
};

TEST_F(TransactionDdlTest, ACreatedCollectionAppearsWithItsDocumentsAtCommit) {
    auto txn = begin();
    CollectionPtr coll = createIn(*txn, "db.t");
    ASSERT_TRUE(coll);
    insertIn(*txn, coll, R"({"_id": 1})");
    EXPECT_EQ(engine->getCollection("db.t"), nullptr);
    EXPECT_TRUE(engine->listCollections("db").empty());
    ASSERT_NE(txn->createdCollection("db.t"), nullptr);
    {
        auto mine = txn->snapshot();
        EXPECT_EQ(mine->scan(*coll, true)->next()->doc.toJson(), R"({ "_id" : 1 })");
    }
    EXPECT_TRUE(txn->hasWrites());

    ASSERT_TRUE(txn->commit({}, WriteOptions{}).isOK());
    CollectionPtr published = engine->getCollection("db.t");
    ASSERT_NE(published, nullptr);
    EXPECT_EQ(scanAll("db.t"), std::vector<std::string>{R"({ "_id" : 1 })"});
    EXPECT_EQ(engine->stats(*published).count, 1);

    txn.reset();
    reopen();  // the entry, the document and the count are in the commit's batch
    published = engine->getCollection("db.t");
    ASSERT_NE(published, nullptr);
    EXPECT_EQ(engine->stats(*published).count, 1);
    // Ids stay unique after the restart although the commit did not move the next id.
    CollectionPtr next = create("db.u");
    ASSERT_TRUE(next);
    EXPECT_NE(next->id, published->id);
}

TEST_F(TransactionDdlTest, ACollectionCreatedAloneCommits) {
    auto txn = begin();
    ASSERT_TRUE(createIn(*txn, "db.t"));
    ASSERT_TRUE(txn->commit({}, WriteOptions{}).isOK());
    EXPECT_NE(engine->getCollection("db.t"), nullptr);
}

TEST_F(TransactionDdlTest, AnAbortLeavesNothingAndFreesTheName) {
    auto txn = begin();
    CollectionPtr coll = createIn(*txn, "db.t");
    insertIn(*txn, coll, R"({"_id": 1})");
    txn->abort();
    EXPECT_EQ(engine->getCollection("db.t"), nullptr);
    auto again = begin();
    ASSERT_TRUE(createIn(*again, "db.t"));
    again.reset();  // destroyed uncommitted: aborted
    EXPECT_EQ(engine->getCollection("db.t"), nullptr);
    EXPECT_TRUE(create("db.t"));
}

TEST_F(TransactionDdlTest, ASecondCreatorConflictsAndAnExistingNameExists) {
    create("db.old");
    auto a = begin();
    auto b = begin();
    ASSERT_TRUE(createIn(*a, "db.t"));
    EXPECT_TRUE(
        b->createCollection("db.t", bson::BsonObj()).getStatus().is(ErrorCodes::WriteConflict));
    EXPECT_TRUE(
        b->createCollection("db.old", bson::BsonObj()).getStatus().is(ErrorCodes::NamespaceExists));
    EXPECT_TRUE(
        a->createCollection("db.t", bson::BsonObj()).getStatus().is(ErrorCodes::NamespaceExists));
}

TEST_F(TransactionDdlTest, APlainCreateFirstMakesTheTransactionsCommitConflict) {
    auto txn = begin();
    CollectionPtr coll = createIn(*txn, "db.t");
    insertIn(*txn, coll, R"({"_id": 1})");
    CollectionPtr plain = create("db.t");  // first committer wins
    ASSERT_TRUE(plain);
    EXPECT_TRUE(txn->commit({}, WriteOptions{}).getStatus().is(ErrorCodes::WriteConflict));
    EXPECT_EQ(engine->getCollection("db.t")->id, plain->id);
    EXPECT_TRUE(scanAll("db.t").empty());
}

TEST_F(TransactionDdlTest, APlainCreateAfterTheCommitFindsTheCollection) {
    auto txn = begin();
    ASSERT_TRUE(createIn(*txn, "db.t"));
    ASSERT_TRUE(txn->commit({}, WriteOptions{}).isOK());
    EXPECT_TRUE(engine->createCollection("db.t", bson::BsonObj())
                    .getStatus()
                    .is(ErrorCodes::NamespaceExists));
}

TEST_F(TransactionDdlTest, IndexesOnACreatedCollectionUntilItIsWritten) {
    create("db.old");
    auto txn = begin();
    CollectionPtr coll = createIn(*txn, "db.t");
    auto added = txn->createIndexes(coll, {spec("u_1", R"({"u": 1})", true)});
    ASSERT_TRUE(added.isOK()) << added.getStatus().toString();
    EXPECT_EQ(added.getValue().numIndexesBefore, 1);
    EXPECT_EQ(added.getValue().numIndexesAfter, 2);
    auto same = txn->createIndexes(coll, {spec("u_1", R"({"u": 1})", true)});
    ASSERT_TRUE(same.isOK());
    EXPECT_EQ(same.getValue().numIndexesAfter, 2);
    EXPECT_TRUE(txn->createIndexes(coll, {spec("u_1", R"({"v": 1})")})
                    .getStatus()
                    .is(ErrorCodes::IndexKeySpecsConflict));

    CollectionPtr current = txn->createdCollection("db.t");
    insertIn(*txn, current, R"({"_id": 1, "u": 5})");
    auto w = txn->writer(current);
    ASSERT_TRUE(w.isOK());
    // The new unique index is maintained by the transaction's writer.
    EXPECT_TRUE(w.getValue()
                    ->insert(J(R"({"_id": 2, "u": 5})"), WriteOptions{})
                    .getStatus()
                    .is(ErrorCodes::DuplicateKey));
    EXPECT_TRUE(txn->createIndexes(current, {spec("v_1", R"({"v": 1})")})
                    .getStatus()
                    .is(ErrorCodes::OperationNotSupportedInTransaction));
    EXPECT_TRUE(txn->createIndexes(engine->getCollection("db.old"), {spec("v_1", R"({"v": 1})")})
                    .getStatus()
                    .is(ErrorCodes::OperationNotSupportedInTransaction));
    auto existing =
        txn->createIndexes(engine->getCollection("db.old"), {spec("_id_", R"({"_id": 1})")});
    ASSERT_TRUE(existing.isOK()) << existing.getStatus().toString();
    EXPECT_EQ(existing.getValue().numIndexesAfter, 1);

    ASSERT_TRUE(txn->commit({}, WriteOptions{}).isOK());
    txn.reset();
    reopen();
    CollectionPtr published = engine->getCollection("db.t");
    ASSERT_NE(published, nullptr);
    ASSERT_EQ(published->indexes.size(), 2u);
    EXPECT_EQ(published->indexes[1].name, "u_1");
    auto plain = writerFor("db.t");
    EXPECT_TRUE(plain->insert(J(R"({"_id": 3, "u": 5})"), WriteOptions{})
                    .getStatus()
                    .is(ErrorCodes::DuplicateKey));
}

TEST_F(TransactionDdlTest, ATransactionThatCreatedACollectionIsNotPrepared) {
    auto txn = begin();
    ASSERT_TRUE(createIn(*txn, "db.t"));
    EXPECT_TRUE(txn->prepare("txn.prepared/x", J("{}"))
                    .getStatus()
                    .is(ErrorCodes::OperationNotSupportedInTransaction));
    EXPECT_EQ(engine->getCollection("db.t"), nullptr);
    EXPECT_EQ(engine->preparedTransactionCount(), 0u);
    EXPECT_TRUE(create("db.t"));  // the name is free again
}

TEST_F(TransactionDdlTest, AFenceDoomsATransactionCreatingACollectionItAffects) {
    auto txn = begin();
    ASSERT_TRUE(createIn(*txn, "db.t"));
    auto fenced = engine->fenceTransactionWriters(
        [](const CollectionInfo& c) { return c.db == "db"; }, "movePrimary",
        std::chrono::steady_clock::now() + std::chrono::seconds(5));
    ASSERT_TRUE(fenced.isOK());
    EXPECT_TRUE(txn->commit({}, WriteOptions{}).getStatus().is(ErrorCodes::NoSuchTransaction));
    EXPECT_EQ(engine->getCollection("db.t"), nullptr);
}

}  // namespace
}  // namespace tessera::storage
