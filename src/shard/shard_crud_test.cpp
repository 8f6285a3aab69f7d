// The shard's behaviour through the real command layer and storage: orphans invisible to every
// read path (and untouched by writes), range paging/deletion, retryable write replay.

#include <gtest/gtest.h>

#include "base/failpoint.h"
#include "command/crud_test_util.h"
#include "command/fail_command.h"
#include "command/service_entry_point.h"
#include "shard/ownership_filter.h"
#include "shard/range_ops.h"
#include "shard/shard_test_util.h"
#include "shard/sharding_state.h"

namespace tessera::shard {
namespace {

using command::test::CrudFixture;

using test::FixedHooks;

class ShardCrudTest : public CrudFixture {
  protected:
    void SetUp() override {
        CrudFixture::SetUp();
        // s0 owns a in [0, 10); s1 owns the rest.
        table = test::makeTable("test.c", R"({"a": 1})", {R"({"a": 0})", R"({"a": 10})"},
                                {"s1", "s0", "s1"});
        hooks.filter = std::make_shared<ChunkOwnershipFilter>(table, "s0");
        std::string docs;
        for (int i = 0; i < 20; ++i) {
            docs += (i ? "," : "") + std::string(R"({"_id": )") + std::to_string(i) + R"(, "a": )" +
                    std::to_string(i) + "}";
        }
        ok(R"({"insert": "c", "documents": [)" + docs + "]}");
        service.hooks = &hooks;
    }
    int64_t count(std::string_view json) { return ok(json)["n"].numberLong(); }

    std::shared_ptr<const placement::RoutingTable> table;
    FixedHooks hooks;
};

TEST_F(ShardCrudTest, ReadsSkipOrphans) {
    EXPECT_EQ(count(R"({"count": "c"})"), 10);  // no metadata fast path with a filter
    EXPECT_EQ(count(R"({"count": "c", "query": {"a": {"$gte": 5}}})"), 5);
    bson::BsonObj r = ok(R"({"find": "c", "filter": {"_id": 15}})");
    EXPECT_TRUE(r["cursor"].objValue()["firstBatch"].objValue().isEmpty());  // IDHACK
    r = ok(R"({"find": "c", "filter": {"_id": 5}})");
    EXPECT_FALSE(r["cursor"].objValue()["firstBatch"].objValue().isEmpty());
    createIndex("test.c", R"({"a": 1})", "a_1");
    EXPECT_EQ(count(R"({"count": "c", "query": {"a": {"$gte": 5}}, "hint": {"a": 1}})"), 5);
    // A covered projection through the index must not return orphans either.
    r = ok(R"({"find": "c", "filter": {"a": {"$gte": 8, "$lt": 12}}, "projection": {"_id": 0,
              "a": 1}, "hint": {"a": 1}})");
    int n = 0;
    for (auto e : r["cursor"].objValue()["firstBatch"].objValue()) {
        (void)e;
        ++n;
    }
    EXPECT_EQ(n, 2);
    // Unfiltered collections keep the fast path and see everything.
    service.hooks = nullptr;
    EXPECT_EQ(count(R"({"count": "c"})"), 20);
}

TEST_F(ShardCrudTest, WritesDoNotTouchOrphans) {
    bson::BsonObj r = ok(R"({"update": "c", "updates": [{"q": {}, "u": {"$set": {"x": 1}},
                           "multi": true}]})");
    EXPECT_EQ(r["nModified"].numberLong(), 10);
    r = ok(R"({"delete": "c", "deletes": [{"q": {"a": {"$gte": 5}}, "limit": 0}]})");
    EXPECT_EQ(r["n"].numberLong(), 5);
    service.hooks = nullptr;
    EXPECT_EQ(count(R"({"count": "c"})"), 15);
    EXPECT_EQ(count(R"({"count": "c", "query": {"x": 1}})"), 5);
}

TEST_F(ShardCrudTest, ReadRangePagesInIdOrder) {
    auto range = ShardKeyRange::make(table->shardKeyPattern(), test::J(R"({"a": 5})"),
                                     test::J(R"({"a": 15})"));
    ASSERT_TRUE(range.isOK());
    auto coll = engine->getCollection("test.c");
    std::vector<int64_t> ids;
    bson::BsonObj after;
    int pages = 0;
    for (;;) {
        auto snap = engine->snapshot();
        RangePage page = readRangePage(*snap, *coll, table->shardKeyPattern(), range.getValue(),
                                       after.isEmpty() ? bson::BsonElement() : after.firstElement(),
                                       {}, 60);  // ~2 documents per page
        ++pages;
        for (const auto& d : page.docs) ids.push_back(d["_id"].numberLong());
        if (page.done) break;
        ASSERT_TRUE(page.lastId.has_value());
        after = *page.lastId;
        ASSERT_LT(pages, 50);
    }
    std::vector<int64_t> expected;
    for (int i = 5; i < 15; ++i) expected.push_back(i);
    EXPECT_EQ(ids, expected);
    EXPECT_GT(pages, 3);
}

