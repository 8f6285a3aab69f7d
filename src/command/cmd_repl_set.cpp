// replSetGetStatus and replSetGetConfig (mongosh's rs.status() and rs.conf()) for what
// `serve --replSet NAME` is: the primary of a one-member replica set, term 1, config version 1,
// whose every write is applied, durable when journaled and majority-committed by that one member.
// Any other process answers NoReplicationEnabled (76), as a mongod started without --replSet: a
// plain standalone, and a shard or the config server, which answer the handshake as standalones
// (a router does not register these commands: CommandNotFound, as mongos).

#include <algorithm>

#include "base/hlc.h"
#include "base/wall_clock.h"
#include "command/generic_args.h"
#include "command/registry.h"
#include "storage/engine.h"

namespace tessera::command {
namespace {

constexpr int64_t kTerm = 1;
constexpr int32_t kConfigVersion = 1;

Status checkReplicaSet(const OperationContext& opCtx) {
    if (!opCtx.service || opCtx.service->replSetName.empty()) {
        return Status(ErrorCodes::NoReplicationEnabled, "not running with --replSet");
    }
    return Status::OK();
}

// The command's own fields besides its name and the generic arguments: `allowed` are carried
// out; anything else is refused as MongoDB's IDL refuses it (40415), so nothing is ignored.
Status checkFields(const CommandRequest& request, std::initializer_list<std::string_view> allowed) {
    bool first = true;
    for (bson::BsonElement e : request.body) {
        if (first) {
            first = false;
            continue;
        }
        std::string_view f = e.fieldName();
        if (isGenericArgument(f) || std::find(allowed.begin(), allowed.end(), f) != allowed.end()) {
            continue;
        }
        return Status(40415, "BSON field '" + std::string(request.commandName) + "." +
                                 std::string(f) + "' is an unknown field.");
    }
    return Status::OK();
}

// The member's optime: the latest commit (every commit is applied and, the member being the
// whole set, majority-committed once journaled; reported for all three, as a one-member set's
// optimes coincide).
void appendOpTime(bson::BsonBuilder& b, std::string_view name, Timestamp ts) {
    b.startObject(name).appendTimestamp("ts", ts.value).appendInt64("t", kTerm).end();
}

int64_t millisOf(Timestamp ts) { return int64_t{ts.secs()} * 1000; }

class ReplSetGetStatusCommand : public Command {
  public:
    std::string_view name() const override { return "replSetGetStatus"; }
    bool adminOnly() const override { return true; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        // `initialSync: 1` asks for the initial sync's progress, reported while one runs: never
        // on the set's only member, so there is nothing to add.
        TRY_STATUS(checkFields(request, {"initialSync"}));
        TRY_STATUS(checkReplicaSet(opCtx));
        const ServiceContext& svc = *opCtx.service;
        Timestamp optime = svc.engine ? svc.engine->lastCommitTimestamp() : Timestamp();
        const int64_t now = wallClockMillis();
        const int64_t started =
            std::chrono::duration_cast<std::chrono::milliseconds>(svc.startTime.time_since_epoch())
                .count();
        const Timestamp elected = Timestamp::fromParts(static_cast<uint32_t>(started / 1000), 1);

        reply.append("set", svc.replSetName);
        reply.appendDate("date", now);
        reply.appendInt32("myState", 1);
        reply.appendInt64("term", kTerm);
        reply.append("syncSourceHost", "");
        reply.appendInt32("syncSourceId", -1);
        reply.appendInt64("heartbeatIntervalMillis", 2000);
        reply.appendInt32("majorityVoteCount", 1);
        reply.appendInt32("writeMajorityCount", 1);
        reply.appendInt32("votingMembersCount", 1);
        reply.appendInt32("writableVotingMembersCount", 1);
        reply.startObject("optimes");
        appendOpTime(reply, "lastCommittedOpTime", optime);
        reply.appendDate("lastCommittedWallTime", millisOf(optime));
        appendOpTime(reply, "readConcernMajorityOpTime", optime);
        appendOpTime(reply, "appliedOpTime", optime);
        appendOpTime(reply, "durableOpTime", optime);
        reply.appendDate("lastAppliedWallTime", millisOf(optime));
        reply.appendDate("lastDurableWallTime", millisOf(optime));
        reply.end();
        reply.startArray("members").startObject("0");
        reply.appendInt32("_id", 0);
        reply.append("name", svc.host);
        reply.appendDouble("health", 1);
        reply.appendInt32("state", 1);
        reply.append("stateStr", "PRIMARY");
        reply.appendInt64("uptime", (now - started) / 1000);
        appendOpTime(reply, "optime", optime);
        reply.appendDate("optimeDate", millisOf(optime));
        reply.appendDate("lastAppliedWallTime", millisOf(optime));
        reply.appendDate("lastDurableWallTime", millisOf(optime));
        reply.append("syncSourceHost", "");
        reply.appendInt32("syncSourceId", -1);
        reply.append("infoMessage", "");
        reply.appendTimestamp("electionTime", elected.value);
        reply.appendDate("electionDate", started);
        reply.appendInt32("configVersion", kConfigVersion);
        reply.appendInt64("configTerm", kTerm);
        reply.appendBool("self", true);
        reply.append("lastHeartbeatMessage", "");
        reply.end().end();
        return Status::OK();
    }
};

class ReplSetGetConfigCommand : public Command {
  public:
    std::string_view name() const override { return "replSetGetConfig"; }
    bool adminOnly() const override { return true; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        // `commitmentStatus: true` asks whether the config is committed: always, on one member.
        // `includeNewlyAddedFields` shows members' internal `newlyAdded` flag: none has one.
        TRY_STATUS(checkFields(request, {"commitmentStatus", "includeNewlyAddedFields"}));
        TRY_STATUS(checkReplicaSet(opCtx));
        const ServiceContext& svc = *opCtx.service;
        reply.startObject("config");
        reply.append("_id", svc.replSetName);
        reply.appendInt32("version", kConfigVersion);
        reply.appendInt64("term", kTerm);
        reply.startArray("members").startObject("0");
        reply.appendInt32("_id", 0);
        reply.append("host", svc.host);
        reply.appendBool("arbiterOnly", false);
        reply.appendBool("buildIndexes", true);
        reply.appendBool("hidden", false);
        reply.appendDouble("priority", 1);
        reply.startObject("tags").end();
        reply.appendInt64("secondaryDelaySecs", 0);
        reply.appendInt32("votes", 1);
        reply.end().end();
        reply.appendInt32("protocolVersion", 1);
        // w: majority waits for the journal (README, generic arguments).
        reply.appendBool("writeConcernMajorityJournalDefault", true);
        reply.startObject("settings");
        reply.appendBool("chainingAllowed", true);
        reply.appendInt32("heartbeatIntervalMillis", 2000);
        reply.appendInt32("heartbeatTimeoutSecs", 10);
        reply.appendInt32("electionTimeoutMillis", 10000);
        reply.appendInt32("catchUpTimeoutMillis", -1);
        reply.appendInt32("catchUpTakeoverDelayMillis", 30000);
        reply.startObject("getLastErrorModes").end();
        reply.startObject("getLastErrorDefaults")
            .appendInt32("w", 1)
            .appendInt32("wtimeout", 0)
            .end();
        reply.end();
        reply.end();
        if (request.body["commitmentStatus"].trueValue())
            reply.appendBool("commitmentStatus", true);
        return Status::OK();
    }
};

}  // namespace

void registerReplSetCommands(CommandRegistry& registry) {
    registry.add(std::make_unique<ReplSetGetStatusCommand>());
    registry.add(std::make_unique<ReplSetGetConfigCommand>());
}

}  // namespace tessera::command
