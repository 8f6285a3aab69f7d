#include <gtest/gtest.h>

#include "command/crud_test_util.h"

namespace tessera::command::test {
namespace {

using bson::BsonType;

class CrudCommandsTest : public CrudFixture {
  protected:
    void insertN(int n, std::string_view coll = "c") {
        for (int i = 0; i < n; ++i) {
            ok("{\"insert\": \"" + std::string(coll) + "\", \"documents\": [{\"_id\": " +
               std::to_string(i) + ", \"x\": " + std::to_string(i % 10) + "}]}");
        }
    }
    int64_t count(std::string_view json) { return ok(json)["n"].numberLong(); }
};

TEST_F(CrudCommandsTest, InsertAddsIdFirstAndFindReturnsIt) {
    bson::BsonObj r = ok(R"({"insert": "c", "documents": [{"a": 1}, {"b": 2, "_id": 7}]})");
    EXPECT_EQ(r["n"].numberLong(), 2);
    EXPECT_FALSE(r.hasField("writeErrors"));
    bson::BsonObj f = ok(R"({"find": "c", "sort": {"_id": 1}})");
    bson::BsonView cursor = f["cursor"].objValue();
    EXPECT_EQ(cursor["id"].numberLong(), 0);
    EXPECT_EQ(cursor["ns"].stringValue(), "test.c");
    EXPECT_EQ(cursor.firstElement().fieldName(), "firstBatch");
    int n = 0;
    for (auto d : cursor["firstBatch"].objValue()) {
        bson::BsonView doc = d.objValue();
        EXPECT_EQ(doc.firstElement().fieldName(), "_id");
        ++n;
    }
    EXPECT_EQ(n, 2);
    // {b: 2, _id: 7} was stored with _id moved to the front.
    bson::BsonObj one = ok(R"({"find": "c", "filter": {"_id": 7}})");
    bson::BsonView doc =
        bson::BsonView(one["cursor"].objValue())["firstBatch"].objValue().firstElement().objValue();
    EXPECT_EQ(doc.toJson(), bson::fromJson(R"({"_id": 7, "b": 2})").toJson());
}

TEST_F(CrudCommandsTest, InsertFromDocumentSequence) {
    bson::BsonObj d1 = J(R"({"_id": 1})"), d2 = J(R"({"_id": 2})");
    DocumentSequence seq{"documents", {d1, d2}};
    CommandResult r = run(R"({"insert": "c"})", {seq});
    ASSERT_TRUE(r.ok()) << r.status.toString();
    EXPECT_EQ(r.reply["n"].numberLong(), 2);
    EXPECT_EQ(count(R"({"count": "c"})"), 2);
}

TEST_F(CrudCommandsTest, InsertDuplicateKeyOrderedStops) {
    bson::BsonObj r = ok(R"({"insert": "c", "documents": [{"_id": 1}, {"_id": 1}, {"_id": 2}]})");
    EXPECT_EQ(r["n"].numberLong(), 1);
    bson::BsonView errs = r["writeErrors"].objValue();
    ASSERT_EQ(errs.nFields(), 1u);
    bson::BsonView e = errs.firstElement().objValue();
    EXPECT_EQ(e["index"].numberLong(), 1);
    EXPECT_EQ(e["code"].numberLong(), 11000);
    EXPECT_TRUE(e.hasField("keyPattern"));
    EXPECT_TRUE(e.hasField("keyValue"));
    EXPECT_NE(e["errmsg"].stringValue().find("E11000"), std::string_view::npos);
}

TEST_F(CrudCommandsTest, InsertDuplicateKeyUnorderedContinues) {
    bson::BsonObj r = ok(
        R"({"insert": "c", "ordered": false, "documents": [{"_id": 1}, {"_id": 1}, {"_id": 2}]})");
    EXPECT_EQ(r["n"].numberLong(), 2);
    EXPECT_EQ(r["writeErrors"].objValue().nFields(), 1u);
}

TEST_F(CrudCommandsTest, InsertValidation) {
    CommandResult empty = run(R"({"insert": "c", "documents": []})");
    EXPECT_EQ(empty.status.code(), 16);
    bson::BsonObj r = ok(R"({"insert": "c", "documents": [{"_id": [1]}]})");
    EXPECT_EQ(r["n"].numberLong(), 0);
    EXPECT_EQ(r["writeErrors"].objValue().firstElement().objValue()["code"].numberLong(), 53);
    // The failed batch did not create the collection.
    EXPECT_EQ(engine->getCollection("test.c"), nullptr);
}

TEST_F(CrudCommandsTest, FindMissingCollectionIsEmpty) {
    bson::BsonObj r = ok(R"({"find": "nope"})");
    bson::BsonView cursor = r["cursor"].objValue();
    EXPECT_EQ(cursor["id"].numberLong(), 0);
    EXPECT_TRUE(cursor["firstBatch"].objValue().isEmpty());
}

TEST_F(CrudCommandsTest, FindValidationErrors) {
    EXPECT_EQ(run(R"({"find": "c", "filter": 1})").status.code(), 14);
    EXPECT_EQ(run(R"({"find": "c", "skip": -1})").status.code(), 51024);
    EXPECT_EQ(run(R"({"find": "c", "batchSize": -1})").status.code(), 51024);
    EXPECT_EQ(run(R"({"find": "c", "bogus": 1})").status.code(), 40415);
    // An unknown locale is refused (supported ones are tested in collation_commands_test).
    EXPECT_EQ(run(R"({"find": "c", "collation": {"locale": "xx_NOPE"}})").status.code(), 2);
    EXPECT_TRUE(run(R"({"find": "c", "collation": {"locale": "simple"}})").ok());
    EXPECT_EQ(run(R"({"find": "c", "filter": {"a": {"$bogus": 1}}})").status.code(), 2);
    EXPECT_EQ(run(R"({"find": "c", "tailable": true})").status.code(), 238);
}

TEST_F(CrudCommandsTest, FindBatchesAndGetMore) {
    insertN(250);
    bson::BsonObj r = ok(R"({"find": "c"})");
    bson::BsonView cursor = r["cursor"].objValue();
    EXPECT_EQ(cursor["firstBatch"].objValue().nFields(), 101u);
    int64_t id = cursor["id"].numberLong();
    ASSERT_NE(id, 0);
    EXPECT_EQ(cursor["id"].type(), BsonType::Int64);

    bson::BsonBuilder b;
    b.appendInt64("getMore", id).append("collection", "c").appendInt64("batchSize", 100);
    CommandResult g = runBody(b.obj());
    ASSERT_TRUE(g.ok()) << g.status.toString();
    bson::BsonView c2 = g.reply["cursor"].objValue();
    EXPECT_EQ(c2["nextBatch"].objValue().nFields(), 100u);
    EXPECT_EQ(c2["id"].numberLong(), id);

    bson::BsonBuilder b2;
    b2.appendInt64("getMore", id).append("collection", "c");
    CommandResult g2 = runBody(b2.obj());
    ASSERT_TRUE(g2.ok());
    bson::BsonView c3 = g2.reply["cursor"].objValue();
    EXPECT_EQ(c3["nextBatch"].objValue().nFields(), 49u);
    EXPECT_EQ(c3["id"].numberLong(), 0);  // exhausted and deleted

    bson::BsonBuilder b3;
    b3.appendInt64("getMore", id).append("collection", "c");
    CommandResult g3 = runBody(b3.obj());
    EXPECT_EQ(g3.status.code(), 43);
    EXPECT_EQ(g3.status.reason(), "cursor id " + std::to_string(id) + " not found");
    EXPECT_EQ(findAll(R"({"find": "c"})").size(), 250u);
}

TEST_F(CrudCommandsTest, GetMoreOtherNamespaceIsUnauthorized) {
    insertN(5);
    bson::BsonObj r = ok(R"({"find": "c", "batchSize": 2})");
    int64_t id = bson::BsonView(r["cursor"].objValue())["id"].numberLong();
    ASSERT_NE(id, 0);
    bson::BsonBuilder b;
    b.appendInt64("getMore", id).append("collection", "other");
    EXPECT_EQ(runBody(b.obj()).status.code(), 13);
}

TEST_F(CrudCommandsTest, KillCursors) {
    insertN(5);
    bson::BsonObj r = ok(R"({"find": "c", "batchSize": 2})");
    int64_t id = bson::BsonView(r["cursor"].objValue())["id"].numberLong();
    bson::BsonBuilder b;
    b.append("killCursors", "c")
        .startArray("cursors")
        .appendInt64("0", id)
        .appendInt64("1", 99)
        .end();
    CommandResult k = runBody(b.obj());
    ASSERT_TRUE(k.ok());
    EXPECT_EQ(k.reply["cursorsKilled"].objValue().nFields(), 1u);
    EXPECT_EQ(k.reply["cursorsNotFound"].objValue().nFields(), 1u);
    EXPECT_TRUE(k.reply.hasField("cursorsAlive"));
    EXPECT_TRUE(k.reply.hasField("cursorsUnknown"));
    EXPECT_EQ(cursors->numOpenCursors(), 0u);
}

TEST_F(CrudCommandsTest, FindSortSkipLimitProjection) {
    insertN(30);
    auto docs = findAll(
        R"({"find": "c", "filter": {"x": {"$gte": 5}}, "sort": {"x": -1, "_id": 1}, "skip": 1, "limit": 3, "projection": {"x": 1, "_id": 0}})");
    ASSERT_EQ(docs.size(), 3u);
    EXPECT_EQ(docs[0], J(R"({"x": 9})").toJson());
    EXPECT_EQ(docs[1], J(R"({"x": 9})").toJson());
    EXPECT_EQ(docs[2], J(R"({"x": 8})").toJson());
    // Negative limit: a single batch, no cursor.
    bson::BsonObj r = ok(R"({"find": "c", "limit": -5})");
    EXPECT_EQ(bson::BsonView(r["cursor"].objValue())["id"].numberLong(), 0);
    EXPECT_EQ(bson::BsonView(r["cursor"].objValue())["firstBatch"].objValue().nFields(), 5u);
}

TEST_F(CrudCommandsTest, UpdateOperatorsMultiAndUpsert) {
    insertN(10);
    bson::BsonObj r = ok(
        R"({"update": "c", "updates": [{"q": {"x": {"$lt": 3}}, "u": {"$inc": {"y": 1}}, "multi": true}]})");
    EXPECT_EQ(r["n"].numberLong(), 3);
    EXPECT_EQ(r["nModified"].numberLong(), 3);
    EXPECT_EQ(count(R"({"count": "c", "query": {"y": 1}})"), 3);

    // multi:false updates one.
    r = ok(R"({"update": "c", "updates": [{"q": {}, "u": {"$set": {"z": 1}}}]})");
    EXPECT_EQ(r["n"].numberLong(), 1);

    // No-op update: matched but not modified.
    r = ok(R"({"update": "c", "updates": [{"q": {"_id": 0}, "u": {"$set": {"x": 0}}}]})");
    EXPECT_EQ(r["n"].numberLong(), 1);
    EXPECT_EQ(r["nModified"].numberLong(), 0);

    // Upsert seeds from the query's equalities.
    r = ok(
        R"({"update": "c", "updates": [{"q": {"_id": 100, "k": "v"}, "u": {"$set": {"w": 2}}, "upsert": true}]})");
    EXPECT_EQ(r["n"].numberLong(), 1);
    EXPECT_EQ(r["nModified"].numberLong(), 0);
    bson::BsonView up = r["upserted"].objValue().firstElement().objValue();
    EXPECT_EQ(up["index"].numberLong(), 0);
    EXPECT_EQ(up["_id"].numberLong(), 100);
    auto docs = findAll(R"({"find": "c", "filter": {"_id": 100}})");
    ASSERT_EQ(docs.size(), 1u);
    EXPECT_EQ(docs[0], J(R"({"_id": 100, "k": "v", "w": 2})").toJson());

    // Upsert without _id in the query generates one.
    r = ok(
        R"({"update": "c", "updates": [{"q": {"nope": 1}, "u": {"$set": {"a": 1}}, "upsert": true}]})");
    EXPECT_EQ(bson::BsonView(r["upserted"].objValue().firstElement().objValue())["_id"].type(),
              BsonType::ObjectId);
}

TEST_F(CrudCommandsTest, UpdateMultiDoesNotRevisitMovedDocuments) {
    createIndex("test.c", R"({"x": 1})", "x_1");
    insertN(20);
    // Every matched document moves forward in the x index; each must be updated once.
    bson::BsonObj r = ok(
        R"({"update": "c", "updates": [{"q": {"x": {"$gte": 0}}, "u": {"$inc": {"x": 100}}, "multi": true}]})");
    EXPECT_EQ(r["n"].numberLong(), 20);
    EXPECT_EQ(count(R"({"count": "c", "query": {"x": {"$gte": 200}}})"), 0);
}

TEST_F(CrudCommandsTest, UpdateErrors) {
    insertN(3);
    bson::BsonObj r =
        ok(R"({"update": "c", "updates": [{"q": {}, "u": {"a": 1}, "multi": true}]})");
    EXPECT_EQ(r["writeErrors"].objValue().firstElement().objValue()["code"].numberLong(), 9);
    r = ok(R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"_id": 5}}}]})");
    EXPECT_EQ(r["writeErrors"].objValue().firstElement().objValue()["code"].numberLong(), 66);
    // Pipeline-style updates apply; a stage they do not allow is a write error (72).
    r = ok(R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": [{"$set": {"a": 1}}]}]})");
    EXPECT_FALSE(r.hasField("writeErrors")) << r.toJson();
    EXPECT_EQ(r["nModified"].numberLong(), 1);
    r = ok(R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": [{"$match": {}}]}]})");
    EXPECT_EQ(r["writeErrors"].objValue().firstElement().objValue()["code"].numberLong(), 72);
    r = ok(R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$bogus": {"a": 1}}}]})");
    EXPECT_EQ(r["writeErrors"].objValue().firstElement().objValue()["code"].numberLong(), 9);
    // Unique index violation.
    createIndex("test.uc", R"({"u": 1})", "u_1", true);
    ok(R"({"insert": "uc", "documents": [{"_id": 0, "u": 0}, {"_id": 1, "u": 1}]})");
    r = ok(R"({"update": "uc", "updates": [{"q": {"_id": 1}, "u": {"$set": {"u": 0}}}]})");
    ASSERT_TRUE(r.hasField("writeErrors")) << r.toJson();
    bson::BsonView e = r["writeErrors"].objValue().firstElement().objValue();
    EXPECT_EQ(e["code"].numberLong(), 11000);
    EXPECT_TRUE(e.hasField("keyPattern"));
    EXPECT_EQ(r["n"].numberLong(), 0);
}