TEST_F(ShardCrudTest, DeleteRangeRemovesOnlyUnowned) {
    auto range = ShardKeyRange::make(table->shardKeyPattern(), test::J(R"({"a": 5})"),
                                     test::J(R"({"a": {"$maxKey": 1}})"));
    ASSERT_TRUE(range.isOK());
    auto deleted = deleteUnownedInRange(*engine, "test.c", table->shardKeyPattern(),
                                        range.getValue(), hooks.filter.get());
    ASSERT_TRUE(deleted.isOK());
    EXPECT_EQ(deleted.getValue(), 10);  // 10..19; 5..9 are owned
    service.hooks = nullptr;
    EXPECT_EQ(count(R"({"count": "c"})"), 10);
}

class RetryableWriteTest : public CrudFixture {
  protected:
    void SetUp() override {
        CrudFixture::SetUp();
        service.role = command::ClusterRole::kShard;
        state = std::make_unique<ShardingState>(service, "");
        ASSERT_TRUE(state->startup().isOK());
        service.hooks = state.get();
        service.roleState = state.get();
    }
    // A process restart as the shard sees it: only what is durable survives (the in-memory
    // transaction table is rebuilt by startup()).
    void restartShardingState() {
        service.hooks = nullptr;
        service.roleState = nullptr;
        state = std::make_unique<ShardingState>(service, "");
        ASSERT_TRUE(state->startup().isOK());
        service.hooks = state.get();
        service.roleState = state.get();
    }
    void TearDown() override {
        service.hooks = nullptr;
        state.reset();
        CrudFixture::TearDown();
    }
    // The reply less its operationTime (a shard's clock, which these tests do not compare).
    bson::BsonObj runEntry(std::string_view json) { return runEntryOn("test", json); }
    bson::BsonObj runEntryOn(std::string_view db, std::string_view json) {
        command::ServiceEntryPoint sep(service);
        bson::BsonObj body = test::J(json);
        bson::BsonObj reply = sep.runCommand(db, body, nullptr);
        bson::BsonBuilder b;
        for (bson::BsonElement e : reply) {
            if (e.fieldName() != "operationTime") b.appendElement(e);
        }
        return b.obj();
    }
    int64_t count(std::string_view json) { return ok(json)["n"].numberLong(); }
    std::unique_ptr<ShardingState> state;
};

constexpr const char* kLsid = R"("lsid": {"id": {"$binary": {"base64": "AAAAAAAAAAAAAAAAAAAAAQ==",
    "subType": "04"}}})";

TEST_F(RetryableWriteTest, RetriedInsertAppliesOnce) {
    std::string insert = std::string(R"({"insert": "r", "documents": [{"_id": 1}], )") + kLsid +
                         R"(, "txnNumber": {"$numberLong": "1"}})";
    bson::BsonObj first = runEntry(insert);
    EXPECT_EQ(first["n"].numberLong(), 1) << first.toJson();
    bson::BsonObj again = runEntry(insert);
    // No duplicate key error: the statement is answered from its record.
    EXPECT_EQ(again.toJson(), R"({ "n" : 1, "retriedStmtIds" : [ 0 ], "ok" : 1.0 })");
    std::string inc = std::string(R"({"update": "r", "updates": [{"q": {"_id": 1},
        "u": {"$inc": {"x": 1}}}], )") +
                      kLsid + R"(, "txnNumber": {"$numberLong": "2"}})";
    runEntry(inc);
    runEntry(inc);
    EXPECT_EQ(count(R"({"count": "r", "query": {"x": 1}})"), 1);
    // An older txnNumber is rejected.
    bson::BsonObj old = runEntry(insert);
    EXPECT_EQ(old["code"].numberLong(), static_cast<int>(ErrorCodes::TransactionTooOld))
        << old.toJson();

    // The record survives a restart (config.transactions).
    restartShardingState();
    runEntry(inc);
    EXPECT_EQ(count(R"({"count": "r", "query": {"x": 1}})"), 1);
}

