// ServiceEntryPoint::runInline: which requests run on the io thread (Command::runsInline and the
// generic rules), that they answer exactly as the pool would, and that the counters count them
// once.
#include <gtest/gtest.h>

#include <chrono>

#include "command/crud_test_util.h"
#include "command/opcounters.h"
#include "command/registry.h"
#include "command/service_entry_point.h"
#include "storage/collection_writer.h"
#include "storage/transaction.h"
#include "wire/op_msg.h"

namespace tessera::command {
namespace {

using test::J;

class InlineExecutionTest : public test::CrudFixture {
  protected:
    void SetUp() override {
        CrudFixture::SetUp();
        service.role = ClusterRole::kStandalone;
        ASSERT_TRUE(run(R"({"insert": "c", "documents": [{"_id": 1, "x": 1}, {"_id": 2}]})").ok());
    }

    // The request as the network layer hands it over (an OP_MSG with `$db: "test"`).
    std::optional<bson::BsonObj> runInline(std::string_view json) {
        bson::BsonBuilder b;
        b.appendElements(J(json));
        b.append("$db", "test");
        auto parsed = wire::parseOpMsg(wire::buildOpMsg(1, 0, 0, b.obj()));
        EXPECT_TRUE(parsed.isOK()) << parsed.getStatus().toString();
        _msgs.push_back(std::make_unique<wire::OpMsgRequest>(std::move(parsed.getValue())));
        net::Request request{_msgs.back().get(), false, false};
        return entry.runInline(request, client);
    }

    ServiceEntryPoint entry{service};
    net::ClientContext client;
    std::vector<std::unique_ptr<wire::OpMsgRequest>> _msgs;
};

TEST_F(InlineExecutionTest, PointReadsAndSmallWritesByIdRunInline) {
    auto found = runInline(R"({"find": "c", "filter": {"_id": 1}})");
    ASSERT_TRUE(found);
    EXPECT_EQ((*found)["cursor"].objValue()["firstBatch"].toString(false),
              R"([ { "_id" : 1, "x" : 1 } ])");
    auto inserted = runInline(R"({"insert": "c", "documents": [{"_id": 3}]})");
    ASSERT_TRUE(inserted);
    EXPECT_EQ((*inserted)["n"].numberLong(), 1) << inserted->toJson();
    auto updated = runInline(R"({"update": "c", "updates": [{"q": {"_id": 3},
        "u": {"$set": {"y": 1}}, "upsert": true}]})");
    ASSERT_TRUE(updated);
    EXPECT_EQ((*updated)["nModified"].numberLong(), 1) << updated->toJson();
    auto removed =
        runInline(R"({"delete": "c", "deletes": [{"q": {"_id": {"$eq": 3}}, "limit": 1}]})");
    ASSERT_TRUE(removed);
    EXPECT_EQ((*removed)["n"].numberLong(), 1);
    auto fam = runInline(
        R"({"findAndModify": "c", "query": {"_id": 2}, "update": {"$inc": {"n": 1}}, "new": true})");
    ASSERT_TRUE(fam);
    EXPECT_EQ((*fam)["value"].toString(false), R"({ "_id" : 2, "n" : 1 })");
    // Errors are answered inline too, in the pool's shape.
    auto dup = runInline(R"({"insert": "c", "documents": [{"_id": 1}]})");
    ASSERT_TRUE(dup);
    EXPECT_EQ((*dup)["writeErrors"].objValue().firstElement().objValue()["code"].numberLong(),
              static_cast<int>(ErrorCodes::DuplicateKey));
}

TEST_F(InlineExecutionTest, WhatMayRunLongOrWaitGoesToThePool) {
    const char* pooled[] = {
        R"({"find": "c", "filter": {"x": 1}})",                 // a scan
        R"({"find": "c", "filter": {"_id": {"$gt": 1}}})",      // a range
        R"({"find": "missing", "filter": {"_id": 1}})",         // no such collection
        R"({"insert": "missing", "documents": [{"_id": 1}]})",  // creates the collection
        R"({"insert": "c", "documents": [{"_id": 9}], "writeConcern": {"j": true}})",
        R"({"insert": "c", "documents": [{"_id": 9}], "writeConcern": {"w": "majority"}})",
        R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 1}}, "multi": true}]})",
        R"({"update": "c", "updates": [{"q": {"x": 1}, "u": {"$set": {"a": 1}}}]})",
        R"({"delete": "c", "deletes": [{"q": {"_id": 1}, "limit": 0}]})",
        R"({"find": "c", "filter": {"_id": 1}, "readConcern": {"level": "majority"}})",
        R"({"count": "c"})",
    };
    for (const char* cmd : pooled) EXPECT_FALSE(runInline(cmd)) << cmd;
    // A large batch too.
    std::string big = R"({"insert": "c", "documents": [)";
    for (int i = 0; i < 65; ++i)
        big += (i ? "," : "") + std::string(R"({"_id": )") + std::to_string(100 + i) + "}";
    EXPECT_FALSE(runInline(big + "]}"));
    // Nothing of them was applied or counted.
    EXPECT_TRUE(run(R"({"find": "c", "filter": {"_id": 9}})")
                    .reply["cursor"]
                    .objValue()["firstBatch"]
                    .objValue()
                    .isEmpty());
}