TEST_F(CrudCommandsTest, UpdatePositional) {
    ok(R"({"insert": "c", "documents": [{"_id": 1, "a": [1, 2, 3]}]})");
    bson::BsonObj r =
        ok(R"({"update": "c", "updates": [{"q": {"a": 2}, "u": {"$set": {"a.$": 20}}}]})");
    EXPECT_EQ(r["nModified"].numberLong(), 1);
    EXPECT_EQ(findAll(R"({"find": "c"})")[0], J(R"({"_id": 1, "a": [1, 20, 3]})").toJson());
}

TEST_F(CrudCommandsTest, Delete) {
    insertN(10);
    EXPECT_EQ(ok(R"({"delete": "c", "deletes": [{"q": {"x": {"$lt": 5}}, "limit": 1}]})")["n"]
                  .numberLong(),
              1);
    EXPECT_EQ(ok(R"({"delete": "c", "deletes": [{"q": {"x": {"$lt": 5}}, "limit": 0}]})")["n"]
                  .numberLong(),
              4);
    EXPECT_EQ(count(R"({"count": "c"})"), 5);
    EXPECT_EQ(run(R"({"delete": "c", "deletes": [{"q": {}, "limit": 2}]})").status.code(), 9);
    EXPECT_EQ(ok(R"({"delete": "missing", "deletes": [{"q": {}, "limit": 0}]})")["n"].numberLong(),
              0);
}

