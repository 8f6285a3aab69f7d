#include "command/service_entry_point.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "base/log.h"
#include "command/error_labels.h"
#include "command/fail_command.h"
#include "command/generic_args.h"
#include "command/opcounters.h"
#include "command/transactions.h"
#include "command/write_ops_util.h"
#include "storage/engine.h"
#include "storage/prepared_transactions.h"
#include "wire/op_msg.h"

namespace tessera::command {

// MongoDB's `onPrimaryTransactionalWrite` (test commands only): a retryable write (txnNumber, not
// in a transaction) that evaluates it closes its connection without a reply — after it applied
// and recorded the write, or, with `failBeforeCommitExceptionCode`, before anything ran (then
// with that error when `closeConnection: false`). The driver's retry must get the first
// attempt's result, or apply the write once.
TESSERA_FAIL_POINT_DEFINE(onPrimaryTransactionalWrite);
namespace {

constexpr auto kSlowOperationThreshold = std::chrono::milliseconds(100);

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

ClientState& clientStateOf(net::ClientContext& client) {
    if (!client.state) {
        auto state = std::make_shared<ClientState>();
        state->connectionId = client.connectionId;
        state->remote = client.remote;
        client.state = state;
    }
    return static_cast<ClientState&>(*client.state);  // only this handler sets it
}

// Parses maxTimeMS into an absolute deadline (0 or absent: none).
Status applyMaxTimeMS(bson::BsonView body, OperationContext& opCtx) {
    bson::BsonElement e = body["maxTimeMS"];
    if (e.eoo() || e.isNull()) return Status::OK();
    if (!e.isNumber() || !e.isIntegral() || e.numberLong() < 0 ||
        e.numberLong() > std::numeric_limits<int32_t>::max()) {
        return Status(
            ErrorCodes::BadValue,
            "maxTimeMS must be a non-negative integer less than 2^31, got " + e.toString(false));
    }
    if (e.numberLong() > 0) {
        opCtx.deadline =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(e.numberLong());
    }
    return Status::OK();
}

void appendOk(bson::BsonBuilder& reply) { reply.appendDouble("ok", 1.0); }

// failCommand's writeConcernError (and its errorLabels, if it named any) on a successful reply.
void appendWriteConcernError(bson::BsonBuilder& reply, const bson::BsonObj& writeConcernError,
                             const std::optional<bson::BsonObj>& labels) {
    if (writeConcernError.isEmpty()) return;
    reply.appendObject("writeConcernError", writeConcernError);
    if (labels) reply.appendArray("errorLabels", *labels);
}

// Fills opCtx.lsid (the 16 bytes of `lsid.id`) and opCtx.txnNumber from the generic arguments.
Status applySessionArgs(bson::BsonView body, OperationContext& opCtx) {
    if (bson::BsonElement lsid = body["lsid"]; lsid.isObject()) {
        bson::BsonElement id = lsid.objValue()["id"];
        if (id.type() == bson::BsonType::BinData) opCtx.lsid = std::string(id.binaryValue().data);
    }
    bson::BsonElement txn = body["txnNumber"];
    if (txn.eoo()) return Status::OK();
    if (!txn.isNumber() || !txn.isIntegral() || txn.numberLong() < 0) {
        return Status(ErrorCodes::TypeMismatch,
                      "txnNumber must be a non-negative integer, got " + txn.toString(false));
    }
    if (!opCtx.lsid) {
        return Status(ErrorCodes::InvalidOptions,
                      "Transaction number requires a session ID to also be specified");
    }
    opCtx.txnNumber = txn.numberLong();
    return Status::OK();
}

// Where a process runs no multi-document transactions (the config server, a standalone without
// --replSet), a command that would start, continue, commit or abort one is refused before it is
// looked up, checked or run, so no statement of a would-be transaction is ever applied on its own
// (a router once dropped `startTransaction` and applied the writes). The standalone keeps
// mongod's answer for session fields (20); the others answer OperationNotSupportedInTransaction
// (263): the Node driver rewrites every IllegalOperation (20) of a write into its "add
// retryWrites=false" hint, which would hide what to do; 263 reaches the user as written and
// carries no TransientTransactionError label, so withTransaction does not retry it.
Status refuseTransaction(const CommandRequest& request, bool acceptsSessions,
                         bool supportsTransactions) {
    bool txnCommand = isTransactionEndCommand(request.commandName);
    bool txnFields =
        request.body.hasField("startTransaction") || request.body.hasField("autocommit");
    if (!acceptsSessions && (txnFields || request.body.hasField("txnNumber"))) {
        return Status(ErrorCodes::IllegalOperation,
                      "Transaction numbers are only allowed on a replica set member or mongos");
    }
    if ((!txnCommand && !txnFields) || supportsTransactions) return Status::OK();
    return Status(ErrorCodes::OperationNotSupportedInTransaction,
                  "Transactions are not supported by this Tessera version: '" +
                      std::string(request.commandName) +
                      (txnCommand ? "' commits or aborts a multi-document transaction"
                                  : "' carries startTransaction/autocommit") +
                      ". Nothing was applied; run the operations without a transaction.");
}

// In a transaction a write error that running the transaction again may avoid (a conflict, a
// transaction a placement change aborted, a read timestamp older than a migrated range: the
// TransientTransactionError codes) ends the statement, and the transaction: the statement fails
// with it (MongoDB's reply shape: a top-level error with TransientTransactionError, not a
// writeErrors entry).
std::optional<Status> transientWriteError(bson::BsonView reply) {
    bson::BsonElement errors = reply["writeErrors"];
    if (!errors.isArray()) return std::nullopt;
    for (bson::BsonElement e : errors.objValue()) {
        if (!e.isObject()) continue;
        int code = e.objValue()["code"].numberInt();
        if (isTransientTransactionErrorCode(code)) {
            return Status(static_cast<ErrorCodes>(code),
                          std::string(e.objValue()["errmsg"].stringValue()));
        }
    }
    return std::nullopt;
}

// A statement whose only error is WouldChangeOwningShard wrote nothing: its router moves the
// document within the same transaction, which goes on.
bool onlyWouldChangeOwningShard(bson::BsonView reply) {
    bson::BsonElement errors = reply["writeErrors"];
    if (!errors.isArray()) return false;
    bool any = false;
    for (bson::BsonElement e : errors.objValue()) {
        if (!e.isObject() || e.objValue()["code"].numberInt() !=
                                 static_cast<int>(ErrorCodes::WouldChangeOwningShard)) {
            return false;
        }
        any = true;
    }
    return any;
}

// Cluster time gossip of a one-member replica set: a client's $clusterTime advances the clock;
// a readConcern.afterClusterTime waits until every commit up to it is visible (a snapshot there
// waits for them and makes later commits get greater timestamps).
void observeClusterTime(bson::BsonView body) {
    bson::BsonElement ct = body["$clusterTime"];
    if (ct.isObject()) {
        bson::BsonElement t = ct.objValue()["clusterTime"];
        if (t.type() == bson::BsonType::Timestamp) {
            HybridLogicalClock::global().advanceTo(Timestamp{t.timestampValue()});
        }
    }
}

void waitForClusterTime(bson::BsonView body, storage::Engine& engine) {
    observeClusterTime(body);
    bson::BsonElement rc = body["readConcern"];
    if (!rc.isObject()) return;
    bson::BsonElement after = rc.objValue()["afterClusterTime"];
    if (after.type() != bson::BsonType::Timestamp) return;
    Timestamp at{after.timestampValue()};
    if (at > engine.lastCommitTimestamp()) HybridLogicalClock::global().advanceTo(at);
    engine.snapshot(at);  // returns once `at` is readable
}

// How long a command without maxTimeMS waits for a prepared transaction's decision before it
// fails with ExceededTimeLimit (the decision normally takes one coordinator round trip).
constexpr std::chrono::seconds kMaxPrepareWait{60};

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

// A router's time: its clock, which has seen every commit it acknowledged (a fresh tick before it
// has seen any: never Timestamp(0)).
Timestamp routerTime() {
    Timestamp now = HybridLogicalClock::global().current();
    return now.isNull() ? HybridLogicalClock::global().next() : now;
}

// The time of a node's or shard's reply: its latest commit (reading there sees everything it
// acknowledged), or, before its first commit, a fresh tick of its clock (reading there sees the
// same empty history, and every later commit gets a greater timestamp), never Timestamp(0),
// which a driver would gossip back as a null cluster time.
Timestamp operationTimeOf(const storage::Engine& engine) {
    Timestamp last = engine.lastCommitTimestamp();
    return last.isNull() ? HybridLogicalClock::global().next() : last;
}

// `reply` with operationTime (a shard's reply to a router).
bson::BsonObj withOperationTime(bson::BsonObj reply, Timestamp operationTime) {
    return withTimestampField(std::move(reply), "operationTime", operationTime);
}

// `reply` with operationTime and $clusterTime (an unsigned cluster time: no auth).
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

// A read that may run again from the start: a command that takes a read concern (find, count,
// distinct, aggregate) and changes nothing (an aggregate without $out or $merge).
bool isRestartableRead(const CommandRequest& request) {
    if (!takesReadConcern(request.commandName)) return false;
    if (request.commandName != "aggregate") return true;
    bson::BsonElement pipeline = request.body["pipeline"];
    return pipeline.isArray() && !pipelineWriteStage(pipeline.objValue());
}

// How often a read at the latest timestamp runs again because a prepared transaction it met
// committed after its timestamp (storage::LatestReadScope); the last run keeps its timestamp.
constexpr int kLatestReadRuns = 4;

// command->run, for a read at the engine's latest timestamp inside a storage::LatestReadScope:
// run again (from the start, with a fresh reply) when it met a prepared transaction that
// committed after its timestamp, so that it sees a commit acknowledged before it began.
Status runReadingLatest(Command& command, OperationContext& opCtx, const CommandRequest& request,
                        bson::BsonBuilder& reply) {
    const bool latest = !opCtx.transaction && !opCtx.readAtClusterTime && opCtx.service->engine &&
                        isRestartableRead(request);
    for (int run = 1; latest && run < kLatestReadRuns; ++run) {
        try {
            storage::LatestReadScope scope;
            return command.run(opCtx, request, reply);
        } catch (const storage::PrepareConflict& e) {
            if (e.kind() != storage::PrepareConflict::Kind::kCommittedAfterRead) throw;
            reply = bson::BsonBuilder();
        }
    }
    return command.run(opCtx, request, reply);
}

void logSlow(std::chrono::steady_clock::time_point started, const CommandRequest& request,
             const Status& status) {
    auto elapsed = std::chrono::steady_clock::now() - started;
    if (elapsed >= kSlowOperationThreshold) {
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count();
        // The client's `comment` goes with it, as MongoDB logs it, so a slow operation can be
        // traced to the code that sent it.
        std::string comment;
        if (bson::BsonElement c = request.body["comment"]; !c.eoo()) {
            comment = ",\"comment\":\"" + log::jsonEscape(c.toString(false)) + "\"";
        }
        log::info("COMMAND", 51803, "Slow query",
                  "{\"ns\":\"" + log::jsonEscape(request.db) + "\",\"command\":\"" +
                      log::jsonEscape(request.commandName) +
                      "\",\"durationMillis\":" + std::to_string(ms) +
                      ",\"ok\":" + (status.isOK() ? "1" : "0") + comment + "}");
    }
}

}  // namespace

bson::BsonObj errorReply(const Status& status, bson::BsonView extra) {
    bson::BsonBuilder b;
    b.appendDouble("ok", 0.0);
    b.append("errmsg", status.reason());
    b.appendInt32("code", status.code());
    b.append("codeName", status.codeName());
    for (bson::BsonElement e : extra) {
        if (e.fieldName() != "ok" && e.fieldName() != "errmsg" && e.fieldName() != "code" &&
            e.fieldName() != "codeName") {
            b.appendElement(e);
        }
    }
    return b.obj();
}

namespace {

// The network layer has already applied wire::checkOpMsgCommand (one body, a string $db). The
// result views `msg`.
CommandRequest commandRequestOf(const wire::OpMsgRequest& msg) {
    CommandRequest cmd;
    cmd.db = std::string(msg.database());
    cmd.commandName = msg.commandName();
    cmd.body = msg.body;
    for (const wire::DocumentSequence& seq : msg.sequences) {
        cmd.sequences.push_back(DocumentSequence{seq.identifier, seq.documents});
    }
    return cmd;
}

// Whether the command waits for its journal, or reads what must be journaled first: the write
// concerns above, a readConcern majority or linearizable (generic_args.h). Such a request runs
// on the pool.
bool waitsForDurability(bson::BsonView body) {
    if (writeConcernWaitsForJournal(body)) return true;
    if (bson::BsonElement rc = body["readConcern"]; rc.isObject()) {
        bson::BsonElement level = rc.objValue()["level"];
        if (level.type() == bson::BsonType::String && level.stringValue() != "local" &&
            level.stringValue() != "available") {
            return true;
        }
    }
    return false;
}

// What tryForward hands to completeForward (net::ForwardRequest::state).
struct ForwardState final : net::HandlerState {
    CommandRequest request;  // views the connection's message, alive until the reply is sent
    OperationContext opCtx;
    Command* command = nullptr;
    ForwardPlan plan;   // its cmd moved into the net::ForwardRequest
    int exchanges = 0;  // completed so far
    std::chrono::steady_clock::time_point started;
};

}  // namespace

bson::BsonObj ServiceEntryPoint::handleRequest(const net::Request& request,
                                               net::ClientContext& client) {
    CommandRequest cmd = commandRequestOf(*request.msg);
    ClientState& state = clientStateOf(client);
    bool closeConnection = false;
    bson::BsonObj reply = *execute(cmd, state, &closeConnection);
    if (closeConnection) client.closeConnection = true;
    client.appName = state.appName;
    return reply;
}

void ServiceEntryPoint::onDisconnect(net::ClientContext&) {}

bool ServiceEntryPoint::isControlRequest(const net::Request& request) {
    std::string_view name = request.msg->commandName();
    // Internal commands, and the ends of transactions: a coordinator's commitTransaction is what
    // statements waiting for a prepared transaction's decision wait for, so it must never queue
    // behind them on the workers.
    return (!name.empty() && name.front() == '_') || isTransactionEndCommand(name);
}

std::optional<net::ForwardRequest> ServiceEntryPoint::tryForward(const net::Request& request,
                                                                 net::ClientContext& client) {
    if (_service.hooks || (_service.enableTestCommands && failCommand.active())) {
        return std::nullopt;
    }
    if (request.msg->body.hasField("startTransaction") ||
        request.msg->body.hasField("autocommit")) {
        return std::nullopt;  // refused by execute()
    }
    // Looked up before anything is allocated: most commands never forward.
    Command* command = _service.registry->find(request.msg->commandName());
    if (!command || command->testOnly() || command->adminOnly() || !acceptsSessions()) {
        return std::nullopt;
    }
    try {
        auto state = std::make_shared<ForwardState>();
        state->request = commandRequestOf(*request.msg);
        OperationContext& opCtx = state->opCtx;
        opCtx.service = &_service;
        opCtx.client = &clientStateOf(client);
        ReadConcernLevel readConcern = ReadConcernLevel::kLocal;
        bool causal = _service.role == ClusterRole::kRouter;
        if (!checkGenericArguments(state->request, *command, _service.role, &readConcern, false,
                                   causal)
                 .isOK() ||
            !applyMaxTimeMS(state->request.body, opCtx).isOK() ||
            !applySessionArgs(state->request.body, opCtx).isOK() ||
            (opCtx.txnNumber && !command->supportsRetryableWrite())) {
            return std::nullopt;  // handleRequest reports it
        }
        if (causal) observeClusterTime(state->request.body);
        state->started = std::chrono::steady_clock::now();
        std::optional<ForwardPlan> plan = command->planForward(opCtx, state->request);
        if (!plan) return std::nullopt;
        state->command = command;
        net::ForwardRequest forward{std::move(plan->host), std::move(plan->db),
                                    std::move(plan->cmd), nullptr, plan->idempotent};
        state->plan = std::move(*plan);
        forward.state = std::move(state);
        return forward;
    } catch (const std::exception&) {
        return std::nullopt;  // handleRequest runs the command and reports what went wrong
    }
}

net::ForwardOutcome ServiceEntryPoint::completeForward(const net::Request&, net::ClientContext&,
                                                       net::ForwardRequest& forward,
                                                       const StatusWith<bson::BsonObj>& remote) {
    std::shared_ptr<net::HandlerState> keep = forward.state;  // this handler's ForwardState
    auto& state = static_cast<ForwardState&>(*keep);
    net::ForwardOutcome outcome;
    try {
        bson::BsonBuilder reply;
        std::optional<Status> status =
            state.command->completeForward(state.opCtx, state.request, state.plan, remote, reply);
        if (!status) {
            if (++state.exchanges >= kMaxForwards) return outcome;
            std::optional<ForwardPlan> plan =
                state.command->planForward(state.opCtx, state.request);
            if (!plan) return outcome;
            outcome.next = net::ForwardRequest{std::move(plan->host), std::move(plan->db),
                                               std::move(plan->cmd), keep, plan->idempotent};
            state.plan = std::move(*plan);
            return outcome;
        }
        countRequest(state.request);
        logSlow(state.started, state.request, *status);
        if (!status->isOK()) {
            outcome.reply = errorReply(*status, state.opCtx.errorExtraInfo);
        } else {
            appendOk(reply);
            outcome.reply = reply.obj();
        }
        LabelContext labels;
        labels.retryableWrite =
            state.opCtx.txnNumber.has_value();  // tryForward checked the command
        outcome.reply = withServerErrorLabels(std::move(*outcome.reply), labels);
        if (_service.role == ClusterRole::kRouter) {
            outcome.reply = withClusterTime(std::move(*outcome.reply), routerTime());
        }
    } catch (...) {
        outcome.reply = errorReply(statusFromCurrentException("command"));
    }
    return outcome;
}

bson::BsonObj ServiceEntryPoint::runCommand(std::string_view db, bson::BsonView body,
                                            ClientState* client) {
    CommandRequest cmd;
    cmd.db = std::string(db);
    cmd.commandName = body.firstElement().fieldName();
    cmd.body = body;
    ClientState local;
    bool close = false;
    return *execute(cmd, client ? *client : local, &close);
}

std::optional<bson::BsonObj> ServiceEntryPoint::runInline(const net::Request& request,
                                                          net::ClientContext& client) {
    if (request.isLegacyOpQuery ||
        (_service.enableTestCommands &&
         (failCommand.active() || onPrimaryTransactionalWrite.active()))) {
        return std::nullopt;  // the failpoints may block or close the connection
    }
    CommandRequest cmd = commandRequestOf(*request.msg);
    Command* command = _service.registry->find(cmd.commandName);
    if (!command || !command->runsInline(_service, cmd) || waitsForDurability(cmd.body) ||
        cmd.body.hasField("autocommit")) {  // a transaction's statement may wait for its session
        return std::nullopt;
    }
    if (_service.engine && _service.engine->preparedTransactionCount() > 0) {
        return std::nullopt;  // a read may wait for a prepared transaction's decision: the pool
    }
    ClientState& state = clientStateOf(client);
    bool closeConnection = false;
    // Should a transaction be prepared meanwhile, a read that would wait for it fails instead
    // (PrepareConflict) and the pool runs the request: an io thread never waits for a decision.
    storage::PrepareWaitScope noWait;
    std::optional<bson::BsonObj> reply = execute(cmd, state, &closeConnection, true);
    if (!reply) return std::nullopt;  // it would have waited: the pool runs it
    countRequest(cmd);
    if (closeConnection) client.closeConnection = true;
    client.appName = state.appName;
    return reply;
}

Status ServiceEntryPoint::awaitJournal(const CommandRequest& request) const {
    if (!_service.engine || _service.role == ClusterRole::kRouter ||
        !writeConcernWaitsForJournal(request.body)) {
        return Status::OK();
    }
    return _service.engine->syncWal();
}

std::optional<bson::BsonObj> ServiceEntryPoint::execute(CommandRequest& request,
                                                        ClientState& client, bool* closeConnection,
                                                        bool inlineExecution) {
    auto started = std::chrono::steady_clock::now();
    if (Status refused = refuseTransaction(
            request, acceptsSessions(),
            _service.transactions != nullptr || _service.routerTransactions != nullptr);
        !refused.isOK()) {
        return errorReply(refused);
    }
    Command* command = _service.registry->find(request.commandName);
    if (!command || (command->testOnly() && !_service.enableTestCommands)) {
        return errorReply(Status(ErrorCodes::CommandNotFound,
                                 "no such command: '" + std::string(request.commandName) + "'"));
    }
    if (command->adminOnly() && request.db != "admin") {
        return errorReply(
            Status(ErrorCodes::Unauthorized,
                   std::string(command->name()) + " may only be run against the admin database."));
    }
    if (!inlineExecution) countRequest(request);  // runInline counts what it completes

    OperationContext opCtx;
    opCtx.service = &_service;
    opCtx.client = &client;
    opCtx.inlineExecution = inlineExecution;
    opCtx.writeUnit.setMayWait(!inlineExecution);
    ReadConcernLevel readConcern = ReadConcernLevel::kLocal;
    bool transactionsHere = _service.transactions || _service.routerTransactions;
    bool transactionStatement = transactionsHere && request.body.hasField("autocommit");
    // A one-member replica set gossips cluster time: replies carry operationTime and
    // $clusterTime, and a read with afterClusterTime waits until that time is readable (causal
    // consistency).
    bool gossip = !_service.replSetName.empty() && _service.engine;
    // A shard (and the config server) tells its clients its time (operationTime, below): a
    // driver's causally consistent session sends it back as readConcern.afterClusterTime, which
    // the shard waits for.
    bool stampsOperationTime =
        (_service.role == ClusterRole::kShard || _service.role == ClusterRole::kConfig) &&
        _service.engine;
    // A router gossips the cluster time as a mongos does: its clock has observed every shard
    // reply (operationTime), so its time is at or after every commit it acknowledged; a client's
    // afterClusterTime goes on to the shards with the command, which wait for it.
    bool routerGossip = _service.role == ClusterRole::kRouter;
    // Snapshot reads outside a transaction need a cluster time: a --replSet node or a shard
    // reads at its own, a router picks one for all of its shards.
    bool snapshotReads =
        gossip || routerGossip || (_service.role == ClusterRole::kShard && _service.engine);
    Status status =
        checkGenericArguments(request, *command, _service.role, &readConcern, transactionStatement,
                              gossip || stampsOperationTime || routerGossip, snapshotReads);
    if (!status.isOK()) return errorReply(status);
    status = applyMaxTimeMS(request.body, opCtx);
    if (!status.isOK()) return errorReply(status);
    TransactionArgs txnArgs;
    if (acceptsSessions()) {
        status = applySessionArgs(request.body, opCtx);
        if (!status.isOK()) return errorReply(status);
        if (transactionsHere) {
            StatusWith<TransactionArgs> parsed = parseTransactionArgs(request, opCtx);
            if (!parsed.isOK()) return errorReply(parsed.getStatus());
            txnArgs = parsed.getValue();
        }
        if (opCtx.txnNumber && !txnArgs.statement && !command->supportsRetryableWrite()) {
            return errorReply(Status(
                ErrorCodes::NotARetryableWriteCommand,
                "txnNumber may only be provided for multi-document transactions and retryable "
                "write commands. autocommit:false was not provided, and " +
                    std::string(command->name()) + " is not a retryable write command."));
        }
    }

    // Error labels (error_labels.h): nothing is written until run() starts.
    LabelContext labels;
    labels.retryableWrite =
        opCtx.txnNumber.has_value() && command->supportsRetryableWrite() && !txnArgs.statement;
    labels.wroteNothing = true;
    labels.inTransaction = txnArgs.statement;
    labels.commitTransaction = request.commandName == "commitTransaction";
    bool txnCommand = isTransactionEndCommand(request.commandName);
    std::optional<bson::BsonObj> failCommandLabels;
    // The first statement of a router's transaction with afterClusterTime only: the time this
    // shard chose (kTransactionReadTimestampField).
    std::optional<Timestamp> chosenReadTs;
    // A shard tells its routers its time (operationTime): a router draws its transactions' read
    // timestamps from a clock that has seen every commit it acknowledged.
    auto finish = [&](bson::BsonObj reply) {
        reply = withServerErrorLabels(std::move(reply), labels);
        if (chosenReadTs) {
            reply =
                withTimestampField(std::move(reply), kTransactionReadTimestampField, *chosenReadTs);
        }
        if (routerGossip && opCtx.readAtClusterTime) {
            reply = withAtClusterTime(std::move(reply), *opCtx.readAtClusterTime);
        }
        if (gossip) {
            return withClusterTime(std::move(reply), operationTimeOf(*_service.engine));
        }
        if (routerGossip) {
            return withClusterTime(std::move(reply), routerTime());
        }
        return stampsOperationTime
                   ? withOperationTime(std::move(reply), operationTimeOf(*_service.engine))
                   : reply;
    };
    if (gossip || stampsOperationTime) waitForClusterTime(request.body, *_service.engine);
    bson::BsonObj snapshotBody;       // a router's request, at the time it picked for its shards
    bool routerSnapshotTime = false;  // the router picked it (the client gave no atClusterTime)
    auto readSnapshotAt = [&](Timestamp ts) {
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
    };
    if (readConcern == ReadConcernLevel::kSnapshot) {
        bson::BsonElement asked = request.body["readConcern"].objValue()["atClusterTime"];
        std::optional<Timestamp> at;
        if (asked.type() == bson::BsonType::Timestamp) at = Timestamp{asked.timestampValue()};
        if (routerGossip) {
            // One cluster time for every shard the read reaches: the client's, else this
            // router's clock, which has seen every commit it acknowledged (and the client's
            // $clusterTime). The shards get it as their atClusterTime and wait until it is
            // readable there.
            // (next(), not current(): a router that has not seen a shard yet has no time.)
            routerSnapshotTime = !at;
            readSnapshotAt(at.value_or(HybridLogicalClock::global().next()));
        } else {
            // One timestamp for the whole read and its cursor: the client's, else the latest
            // commit (after the afterClusterTime wait above, so at or after it). A time beyond
            // this process's clock becomes readable once the clock passes it.
            Timestamp ts = at.value_or(_service.engine->lastCommitTimestamp());
            HybridLogicalClock::global().advanceTo(ts);
            if (Status old = _service.engine->openSnapshot(ts).getStatus(); !old.isOK()) {
                return finish(errorReply(old));
            }
            opCtx.readAtClusterTime = ts;
        }
    }
    if (routerGossip) observeClusterTime(request.body);

    bson::BsonObj writeConcernError;
    if (_service.enableTestCommands) {
        if (auto action = evaluateFailCommand(request.commandName, client.appName)) {
            if (action->blockTimeMS > 0) {
                std::this_thread::sleep_for(std::chrono::milliseconds(action->blockTimeMS));
            }
            if (action->closeConnection) {
                *closeConnection = true;
                return bson::BsonObj();
            }
            if (action->errorLabels) {
                failCommandLabels = std::move(*action->errorLabels);
                labels.retryableWrite = false;  // exactly the labels failCommand names
            }
            if (action->errorCode) {
                bson::BsonBuilder extra;
                if (failCommandLabels) extra.appendArray("errorLabels", *failCommandLabels);
                return finish(errorReply(
                    Status(*action->errorCode, "Failing command via 'failCommand' failpoint"),
                    extra.obj()));
            }
            writeConcernError = action->writeConcernError;
        }
    }

    bool closeAfterWrite = false;
    if (_service.enableTestCommands && opCtx.txnNumber && !txnArgs.statement &&
        command->supportsRetryableWrite()) {
        if (std::optional<std::string> data = onPrimaryTransactionalWrite.shouldFail()) {
            bson::BsonView spec =
                data->size() >= 5 ? bson::BsonView(reinterpret_cast<const uint8_t*>(data->data()))
                                  : bson::BsonView();
            bool close = spec.isEmpty() || !spec.hasField("closeConnection") ||
                         spec["closeConnection"].trueValue();
            bson::BsonElement code =
                spec.isEmpty() ? bson::BsonElement() : spec["failBeforeCommitExceptionCode"];
            if (code.isNumber()) {
                if (close) {
                    *closeConnection = true;
                    return bson::BsonObj();
                }
                return finish(errorReply(
                    Status(static_cast<ErrorCodes>(code.numberInt()),
                           "Failing write for test due to failBeforeCommitExceptionCode")));
            }
            closeAfterWrite = close;
        }
    }

    // A transaction's statement runs with its session checked out (one at a time) and in its
    // storage transaction; it is not a retryable write.
    SessionTransactions::Checkout txnSession;
    bool routerStatement = false;
    if (txnArgs.statement && _service.routerTransactions) {
        // A router's transaction: its shard requests join it (router/transaction_router.h).
        Status begun =
            _service.routerTransactions->beginStatement(opCtx, txnArgs, request.commandName);
        if (!begun.isOK()) return finish(errorReply(begun));
        opCtx.txnNumber.reset();
        routerStatement = true;
    } else if (txnArgs.statement) {
        std::optional<Timestamp> readAt = txnArgs.atClusterTime;
        if (txnArgs.start && !readAt && txnArgs.afterClusterTime &&
            _service.role == ClusterRole::kShard && _service.engine) {
            // A router's first shard of a transaction, given a lower bound only: the snapshot is
            // at this shard's latest commit (waited for above), named in the reply so that every
            // other participant reads at exactly this time.
            readAt = std::max(_service.engine->lastCommitTimestamp(), *txnArgs.afterClusterTime);
            HybridLogicalClock::global().advanceTo(*readAt);
            chosenReadTs = readAt;
        }
        auto checkout = _service.transactions->beginStatement(
            *opCtx.lsid, *opCtx.txnNumber, txnArgs.start, readAt, request.commandName);
        if (!checkout.isOK()) return finish(errorReply(checkout.getStatus()));
        txnSession = std::move(checkout.getValue());
        if (txnArgs.start) txnSession->readConcernLocal = txnArgs.readConcernLocal;
        opCtx.transaction = txnSession->txn.get();
        opCtx.transactionSession = &*txnSession;
        opCtx.txnNumber.reset();
        opCtx.writeUnit.setMayWait(true);
    }

    bson::BsonBuilder reply;
    // A read that waits for a prepared transaction's decision waits at most until maxTimeMS, or
    // kMaxPrepareWait (on an io thread the enclosing runInline scope forbids waiting at all).
    std::optional<storage::PrepareWaitScope> prepareWait;
    if (!inlineExecution) {
        auto bound = std::chrono::steady_clock::now() + kMaxPrepareWait;
        bool byMaxTime = opCtx.deadline && *opCtx.deadline < bound;
        prepareWait.emplace(byMaxTime ? *opCtx.deadline : bound, byMaxTime);
    }
    try {
        if (_service.hooks) {
            status = _service.hooks->beforeCommand(opCtx, request, *command);
            if (status.is(ErrorCodes::InlineWouldBlock)) return std::nullopt;
            if (!status.isOK()) {
                // A statement the shard refuses (a stale version) fails its transaction too.
                if (txnSession && !txnCommand) {
                    SessionTransactions::abortAfterFailure(*txnSession, status);
                }
                return finish(errorReply(status, opCtx.errorExtraInfo));
            }
            if (std::optional<bson::BsonObj> replayed =
                    _service.hooks->replayedReply(opCtx, request, *command)) {
                if (replayed->getField("code").numberInt() ==
                    static_cast<int>(ErrorCodes::InlineWouldBlock)) {
                    return std::nullopt;
                }
                if (!writeConcernError.isEmpty() && replayed->getField("ok").numberDouble() == 1) {
                    // The retry waits for its write concern again: failCommand's error applies.
                    bson::BsonBuilder b;
                    for (bson::BsonElement e : *replayed) {
                        if (e.fieldName() != "ok") b.appendElement(e);
                    }
                    appendWriteConcernError(b, writeConcernError, failCommandLabels);
                    appendOk(b);
                    return finish(b.obj());
                }
                return finish(std::move(*replayed));
            }
        }
        if ((readConcern == ReadConcernLevel::kMajority ||
             readConcern == ReadConcernLevel::kLinearizable) &&
            _service.engine && _service.role != ClusterRole::kRouter) {
            // A one-member set's majority is this process, journaled: everything committed so
            // far is made durable first, so the read sees nothing a crash could take back.
            status = _service.engine->syncWal();
        }
        if (status.isOK()) {
            labels.wroteNothing = false;
            status = runReadingLatest(*command, opCtx, request, reply);
        }
        // A snapshot read at a time this router picked, refused by a shard that received a
        // migrated range after it: again at a later time, which the router's clock, having seen
        // that shard's reply, now gives.
        for (int again = 0;
             again < 3 && routerSnapshotTime && status.is(ErrorCodes::SnapshotUnavailable);
             ++again) {
            readSnapshotAt(HybridLogicalClock::global().next());
            reply = bson::BsonBuilder();
            status = command->run(opCtx, request, reply);
        }
    } catch (const storage::PrepareConflict& e) {
        using Kind = storage::PrepareConflict::Kind;
        status = Status(e.kind() == Kind::kWouldBlock ? ErrorCodes::InlineWouldBlock
                        : e.kind() == Kind::kDeadline ? ErrorCodes::MaxTimeMSExpired
                                                      : ErrorCodes::ExceededTimeLimit,
                        e.what());
    } catch (...) {
        status = statusFromCurrentException("command");
    }
    if (routerStatement) {
        // As on a shard: a failed statement, a write error included, aborts the transaction.
        Status outcome = status;
        if (status.isOK()) {
            bson::BsonObj partial = reply.obj();
            if (std::optional<Status> conflict = transientWriteError(partial)) {
                status = outcome = *conflict;
            } else if (partial["writeErrors"].isArray()) {
                outcome = Status(ErrorCodes::OperationFailed, "a write error");
            }
            bson::BsonBuilder again;
            for (bson::BsonElement e : partial) again.appendElement(e);
            if (status.isOK()) _service.routerTransactions->appendToReply(opCtx, again);
            reply = std::move(again);
        }
        _service.routerTransactions->endStatement(opCtx, outcome);
    } else if (txnArgs.statement && !txnCommand) {
        // A failed statement aborts its transaction, a write error included (MongoDB's rule);
        // a conflict is the statement's error.
        if (status.isOK()) {
            bson::BsonObj partial = reply.obj();
            if (std::optional<Status> conflict = transientWriteError(partial)) {
                status = *conflict;
            } else if (partial["writeErrors"].isArray() && !onlyWouldChangeOwningShard(partial)) {
                SessionTransactions::abortAfterFailure(
                    *txnSession, Status(ErrorCodes::OperationFailed, "a write error"));
            }
            bson::BsonBuilder again;
            for (bson::BsonElement e : partial) again.appendElement(e);
            reply = std::move(again);
        }
        // WouldChangeOwningShard wrote nothing: its router moves the document within the
        // transaction, which goes on.
        if (!status.isOK() && !status.is(ErrorCodes::WouldChangeOwningShard)) {
            SessionTransactions::abortAfterFailure(*txnSession, status);
        }
    }
    if (_service.hooks) {
        // The hooks see the reply as it is sent (a retryable write stores it), less failCommand's
        // writeConcernError: that one is about this attempt's wait, which a retry does not repeat
        // (MongoDB's retry gets the write's result without it).
        bson::BsonObj full;
        bson::BsonObj sent;
        if (!status.isOK()) {
            full = sent = errorReply(status, opCtx.errorExtraInfo);
        } else {
            bson::BsonObj body = reply.obj();
            auto withTail = [&](bool concernError) {
                bson::BsonBuilder b;
                for (bson::BsonElement e : body) b.appendElement(e);
                if (concernError) appendWriteConcernError(b, writeConcernError, failCommandLabels);
                appendOk(b);
                return b.obj();
            };
            full = withTail(false);
            sent = writeConcernError.isEmpty() ? full : withTail(true);
        }
        _service.hooks->afterCommand(opCtx, request, *command, status, full);
        if (status.is(ErrorCodes::InlineWouldBlock)) return std::nullopt;  // nothing was changed
        if (Status journaled = awaitJournal(request); !journaled.isOK()) {
            sent = errorReply(journaled, bson::BsonObj());
        }
        if (closeAfterWrite && !everyStatementReplayed(request, full)) {
            *closeConnection = true;
            return bson::BsonObj();
        }
        logSlow(started, request, status);
        return finish(std::move(sent));
    }
    if (status.is(ErrorCodes::InlineWouldBlock)) return std::nullopt;
    if (Status journaled = awaitJournal(request); !journaled.isOK()) status = journaled;
    if (closeAfterWrite) {
        *closeConnection = true;
        return bson::BsonObj();
    }
    logSlow(started, request, status);
    if (!status.isOK()) return finish(errorReply(status, opCtx.errorExtraInfo));
    appendWriteConcernError(reply, writeConcernError, failCommandLabels);
    appendOk(reply);
    return finish(reply.obj());
}

}  // namespace tessera::command
