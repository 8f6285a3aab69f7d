// Invocation: one request's state through the entry point's phases, how it ends, and how its
// reply is stamped with the role's cluster time (RolePolicy::ClusterTime).

#include "base/log.h"
#include "command/entry_point_phases.h"
#include "command/opcounters.h"
#include "command/service_entry_point.h"
#include "storage/engine.h"

namespace tessera::command {
namespace {

constexpr auto kSlowOperationThreshold = std::chrono::milliseconds(100);

// A router's reply to a snapshot read: `atClusterTime` in its cursor (find, aggregate) or at the
// top (distinct), as a node's, so that the driver's snapshot session reads at it next.
bson::BsonObj withAtClusterTime(bson::BsonObj reply, Timestamp at) {
    if (reply["ok"].numberDouble() != 1) return reply;
    bson::BsonBuilder b;
    bool inCursor = false;
    for (bson::BsonElement e : reply) {
        if (e.fieldName() == "cursor" && e.isObject()) {
            inCursor = true;
            b.startObject("cursor");
            for (bson::BsonElement c : e.objValue()) {
                if (c.fieldName() != "atClusterTime") b.appendElement(c);
            }
            b.appendTimestamp("atClusterTime", at.value);
            b.end();
        } else if (e.fieldName() != "atClusterTime") {
            b.appendElement(e);
        }
    }
    if (!inCursor) b.appendTimestamp("atClusterTime", at.value);
    return b.obj();
}

// `reply` with timestamp field `name`, unless it has one (or is empty: a closed connection).
bson::BsonObj withTimestampField(bson::BsonObj reply, std::string_view name, Timestamp ts) {
    if (reply.isEmpty() || reply.hasField(name)) return reply;
    bson::BsonBuilder b;
    for (bson::BsonElement e : reply) b.appendElement(e);
    b.appendTimestamp(name, ts.value);
    return b.obj();
}

// The time of a node's or shard's reply: its latest commit (reading there sees everything it
// acknowledged), or, before its first commit, a fresh tick of its clock (reading there sees the
// same empty history, and every later commit gets a greater timestamp), never Timestamp(0),
// which a driver would gossip back as a null cluster time.
Timestamp operationTimeOf(const storage::Engine& engine) {
    Timestamp last = engine.lastCommitTimestamp();
    return last.isNull() ? HybridLogicalClock::global().next() : last;
}

}  // namespace

Invocation::Invocation(ServiceContext& service, CommandRequest& request, ClientState& client,
                       bool inlineExecution)
    : service(service),
      policy(RolePolicy::of(service)),
      request(request),
      client(client),
      inlineExecution(inlineExecution) {
    opCtx.service = &service;
    opCtx.client = &client;
    opCtx.inlineExecution = inlineExecution;
    opCtx.writeUnit.setMayWait(!inlineExecution);
}

void Invocation::endUnstamped(bson::BsonObj r) {
    _done = true;
    _result = std::move(r);
}

void Invocation::end(bson::BsonObj r) { endUnstamped(stamp(std::move(r))); }

void Invocation::endWithError(const Status& s, bson::BsonView extra) { end(errorReply(s, extra)); }

void Invocation::endClosingConnection() {
    _done = true;
    _closeConnection = true;
    _result = bson::BsonObj();
}

void Invocation::endWouldBlock() {
    _done = true;
    _result.reset();
}

void Invocation::readSnapshotAt(Timestamp ts) {
    bson::BsonBuilder b;
    for (bson::BsonElement e : request.body) {
        if (e.fieldName() != "readConcern") b.appendElement(e);
    }
    b.startObject("readConcern");
    b.append("level", "snapshot");
    b.appendTimestamp("atClusterTime", ts.value);
    b.end();
    snapshotBody = b.obj();
    request.body = snapshotBody;
    opCtx.readAtClusterTime = ts;
}

bson::BsonObj Invocation::stamp(bson::BsonObj r) {
    using ClusterTime = RolePolicy::ClusterTime;
    r = withServerErrorLabels(std::move(r), labels);
    if (service.role == ClusterRole::kRouter && !failCommandActed) {
        r = withoutShutdownCodes(std::move(r));
    }
    if (chosenReadTs) {
        r = withTimestampField(std::move(r), txn::kTransactionReadTimestampField, *chosenReadTs);
    }
    switch (policy.clusterTime) {
        case ClusterTime::kReplicaSet:
            return withClusterTime(std::move(r), operationTimeOf(*service.engine));
        case ClusterTime::kRouter:
            if (opCtx.readAtClusterTime) {
                r = withAtClusterTime(std::move(r), *opCtx.readAtClusterTime);
            }
            return withClusterTime(std::move(r), routerTime());
        case ClusterTime::kOperationTime:
            // A shard tells its routers its time: a router draws its transactions' read
            // timestamps from a clock that has seen every commit it acknowledged.
            return withTimestampField(std::move(r), "operationTime",
                                      operationTimeOf(*service.engine));
        case ClusterTime::kNone:
            break;
    }
    return r;
}

void observeClusterTime(bson::BsonView body) {
    bson::BsonElement ct = body["$clusterTime"];
    if (ct.isObject()) {
        bson::BsonElement t = ct.objValue()["clusterTime"];
        if (t.type() == bson::BsonType::Timestamp) {
            HybridLogicalClock::global().advanceTo(Timestamp{t.timestampValue()});
        }
    }
}

Timestamp routerTime() {
    Timestamp now = HybridLogicalClock::global().current();
    return now.isNull() ? HybridLogicalClock::global().next() : now;
}

bson::BsonObj withClusterTime(bson::BsonObj reply, Timestamp operationTime) {
    if (reply.isEmpty() || reply.hasField("operationTime")) return reply;
    Timestamp clusterTime = std::max(operationTime, HybridLogicalClock::global().current());
    bson::BsonBuilder b;
    for (bson::BsonElement e : reply) b.appendElement(e);
    b.appendTimestamp("operationTime", operationTime.value);
    b.startObject("$clusterTime");
    b.appendTimestamp("clusterTime", clusterTime.value);
    b.startObject("signature");
    b.appendBinary("hash", 0, std::string(20, '\0'));
    b.appendInt64("keyId", 0);
    b.end();
    b.end();
    return b.obj();
}

void countRequest(const CommandRequest& request) {
    std::vector<std::pair<std::string_view, size_t>> sizes;
    for (const DocumentSequence& seq : request.sequences) {
        sizes.emplace_back(seq.identifier, seq.documents.size());
    }
    OpCounters::global().countRequest(request.commandName, request.body, sizes);
}

void logSlow(std::chrono::steady_clock::time_point started, const CommandRequest& request,
             const Status& status) {
    auto elapsed = std::chrono::steady_clock::now() - started;
    if (elapsed < kSlowOperationThreshold) return;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count();
    // The client's `comment` goes with it, as MongoDB logs it, so a slow operation can be traced
    // to the code that sent it.
    std::string comment;
    if (bson::BsonElement c = request.body["comment"]; !c.eoo()) {
        comment = ",\"comment\":\"" + log::jsonEscape(c.toString(false)) + "\"";
    }
    log::info("COMMAND", 51803, "Slow query",
              "{\"ns\":\"" + log::jsonEscape(request.db) + "\",\"command\":\"" +
                  log::jsonEscape(request.commandName) + "\",\"durationMillis\":" +
                  std::to_string(ms) + ",\"ok\":" + (status.isOK() ? "1" : "0") + comment + "}");
}

}  // namespace tessera::command
