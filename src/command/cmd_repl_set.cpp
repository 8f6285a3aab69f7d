// The replica set commands of a `--replSet` member (mongosh's rs.* helpers), answered from its
// replication (repl/replica_set.h) with MongoDB's reply shapes: replSetGetStatus (rs.status()),
// replSetGetConfig (rs.conf()), replSetStepDown (rs.stepDown()), replSetReconfig (rs.add(),
// rs.remove(), rs.reconfig() — one member added or removed at a time), replSetInitiate (a set is
// founded by its members' startup, so it is always initialized already), replSetFreeze
// (rs.freeze(): the member may not become primary for a while, as after a step-down). Any other
// process answers NoReplicationEnabled (76), as a mongod started without --replSet (a router does
// not register these commands: CommandNotFound, as mongos).

#include <algorithm>
#include <set>

#include "base/wall_clock.h"
#include "bson/compare.h"
#include "command/generic_args.h"
#include "command/registry.h"
#include "command/repl_set_info.h"
#include "repl/replica_set.h"
#include "storage/engine.h"

namespace tessera::command {

bson::ObjectId electionIdOf(uint64_t term) {
    bson::ObjectId id;
    id.bytes[0] = 0x7f;
    id.bytes[1] = id.bytes[2] = id.bytes[3] = 0xff;
    for (int i = 0; i < 8; ++i) id.bytes[4 + i] = static_cast<uint8_t>(term >> (8 * (7 - i)));
    return id;
}

void appendOpTime(bson::BsonBuilder& b, std::string_view name, Timestamp ts, uint64_t term) {
    b.startObject(name)
        .appendTimestamp("ts", ts.value)
        .appendInt64("t", static_cast<int64_t>(term))
        .end();
}

namespace {

constexpr auto kReconfigLimit = std::chrono::seconds(60);

StatusWith<repl::ReplicaSet*> replicaSetOf(const OperationContext& opCtx) {
    if (!opCtx.service || !opCtx.service->replicaSet) {
        return Status(ErrorCodes::NoReplicationEnabled, "not running with --replSet");
    }
    return opCtx.service->replicaSet;
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

int64_t millisOf(Timestamp ts) { return int64_t{ts.secs()} * 1000; }

int votingMembers(const repl::ReplicaSetState& set) {
    return static_cast<int>(std::count_if(set.members.begin(), set.members.end(),
                                          [](const repl::SetMember& m) { return m.voter; }));
}

class ReplSetGetStatusCommand : public Command {
  public:
    std::string_view name() const override { return "replSetGetStatus"; }
    bool adminOnly() const override { return true; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        // `initialSync: 1` asks for an initial sync's progress: reported while one runs
        // (initialSyncStatus), whether asked or not.
        TRY_STATUS(checkFields(request, {"initialSync"}));
        ASSIGN_OR_RETURN(repl::ReplicaSet * replicaSet, replicaSetOf(opCtx));
        const ServiceContext& svc = *opCtx.service;
        const repl::ReplicaSetState set = replicaSet->state();
        // This member's optime is its latest applied commit; every applied write is
        // majority-committed (a write applies only once the group has it).
        const Timestamp optime = svc.engine ? svc.engine->lastCommitTimestamp() : Timestamp();
        const int64_t now = wallClockMillis();
        const int64_t started =
            std::chrono::duration_cast<std::chrono::milliseconds>(svc.startTime.time_since_epoch())
                .count();
        const int voters = votingMembers(set);
        const repl::SetMember* self = nullptr;
        for (const repl::SetMember& m : set.members) {
            if (m.self) self = &m;
        }

        reply.append("set", set.name);
        reply.appendDate("date", now);
        reply.appendInt32("myState",
                          static_cast<int>(self ? self->state : repl::MemberState::kStartup));
        reply.appendInt64("term", static_cast<int64_t>(set.term));
        const bool syncing = set.secondary && set.primary;
        reply.append("syncSourceHost", syncing ? *set.primary : "");
        int64_t syncSourceId = -1;
        for (const repl::SetMember& m : set.members) {
            if (syncing && m.host == *set.primary) syncSourceId = m.id;
        }
        reply.appendInt64("syncSourceId", syncSourceId);
        reply.appendInt64("heartbeatIntervalMillis",
                          replicaSet->options().heartbeatInterval.count());
        reply.appendInt32("majorityVoteCount", voters / 2 + 1);
        reply.appendInt32("writeMajorityCount", voters / 2 + 1);
        reply.appendInt32("votingMembersCount", voters);
        reply.appendInt32("writableVotingMembersCount", voters);
        reply.startObject("optimes");
        appendOpTime(reply, "lastCommittedOpTime", optime, set.term);
        reply.appendDate("lastCommittedWallTime", millisOf(optime));
        appendOpTime(reply, "readConcernMajorityOpTime", optime, set.term);
        appendOpTime(reply, "appliedOpTime", optime, set.term);
        appendOpTime(reply, "durableOpTime", optime, set.term);
        reply.appendDate("lastAppliedWallTime", millisOf(optime));
        reply.appendDate("lastDurableWallTime", millisOf(optime));
        reply.end();
        bson::BsonBuilder& members = reply.startArray("members");
        int i = 0;
        for (const repl::SetMember& m : set.members) {
            bson::BsonBuilder& b = members.startObject(std::to_string(i++));
            b.appendInt64("_id", m.id);
            b.append("name", m.host);
            const bool down = m.state == repl::MemberState::kDown;
            b.appendDouble("health", down ? 0 : 1);
            b.appendInt32("state", static_cast<int>(m.state));
            b.append("stateStr", repl::memberStateName(m.state));
            if (m.self) b.appendInt64("uptime", (now - started) / 1000);
            // Others' optimes are known as log positions (the primary's view); one that has
            // everything this member has shares its optime, one behind reports none yet.
            const bool caughtUp = m.appliedIndex && *m.appliedIndex >= set.appliedIndex;
            const Timestamp theirs = caughtUp ? optime : Timestamp();
            appendOpTime(b, "optime", theirs, set.term);
            b.appendDate("optimeDate", millisOf(theirs));
            if (m.appliedIndex) b.appendInt64("logIndex", static_cast<int64_t>(*m.appliedIndex));
            b.append("syncSourceHost", "");
            b.appendInt32("syncSourceId", -1);
            b.append("infoMessage", "");
            if (m.state == repl::MemberState::kPrimary) {
                b.appendOid("electionId", electionIdOf(set.term));
            }
            b.appendInt64("configVersion", set.configVersion);
            b.appendInt64("configTerm", static_cast<int64_t>(set.term));
            if (m.self) b.appendBool("self", true);
            b.append("lastHeartbeatMessage", "");
            b.end();
        }
        members.end();
        if (set.initialSync) appendInitialSyncStatus(reply, *set.initialSync, now);
        return Status::OK();
    }

  private:
    static void appendInitialSyncStatus(bson::BsonBuilder& reply,
                                        const repl::InitialSyncProgress& p, int64_t now) {
        const int64_t started =
            std::chrono::duration_cast<std::chrono::milliseconds>(p.startedAt.time_since_epoch())
                .count();
        reply.startObject("initialSyncStatus")
            .appendInt32("failedInitialSyncAttempts", std::max(0, p.attempts - 1))
            .appendDate("initialSyncStart", started)
            .appendInt64("totalInitialSyncElapsedMillis", now - started)
            .append("syncSourceHost", p.source)
            .appendInt64("neededLogIndex", static_cast<int64_t>(p.neededIndex))
            .appendInt64("copyLogIndex", static_cast<int64_t>(p.copyIndex))
            .appendInt64("files", static_cast<int64_t>(p.files))
            .appendInt64("filesCopied", static_cast<int64_t>(p.filesCopied))
            .appendInt64("approxTotalDataSize", static_cast<int64_t>(p.totalBytes))
            .appendInt64("approxTotalBytesCopied", static_cast<int64_t>(p.bytesCopied))
            .append("lastError", p.lastError)
            .end();
    }
};

void appendConfig(bson::BsonBuilder& reply, const repl::ReplicaSetState& set,
                  const repl::ReplicaSetOptions& options) {
    reply.append("_id", set.name);
    reply.appendInt64("version", set.configVersion);
    reply.appendInt64("term", static_cast<int64_t>(set.term));
    bson::BsonBuilder& members = reply.startArray("members");
    int i = 0;
    for (const repl::SetMember& m : set.members) {
        members.startObject(std::to_string(i++))
            .appendInt64("_id", m.id)
            .append("host", m.host)
            .appendBool("arbiterOnly", false)
            .appendBool("buildIndexes", true)
            .appendBool("hidden", false)
            .appendDouble("priority", 1)
            .startObject("tags")
            .end()
            .appendInt64("secondaryDelaySecs", 0)
            .appendInt32("votes", m.voter ? 1 : 0)
            .end();
    }
    members.end();
    reply.appendInt32("protocolVersion", 1);
    // Every write is applied once a majority has it in its journal (the group's log).
    reply.appendBool("writeConcernMajorityJournalDefault", true);
    reply.startObject("settings")
        .appendBool("chainingAllowed", false)
        .appendInt64("heartbeatIntervalMillis", options.heartbeatInterval.count())
        .appendInt32("heartbeatTimeoutSecs", 10)
        .appendInt64("electionTimeoutMillis", options.electionTimeout.count())
        .appendInt32("catchUpTimeoutMillis", -1)
        .appendInt32("catchUpTakeoverDelayMillis", 30000)
        .startObject("getLastErrorModes")
        .end()
        .startObject("getLastErrorDefaults")
        .appendInt32("w", 1)
        .appendInt32("wtimeout", 0)
        .end()
        .end();
}

class ReplSetGetConfigCommand : public Command {
  public:
    std::string_view name() const override { return "replSetGetConfig"; }
    bool adminOnly() const override { return true; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        // `includeNewlyAddedFields` shows members' internal `newlyAdded` flag: none has one.
        TRY_STATUS(checkFields(request, {"commitmentStatus", "includeNewlyAddedFields"}));
        ASSIGN_OR_RETURN(repl::ReplicaSet * replicaSet, replicaSetOf(opCtx));
        const repl::ReplicaSetState set = replicaSet->state();
        reply.startObject("config");
        appendConfig(reply, set, replicaSet->options());
        reply.end();
        if (request.body["commitmentStatus"].trueValue()) {
            // Committed once no membership change is in flight: the primary's configuration is
            // the one every member follows.
            reply.appendBool("commitmentStatus", set.writablePrimary);
        }
        return Status::OK();
    }
};

class ReplSetStepDownCommand : public Command {
  public:
    std::string_view name() const override { return "replSetStepDown"; }
    bool adminOnly() const override { return true; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder&) override {
        TRY_STATUS(checkFields(request, {"secondaryCatchUpPeriodSecs", "force"}));
        ASSIGN_OR_RETURN(repl::ReplicaSet * replicaSet, replicaSetOf(opCtx));
        if (request.body.hasField("secondaryCatchUpPeriodSecs")) {
            // The group waits one election timeout for a successor to catch up, not a period of
            // the caller's choosing.
            return Status(ErrorCodes::InvalidOptions,
                          "replSetStepDown's secondaryCatchUpPeriodSecs is not supported by this "
                          "Tessera version: a successor has one election timeout to catch up");
        }
        bson::BsonElement secs = request.firstElement();
        if (!secs.isNumber() && secs.type() != bson::BsonType::Bool) {
            return Status(ErrorCodes::TypeMismatch, "stepdown period must be a number");
        }
        if (secs.isNumber() && secs.numberDouble() < 0) {
            return Status(ErrorCodes::BadValue, "stepdown period must be a positive integer");
        }
        if (request.body["force"].trueValue()) {
            // MongoDB's force steps down even when no secondary caught up, leaving the set
            // without a writable member until an election; the group only hands leadership to a
            // member that has every entry.
            return Status(ErrorCodes::InvalidOptions,
                          "replSetStepDown with force: true is not supported by this Tessera "
                          "version: a primary hands over only to a caught-up secondary");
        }
        // {replSetStepDown: true} (an old shell's form) is MongoDB's default period, 60 s.
        const auto period = secs.isNumber() ? static_cast<int64_t>(secs.numberDouble()) : 60;
        return replicaSet->stepDown(std::chrono::seconds(period));
    }
};

// rs.freeze(secs): this member may not become primary for secs (0 unfreezes).
class ReplSetFreezeCommand : public Command {
  public:
    std::string_view name() const override { return "replSetFreeze"; }
    bool adminOnly() const override { return true; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        TRY_STATUS(checkFields(request, {}));
        ASSIGN_OR_RETURN(repl::ReplicaSet * replicaSet, replicaSetOf(opCtx));
        bson::BsonElement secs = request.firstElement();
        if (!secs.isNumber())
            return Status(ErrorCodes::TypeMismatch, "freeze period must be a number");
        if (secs.numberDouble() < 0) {
            return Status(ErrorCodes::BadValue, "freeze period must be 0 or more seconds");
        }
        const auto period = static_cast<int64_t>(secs.numberDouble());
        TRY_STATUS(replicaSet->freeze(std::chrono::seconds(period)));
        if (period == 0) reply.append("info", "unfreezing");
        return Status::OK();
    }
};

class ReplSetInitiateCommand : public Command {
  public:
    std::string_view name() const override { return "replSetInitiate"; }
    bool adminOnly() const override { return true; }

    Status run(OperationContext& opCtx, const CommandRequest&, bson::BsonBuilder&) override {
        TRY_STATUS(replicaSetOf(opCtx).getStatus());
        // Members found their set at first startup (`--replSet NAME/h1:p1,h2:p2,...`).
        return Status(ErrorCodes::AlreadyInitialized,
                      "already initialized: a Tessera replica set is founded by its members' "
                      "startup (--replSet NAME/h1:p1,h2:p2,...); add members with rs.add()");
    }
};

// replSetReconfig {replSetReconfig: <config>, force?, maxTimeMS?}: the config rs.conf() returned
// with one member added or removed (what rs.add() and rs.remove() send). Member settings this
// version does not carry out — priorities, votes, hidden, tags, delays, arbiters — are refused
// unless they have their default value.
class ReplSetReconfigCommand : public Command {
  public:
    std::string_view name() const override { return "replSetReconfig"; }
    bool adminOnly() const override { return true; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder&) override {
        TRY_STATUS(checkFields(request, {"force"}));
        ASSIGN_OR_RETURN(repl::ReplicaSet * replicaSet, replicaSetOf(opCtx));
        if (request.body["force"].trueValue()) {
            return Status(ErrorCodes::InvalidOptions,
                          "replSetReconfig with force: true is not supported by this Tessera "
                          "version: a configuration changes only through the primary");
        }
        bson::BsonElement config = request.firstElement();
        if (!config.isObject()) {
            return Status(ErrorCodes::TypeMismatch, "replSetReconfig needs a config document");
        }
        if (!replicaSet->isWritablePrimary()) {
            return Status(ErrorCodes::NotWritablePrimary,
                          "replSetReconfig should only be run on "
                          "a writable PRIMARY");
        }
        const repl::ReplicaSetState set = replicaSet->state();
        ASSIGN_OR_RETURN(std::vector<std::string> hosts,
                         parseConfig(config.objValue(), set, replicaSet->options()));
        std::set<std::string> wanted(hosts.begin(), hosts.end());
        std::set<std::string> current;
        for (const repl::SetMember& m : set.members) current.insert(m.host);
        std::vector<std::string> added, removed;
        std::set_difference(wanted.begin(), wanted.end(), current.begin(), current.end(),
                            std::back_inserter(added));
        std::set_difference(current.begin(), current.end(), wanted.begin(), wanted.end(),
                            std::back_inserter(removed));
        if (added.size() + removed.size() > 1) {
            return Status(ErrorCodes::NewReplicaSetConfigurationIncompatible,
                          "only one member can be added or removed per reconfig");
        }
        const auto deadline =
            opCtx.deadline.value_or(std::chrono::steady_clock::now() + kReconfigLimit);
        if (!added.empty()) return replicaSet->addMember(added.front(), deadline);
        if (!removed.empty()) {
            if (removed.front() == set.me) {
                return Status(ErrorCodes::InvalidOptions,
                              "the primary cannot remove itself: step it down first "
                              "(rs.stepDown()), then remove it from the new primary");
            }
            return replicaSet->removeMember(removed.front(), deadline);
        }
        return Status::OK();  // the same members: nothing to change
    }

  private:
    static StatusWith<std::vector<std::string>> parseConfig(
        bson::BsonView config, const repl::ReplicaSetState& set,
        const repl::ReplicaSetOptions& options) {
        if (config["_id"].type() != bson::BsonType::String ||
            config["_id"].stringValue() != set.name) {
            return Status(ErrorCodes::NewReplicaSetConfigurationIncompatible,
                          "the config's _id must be the set's name, " + set.name);
        }
        if (config["version"].isNumber() && config["version"].numberLong() <= set.configVersion) {
            return Status(ErrorCodes::NewReplicaSetConfigurationIncompatible,
                          "the config's version must be greater than the current one, " +
                              std::to_string(set.configVersion));
        }
        if (!config["members"].isArray()) {
            return Status(ErrorCodes::TypeMismatch, "the config needs a members array");
        }
        std::vector<std::string> hosts;
        for (bson::BsonElement e : config["members"].objValue()) {
            if (!e.isObject() || e.objValue()["host"].type() != bson::BsonType::String) {
                return Status(ErrorCodes::TypeMismatch, "every member needs a host string");
            }
            std::string host(e.objValue()["host"].stringValue());
            const repl::SetMember* current = nullptr;
            for (const repl::SetMember& m : set.members) {
                if (m.host == host) current = &m;
            }
            for (bson::BsonElement f : e.objValue()) {
                TRY_STATUS(checkMemberField(f, current));
            }
            hosts.push_back(std::move(host));
        }
        // The rest must be what rs.conf() reports: what this set carries out. `term` is the
        // reporter's, not a setting.
        bson::BsonBuilder ours;
        appendConfig(ours, set, options);
        const bson::BsonObj reported = ours.obj();
        for (bson::BsonElement f : config) {
            std::string_view name = f.fieldName();
            if (name == "_id" || name == "version" || name == "members" || name == "term") {
                continue;
            }
            bson::BsonElement same = reported[name];
            const bool carriedOut =
                name == "settings" ? f.isObject() && sameSettings(f.objValue(), same.objValue())
                                   : !same.eoo() && bson::compareElementValues(f, same) == 0;
            if (!carriedOut) {
                return Status(ErrorCodes::InvalidOptions,
                              "replica set config field '" + std::string(name) + ": " +
                                  f.toString(false) +
                                  "' is not supported by this Tessera version (rs.conf() shows "
                                  "what a set carries out)");
            }
        }
        return hosts;
    }

    // Every setting given has the value this set runs with (a subset is fine: an unset one
    // keeps its value).
    static bool sameSettings(bson::BsonView given, bson::BsonView reported) {
        for (bson::BsonElement f : given) {
            bson::BsonElement same = reported[f.fieldName()];
            if (same.eoo() || bson::compareElementValues(f, same) != 0) return false;
        }
        return true;
    }

    // A member's field: its identity, or a setting at the value the set gives it. `votes` is
    // 1, or 0 for a member that does not vote yet (`current`: a member still catching up).
    static Status checkMemberField(bson::BsonElement f, const repl::SetMember* current) {
        std::string_view name = f.fieldName();
        if (name == "_id" || name == "host") return Status::OK();
        const int votes = current && !current->voter ? 0 : 1;
        const bool isDefault =
            (name == "arbiterOnly" && !f.trueValue()) || (name == "hidden" && !f.trueValue()) ||
            (name == "buildIndexes" && f.trueValue()) ||
            (name == "priority" && f.isNumber() && f.numberDouble() == 1) ||
            (name == "votes" && f.isNumber() && f.numberInt() == votes) ||
            (name == "secondaryDelaySecs" && f.isNumber() && f.numberLong() == 0) ||
            (name == "tags" && f.isObject() && f.objValue().isEmpty());
        if (isDefault) return Status::OK();
        return Status(ErrorCodes::InvalidOptions,
                      "replica set member setting '" + std::string(name) + ": " +
                          f.toString(false) +
                          "' is not supported by this Tessera version (every member votes, with "
                          "priority 1, no tags, no delay)");
    }
};

}  // namespace

void registerReplSetCommands(CommandRegistry& registry) {
    registry.add(std::make_unique<ReplSetGetStatusCommand>());
    registry.add(std::make_unique<ReplSetGetConfigCommand>());
    registry.add(std::make_unique<ReplSetStepDownCommand>());
    registry.add(std::make_unique<ReplSetFreezeCommand>());
    registry.add(std::make_unique<ReplSetInitiateCommand>());
    registry.add(std::make_unique<ReplSetReconfigCommand>());
}

}  // namespace tessera::command
