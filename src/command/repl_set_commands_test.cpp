// replSetGetStatus / replSetGetConfig: a one-member set's status and config on `serve --replSet`,
// NoReplicationEnabled (76) anywhere else, unknown fields refused (40415).
#include "command/crud_test_util.h"

namespace tessera::command::test {
namespace {

class ReplSetCommandsTest : public CrudFixture {
  protected:
    void SetUp() override {
        CrudFixture::SetUp();
        registerReplSetCommands(registry);
        service.replSetName = "rs0";
    }
};

TEST_F(ReplSetCommandsTest, StatusDescribesThePrimaryOfAOneMemberSet) {
    ASSERT_TRUE(run(R"({"insert": "c", "documents": [{"_id": 1}]})").ok());
    CommandResult r = run(R"({"replSetGetStatus": 1})", {}, "admin");
    ASSERT_TRUE(r.ok()) << r.status.toString();
    EXPECT_EQ(r.reply["set"].stringValue(), "rs0");
    EXPECT_EQ(r.reply["myState"].numberInt(), 1);
    EXPECT_EQ(r.reply["term"].numberLong(), 1);
    bson::BsonView members = r.reply["members"].objValue();
    ASSERT_EQ(members.nFields(), 1);
    bson::BsonView self = members["0"].objValue();
    EXPECT_EQ(self["name"].stringValue(), "localhost:27017");
    EXPECT_EQ(self["stateStr"].stringValue(), "PRIMARY");
    EXPECT_TRUE(self["self"].trueValue());
    // The optime is the latest commit: the insert above.
    EXPECT_EQ(self["optime"].objValue()["ts"].timestampValue(),
              engine->lastCommitTimestamp().value);
    EXPECT_NE(engine->lastCommitTimestamp().value, 0u);
    EXPECT_EQ(
        r.reply["optimes"].objValue()["lastCommittedOpTime"].objValue()["ts"].timestampValue(),
        engine->lastCommitTimestamp().value);
}

TEST_F(ReplSetCommandsTest, ConfigNamesTheOneMember) {
    CommandResult r = run(R"({"replSetGetConfig": 1, "commitmentStatus": true})", {}, "admin");
    ASSERT_TRUE(r.ok()) << r.status.toString();
    bson::BsonView config = r.reply["config"].objValue();
    EXPECT_EQ(config["_id"].stringValue(), "rs0");
    EXPECT_EQ(config["version"].numberInt(), 1);
    bson::BsonView members = config["members"].objValue();
    ASSERT_EQ(members.nFields(), 1);
    EXPECT_EQ(members["0"].objValue()["host"].stringValue(), "localhost:27017");
    EXPECT_EQ(members["0"].objValue()["votes"].numberInt(), 1);
    EXPECT_TRUE(config["writeConcernMajorityJournalDefault"].trueValue());
    EXPECT_TRUE(r.reply["commitmentStatus"].trueValue());
    EXPECT_FALSE(run(R"({"replSetGetConfig": 1})", {}, "admin").reply.hasField("commitmentStatus"));
}

TEST_F(ReplSetCommandsTest, UnknownFieldsAreRefused) {
    EXPECT_EQ(run(R"({"replSetGetStatus": 1, "bogus": 1})", {}, "admin").status.code(), 40415);
    EXPECT_EQ(run(R"({"replSetGetConfig": 1, "bogus": 1})", {}, "admin").status.code(), 40415);
    EXPECT_TRUE(
        run(R"({"replSetGetStatus": 1, "initialSync": 1, "comment": "x"})", {}, "admin").ok());
}

TEST_F(ReplSetCommandsTest, WithoutReplSetTheyAreNoReplicationEnabled) {
    service.replSetName.clear();
    EXPECT_EQ(run(R"({"replSetGetStatus": 1})", {}, "admin").status.code(), 76);
    EXPECT_EQ(run(R"({"replSetGetConfig": 1})", {}, "admin").status.code(), 76);
}

}  // namespace
}  // namespace tessera::command::test
