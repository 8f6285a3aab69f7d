// The replica set commands and the handshake of a `--replSet` member, over a real one-member set
// (repl::ReplicaSet: its storage writes through the group's log), NoReplicationEnabled (76)
// anywhere else; what a member that is not the primary serves (member_state_gate.h). Several
// members — elections, a secondary's refusals, failover — are tested through real processes
// (tests/integration/node/replica_set.test.mjs).
#include "command/crud_test_util.h"
#include "command/member_state_gate.h"
#include "command/repl_set_info.h"
#include "repl/replica_set.h"

namespace tessera::command::test {
namespace {

// A real replica set member on the fixture's engine: `members` empty founds a set of one, else
// the initial members (this one waits to be added when it is not among them).
class MemberFixture : public CrudFixture {
  protected:
    void startMember(std::vector<std::string> members) {
        repl::ReplicaSetOptions options;
        options.name = "rs0";
        options.self = service.host;
        options.members = std::move(members);
        options.dir = _replication.path();
        auto started =
            repl::ReplicaSet::start(options, *engine, {[] { return Status::OK(); }, nullptr});
        ASSERT_TRUE(started.isOK()) << started.getStatus().toString();
        replicaSet = std::move(started.getValue());
        service.replicaSet = replicaSet.get();
    }
    void TearDown() override {
        if (replicaSet) replicaSet->stop();
        service.replicaSet = nullptr;
        replicaSet.reset();
        CrudFixture::TearDown();
    }