// A findAndModify's record holds its reply without `ok` (what its write's batch could build):
// its retry after a restart is still a success, with the same value.
TEST_F(RetryableWriteTest, FindAndModifyRetryAfterACrashIsASuccess) {
    runEntry(R"({"insert": "f", "documents": [{"_id": 1, "x": 0}]})");
    std::string fam = std::string(R"({"findAndModify": "f", "query": {"_id": 1},
        "update": {"$inc": {"x": 1}}, )") +
                      kLsid + R"(, "txnNumber": {"$numberLong": "9"}})";
    bson::BsonObj first = runEntry(fam);
    ASSERT_EQ(first["ok"].numberLong(), 1) << first.toJson();
    restartShardingState();
    bson::BsonObj retried = runEntry(fam);
    EXPECT_EQ(retried["ok"].numberLong(), 1) << retried.toJson();
    EXPECT_EQ(retried["value"].toString(false), first["value"].toString(false)) << retried.toJson();
    EXPECT_EQ(count(R"({"count": "f", "query": {"x": 1}})"), 1);
}

// The process dies after a single-statement retryable write committed, before its reply: the
// write's own batch recorded that the statement ran, so the retry after the restart is
// answered without applying the write again.
TEST_F(RetryableWriteTest, RetryAfterACrashAppliesOnce) {
    runEntry(R"({"insert": "c", "documents": [{"_id": 1, "x": 0}]})");
    std::string inc = std::string(R"({"update": "c", "updates": [{"q": {"_id": 1},
        "u": {"$inc": {"x": 1}}}], )") +
                      kLsid + R"(, "txnNumber": {"$numberLong": "7"}})";
    bson::BsonObj first = runEntry(inc);
    EXPECT_EQ(first["nModified"].numberLong(), 1) << first.toJson();

    // Restart: only what is durable survives (the in-memory table is rebuilt at startup).
    restartShardingState();
    bson::BsonObj retried = runEntry(inc);
    EXPECT_EQ(retried["ok"].numberLong(), 1) << retried.toJson();
    EXPECT_EQ(retried["n"].numberLong(), 1) << retried.toJson();
    EXPECT_EQ(retried["nModified"].numberLong(), 1) << retried.toJson();
    EXPECT_EQ(count(R"({"count": "c", "query": {"x": 1}})"), 1);

    // An upsert's retry after a restart reports the upsert, with its _id.
    std::string upsert = std::string(R"({"update": "c", "updates": [{"q": {"_id": 5},
        "u": {"$set": {"x": 5}}, "upsert": true}], )") +
                         kLsid + R"(, "txnNumber": {"$numberLong": "8"}})";
    bson::BsonObj upserted = runEntry(upsert);
    EXPECT_EQ(upserted["upserted"].toString(false), R"([ { "index" : 0, "_id" : 5 } ])")
        << upserted.toJson();
    restartShardingState();
    bson::BsonObj replayed = runEntry(upsert);
    EXPECT_EQ(replayed["n"].numberLong(), 1) << replayed.toJson();
    EXPECT_EQ(replayed["nModified"].numberLong(), 0) << replayed.toJson();
    EXPECT_EQ(replayed["upserted"].toString(false), R"([ { "index" : 0, "_id" : 5 } ])")
        << replayed.toJson();
    EXPECT_EQ(count(R"({"count": "c", "query": {"_id": 5}})"), 1);

    // A statement that wrote nothing records nothing: its retry runs again.
    std::string miss = std::string(R"({"update": "c", "updates": [{"q": {"_id": 99},
        "u": {"$inc": {"x": 1}}}], )") +
                       kLsid + R"(, "txnNumber": {"$numberLong": "9"}})";
    EXPECT_EQ(runEntry(miss)["n"].numberLong(), 0);
}