TEST_F(CrudCommandsTest, FindAndModify) {
    insertN(5);
    bson::BsonObj r = ok(
        R"({"findAndModify": "c", "query": {"x": {"$gte": 2}}, "sort": {"x": -1}, "update": {"$set": {"m": 1}}, "new": true})");
    bson::BsonView leo = r["lastErrorObject"].objValue();
    EXPECT_EQ(leo["n"].numberLong(), 1);
    EXPECT_TRUE(leo["updatedExisting"].boolValue());
    EXPECT_EQ(bson::BsonView(r["value"].objValue())["_id"].numberLong(), 4);
    EXPECT_EQ(bson::BsonView(r["value"].objValue())["m"].numberLong(), 1);

    // Old image by default.
    r = ok(R"({"findAndModify": "c", "query": {"_id": 0}, "update": {"$set": {"m": 2}}})");
    EXPECT_FALSE(bson::BsonView(r["value"].objValue()).hasField("m"));

    r = ok(R"({"findandmodify": "c", "query": {"_id": 1}, "remove": true, "fields": {"x": 1}})");
    EXPECT_EQ(bson::BsonView(r["lastErrorObject"].objValue())["n"].numberLong(), 1);
    EXPECT_EQ(r["value"].objValue().toJson(), J(R"({"_id": 1, "x": 1})").toJson());
    EXPECT_EQ(count(R"({"count": "c"})"), 4);

    r = ok(
        R"({"findAndModify": "c", "query": {"_id": 50}, "update": {"$set": {"a": 1}}, "upsert": true, "new": true})");
    leo = r["lastErrorObject"].objValue();
    EXPECT_FALSE(leo["updatedExisting"].boolValue());
    EXPECT_EQ(leo["upserted"].numberLong(), 50);
    EXPECT_EQ(r["value"].objValue().toJson(), J(R"({"_id": 50, "a": 1})").toJson());

    r = ok(R"({"findAndModify": "c", "query": {"_id": 999}, "remove": true})");
    EXPECT_TRUE(r["value"].isNull());

    EXPECT_EQ(run(R"({"findAndModify": "c", "remove": true, "update": {"$set": {"a": 1}}})")
                  .status.code(),
              9);
    EXPECT_EQ(run(R"({"findAndModify": "c", "query": {}})").status.code(), 9);
    EXPECT_EQ(run(R"({"findAndModify": "c", "remove": true, "new": true})").status.code(), 9);
    EXPECT_EQ(run(R"({"findAndModify": "c", "remove": true, "upsert": true})").status.code(), 9);
}

