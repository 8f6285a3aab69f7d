// The last phase of a request (entry_point_phases.h): the role's after-hook, the write concern —
// the journal, a writeConcernError — and the reply.

#include "command/entry_point_phases.h"
#include "command/member_state_gate.h"
#include "command/service_entry_point.h"
#include "command/write_ops_util.h"
#include "repl/replica_set.h"
#include "storage/engine.h"

namespace tessera::command {
namespace {

// A retry that wrote nothing: every statement of its insert/update/delete was answered from
// its record (`retriedStmtIds`). onPrimaryTransactionalWrite fires on a write (MongoDB's op
// observer), so such a retry does not close its connection again.
bool everyStatementReplayed(const CommandRequest& request, bson::BsonView reply) {
    std::string_view name = request.commandName;
    std::string_view field = name == "insert"   ? "documents"
                             : name == "update" ? "updates"
                             : name == "delete" ? "deletes"
                                                : "";
    if (field.empty() || !reply["retriedStmtIds"].isArray()) return false;
    size_t retried = static_cast<size_t>(reply["retriedStmtIds"].objValue().nFields());
    if (const DocumentSequence* sequence = request.sequence(field)) {
        return sequence->documents.size() == retried;
    }
    bson::BsonElement statements = request.body[field];
    return statements.isArray() && static_cast<size_t>(statements.objValue().nFields()) == retried;
}

// A write concern that asks for the journal (j, fsync, w: "majority") is met here, once per
// command after all its writes (and the role's records of them): the commands' writes are not
// synced one by one, and concurrent commands share one WAL sync (Engine::syncWal). Routers hold
// no data: their shards meet the write concern they forward.
Status awaitJournal(const Invocation& inv) {
    // A replica set member applied every write once the group's log — its journal — had it.
    if (inv.service.replicaSet) return Status::OK();
    if (!inv.policy.journals || !writeConcernWaitsForJournal(inv.request.body)) {
        return Status::OK();
    }
    return inv.service.engine->syncWal();
}

// The command's fields, and `ok: 1` (with the write concern's error when `concernError`).
bson::BsonObj successReply(Invocation& inv, bson::BsonView fields,
                           const std::optional<bson::BsonObj>& concernError) {
    bson::BsonBuilder b;
    for (bson::BsonElement e : fields) b.appendElement(e);
    for (bson::BsonElement e : inv.opCtx.replyExtraFields) b.appendElement(e);
    if (concernError) appendWriteConcernError(inv, b, *concernError);
    b.appendDouble("ok", 1.0);
    return b.obj();
}

// A numeric `w` above 1 on a replica set member: waits until that many members have every write
// this one applied (w: "majority" is met by every applied write), up to `wtimeout`.
std::optional<bson::BsonObj> replicationWriteConcernError(const Invocation& inv) {
    bson::BsonElement wc = inv.request.body["writeConcern"];
    if (!wc.isObject()) return std::nullopt;
    bson::BsonElement w = wc.objValue()["w"];
    if (!w.isNumber() || w.numberLong() <= 1) return std::nullopt;
    std::optional<std::chrono::steady_clock::time_point> deadline = inv.opCtx.deadline;
    bson::BsonElement wtimeout = wc.objValue()["wtimeout"];
    if (wtimeout.eoo()) wtimeout = wc.objValue()["wtimeoutMS"];
    if (wtimeout.isNumber() && wtimeout.numberLong() > 0) {
        auto limit =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(wtimeout.numberLong());
        deadline = deadline ? std::min(*deadline, limit) : limit;
    }
    Status replicated =
        inv.service.replicaSet->awaitReplication(static_cast<size_t>(w.numberLong()), deadline);
    if (replicated.isOK()) return std::nullopt;
    bson::BsonBuilder b;
    b.appendInt32("code", static_cast<int>(replicated.code()));
    b.append("codeName", codeName(static_cast<int>(replicated.code())));
    b.append("errmsg", replicated.reason());
    if (replicated.is(ErrorCodes::WriteConcernFailed)) {
        b.startObject("errInfo").appendBool("wtimeout", true).end();
    }
    return b.obj();
}

}  // namespace

bool isRestartableRead(const CommandRequest& request) {
    if (!takesReadConcern(request.commandName)) return false;
    if (request.commandName != "aggregate") return true;
    bson::BsonElement pipeline = request.body["pipeline"];
    return pipeline.isArray() && !pipelineWriteStage(pipeline.objValue());
}

std::optional<bson::BsonObj> writeConcernErrorFor(const Invocation& inv, bson::BsonView fields) {
    if (fields.hasField("writeConcernError")) return std::nullopt;  // the shards' already
    if (!inv.failCommandWriteConcernError.isEmpty()) return inv.failCommandWriteConcernError;
    if (!inv.policy.acceptsSessions) return std::nullopt;  // a standalone refused it in parse
    if (inv.service.replicaSet) return replicationWriteConcernError(inv);
    return unsatisfiableWriteConcernError(inv.request.body);
}

void appendWriteConcernError(const Invocation& inv, bson::BsonBuilder& reply,
                             const bson::BsonObj& concernError) {
    reply.appendObject("writeConcernError", concernError);
    // failCommand's errorLabels, when it named any, go with its writeConcernError.
    if (concernError.bytes() == inv.failCommandWriteConcernError.bytes() && inv.failCommandLabels) {
        reply.appendArray("errorLabels", *inv.failCommandLabels);
    }
}

void reply(Invocation& inv) {
    bson::BsonObj fields = inv.status.isOK() ? inv.reply.obj() : bson::BsonObj();
    if (inv.service.replicaSet && inv.status.isOK()) {
        if (std::optional<Status> stepDown = replStateChangeOf(fields)) {
            inv.status = *stepDown;
            fields = bson::BsonObj();
        }
    }
    const std::optional<bson::BsonObj> concernError =
        inv.status.isOK() ? writeConcernErrorFor(inv, fields) : std::nullopt;
    bson::BsonObj sent = inv.status.isOK() ? successReply(inv, fields, concernError)
                                           : errorReply(inv.status, inv.opCtx.errorExtraInfo);
    if (inv.policy.hooks) {
        // The hooks see the reply as it is sent (a retryable write stores it), less its
        // writeConcernError: that one is about this attempt's wait, which a retry repeats
        // (MongoDB's retry gets the write's result, and waits for its write concern again).
        bson::BsonObj full =
            concernError ? successReply(inv, fields, std::nullopt) : bson::BsonObj(sent);
        inv.service.hooks->afterCommand(inv.opCtx, inv.request, *inv.command, inv.status, full);
        if (inv.closeAfterWrite && everyStatementReplayed(inv.request, full)) {
            inv.closeAfterWrite = false;
        }
    }
    // It changed nothing and would have waited on an io thread: the pool runs it again.
    if (inv.status.is(ErrorCodes::InlineWouldBlock)) return inv.endWouldBlock();
    if (Status journaled = awaitJournal(inv); !journaled.isOK()) {
        inv.status = journaled;
        sent = errorReply(journaled, inv.policy.hooks ? bson::BsonObj() : inv.opCtx.errorExtraInfo);
    }
    if (inv.closeAfterWrite) return inv.endClosingConnection();
    logSlow(inv.started, inv.request, inv.status);
    inv.end(std::move(sent));
}

}  // namespace tessera::command