// bulkWrite's ops are statements too, each recorded in its write's batch: after a crash, the
// retry runs only the ops that had not run (here the one a duplicate key had stopped), answers
// the others from their records (retriedStmtIds), and applies nothing twice.
TEST_F(RetryableWriteTest, BulkWriteRetryAfterACrashRunsOnlyTheOpsThatDidNotRun) {
    runEntry(R"({"insert": "c", "documents": [{"_id": 1, "x": 0}, {"_id": 3, "blocker": true}]})");
    std::string bulk = std::string(R"({"bulkWrite": 1, "nsInfo": [{"ns": "test.c"}], "ops": [
        {"update": 0, "filter": {"_id": 1}, "updateMods": {"$inc": {"x": 1}}},
        {"insert": 0, "document": {"_id": 2}},
        {"insert": 0, "document": {"_id": 3}},
        {"update": 0, "filter": {"_id": 4}, "updateMods": {"$set": {"x": 4}}, "upsert": true}],
        "ordered": true, )") +
                       kLsid + R"(, "txnNumber": {"$numberLong": "11"}})";
    bson::BsonObj first = runEntryOn("admin", bulk);
    EXPECT_EQ(first["nErrors"].numberLong(), 1) << first.toJson();
    EXPECT_EQ(first["nInserted"].numberLong(), 1) << first.toJson();
    ok(R"({"delete": "c", "deletes": [{"q": {"_id": 3}, "limit": 1}]})");

    restartShardingState();
    bson::BsonObj retried = runEntryOn("admin", bulk);
    EXPECT_EQ(retried["nErrors"].numberLong(), 0) << retried.toJson();
    EXPECT_EQ(retried["nMatched"].numberLong(), 1) << retried.toJson();
    EXPECT_EQ(retried["nModified"].numberLong(), 1) << retried.toJson();
    EXPECT_EQ(retried["nInserted"].numberLong(), 2) << retried.toJson();
    EXPECT_EQ(retried["nUpserted"].numberLong(), 1) << retried.toJson();
    EXPECT_EQ(retried["retriedStmtIds"].toString(false), "[ 0, 1 ]") << retried.toJson();
    EXPECT_EQ(count(R"({"count": "c", "query": {"x": 1}})"), 1);  // incremented once
    EXPECT_EQ(count(R"({"count": "c"})"), 4);

    // Retried again: every op answered from its record, the upsert with its _id.
    bson::BsonObj again = runEntryOn("admin", bulk);
    EXPECT_EQ(again["retriedStmtIds"].toString(false), "[ 0, 1, 2, 3 ]") << again.toJson();
    EXPECT_EQ(again["nUpserted"].numberLong(), 1) << again.toJson();
    EXPECT_EQ(count(R"({"count": "c", "query": {"x": 1}})"), 1);
}

// findAndModify records its whole reply in its document write's batch too: after a crash before
// the reply was persisted, the retry gets the first reply byte for byte and the document was
// changed once (new: false / new: true with `fields` / remove / upsert).
TEST_F(RetryableWriteTest, FindAndModifyRetryAfterACrashGetsTheFirstReplyAndAppliesOnce) {
    runEntry(R"({"insert": "c", "documents": [{"_id": 1, "x": 0, "y": "a"},
        {"_id": 2, "x": 0, "y": "b"}]})");
    int64_t txn = 20;
    // Runs `cmd` once with its reply unpersisted, restarts, retries: the retry's reply must be
    // the first one.
    auto crashAndRetry = [&](std::string_view cmd) {
        std::string body = std::string(cmd.substr(0, cmd.size() - 1)) + ", " + kLsid +
                           R"(, "txnNumber": {"$numberLong": ")" + std::to_string(++txn) + "\"}}";
        bson::BsonObj first = runEntry(body);
        EXPECT_EQ(first["ok"].numberLong(), 1) << first.toJson();
        restartShardingState();
        bson::BsonObj retried = runEntry(body);
        EXPECT_TRUE(retried.binaryEqual(first)) << first.toJson() << " vs " << retried.toJson();
        return first;
    };
    auto x = [&](int id) {
        bson::BsonObj r = ok(R"({"find": "c", "filter": {"_id": )" + std::to_string(id) + "}}");
        bson::BsonElement batch = r["cursor"].objValue()["firstBatch"];
        auto it = batch.objValue().begin();
        return it == batch.objValue().end() ? int64_t(-1) : (*it).objValue()["x"].numberLong();
    };

    bson::BsonObj preImage = crashAndRetry(
        R"({"findAndModify": "c", "query": {"_id": 1}, "update": {"$inc": {"x": 1}}})");
    EXPECT_EQ(preImage["value"].toString(false), R"({ "_id" : 1, "x" : 0, "y" : "a" })");
    EXPECT_EQ(x(1), 1);

    bson::BsonObj postImage = crashAndRetry(R"({"findandmodify": "c", "query": {"_id": 1},
        "update": {"$inc": {"x": 1}}, "new": true, "fields": {"_id": 0, "x": 1}})");
    EXPECT_EQ(postImage["value"].toString(false), R"({ "x" : 2 })");
    EXPECT_EQ(postImage["lastErrorObject"].toString(false),
              R"({ "n" : 1, "updatedExisting" : true })");
    EXPECT_EQ(x(1), 2);

    // A retry that ran again would remove the next document in the sort order.
    bson::BsonObj removed =
        crashAndRetry(R"({"findAndModify": "c", "query": {}, "sort": {"_id": 1}, "remove": true})");
    EXPECT_EQ(removed["value"].toString(false), R"({ "_id" : 1, "x" : 2, "y" : "a" })");
    EXPECT_EQ(removed["lastErrorObject"].toString(false), R"({ "n" : 1 })");
    EXPECT_EQ(x(1), -1);
    EXPECT_EQ(x(2), 0);

    // A retry that ran again would update the upserted document.
    bson::BsonObj upserted = crashAndRetry(R"({"findAndModify": "c", "query": {"_id": 5},
        "update": {"$inc": {"x": 1}}, "upsert": true, "new": true})");
    EXPECT_EQ(upserted["lastErrorObject"].toString(false),
              R"({ "n" : 1, "updatedExisting" : false, "upserted" : 5 })");
    EXPECT_EQ(upserted["value"].toString(false), R"({ "_id" : 5, "x" : 1 })");
    EXPECT_EQ(x(5), 1);

    // One that writes nothing records nothing (the record of the upsert stays): its retry runs
    // again.
    std::string lastRecord = service.engine->sideRecords("txn:").at(0).second;
    bson::BsonObj missed = crashAndRetry(
        R"({"findAndModify": "c", "query": {"_id": 99}, "update": {"$inc": {"x": 1}}})");
    EXPECT_EQ(missed["lastErrorObject"].toString(false),
              R"({ "n" : 0, "updatedExisting" : false })");
    EXPECT_TRUE(missed["value"].isNull()) << missed.toJson();
    auto records = service.engine->sideRecords("txn:");
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].second, lastRecord);
}