    storage::test::TempDir _replication;
    std::unique_ptr<repl::ReplicaSet> replicaSet;
};

class ReplSetCommandsTest : public MemberFixture {
  protected:
    void SetUp() override {
        CrudFixture::SetUp();
        registerReplSetCommands(registry);
        registerHandshakeCommands(registry);
        service.replSetName = "rs0";
        startMember({});
        ASSERT_TRUE(replicaSet->waitUntilWritable(std::chrono::steady_clock::now() +
                                                  std::chrono::seconds(30)));
    }
};

TEST_F(ReplSetCommandsTest, StatusDescribesThePrimaryOfAOneMemberSet) {
    ASSERT_TRUE(run(R"({"insert": "c", "documents": [{"_id": 1}]})").ok());
    CommandResult r = run(R"({"replSetGetStatus": 1})", {}, "admin");
    ASSERT_TRUE(r.ok()) << r.status.toString();
    EXPECT_EQ(r.reply["set"].stringValue(), "rs0");
    EXPECT_EQ(r.reply["myState"].numberInt(), 1);
    EXPECT_GE(r.reply["term"].numberLong(), 1);
    EXPECT_EQ(r.reply["votingMembersCount"].numberInt(), 1);
    bson::BsonView members = r.reply["members"].objValue();
    ASSERT_EQ(members.nFields(), 1);
    bson::BsonView self = members["0"].objValue();
    EXPECT_EQ(self["name"].stringValue(), "localhost:27017");
    EXPECT_EQ(self["_id"].numberLong(), static_cast<int64_t>(repl::memberIdOf("localhost:27017")));
    EXPECT_EQ(self["stateStr"].stringValue(), "PRIMARY");
    EXPECT_EQ(self["health"].numberDouble(), 1);
    EXPECT_TRUE(self["self"].trueValue());
    // The optime is the latest commit: the insert above, applied through the group's log.
    EXPECT_EQ(self["optime"].objValue()["ts"].timestampValue(),
              engine->lastCommitTimestamp().value);
    EXPECT_NE(engine->lastCommitTimestamp().value, 0u);
    EXPECT_GT(self["logIndex"].numberLong(), 1);
    EXPECT_EQ(
        r.reply["optimes"].objValue()["lastCommittedOpTime"].objValue()["ts"].timestampValue(),
        engine->lastCommitTimestamp().value);
}

TEST_F(ReplSetCommandsTest, ConfigNamesTheOneMember) {
    CommandResult r = run(R"({"replSetGetConfig": 1, "commitmentStatus": true})", {}, "admin");
    ASSERT_TRUE(r.ok()) << r.status.toString();
    bson::BsonView config = r.reply["config"].objValue();
    EXPECT_EQ(config["_id"].stringValue(), "rs0");
    EXPECT_GE(config["version"].numberLong(), 1);
    bson::BsonView members = config["members"].objValue();
    ASSERT_EQ(members.nFields(), 1);
    EXPECT_EQ(members["0"].objValue()["host"].stringValue(), "localhost:27017");
    EXPECT_EQ(members["0"].objValue()["votes"].numberInt(), 1);
    EXPECT_TRUE(config["writeConcernMajorityJournalDefault"].trueValue());
    EXPECT_TRUE(r.reply["commitmentStatus"].trueValue());
    EXPECT_FALSE(run(R"({"replSetGetConfig": 1})", {}, "admin").reply.hasField("commitmentStatus"));
}

TEST_F(ReplSetCommandsTest, HelloReportsTheSetWithItsElectionId) {
    CommandResult r = run(R"({"hello": 1})", {}, "admin");
    ASSERT_TRUE(r.ok()) << r.status.toString();
    EXPECT_TRUE(r.reply["isWritablePrimary"].trueValue());
    EXPECT_FALSE(r.reply["secondary"].trueValue());
    EXPECT_EQ(r.reply["setName"].stringValue(), "rs0");
    EXPECT_EQ(r.reply["primary"].stringValue(), "localhost:27017");
    EXPECT_EQ(r.reply["me"].stringValue(), "localhost:27017");
    ASSERT_EQ(r.reply["hosts"].objValue().nFields(), 1);
    const uint64_t term = replicaSet->state().term;
    EXPECT_EQ(r.reply["electionId"].oidValue(), electionIdOf(term));
    EXPECT_GE(r.reply["setVersion"].numberLong(), 1);
    // A later term's electionId is greater: drivers ignore a deposed primary by it.
    EXPECT_LT(electionIdOf(term), electionIdOf(term + 1));
    EXPECT_LT(electionIdOf(255), electionIdOf(256));
    EXPECT_TRUE(r.reply["lastWrite"].objValue()["opTime"].isObject());
}

TEST_F(ReplSetCommandsTest, WhatTheSetCannotDoIsRefusedAndChangesNothing) {
    const int64_t version = replicaSet->state().configVersion;
    // No member to hand over to: the one member stays primary.
    EXPECT_FALSE(run(R"({"replSetStepDown": 60})", {}, "admin").ok());
    EXPECT_EQ(run(R"({"replSetStepDown": 60, "force": true})", {}, "admin").status.code(),
              static_cast<int>(ErrorCodes::InvalidOptions));
    EXPECT_EQ(run(R"({"replSetStepDown": -1})", {}, "admin").status.code(),
              static_cast<int>(ErrorCodes::BadValue));
    EXPECT_TRUE(
        replicaSet->waitUntilWritable(std::chrono::steady_clock::now() + std::chrono::seconds(30)));
    // The primary is not frozen (it is stepped down instead); a freeze's period is checked.
    EXPECT_EQ(run(R"({"replSetFreeze": 30})", {}, "admin").status.code(),
              static_cast<int>(ErrorCodes::IllegalOperation));
    EXPECT_EQ(run(R"({"replSetFreeze": "30"})", {}, "admin").status.code(),
              static_cast<int>(ErrorCodes::TypeMismatch));
    EXPECT_EQ(run(R"({"replSetFreeze": -1})", {}, "admin").status.code(),
              static_cast<int>(ErrorCodes::BadValue));
    EXPECT_EQ(run(R"({"replSetFreeze": 1, "x": 1})", {}, "admin").status.code(), 40415);
    EXPECT_TRUE(replicaSet->isWritablePrimary()) << "the failed step-down left it unfrozen";
    EXPECT_EQ(run(R"({"replSetInitiate": {}})", {}, "admin").status.code(),
              static_cast<int>(ErrorCodes::AlreadyInitialized));

    auto reconfig = [&](std::string members, std::string extra = "") {
        return run(R"({"replSetReconfig": {"_id": "rs0", "version": )" +
                       std::to_string(version + 1) + R"(, "members": [)" + members + "]" + extra +
                       "}}",
                   {}, "admin")
            .status;
    };
    const std::string self = R"({"_id": 0, "host": "localhost:27017")";
    // Member settings this version does not carry out are refused, not ignored.
    EXPECT_EQ(reconfig(self + R"(, "priority": 2})").code(),
              static_cast<int>(ErrorCodes::InvalidOptions));
    EXPECT_EQ(reconfig(self + R"(, "tags": {"dc": "east"}})").code(),
              static_cast<int>(ErrorCodes::InvalidOptions));
    EXPECT_EQ(reconfig(self + "}", R"(, "bogus": 1)").code(),
              static_cast<int>(ErrorCodes::InvalidOptions));
    EXPECT_EQ(reconfig(self + R"(, "buildIndexes": false})").code(),
              static_cast<int>(ErrorCodes::InvalidOptions));
    EXPECT_EQ(reconfig(self + R"(, "votes": 0})").code(),  // a voter kept from voting
              static_cast<int>(ErrorCodes::InvalidOptions));
    EXPECT_EQ(reconfig(self + "}", R"(, "configsvr": true)").code(),
              static_cast<int>(ErrorCodes::InvalidOptions));
    EXPECT_EQ(reconfig(self + "}", R"(, "settings": {"electionTimeoutMillis": 10000})").code(),
              static_cast<int>(ErrorCodes::InvalidOptions));
    EXPECT_EQ(reconfig(self + "}", R"(, "settings": {"chainingAllowed": true})").code(),
              static_cast<int>(ErrorCodes::InvalidOptions));
    EXPECT_EQ(run(R"({"replSetStepDown": 60, "secondaryCatchUpPeriodSecs": 10})", {}, "admin")
                  .status.code(),
              static_cast<int>(ErrorCodes::InvalidOptions));
    // One member added or removed at a time.
    EXPECT_EQ(reconfig(self + R"(}, {"_id": 1, "host": "h:1"}, {"_id": 2, "host": "h:2"})").code(),
              static_cast<int>(ErrorCodes::NewReplicaSetConfigurationIncompatible));
    // The primary cannot remove itself.
    EXPECT_FALSE(reconfig(R"({"_id": 1, "host": "h:1"})").isOK());
    // The same members with default settings: nothing to change.
    EXPECT_TRUE(reconfig(self + R"(, "priority": 1, "votes": 1, "hidden": false})").isOK());
    EXPECT_EQ(
        run(R"({"replSetReconfig": {"_id": "rs0", "version": 1, "members": []}})", {}, "admin")
            .status.code(),
        static_cast<int>(ErrorCodes::NewReplicaSetConfigurationIncompatible));
    EXPECT_EQ(replicaSet->state().configVersion, version);
    EXPECT_EQ(replicaSet->state().members.size(), 1u);
}

// rs.add() and rs.remove() send back the whole document rs.conf() returned, settings included:
// it is taken as it is.
TEST_F(ReplSetCommandsTest, TheConfigRsConfReturnsIsTakenBack) {
    CommandResult current = run(R"({"replSetGetConfig": 1})", {}, "admin");
    ASSERT_TRUE(current.ok()) << current.status.toString();
    bson::BsonBuilder config;
    for (bson::BsonElement e : current.reply["config"].objValue()) {
        if (e.fieldName() == std::string_view("version")) {
            config.appendInt64("version", e.numberLong() + 1);
        } else {
            config.appendElement(e);
        }
    }
    bson::BsonBuilder command;
    command.append("replSetReconfig", config.obj());
    CommandResult r = runBody(command.obj(), {}, "admin");
    EXPECT_TRUE(r.ok()) << r.status.toString();
}

TEST_F(ReplSetCommandsTest, WriteConcernOfMoreMembersThanTheSetHasIsUnsatisfiable) {
    EXPECT_TRUE(replicaSet->awaitReplication(1, std::nullopt).isOK());
    EXPECT_EQ(replicaSet->awaitReplication(2, std::nullopt).code(),
              static_cast<int>(ErrorCodes::UnsatisfiableWriteConcern));
}

TEST_F(ReplSetCommandsTest, UnknownFieldsAreRefused) {
    EXPECT_EQ(run(R"({"replSetGetStatus": 1, "bogus": 1})", {}, "admin").status.code(), 40415);
    EXPECT_EQ(run(R"({"replSetGetConfig": 1, "bogus": 1})", {}, "admin").status.code(), 40415);
    EXPECT_EQ(run(R"({"replSetStepDown": 1, "bogus": 1})", {}, "admin").status.code(), 40415);
    EXPECT_TRUE(
        run(R"({"replSetGetStatus": 1, "initialSync": 1, "comment": "x"})", {}, "admin").ok());
}

TEST_F(ReplSetCommandsTest, WithoutReplSetTheyAreNoReplicationEnabled) {
    service.replicaSet = nullptr;
    for (const char* command :
         {R"({"replSetGetStatus": 1})", R"({"replSetGetConfig": 1})", R"({"replSetStepDown": 1})",
          R"({"replSetFreeze": 1})", R"({"replSetInitiate": 1})"}) {
        EXPECT_EQ(run(command, {}, "admin").status.code(), 76) << command;
    }
}

CommandRequest requestOf(const bson::BsonObj& body) {
    CommandRequest request;
    request.body = body;
    request.commandName = body.firstElement().fieldName();
    return request;
}

TEST(MemberStateGateTest, ASecondaryServesReadsOnRequestAndNeverWrites) {
    auto allowed = [](std::string_view json) {
        bson::BsonObj body = J(json);
        return secondaryAllowed(requestOf(body));
    };
    EXPECT_EQ(allowed(R"({"hello": 1})"), SecondaryAllowed::kAlways);
    EXPECT_EQ(allowed(R"({"replSetGetStatus": 1})"), SecondaryAllowed::kAlways);
    EXPECT_EQ(allowed(R"({"find": "c"})"), SecondaryAllowed::kOptIn);
    EXPECT_EQ(allowed(R"({"aggregate": "c", "pipeline": [{"$match": {}}]})"),
              SecondaryAllowed::kOptIn);
    EXPECT_EQ(allowed(R"({"aggregate": "c", "pipeline": [{"$out": "d"}]})"),
              SecondaryAllowed::kNever);
    EXPECT_EQ(allowed(R"({"insert": "c"})"), SecondaryAllowed::kNever);
    EXPECT_EQ(allowed(R"({"findAndModify": "c"})"), SecondaryAllowed::kNever);
    EXPECT_EQ(allowed(R"({"createIndexes": "c"})"), SecondaryAllowed::kNever);
    // A transaction's statements, reads included, and its end run on the primary only.
    EXPECT_EQ(allowed(R"({"find": "c", "autocommit": false})"), SecondaryAllowed::kNever);
    EXPECT_EQ(allowed(R"({"commitTransaction": 1, "autocommit": false})"),
              SecondaryAllowed::kNever);
    // Without a replica set nothing is refused.
    ServiceContext standalone;
    bson::BsonObj insert = J(R"({"insert": "c"})");
    ClientState connection;
    connection.connectionId = 1;
    EXPECT_TRUE(checkMemberState(standalone, requestOf(insert), connection).isOK());
}

// A member that is not the writable primary (here: one waiting to be added to a set of others):
// a client connection's write is refused at the gate; the server's own in-process commands pass
// the gate (a new primary's step-up runs them before it takes clients' writes), and their writes
// are refused by the engine, whose commit log does not lead.
class WaitingMemberTest : public MemberFixture {
  protected:
    void SetUp() override {
        CrudFixture::SetUp();
        startMember({"127.0.0.1:1", "127.0.0.1:2"});  // not this member: it waits
    }
};

TEST_F(WaitingMemberTest, ConnectionsAreGatedAndInProcessWritesRefusedByTheLog) {
    ASSERT_FALSE(replicaSet->isWritablePrimary());
    bson::BsonObj insert = J(R"({"insert": "c", "documents": [{"_id": 1}]})");
    ClientState connection;
    connection.connectionId = 7;
    EXPECT_EQ(checkMemberState(service, requestOf(insert), connection).code(),
              static_cast<int>(ErrorCodes::NotWritablePrimary));
    ClientState inProcess;
    EXPECT_TRUE(checkMemberState(service, requestOf(insert), inProcess).isOK());
    CommandResult written = run(R"({"insert": "c", "documents": [{"_id": 1}]})");
    const bool refused =
        written.status.code() == static_cast<int>(ErrorCodes::NotWritablePrimary) ||
        written.reply.toJson().find("10107") != std::string::npos;
    EXPECT_TRUE(refused) << written.status.toString() << " " << written.reply.toJson();
    EXPECT_EQ(run(R"({"count": "c"})").reply["n"].numberLong(), 0);
}

TEST(MemberStateGateTest, EveryCommandTheTableNamesExists) {
    CommandRegistry registry;
    registerAllCommands(registry);
    for (std::string_view name : secondaryTableNames()) {
        EXPECT_NE(registry.find(name), nullptr) << name << " is not a command";
    }
}

}  // namespace
}  // namespace tessera::command::test