TEST_F(CrudCommandsTest, CountAndDistinct) {
    insertN(20);
    EXPECT_EQ(count(R"({"count": "c"})"), 20);
    EXPECT_EQ(count(R"({"count": "c", "skip": 5, "limit": 10})"), 10);
    EXPECT_EQ(count(R"({"count": "c", "skip": 18, "limit": 10})"), 2);
    EXPECT_EQ(count(R"({"count": "c", "query": {"x": 3}})"), 2);
    EXPECT_EQ(count(R"({"count": "missing"})"), 0);

    ok(R"({"insert": "d", "documents": [{"a": [1, 2]}, {"a": 1.0}, {"a": "s"}, {"b": 1}, {"a": [[3]]}]})");
    bson::BsonObj r = ok(R"({"distinct": "d", "key": "a"})");
    bson::BsonView values = r["values"].objValue();
    EXPECT_EQ(values.nFields(), 4u);  // 1, 2, "s", [3]
    EXPECT_EQ(run(R"({"distinct": "d"})").status.code(), 40414);
}

TEST_F(CrudCommandsTest, AggregateCountDocumentsShape) {
    insertN(20);
    bson::BsonObj r = ok(
        R"({"aggregate": "c", "pipeline": [{"$match": {"x": {"$lt": 5}}}, {"$skip": 2}, {"$limit": 5}, {"$group": {"_id": 1, "n": {"$sum": 1}}}], "cursor": {}})");
    bson::BsonView batch = bson::BsonView(r["cursor"].objValue())["firstBatch"].objValue();
    ASSERT_EQ(batch.nFields(), 1u);
    EXPECT_EQ(batch.firstElement().objValue().toJson(), J(R"({"_id": 1, "n": 5})").toJson());
}