// A writeConcernError (failCommand) is appended to the reply after the write and its record: the
// retry gets the recorded reply without it (it waits for its own write concern), also after a
// restart, and the write was applied once.
TEST_F(RetryableWriteTest, ARetryAfterAWriteConcernErrorGetsTheReplyWithoutIt) {
    runEntry(R"({"insert": "c", "documents": [{"_id": 1, "x": 0}]})");
    service.enableTestCommands = true;
    command::failCommand.configure(FailPoint::Mode::kTimes, 1,
                                   std::string(test::J(R"({"failCommands": ["findAndModify"],
            "writeConcernError": {"code": 64, "errmsg": "waiting for replication timed out"}})")
                                                   .bytes()));
    std::string cmd = std::string(R"({"findAndModify": "c", "query": {"_id": 1},
        "update": {"$inc": {"x": 1}}, )") +
                      kLsid + R"(, "txnNumber": {"$numberLong": "30"}})";
    bson::BsonObj first = runEntry(cmd);
    command::failCommand.configure(FailPoint::Mode::kOff, 0, "");
    ASSERT_TRUE(first["writeConcernError"].isObject()) << first.toJson();
    bson::BsonObj inMemory = runEntry(cmd);
    EXPECT_FALSE(inMemory.hasField("writeConcernError")) << inMemory.toJson();
    EXPECT_EQ(inMemory["value"].toString(false), first["value"].toString(false));
    restartShardingState();
    bson::BsonObj retried = runEntry(cmd);
    EXPECT_TRUE(retried.binaryEqual(inMemory)) << inMemory.toJson() << " vs " << retried.toJson();
    EXPECT_EQ(count(R"({"count": "c", "query": {"x": 1}})"), 1);
}

