// bulkWrite, update `sort`, document validation (create/collMod validators, $jsonSchema,
// validationLevel/Action, bypassDocumentValidation) through Command::run on a real engine.
#include <gtest/gtest.h>

#include "command/crud_test_util.h"
#include "command/registry.h"

namespace tessera::command::test {
namespace {

class BulkWriteTest : public CrudFixture {
  protected:
    void SetUp() override {
        CrudFixture::SetUp();
        registerCollectionCommands(registry);
    }

    CommandResult bulk(std::string_view json) { return run(json, {}, "admin"); }

    // The cursor's firstBatch entries as JSON.
    static std::vector<std::string> entries(const bson::BsonObj& reply) {
        std::vector<std::string> out;
        bson::BsonView cursor = reply["cursor"].objValue();
        for (auto e : cursor["firstBatch"].objValue()) out.push_back(e.objValue().toJson());
        return out;
    }
    static std::vector<int> codes(const bson::BsonObj& reply) {
        std::vector<int> out;
        bson::BsonView cursor = reply["cursor"].objValue();
        for (auto e : cursor["firstBatch"].objValue()) {
            bson::BsonView o = e.objValue();
            out.push_back(o["ok"].numberInt() == 1 ? 0 : o["code"].numberInt());
        }
        return out;
    }
};

TEST_F(BulkWriteTest, MixedOperationsAndCounts) {
    ok(R"({"insert": "c", "documents": [{"_id": 1, "x": 11}, {"_id": 2, "x": 22},
          {"_id": 3, "x": 33}, {"_id": 5, "x": 55}, {"_id": 6}, {"_id": 7}]})");
    CommandResult r = bulk(R"({"bulkWrite": 1, "ops": [
        {"insert": 0, "document": {"_id": 8, "x": 88}},
        {"update": 0, "filter": {"_id": 1}, "updateMods": {"$inc": {"x": 1}}, "multi": false},
        {"update": 0, "filter": {"_id": {"$gt": 1, "$lte": 3}}, "updateMods": {"$inc": {"x": 2}},
         "multi": true},
        {"update": 0, "filter": {"_id": 4}, "updateMods": {"x": 44}, "upsert": true},
        {"delete": 0, "filter": {"_id": 5}, "multi": false},
        {"delete": 0, "filter": {"_id": {"$gt": 5, "$lte": 7}}, "multi": true}],
        "nsInfo": [{"ns": "test.c"}], "ordered": true, "errorsOnly": false})");
    ASSERT_TRUE(r.ok()) << r.status.toString();
    EXPECT_EQ(r.reply["nErrors"].numberLong(), 0);
    EXPECT_EQ(r.reply["nInserted"].numberLong(), 1);
    EXPECT_EQ(r.reply["nMatched"].numberLong(), 3);
    EXPECT_EQ(r.reply["nModified"].numberLong(), 3);
    EXPECT_EQ(r.reply["nUpserted"].numberLong(), 1);
    EXPECT_EQ(r.reply["nDeleted"].numberLong(), 3);
    bson::BsonView cursor = r.reply["cursor"].objValue();
    EXPECT_EQ(cursor["id"].numberLong(), 0);
    EXPECT_EQ(cursor["ns"].stringValue(), "admin.$cmd.bulkWrite");
    auto e = entries(r.reply);
    ASSERT_EQ(e.size(), 6u);
    EXPECT_EQ(e[0], J(R"({"ok": 1, "idx": 0, "n": 1})").toJson());
    EXPECT_EQ(e[2], J(R"({"ok": 1, "idx": 2, "n": 2, "nModified": 2})").toJson());
    EXPECT_EQ(e[3],
              J(R"({"ok": 1, "idx": 3, "n": 1, "nModified": 0, "upserted": {"_id": 4}})").toJson());
    EXPECT_EQ(e[5], J(R"({"ok": 1, "idx": 5, "n": 2})").toJson());
    EXPECT_EQ(findAll(R"({"find": "c", "sort": {"_id": 1}})"),
              (std::vector<std::string>{R"({ "_id" : 1, "x" : 12 })", R"({ "_id" : 2, "x" : 24 })",
                                        R"({ "_id" : 3, "x" : 35 })", R"({ "_id" : 4, "x" : 44 })",
                                        R"({ "_id" : 8, "x" : 88 })"}));
}