TEST_F(CrudCommandsTest, AggregateGroupAccumulators) {
    ok(R"({"insert": "c", "documents": [{"_id": 1, "k": "a", "v": 1}, {"_id": 2, "k": "a", "v": 3}, {"_id": 3, "k": "b", "v": 2.5}]})");
    bson::BsonObj r = ok(
        R"({"aggregate": "c", "pipeline": [{"$sort": {"_id": 1}}, {"$group": {"_id": "$k", "s": {"$sum": "$v"}, "avg": {"$avg": "$v"}, "mn": {"$min": "$v"}, "mx": {"$max": "$v"}, "f": {"$first": "$v"}, "l": {"$last": "$v"}, "p": {"$push": "$v"}, "set": {"$addToSet": "$k"}, "c": {"$count": {}}}}, {"$sort": {"_id": 1}}], "cursor": {}})");
    bson::BsonView batch = bson::BsonView(r["cursor"].objValue())["firstBatch"].objValue();
    ASSERT_EQ(batch.nFields(), 2u);
    EXPECT_EQ(
        batch.firstElement().objValue().toJson(),
        J(R"({"_id": "a", "s": 4, "avg": 2.0, "mn": 1, "mx": 3, "f": 1, "l": 3, "p": [1, 3], "set": ["a"], "c": 2})")
            .toJson());
}

