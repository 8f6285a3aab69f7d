#include "command/member_state_gate.h"

#include <algorithm>
#include <array>

#include "command/generic_args.h"
#include "command/write_ops_util.h"
#include "repl/replica_set.h"

namespace tessera::command {
namespace {

// Served by any member: they change no data, or only this member's own state.
constexpr std::array<std::string_view, 30> kAlways = {
    "_replSyncEnd",  // initial sync: any member serves a copy of its data
    "_replSyncRead",
    "_replSyncStart",
    "buildInfo",
    "configureFailPoint",
    "connectionStatus",
    "currentOp",
    "endSessions",
    "getCmdLineOpts",
    "getLog",
    "getParameter",
    "hello",
    "hostInfo",
    "isMaster",
    "ismaster",
    "killAllSessions",
    "killCursors",
    "killSessions",
    "listCommands",
    "ping",
    "refreshSessions",
    "replSetFreeze",
    "replSetGetConfig",
    "replSetGetStatus",
    "replSetInitiate",
    "replSetReconfig",  // answers NotWritablePrimary itself
    "replSetStepDown",  // answers NotWritablePrimary itself
    "serverStatus",
    "startSession",
    "waitForFailPoint",
};

// Reads a client may direct at a secondary.
constexpr std::array<std::string_view, 11> kOptIn = {
    "aggregate",  // without $out / $merge
    "collStats", "count",   "dbStats",         "distinct",      "explain",
    "find",      "getMore", "listCollections", "listDatabases", "listIndexes",
};

bool contains(const auto& table, std::string_view name) {
    return std::find(table.begin(), table.end(), name) != table.end();
}

// The client allows a secondary: a read preference other than `primary` (OP_MSG's
// $readPreference, or the legacy $queryOptions wrapper).
bool secondaryOk(bson::BsonView body) {
    bson::BsonElement rp = body["$readPreference"];
    if (rp.eoo() && body["$queryOptions"].isObject()) {
        rp = body["$queryOptions"].objValue()["$readPreference"];
    }
    if (!rp.isObject()) return false;
    bson::BsonElement mode = rp.objValue()["mode"];
    return mode.type() == bson::BsonType::String && mode.stringValue() != "primary";
}

}  // namespace

SecondaryAllowed secondaryAllowed(const CommandRequest& request) {
    std::string_view name = request.commandName;
    // A transaction runs on the primary only (its statements, its commit and its abort).
    if (request.body.hasField("autocommit")) return SecondaryAllowed::kNever;
    if (contains(kAlways, name)) return SecondaryAllowed::kAlways;
    if (!contains(kOptIn, name)) return SecondaryAllowed::kNever;
    if (name == "aggregate") {
        bson::BsonElement pipeline = request.body["pipeline"];
        if (pipeline.isArray() && pipelineWriteStage(pipeline.objValue())) {
            return SecondaryAllowed::kNever;
        }
    }
    return SecondaryAllowed::kOptIn;
}

Status checkMemberState(const ServiceContext& service, const CommandRequest& request,
                        const ClientState& client) {
    const bool inProcess = client.connectionId == 0;  // net::Connection numbers from 1
    if (service.replicaSet == nullptr || service.replicaSet->isWritablePrimary() || inProcess) {
        return Status::OK();
    }
    switch (secondaryAllowed(request)) {
        case SecondaryAllowed::kAlways:
            return Status::OK();
        case SecondaryAllowed::kOptIn:
            if (secondaryOk(request.body)) return Status::OK();
            return Status(ErrorCodes::NotPrimaryNoSecondaryOk, "not primary and secondaryOk=false");
        case SecondaryAllowed::kNever:
            break;
    }
    return Status(ErrorCodes::NotWritablePrimary, "not primary");
}

std::optional<Status> replStateChangeOf(bson::BsonView reply) {
    bson::BsonElement writeErrors = reply["writeErrors"];
    if (!writeErrors.isArray()) return std::nullopt;
    for (bson::BsonElement e : writeErrors.objValue()) {
        if (!e.isObject()) continue;
        bson::BsonElement code = e.objValue()["code"];
        if (!code.isNumber()) continue;
        const auto c = static_cast<ErrorCodes>(code.numberInt());
        if (c == ErrorCodes::NotWritablePrimary ||
            c == ErrorCodes::InterruptedDueToReplStateChange ||
            c == ErrorCodes::PrimarySteppedDown) {
            bson::BsonElement message = e.objValue()["errmsg"];
            return Status(c, message.type() == bson::BsonType::String
                                 ? std::string(message.stringValue())
                                 : "the primary stepped down");
        }
    }
    return std::nullopt;
}

std::vector<std::string_view> secondaryTableNames() {
    std::vector<std::string_view> names(kAlways.begin(), kAlways.end());
    names.insert(names.end(), kOptIn.begin(), kOptIn.end());
    return names;
}

}  // namespace tessera::command
