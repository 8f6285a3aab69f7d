#include "command/service_entry_point.h"

#include "command/entry_point_phases.h"
#include "command/fail_command.h"
#include "command/generic_args.h"
#include "command/member_state_gate.h"
#include "storage/engine.h"
#include "wire/op_msg.h"

namespace tessera::command {

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

ClientState& clientStateOf(net::ClientContext& client) {
    if (!client.state) {
        auto state = std::make_shared<ClientState>();
        state->connectionId = client.connectionId;
        state->remote = client.remote;
        client.state = state;
    }
    return static_cast<ClientState&>(*client.state);  // only this handler sets it
}

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
    ForwardPlan plan;  // its round moved into the net::ForwardRequest
    int rounds = 0;    // completed so far
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
    return (!name.empty() && name.front() == '_') || txn::isTransactionEndCommand(name);
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
    const RolePolicy policy = RolePolicy::of(_service);
    if (!command || command->testOnly() || command->adminOnly() || !policy.acceptsSessions) {
        return std::nullopt;
    }
    try {
        auto state = std::make_shared<ForwardState>();
        state->request = commandRequestOf(*request.msg);
        OperationContext& opCtx = state->opCtx;
        opCtx.service = &_service;
        opCtx.client = &clientStateOf(client);
        ReadConcernLevel readConcern = ReadConcernLevel::kLocal;
        const bool causal = policy.clusterTime == RolePolicy::ClusterTime::kRouter;
        GenericArgsRules rules = policy.genericArgs();
        rules.snapshotReads = false;  // a snapshot read picks its time on a worker (admit)
        if (!checkGenericArguments(state->request, *command, rules, false, &readConcern).isOK() ||
            !applyMaxTimeMS(state->request.body, opCtx).isOK() ||
            !applySessionArgs(state->request.body, opCtx).isOK() ||
            (opCtx.txnNumber && !command->supportsRetryableWrite())) {
            return std::nullopt;  // handleRequest reports it
        }
        if (causal) observeClusterTime(state->request.body);
        state->started = std::chrono::steady_clock::now();
        std::optional<ForwardPlan> plan = command->planForward(opCtx, state->request);
        if (!plan) return std::nullopt;
        if (plan->exchanges.empty()) return std::nullopt;
        state->command = command;
        net::ForwardRequest forward{std::move(plan->exchanges), nullptr};
        state->plan = std::move(*plan);
        state->plan.exchanges.clear();
        forward.state = std::move(state);
        return forward;
    } catch (const std::exception&) {
        return std::nullopt;  // handleRequest runs the command and reports what went wrong
    }
}

net::ForwardOutcome ServiceEntryPoint::completeForward(
    const net::Request&, net::ClientContext&, net::ForwardRequest& forward,
    const std::vector<StatusWith<bson::BsonObj>>& remotes) {
    std::shared_ptr<net::HandlerState> keep = forward.state;  // this handler's ForwardState
    auto& state = static_cast<ForwardState&>(*keep);
    net::ForwardOutcome outcome;
    try {
        bson::BsonBuilder reply;
        std::optional<Status> status =
            state.command->completeForward(state.opCtx, state.request, state.plan, remotes, reply);
        if (!status) {
            if (++state.rounds >= kMaxForwardRounds) return outcome;
            if (state.plan.exchanges.empty()) {  // not settled: plan again from the start
                std::optional<ForwardPlan> plan =
                    state.command->planForward(state.opCtx, state.request);
                if (!plan || plan->exchanges.empty()) return outcome;
                state.plan = std::move(*plan);
            }
            outcome.next = net::ForwardRequest{std::move(state.plan.exchanges), keep};
            state.plan.exchanges.clear();
            return outcome;
        }
        countRequest(state.request);
        logSlow(state.started, state.request, *status);
        if (!status->isOK()) {
            outcome.reply = errorReply(*status, state.opCtx.errorExtraInfo);
        } else {
            reply.appendDouble("ok", 1.0);
            outcome.reply = reply.obj();
        }
        LabelContext labels;
        labels.retryableWrite =
            state.opCtx.txnNumber.has_value();  // tryForward checked the command
        outcome.reply = withServerErrorLabels(std::move(*outcome.reply), labels);
        if (_service.role == ClusterRole::kRouter) {
            outcome.reply = withoutShutdownCodes(std::move(*outcome.reply));
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
        cmd.body.hasField("autocommit") ||  // a transaction's statement may wait for its session
        cmd.body.hasField(kReadAtClusterTimeField)) {  // waits until its time is readable
        return std::nullopt;
    }
    if (_service.engine && _service.engine->preparedTransactionCount() > 0) {
        return std::nullopt;  // a read may wait for a prepared transaction's decision: the pool
    }
    if (_service.replicaSet && secondaryAllowed(cmd) == SecondaryAllowed::kNever) {
        return std::nullopt;  // a replica set member's write waits for its group: the pool
    }
    ClientState& state = clientStateOf(client);
    bool closeConnection = false;
    // Should a transaction be prepared meanwhile, a read that would wait for it stops instead
    // (its PrepareReads may not wait) and the pool runs the request: an io thread never waits
    // for a decision.
    std::optional<bson::BsonObj> reply = execute(cmd, state, &closeConnection, true);
    if (!reply) return std::nullopt;  // it would have waited: the pool runs it
    countRequest(cmd);
    if (closeConnection) client.closeConnection = true;
    client.appName = state.appName;
    return reply;
}

std::optional<bson::BsonObj> ServiceEntryPoint::execute(CommandRequest& request,
                                                        ClientState& client, bool* closeConnection,
                                                        bool inlineExecution) {
    Invocation inv(_service, request, client, inlineExecution);
    for (void (*phase)(Invocation&) : {parse, admit, checkOut, run, endStatement, reply}) {
        phase(inv);
        if (inv.done()) break;
    }
    if (inv.closesConnection()) *closeConnection = true;
    return inv.result();
}

}  // namespace tessera::command