TEST_F(CrudCommandsTest, AggregateErrorsAndCount) {
    insertN(3);
    EXPECT_EQ(run(R"({"aggregate": "c", "pipeline": []})").status.code(), 9);
    CommandResult r = run(R"({"aggregate": "c", "pipeline": [{"$foo": 1}], "cursor": {}})");
    EXPECT_EQ(r.status.code(), 40324);
    EXPECT_EQ(r.status.reason(), "Unrecognized pipeline stage name: '$foo'");
    bson::BsonObj c = ok(R"({"aggregate": "c", "pipeline": [{"$count": "total"}], "cursor": {}})");
    EXPECT_EQ(bson::BsonView(c["cursor"].objValue())["firstBatch"]
                  .objValue()
                  .firstElement()
                  .objValue()
                  .toJson(),
              J(R"({"total": 3})").toJson());
}

TEST_F(CrudCommandsTest, AggregateBatchesAndGetMore) {
    insertN(30);
    bson::BsonObj r =
        ok(R"({"aggregate": "c", "pipeline": [{"$match": {}}], "cursor": {"batchSize": 10}})");
    bson::BsonView cursor = r["cursor"].objValue();
    EXPECT_EQ(cursor["firstBatch"].objValue().nFields(), 10u);
    ASSERT_NE(cursor["id"].numberLong(), 0);
    bson::BsonBuilder b;
    b.appendInt64("getMore", cursor["id"].numberLong()).append("collection", "c");
    CommandResult g = runBody(b.obj());
    ASSERT_TRUE(g.ok());
    EXPECT_EQ(bson::BsonView(g.reply["cursor"].objValue())["nextBatch"].objValue().nFields(), 20u);
}