TEST_F(BulkWriteTest, DocumentSequencesAndMixedNamespaces) {
    bson::BsonObj body = J(R"({"bulkWrite": 1, "ordered": true})");
    bson::BsonObj op0 = J(R"({"insert": 0, "document": {"_id": 1}})");
    bson::BsonObj op1 = J(R"({"insert": 1, "document": {"_id": 1, "y": 1}})");
    bson::BsonObj op2 =
        J(R"({"update": 1, "filter": {"_id": 1}, "updateMods": {"$inc": {"y": 1}}})");
    bson::BsonObj ns0 = J(R"({"ns": "db0.a"})");
    bson::BsonObj ns1 = J(R"({"ns": "db1.b"})");
    std::vector<DocumentSequence> seqs{{"ops", {op0, op1, op2}}, {"nsInfo", {ns0, ns1}}};
    CommandResult r = runBody(body, seqs, "admin");
    ASSERT_TRUE(r.ok()) << r.status.toString();
    EXPECT_EQ(r.reply["nInserted"].numberLong(), 2);
    EXPECT_EQ(r.reply["nModified"].numberLong(), 1);
    EXPECT_TRUE(engine->getCollection("db0.a"));
    EXPECT_TRUE(engine->getCollection("db1.b"));
}

TEST_F(BulkWriteTest, OrderedStopsUnorderedContinues) {
    ok(R"({"insert": "c", "documents": [{"_id": 1}]})");
    CommandResult r = bulk(R"({"bulkWrite": 1, "ops": [
        {"insert": 0, "document": {"_id": 2}}, {"insert": 0, "document": {"_id": 1}},
        {"insert": 0, "document": {"_id": 3}}], "nsInfo": [{"ns": "test.c"}]})");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(codes(r.reply), (std::vector<int>{0, 11000}));
    EXPECT_EQ(r.reply["nErrors"].numberLong(), 1);
    EXPECT_EQ(r.reply["nInserted"].numberLong(), 1);
    bson::BsonView err = r.reply["cursor"].objValue()["firstBatch"].objValue()["1"].objValue();
    EXPECT_EQ(err["codeName"].stringValue(), "DuplicateKey");
    EXPECT_TRUE(err["keyValue"].isObject());
    EXPECT_EQ(err["n"].numberLong(), 0);

    r = bulk(R"({"bulkWrite": 1, "ordered": false, "ops": [
        {"insert": 0, "document": {"_id": 1}}, {"insert": 0, "document": {"_id": 4}},
        {"delete": 0, "filter": {"$where": "1"}, "multi": false},
        {"delete": 0, "filter": {"_id": 4}, "multi": false}],
        "nsInfo": [{"ns": "test.c"}]})");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(codes(r.reply), (std::vector<int>{11000, 0, 2, 0}));
    EXPECT_EQ(r.reply["nErrors"].numberLong(), 2);
    EXPECT_EQ(r.reply["nInserted"].numberLong(), 1);
    EXPECT_EQ(r.reply["nDeleted"].numberLong(), 1);
}

TEST_F(BulkWriteTest, ErrorsOnlyReportsOnlyFailures) {
    ok(R"({"insert": "c", "documents": [{"_id": 1}]})");
    CommandResult r = bulk(R"({"bulkWrite": 1, "errorsOnly": true, "ordered": false, "ops": [
        {"insert": 0, "document": {"_id": 2}}, {"insert": 0, "document": {"_id": 1}},
        {"insert": 0, "document": {"_id": 3}}], "nsInfo": [{"ns": "test.c"}]})");
    ASSERT_TRUE(r.ok());
    auto e = entries(r.reply);
    ASSERT_EQ(e.size(), 1u);
    EXPECT_NE(e[0].find(R"("idx" : 1)"), std::string::npos) << e[0];
    EXPECT_EQ(r.reply["nInserted"].numberLong(), 2);
}

