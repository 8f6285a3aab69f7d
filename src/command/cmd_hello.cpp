// Handshake and identity commands: hello/isMaster, ping, buildInfo, getParameter, whatsmyuri.
// Field order and presence follow MongoDB (../shared/reference/mongodb-surface.md §1): drivers
// classify the server and size their batches from these replies.

#include "base/wall_clock.h"
#include "command/opcounters.h"
#include "command/registry.h"
#include "command/repl_set_info.h"
#include "command/server_info.h"
#include "repl/replica_set.h"
#include "storage/engine.h"
#include "txn/logical_sessions.h"

namespace tessera::command {
namespace {

// Records the handshake's client metadata ({client: {application: {name}}}) on the connection.
void recordClientMetadata(OperationContext& opCtx, bson::BsonView body) {
    bson::BsonElement client = body["client"];
    if (!opCtx.client || !client.isObject()) return;
    opCtx.client->clientMetadata = client.objValue().copy();
    bson::BsonElement app = client.objValue()["application"];
    if (app.isObject() && app.objValue()["name"].type() == bson::BsonType::String) {
        opCtx.client->appName = std::string(app.objValue()["name"].stringValue());
    }
}

// A replica set member's part of the handshake (mongodb-surface.md §1): what drivers' server
// discovery follows — the set's name and hosts, who is primary, and (electionId, setVersion) so
// that a deposed primary's word never outranks its successor's.
void appendReplicaSetFields(bson::BsonBuilder& reply, const repl::ReplicaSetState& set,
                            const ServiceContext& service) {
    bson::BsonBuilder& hosts = reply.startArray("hosts");
    int n = 0;
    for (const repl::SetMember& m : set.members) {
        if (m.voter) hosts.append(std::to_string(n++), m.host);
    }
    hosts.end();
    if (n != static_cast<int>(set.members.size())) {
        // Members still catching up before they vote (MongoDB lists priority-0 members here).
        bson::BsonBuilder& passives = reply.startArray("passives");
        n = 0;
        for (const repl::SetMember& m : set.members) {
            if (!m.voter) passives.append(std::to_string(n++), m.host);
        }
        passives.end();
    }
    reply.append("setName", set.name);
    reply.appendInt64("setVersion", set.configVersion);
    reply.appendBool("secondary", set.secondary);
    if (set.primary) reply.append("primary", *set.primary);
    reply.append("me", set.me);
    if (set.writablePrimary) reply.appendOid("electionId", electionIdOf(set.term));
    const Timestamp lastWrite =
        service.engine ? service.engine->lastCommitTimestamp() : Timestamp();
    const int64_t lastWriteDate = int64_t{lastWrite.secs()} * 1000;
    bson::BsonBuilder& lw = reply.startObject("lastWrite");
    appendOpTime(lw, "opTime", lastWrite, set.term);
    lw.appendDate("lastWriteDate", lastWriteDate);
    // Every applied write is majority-committed (a write applies only once the group has it).
    appendOpTime(lw, "majorityOpTime", lastWrite, set.term);
    lw.appendDate("majorityWriteDate", lastWriteDate);
    lw.end();
}

class HelloCommand : public Command {
  public:
    std::string_view name() const override { return "hello"; }
    std::vector<std::string_view> aliases() const override { return {"isMaster", "ismaster"}; }
    bool runsInline(const ServiceContext&, const CommandRequest& request) const override {
        return !request.body.hasField("maxAwaitTimeMS");  // an awaitable hello waits
    }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        bson::BsonView body = request.body;
        if (body.hasField("topologyVersion") != body.hasField("maxAwaitTimeMS")) {
            return Status(51760,
                          "topologyVersion must be provided if and only if "
                          "maxAwaitTimeMS is provided");
        }
        recordClientMetadata(opCtx, body);
        const repl::ReplicaSet* replicaSet = opCtx.service ? opCtx.service->replicaSet : nullptr;
        const std::optional<repl::ReplicaSetState> set =
            replicaSet ? std::optional(replicaSet->state()) : std::nullopt;
        const bool writable = !set || set->writablePrimary;
        // The legacy field name follows the command's spelling (useLegacyResponseFields).
        reply.appendBool(request.commandName == "hello" ? "isWritablePrimary" : "ismaster",
                         writable);
        // A router answers as mongos: `msg: "isdbgrid"` is how drivers and mongosh classify it.
        if (opCtx.service && opCtx.service->role == ClusterRole::kRouter) {
            reply.append("msg", "isdbgrid");
        }
        if (set) appendReplicaSetFields(reply, *set, *opCtx.service);
        if (body["helloOk"].trueValue()) reply.appendBool("helloOk", true);
        reply.appendInt32("maxBsonObjectSize", kMaxBsonObjectSize);
        reply.appendInt32("maxMessageSizeBytes", kMaxMessageSizeBytes);
        reply.appendInt32("maxWriteBatchSize", kMaxWriteBatchSize);
        reply.appendDate("localTime", wallClockMillis());
        reply.appendInt32("logicalSessionTimeoutMinutes", txn::kLogicalSessionTimeoutMinutes);
        reply.appendInt64("connectionId", opCtx.client ? opCtx.client->connectionId : 0);
        reply.appendInt32("minWireVersion", kMinWireVersion);
        reply.appendInt32("maxWireVersion", kMaxWireVersion);
        reply.appendBool("readOnly", false);
        return Status::OK();
    }
};

class PingCommand : public Command {
  public:
    std::string_view name() const override { return "ping"; }
    bool runsInline(const ServiceContext&, const CommandRequest&) const override { return true; }
    Status run(OperationContext&, const CommandRequest&, bson::BsonBuilder&) override {
        return Status::OK();
    }
};

class BuildInfoCommand : public Command {
  public:
    std::string_view name() const override { return "buildInfo"; }
    std::vector<std::string_view> aliases() const override { return {"buildinfo"}; }