TEST_F(CrudCommandsTest, CollStats) {
    insertN(4);
    bson::BsonObj r = ok(
        R"({"aggregate": "c", "pipeline": [{"$collStats": {"storageStats": {}, "count": {}}}], "cursor": {}})");
    bson::BsonView doc =
        bson::BsonView(r["cursor"].objValue())["firstBatch"].objValue().firstElement().objValue();
    EXPECT_EQ(doc["ns"].stringValue(), "test.c");
    EXPECT_EQ(doc["count"].numberLong(), 4);
    bson::BsonView ss = doc["storageStats"].objValue();
    EXPECT_EQ(ss["count"].numberLong(), 4);
    EXPECT_EQ(ss["nindexes"].numberLong(), 1);
    EXPECT_GT(ss["size"].numberLong(), 0);
    EXPECT_TRUE(ss.hasField("indexSizes"));

    bson::BsonObj cs = ok(R"({"collStats": "c"})");
    EXPECT_EQ(cs["count"].numberLong(), 4);
    EXPECT_EQ(run(R"({"collStats": "missing"})").status.code(), 26);
    EXPECT_EQ(
        run(R"({"aggregate": "c", "pipeline": [{"$match": {}}, {"$collStats": {}}], "cursor": {}})")
            .status.code(),
        40602);
}

TEST_F(CrudCommandsTest, ExplainShowsIndexScan) {
    createIndex("test.c", R"({"x": 1})", "x_1");
    insertN(50);
    bson::BsonObj r =
        ok(R"({"explain": {"find": "c", "filter": {"x": 3}}, "verbosity": "executionStats"})");
    bson::BsonView qp = r["queryPlanner"].objValue();
    EXPECT_EQ(qp["namespace"].stringValue(), "test.c");
    bson::BsonView wp = qp["winningPlan"].objValue();
    std::string plan = wp.toJson();
    EXPECT_NE(plan.find("IXSCAN"), std::string::npos) << plan;
    EXPECT_NE(plan.find("x_1"), std::string::npos) << plan;
    bson::BsonView es = r["executionStats"].objValue();
    EXPECT_EQ(es["nReturned"].numberLong(), 5);
    EXPECT_EQ(es["totalKeysExamined"].numberLong(), 5);
    EXPECT_EQ(es["totalDocsExamined"].numberLong(), 5);
    EXPECT_TRUE(r.hasField("serverInfo"));
    EXPECT_TRUE(r.hasField("command"));

    bson::BsonObj coll = ok(R"({"explain": {"count": "c", "query": {"y": 3}}})");
    EXPECT_NE(coll.toJson().find("COLLSCAN"), std::string::npos);
    bson::BsonObj id =
        ok(R"({"explain": {"find": "c", "filter": {"_id": 3}}, "verbosity": "queryPlanner"})");
    EXPECT_NE(id.toJson().find("IDHACK"), std::string::npos);
    EXPECT_FALSE(id.hasField("executionStats"));
    // Hinting an unknown index.
    EXPECT_EQ(run(R"({"find": "c", "hint": "nope"})").status.code(), 2);
}

TEST_F(CrudCommandsTest, IndexedQueriesAreCorrect) {
    createIndex("test.c", R"({"a": 1})", "a_1");
    ok(R"({"insert": "c", "documents": [{"_id": 1, "a": [1, 2, 3]}, {"_id": 2, "a": 2}, {"_id": 3, "a": 5}]})");
    // Multikey: document 1 matches through two keys but is returned once.
    auto docs = findAll(R"({"find": "c", "filter": {"a": {"$gte": 1, "$lte": 3}}})");
    EXPECT_EQ(docs.size(), 2u);
    EXPECT_EQ(count(R"({"count": "c", "query": {"a": {"$in": [1, 2, 3]}}})"), 2);
    auto sorted = findAll(R"({"find": "c", "sort": {"a": -1}, "projection": {"_id": 1}})");
    ASSERT_EQ(sorted.size(), 3u);
    EXPECT_EQ(sorted[0], J(R"({"_id": 3})").toJson());
}

}  // namespace
}  // namespace tessera::command::test