// A find of one document (limit 1: findOne, a router's read phase of a write without shard key)
// runs inline while it stays within the io thread's work budget; one that would examine more
// stops before answering (ExecContext::kInlineWorkBudget) and is left to the pool, which answers
// it whole.
TEST_F(InlineExecutionTest, AFindOfOneDocumentRunsInlineWithinTheWorkBudget) {
    std::string docs = R"({"insert": "c", "documents": [)";
    for (int i = 0; i < 200; ++i) {
        docs += (i ? "," : "") + std::string(R"({"_id": )") + std::to_string(100 + i) +
                R"(, "g": )" + std::to_string(i) + "}";
    }
    ASSERT_TRUE(run(docs + "]}").ok());
    auto early = runInline(R"({"find": "c", "filter": {"g": 3}, "limit": 1, "singleBatch": true})");
    ASSERT_TRUE(early);
    EXPECT_EQ((*early)["cursor"].objValue()["firstBatch"].toString(false),
              R"([ { "_id" : 103, "g" : 3 } ])");
    auto negative = runInline(R"({"find": "c", "filter": {"g": 4}, "limit": -1})");
    ASSERT_TRUE(negative);
    EXPECT_EQ((*negative)["cursor"].objValue()["firstBatch"].toString(false),
              R"([ { "_id" : 104, "g" : 4 } ])");
    // The 191st document of a scan: past the budget, so the pool runs it, and finds it.
    const char* late = R"({"find": "c", "filter": {"g": 190}, "limit": 1})";
    EXPECT_FALSE(runInline(late));
    EXPECT_EQ(run(late).reply["cursor"].objValue()["firstBatch"].toString(false),
              R"([ { "_id" : 290, "g" : 190 } ])");
    // With an index the same document is one key away: inline.
    registerIndexCommands(registry);
    ASSERT_TRUE(
        run(R"({"createIndexes": "c", "indexes": [{"key": {"g": 1}, "name": "g_1"}]})").ok());
    auto indexed = runInline(late);
    ASSERT_TRUE(indexed);
    EXPECT_EQ((*indexed)["cursor"].objValue()["firstBatch"].toString(false),
              R"([ { "_id" : 290, "g" : 190 } ])");
    // More than one document is still the pool's.
    EXPECT_FALSE(runInline(R"({"find": "c", "filter": {"g": 190}, "limit": 2})"));
}

// A write of a document a transaction holds must wait for the transaction, whose commit may
// come on a connection of the same io thread: inline, it leaves the wait to the pool (nothing
// applied) instead of holding the thread; so does a batch, which never runs inline.
TEST_F(InlineExecutionTest, AWriteOfADocumentATransactionHoldsGoesToThePool) {
    auto txn = engine->beginTransaction(std::nullopt, nullptr);
    ASSERT_TRUE(txn.isOK());
    storage::CollectionPtr coll = engine->getCollection("test.c");
    ASSERT_TRUE(coll);
    auto writer = txn.getValue()->writer(coll);
    ASSERT_TRUE(writer.isOK());
    std::optional<storage::Record> one =
        writer.getValue()->currentById(J(R"({"_id": 1})").firstElement());
    ASSERT_TRUE(one);
    ASSERT_TRUE(
        writer.getValue()
            ->update(one->recordKey, one->doc, J(R"({"_id": 1, "x": 2})"), storage::WriteOptions())
            .isOK());
    const char* held[] = {
        R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"x": 10}}}]})",
        R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"x": 10}}, "upsert": true}]})",
        R"({"delete": "c", "deletes": [{"q": {"_id": 1}, "limit": 1}]})",
        R"({"findAndModify": "c", "query": {"_id": 1}, "update": {"$inc": {"x": 10}}})",
        R"({"findAndModify": "c", "query": {"_id": 1}, "remove": true})",
        R"({"insert": "c", "documents": [{"_id": 1}]})",
        R"({"insert": "c", "documents": [{"_id": 7}, {"_id": 8}]})",
    };
    // Each returns while this thread holds the transaction: none waited for it.
    for (const char* cmd : held) EXPECT_FALSE(runInline(cmd)) << cmd;
    txn.getValue()->abort();
    auto found = run(R"({"find": "c", "filter": {"_id": {"$in": [1, 7]}}})");
    bson::BsonObj batch = found.reply["cursor"].objValue()["firstBatch"].objValue().copy();
    EXPECT_EQ(bson::BsonView(batch).nFields(), 1);
    EXPECT_EQ(bson::BsonView(batch)["0"].objValue()["x"].numberLong(), 1);
}

TEST_F(InlineExecutionTest, AnInlineRequestIsCountedOnce) {
    OpCounters& c = OpCounters::global();
    int64_t inserts = c.insert.load(), queries = c.query.load();
    ASSERT_TRUE(runInline(R"({"insert": "c", "documents": [{"_id": 5}]})"));
    ASSERT_TRUE(runInline(R"({"find": "c", "filter": {"_id": 5}})"));
    EXPECT_FALSE(runInline(R"({"find": "c", "filter": {"x": 5}})"));  // declined: not counted
    EXPECT_EQ(c.insert.load() - inserts, 1);
    EXPECT_EQ(c.query.load() - queries, 1);
}

}  // namespace
}  // namespace tessera::command