    Status run(OperationContext&, const CommandRequest&, bson::BsonBuilder& reply) override {
        reply.append("version", kCompatibleMongoVersion);
        reply.append("gitVersion", "tessera-" + std::string(kTesseraVersion));
        reply.startArray("modules").end();
        reply.append("allocator", "system");
        reply.append("javascriptEngine", "none");
        reply.append("sysInfo", "deprecated");
        reply.startArray("versionArray");
        for (int i = 0; i < 4; ++i) reply.appendInt32(std::to_string(i), kVersionArray[i]);
        reply.end();
        reply.startObject("openssl").append("running", "disabled").end();
        reply.startObject("buildEnvironment")
            .append("target_os", "linux")
            .append("target_arch", "x86_64")
            .end();
        reply.appendInt32("bits", 64);
        reply.appendBool("debug", false);
        reply.appendInt32("maxBsonObjectSize", kMaxBsonObjectSize);
        reply.startArray("storageEngines").append("0", "rocksdb").end();
        reply.startObject("tessera").append("version", kTesseraVersion).end();
        return Status::OK();
    }
};

// getParameter: {getParameter: 1, <name>: 1, ...} or {getParameter: "*"}.
class GetParameterCommand : public Command {
  public:
    std::string_view name() const override { return "getParameter"; }
    bool adminOnly() const override { return true; }

    Status run(OperationContext&, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        bson::BsonElement first = request.firstElement();
        bool all = first.type() == bson::BsonType::String && first.stringValue() == "*";
        bool found = false;
        auto wants = [&](std::string_view param) {
            bool yes = all || request.body.hasField(param);
            found |= yes;
            return yes;
        };
        if (wants("featureCompatibilityVersion")) {
            reply.startObject("featureCompatibilityVersion")
                .append("version", kFeatureCompatibilityVersion)
                .end();
        }
        if (wants("maxBSONDepth")) reply.appendInt32("maxBSONDepth", 200);
        if (wants("logLevel")) reply.appendInt32("logLevel", 0);
        if (wants("enableTestCommands")) reply.appendBool("enableTestCommands", false);
        if (!found) return Status(ErrorCodes::InvalidOptions, "no option found to get");
        return Status::OK();
    }
};

class WhatsMyUriCommand : public Command {
  public:
    std::string_view name() const override { return "whatsmyuri"; }
    Status run(OperationContext& opCtx, const CommandRequest&, bson::BsonBuilder& reply) override {
        reply.append("you", opCtx.client ? opCtx.client->remote : std::string());
        return Status::OK();
    }
};

class ListCommandsCommand : public Command {
  public:
    std::string_view name() const override { return "listCommands"; }
    Status run(OperationContext& opCtx, const CommandRequest&, bson::BsonBuilder& reply) override {
        reply.startObject("commands");
        for (const Command* c : opCtx.service->registry->all()) {
            if (c->testOnly() && !opCtx.service->enableTestCommands) continue;
            reply.startObject(c->name())
                .appendBool("adminOnly", c->adminOnly())
                .append("help", "")
                .end();
        }
        reply.end();
        return Status::OK();
    }
};

}  // namespace

void registerHandshakeCommands(CommandRegistry& registry) {
    registry.add(std::make_unique<HelloCommand>());
    registry.add(std::make_unique<PingCommand>());
    registry.add(std::make_unique<BuildInfoCommand>());
    registry.add(std::make_unique<GetParameterCommand>());
    registry.add(std::make_unique<WhatsMyUriCommand>());
    registry.add(std::make_unique<ListCommandsCommand>());
}

}  // namespace tessera::command