TEST_F(BulkWriteTest, UpdateSortPicksFirstInOrder) {
    ok(R"({"insert": "c", "documents": [{"_id": 1, "x": 11}, {"_id": 2, "x": 22},
          {"_id": 3, "x": 33}]})");
    CommandResult r = bulk(R"({"bulkWrite": 1, "ops": [
        {"update": 0, "filter": {"_id": {"$gt": 1}}, "sort": {"_id": -1},
         "updateMods": {"x": 1}}], "nsInfo": [{"ns": "test.c"}]})");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.reply["nMatched"].numberLong(), 1);
    EXPECT_EQ(findAll(R"({"find": "c", "sort": {"_id": 1}})"),
              (std::vector<std::string>{R"({ "_id" : 1, "x" : 11 })", R"({ "_id" : 2, "x" : 22 })",
                                        R"({ "_id" : 3, "x" : 1 })"}));
    // The update command's statements take `sort` too.
    CommandResult u = run(R"({"update": "c", "updates": [{"q": {"_id": {"$lt": 3}},
        "u": {"$inc": {"x": 100}}, "sort": {"x": -1}}]})");
    ASSERT_TRUE(u.ok()) << u.status.toString();
    EXPECT_EQ(u.reply["n"].numberLong(), 1);
    EXPECT_EQ(findAll(R"({"find": "c", "filter": {"x": {"$gt": 100}}})"),
              std::vector<std::string>{R"({ "_id" : 2, "x" : 122 })"});
    CommandResult bad = run(R"({"update": "c", "updates": [{"q": {}, "u": {"$set": {"y": 1}},
        "sort": {"x": 1}, "multi": true}]})");
    EXPECT_EQ(bad.status.code(), static_cast<int>(ErrorCodes::InvalidOptions));
    bad = bulk(R"({"bulkWrite": 1, "ops": [{"update": 0, "filter": {}, "multi": true,
        "sort": {"x": 1}, "updateMods": {"$set": {"y": 1}}}], "nsInfo": [{"ns": "test.c"}]})");
    EXPECT_EQ(bad.status.code(), static_cast<int>(ErrorCodes::InvalidOptions));
}

TEST_F(BulkWriteTest, StructuralErrorsFailTheCommand) {
    EXPECT_EQ(bulk(R"({"bulkWrite": 1, "ops": [{"insert": 1, "document": {}}],
                       "nsInfo": [{"ns": "test.c"}]})")
                  .status.code(),
              static_cast<int>(ErrorCodes::BadValue));
    EXPECT_EQ(bulk(R"({"bulkWrite": 1, "ops": [{"replace": 0, "document": {}}],
                       "nsInfo": [{"ns": "test.c"}]})")
                  .status.code(),
              static_cast<int>(ErrorCodes::FailedToParse));
    EXPECT_EQ(bulk(R"({"bulkWrite": 1, "ops": [{"insert": 0}], "nsInfo": [{"ns": "test.c"}]})")
                  .status.code(),
              40414);
    EXPECT_EQ(bulk(R"({"bulkWrite": 1, "ops": [{"delete": 0, "filter": {}, "bogus": 1}],
                       "nsInfo": [{"ns": "test.c"}]})")
                  .status.code(),
              40415);
    EXPECT_EQ(bulk(R"({"bulkWrite": 1, "ops": [], "nsInfo": [{"ns": "test.c"}]})").status.code(),
              static_cast<int>(ErrorCodes::InvalidLength));
    EXPECT_EQ(bulk(R"({"bulkWrite": 1, "ops": [{"insert": 0, "document": {}}]})").status.code(),
              40414);
    EXPECT_EQ(bulk(R"({"bulkWrite": 1, "ops": [{"insert": 0, "document": {}}],
                       "nsInfo": [{"ns": "nodot"}]})")
                  .status.code(),
              static_cast<int>(ErrorCodes::InvalidNamespace));
    EXPECT_FALSE(engine->getCollection("test.c"));
}