// A batch runs at most once per statement (MongoDB's stmtIds): a retry after some statements ran
// runs only the others — after a restart too, since each statement's record is in its write's
// batch — and a router's sub-commands of one client command (same txnNumber, their own
// `stmtIds`) each run theirs.
TEST_F(RetryableWriteTest, EveryStatementOfABatchRunsAtMostOnce) {
    runEntry(R"({"insert": "c", "documents": [{"_id": 2, "x": 0}]})");
    auto withTxn = [&](std::string_view cmd, int txn) {
        return std::string(cmd.substr(0, cmd.size() - 1)) + ", " + kLsid +
               R"(, "txnNumber": {"$numberLong": ")" + std::to_string(txn) + "\"}}";
    };
    // Statement 1 fails (duplicate _id 2): 0 ran, 1 and 2 did not (ordered).
    std::string insert =
        withTxn(R"({"insert": "c", "documents": [{"_id": 1}, {"_id": 2}, {"_id": 3}]})", 40);
    bson::BsonObj first = runEntry(insert);
    EXPECT_EQ(first["n"].numberLong(), 1) << first.toJson();
    ASSERT_TRUE(first["writeErrors"].isArray()) << first.toJson();
    runEntry(R"({"delete": "c", "deletes": [{"q": {"_id": 2}, "limit": 1}]})");
    restartShardingState();
    bson::BsonObj retried = runEntry(insert);
    EXPECT_EQ(retried.toJson(), R"({ "n" : 3, "retriedStmtIds" : [ 0 ], "ok" : 1.0 })");
    EXPECT_EQ(count(R"({"count": "c"})"), 3);

    // Two sub-commands of one client update (statements 0 and 1), then the client's retry
    // (both, as one sub-command): each $inc is applied once.
    std::string sub0 = withTxn(R"({"update": "c", "updates": [{"q": {"_id": 1},
        "u": {"$inc": {"x": 1}}}], "stmtIds": [0]})",
                               41);
    std::string sub1 = withTxn(R"({"update": "c", "updates": [{"q": {"_id": 3},
        "u": {"$inc": {"x": 1}}, "upsert": true}], "stmtIds": [1]})",
                               41);
    EXPECT_EQ(runEntry(sub0)["nModified"].numberLong(), 1);
    EXPECT_EQ(runEntry(sub1)["nModified"].numberLong(), 1);
    restartShardingState();
    std::string both = withTxn(R"({"update": "c", "updates": [{"q": {"_id": 1},
        "u": {"$inc": {"x": 1}}}, {"q": {"_id": 3}, "u": {"$inc": {"x": 1}}},
        {"q": {"_id": 4}, "u": {"$inc": {"x": 1}}, "upsert": true}]})",
                               41);
    bson::BsonObj all = runEntry(both);
    EXPECT_EQ(all["n"].numberLong(), 3) << all.toJson();
    EXPECT_EQ(all["nModified"].numberLong(), 2) << all.toJson();
    EXPECT_EQ(all["upserted"].toString(false), R"([ { "index" : 2, "_id" : 4 } ])");
    EXPECT_EQ(all["retriedStmtIds"].toString(false), "[ 0, 1 ]");
    EXPECT_EQ(count(R"({"count": "c", "query": {"x": 1}})"), 3);  // 1, 3 and the upserted 4
    // The retried upsert replays its _id.
    bson::BsonObj again = runEntry(both);
    EXPECT_EQ(again["upserted"].toString(false), R"([ { "index" : 2, "_id" : 4 } ])");
    EXPECT_EQ(again["retriedStmtIds"].toString(false), "[ 0, 1, 2 ]");

    // Deletes: a retry does not delete the next matching document.
    std::string del = withTxn(R"({"delete": "c", "deletes": [{"q": {"x": 1}, "limit": 1}]})", 42);
    EXPECT_EQ(runEntry(del)["n"].numberLong(), 1);
    restartShardingState();
    EXPECT_EQ(runEntry(del)["n"].numberLong(), 1);
    EXPECT_EQ(count(R"({"count": "c", "query": {"x": 1}})"), 2);

    // stmtIds that do not match the statements are refused before anything runs.
    bson::BsonObj bad =
        runEntry(withTxn(R"({"insert": "c", "documents": [{"_id": 9}], "stmtIds": [0, 1]})", 43));
    EXPECT_EQ(bad["code"].numberLong(), static_cast<int>(ErrorCodes::InvalidLength))
        << bad.toJson();
    EXPECT_EQ(count(R"({"count": "c", "query": {"_id": 9}})"), 0);
    bson::BsonObj onFind = runEntry(R"({"find": "c", "stmtIds": [0]})");
    EXPECT_EQ(onFind["code"].numberLong(), static_cast<int>(ErrorCodes::InvalidOptions))
        << onFind.toJson();
}

TEST_F(RetryableWriteTest, WithoutIdentityVersionsAreIgnored) {
    bson::BsonObj r = runEntry(R"({"insert": "v", "documents": [{"_id": 1}],
        "shardVersion": {"e": {"$oid": "000000000000000000000001"}, "t": {"$timestamp":
        {"t": 1, "i": 1}}, "v": {"$timestamp": {"t": 1, "i": 0}}}})");
    EXPECT_EQ(r["ok"].numberLong(), 1) << r.toJson();
}

}  // namespace
}  // namespace tessera::shard
