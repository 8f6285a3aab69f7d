// A write concern that asks for the journal is met once per command, after all its writes, by
// one group-committed WAL sync (ServiceEntryPoint::awaitJournal): not one sync per document.
#include <gtest/gtest.h>

#include "command/crud_test_util.h"
#include "command/service_entry_point.h"

namespace tessera::command {
namespace {

using test::J;

class JournalWriteConcernTest : public test::CrudFixture {
  protected:
    void SetUp() override {
        CrudFixture::SetUp();
        service.role = ClusterRole::kStandalone;
    }

    // Runs `json` through the service entry point and returns how many WAL syncs it caused.
    uint64_t syncsOf(std::string_view json) {
        uint64_t before = engine->walSyncCount();
        bson::BsonObj reply = entry.runCommand("test", J(json), nullptr);
        EXPECT_EQ(reply["ok"].numberDouble(), 1.0) << reply.toJson();
        return engine->walSyncCount() - before;
    }

    static std::string insertOf(int from, int n, std::string_view writeConcern) {
        std::string docs;
        for (int i = from; i < from + n; ++i) {
            docs +=
                (docs.empty() ? "" : ", ") + std::string(R"({"_id": )") + std::to_string(i) + "}";
        }
        return R"({"insert": "c", "documents": [)" + docs + "]" +
               (writeConcern.empty() ? "" : ", \"writeConcern\": " + std::string(writeConcern)) +
               "}";
    }

    ServiceEntryPoint entry{service};
};

TEST_F(JournalWriteConcernTest, ABatchWithJTrueSyncsTheJournalOnce) {
    EXPECT_EQ(syncsOf(insertOf(0, 500, R"({"w": 1, "j": true})")), 1u);
    EXPECT_EQ(syncsOf(insertOf(500, 100, R"({"w": "majority"})")), 1u);
    EXPECT_EQ(syncsOf(insertOf(600, 100, R"({"fsync": true})")), 1u);
    EXPECT_EQ(syncsOf(R"({"update": "c", "updates": [{"q": {}, "u": {"$set": {"x": 1}},
        "multi": true}], "writeConcern": {"j": true}})"),
              1u);
    EXPECT_EQ(syncsOf(R"({"delete": "c", "deletes": [{"q": {"_id": {"$lt": 10}}, "limit": 0}],
        "writeConcern": {"w": "majority"}})"),
              1u);
    EXPECT_EQ(ok(R"({"count": "c"})")["n"].numberLong(), 690);
}

TEST_F(JournalWriteConcernTest, WithoutJournalWriteConcernNothingIsSynced) {
    EXPECT_EQ(syncsOf(insertOf(0, 100, "")), 0u);
    EXPECT_EQ(syncsOf(insertOf(100, 100, R"({"w": 1})")), 0u);
    EXPECT_EQ(syncsOf(insertOf(200, 100, R"({"w": 1, "j": false})")), 0u);
}

TEST_F(JournalWriteConcernTest, AFailedBatchStillJournalsWhatItWrote) {
    ASSERT_EQ(syncsOf(insertOf(0, 1, "")), 0u);
    uint64_t before = engine->walSyncCount();
    // Ordered: documents 1 and 2 are written, then _id 0 fails; what was written is journaled.
    bson::BsonObj reply = entry.runCommand("test", J(R"({"insert": "c",
        "documents": [{"_id": 1}, {"_id": 2}, {"_id": 0}, {"_id": 3}],
        "writeConcern": {"j": true}})"),
                                           nullptr);
    EXPECT_EQ(reply["n"].numberLong(), 2) << reply.toJson();
    EXPECT_TRUE(reply["writeErrors"].isArray()) << reply.toJson();
    EXPECT_EQ(engine->walSyncCount() - before, 1u);
}

}  // namespace
}  // namespace tessera::command