// ---- Document validation

TEST_F(BulkWriteTest, CreateWithValidatorRejectsInsertsAndUpdates) {
    ok(R"({"create": "v", "validator": {"$jsonSchema": {"required": ["name"],
          "properties": {"name": {"bsonType": "string"}, "age": {"minimum": 0}}}}})");
    CommandResult r = run(R"({"insert": "v", "documents": [{"_id": 1, "name": "a"},
        {"_id": 2, "name": 5}, {"_id": 3, "name": "c"}], "ordered": false})");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.reply["n"].numberLong(), 2);
    bson::BsonView we = r.reply["writeErrors"].objValue()["0"].objValue();
    EXPECT_EQ(we["index"].numberLong(), 1);
    EXPECT_EQ(we["code"].numberInt(), 121);
    EXPECT_EQ(we["errmsg"].stringValue(), "Document failed validation");
    bson::BsonView errInfo = we["errInfo"].objValue();
    EXPECT_EQ(errInfo["failingDocumentId"].numberInt(), 2);
    EXPECT_EQ(errInfo["details"].objValue()["operatorName"].stringValue(), "$jsonSchema");
    EXPECT_FALSE(errInfo["details"].objValue()["schemaRulesNotSatisfied"].objValue().isEmpty());

    // update
    r = run(R"({"update": "v", "updates": [{"q": {"_id": 1}, "u": {"$set": {"age": -1}}}]})");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.reply["n"].numberLong(), 0);
    EXPECT_EQ(r.reply["nModified"].numberLong(), 0);
    EXPECT_EQ(r.reply["writeErrors"].objValue()["0"].objValue()["code"].numberInt(), 121);
    // upsert
    r = run(R"({"update": "v", "updates": [{"q": {"_id": 9}, "u": {"$set": {"age": 1}},
        "upsert": true}]})");
    EXPECT_EQ(r.reply["writeErrors"].objValue()["0"].objValue()["code"].numberInt(), 121);
    // findAndModify: a command error with errInfo
    r = run(R"({"findAndModify": "v", "query": {"_id": 1}, "update": {"$unset": {"name": 1}}})");
    EXPECT_EQ(r.status.code(), static_cast<int>(ErrorCodes::DocumentValidationFailure));
    EXPECT_TRUE(r.errorExtraInfo["errInfo"].isObject());
    // bulkWrite
    r = bulk(R"({"bulkWrite": 1, "ops": [{"insert": 0, "document": {"_id": 10}},
        {"insert": 0, "document": {"_id": 11, "name": "ok"}}], "ordered": false,
        "nsInfo": [{"ns": "test.v"}]})");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(codes(r.reply), (std::vector<int>{121, 0}));
    bson::BsonView e0 = r.reply["cursor"].objValue()["firstBatch"].objValue()["0"].objValue();
    EXPECT_EQ(e0["errInfo"].objValue()["failingDocumentId"].numberInt(), 10);

    EXPECT_EQ(findAll(R"({"find": "v", "sort": {"_id": 1}})"),
              (std::vector<std::string>{R"({ "_id" : 1, "name" : "a" })",
                                        R"({ "_id" : 3, "name" : "c" })",
                                        R"({ "_id" : 11, "name" : "ok" })"}));
}

TEST_F(BulkWriteTest, BypassDocumentValidation) {
    ok(R"({"create": "v", "validator": {"x": {"$gt": 5}}})");
    CommandResult r = run(R"({"insert": "v", "documents": [{"_id": 1, "x": 1}]})");
    EXPECT_EQ(r.reply["writeErrors"].objValue()["0"].objValue()["code"].numberInt(), 121);
    bson::BsonView details = r.reply["writeErrors"]
                                 .objValue()["0"]
                                 .objValue()["errInfo"]
                                 .objValue()["details"]
                                 .objValue();
    EXPECT_EQ(details["operatorName"].stringValue(), "$gt");
    EXPECT_EQ(details["consideredValue"].numberInt(), 1);
    r = run(R"({"insert": "v", "documents": [{"_id": 1, "x": 1}],
               "bypassDocumentValidation": true})");
    EXPECT_EQ(r.reply["n"].numberLong(), 1);
    r = run(R"({"update": "v", "updates": [{"q": {"_id": 1}, "u": {"$set": {"x": 2}}}],
               "bypassDocumentValidation": true})");
    EXPECT_EQ(r.reply["nModified"].numberLong(), 1);
    r = run(R"({"findAndModify": "v", "query": {"_id": 1}, "update": {"$set": {"x": 3}},
               "bypassDocumentValidation": true})");
    EXPECT_TRUE(r.ok()) << r.status.toString();
    r = bulk(R"({"bulkWrite": 1, "ops": [{"insert": 0, "document": {"_id": 2, "x": 0}}],
                "bypassDocumentValidation": true, "nsInfo": [{"ns": "test.v"}]})");
    EXPECT_EQ(r.reply["nInserted"].numberLong(), 1);
    EXPECT_EQ(run(R"({"insert": "v", "documents": [{"x": 1}],
                      "bypassDocumentValidation": "yes"})")
                  .status.code(),
              static_cast<int>(ErrorCodes::TypeMismatch));
}

TEST_F(BulkWriteTest, MultipleClausesReportAnd) {
    ok(R"({"create": "v", "validator": {"a": {"$exists": true}, "b": {"$type": "string"}}})");
    CommandResult r = run(R"({"insert": "v", "documents": [{"_id": 1, "b": 1}]})");
    bson::BsonView details = r.reply["writeErrors"]
                                 .objValue()["0"]
                                 .objValue()["errInfo"]
                                 .objValue()["details"]
                                 .objValue();
    EXPECT_EQ(details["operatorName"].stringValue(), "$and");
    EXPECT_EQ(details["clausesNotSatisfied"].objValue().nFields(), 2u) << details.toJson();
}

TEST_F(BulkWriteTest, CollModValidationLevelAndAction) {
    ok(R"({"insert": "v", "documents": [{"_id": 1, "x": 1}, {"_id": 2, "x": 10}]})");
    ok(R"({"collMod": "v", "validator": {"x": {"$gte": 5}}})");
    EXPECT_EQ(engine->getCollection("test.v")->options["validator"].objValue().toJson(),
              J(R"({"x": {"$gte": 5}})").toJson());
    // strict: updating an invalid document must make it valid
    CommandResult r =
        run(R"({"update": "v", "updates": [{"q": {"_id": 1}, "u": {"$set": {"y": 1}}}]})");
    EXPECT_EQ(r.reply["writeErrors"].objValue()["0"].objValue()["code"].numberInt(), 121);
    // moderate: documents that were already invalid may be updated
    ok(R"({"collMod": "v", "validationLevel": "moderate"})");
    r = run(R"({"update": "v", "updates": [{"q": {"_id": 1}, "u": {"$set": {"y": 1}}}]})");
    EXPECT_EQ(r.reply["nModified"].numberLong(), 1);
    EXPECT_FALSE(r.reply.hasField("writeErrors"));
    // ... but valid documents must stay valid, and inserts are checked
    r = run(R"({"update": "v", "updates": [{"q": {"_id": 2}, "u": {"$set": {"x": 0}}}]})");
    EXPECT_EQ(r.reply["writeErrors"].objValue()["0"].objValue()["code"].numberInt(), 121);
    r = run(R"({"insert": "v", "documents": [{"_id": 3, "x": 0}]})");
    EXPECT_EQ(r.reply["writeErrors"].objValue()["0"].objValue()["code"].numberInt(), 121);
    // warn: allowed
    ok(R"({"collMod": "v", "validationAction": "warn"})");
    r = run(R"({"insert": "v", "documents": [{"_id": 3, "x": 0}]})");
    EXPECT_EQ(r.reply["n"].numberLong(), 1);
    // off
    ok(R"({"collMod": "v", "validationAction": "error", "validationLevel": "off"})");
    r = run(R"({"insert": "v", "documents": [{"_id": 4, "x": 0}]})");
    EXPECT_EQ(r.reply["n"].numberLong(), 1);
    // an empty validator removes validation
    ok(R"({"collMod": "v", "validator": {}, "validationLevel": "strict"})");
    r = run(R"({"insert": "v", "documents": [{"_id": 5, "x": 0}]})");
    EXPECT_EQ(r.reply["n"].numberLong(), 1);
    // the options survive (stored in the catalog)
    bson::BsonView opts = engine->getCollection("test.v")->options;
    EXPECT_EQ(opts["validationLevel"].stringValue(), "strict");
    EXPECT_EQ(opts["validationAction"].stringValue(), "error");
}

TEST_F(BulkWriteTest, CollModAndCreateErrors) {
    EXPECT_EQ(run(R"({"collMod": "missing", "validator": {"a": 1}})").status.code(),
              static_cast<int>(ErrorCodes::NamespaceNotFound));
    ok(R"({"create": "v"})");
    EXPECT_EQ(run(R"({"collMod": "v", "validationLevel": "sometimes"})").status.code(),
              static_cast<int>(ErrorCodes::BadValue));
    EXPECT_EQ(run(R"({"collMod": "v", "validationAction": "ignore"})").status.code(),
              static_cast<int>(ErrorCodes::BadValue));
    EXPECT_EQ(run(R"({"collMod": "v", "validator": 1})").status.code(),
              static_cast<int>(ErrorCodes::TypeMismatch));
    EXPECT_EQ(run(R"({"collMod": "v", "validator": {"$jsonSchema": {"bogus": 1}}})").status.code(),
              static_cast<int>(ErrorCodes::FailedToParse));
    EXPECT_EQ(run(R"({"collMod": "v", "validator": {"a": {"$foo": 1}}})").status.code(),
              static_cast<int>(ErrorCodes::BadValue));
    EXPECT_EQ(run(R"({"collMod": "v", "index": {"name": "a_1", "hidden": true}})").status.code(),
              static_cast<int>(ErrorCodes::NotImplemented));
    EXPECT_EQ(run(R"({"collMod": "v", "whatever": 1})").status.code(), 40415);
    EXPECT_TRUE(run(R"({"collMod": "v"})").ok());
    EXPECT_EQ(run(R"({"create": "w", "validationLevel": "nope"})").status.code(),
              static_cast<int>(ErrorCodes::BadValue));
    EXPECT_EQ(
        run(R"({"create": "w", "validator": {"$jsonSchema": {"type": "integer"}}})").status.code(),
        static_cast<int>(ErrorCodes::BadValue));
    EXPECT_FALSE(engine->getCollection("test.w"));
    EXPECT_TRUE(run(R"({"create": "w", "validator": {"a": 1}, "validationLevel": "moderate",
                        "validationAction": "warn"})")
                    .ok());
}

TEST_F(BulkWriteTest, FindWithJsonSchemaFilter) {
    ok(R"({"insert": "c", "documents": [{"_id": 1, "a": "x"}, {"_id": 2, "a": 2}]})");
    EXPECT_EQ(findAll(R"({"find": "c", "filter": {"$jsonSchema": {"properties":
                  {"a": {"bsonType": "string"}}}}})"),
              std::vector<std::string>{R"({ "_id" : 1, "a" : "x" })"});
}

}  // namespace
}  // namespace tessera::command::test
