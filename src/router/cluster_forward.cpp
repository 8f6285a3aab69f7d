#include "router/cluster_forward.h"

#include "command/cursor_manager.h"
#include "command/exec/find_request.h"
#include "command/reply_util.h"
#include "command/write_ops_util.h"
#include "router/cluster_find.h"
#include "router/cluster_write_commands.h"
#include "router/cluster_write_move.h"
#include "router/cluster_write_without_shard_key.h"
#include "router/transaction_router.h"

namespace tessera::router {
namespace {

using command::ForwardPlan;

// The shard a forward went to, and what completing it needs.
struct FindForward final : command::ForwardPlanState {
    ShardId shard;
    std::string host;
    std::string ns;
    std::optional<int64_t> batchSize;  // as ClusterFindCommand computes it
};

struct WriteForward final : command::ForwardPlanState {
    ShardId shard;
    std::string host;
    WriteKind kind;
    bool sharded = false;
    bool ordered = true;
    bool retryable = false;  // the client's command has a txnNumber
};

// The exchange of `cmd` with `shard`, or nullopt when the shard's host is not cached. The
// command is encoded once, as run() would send it: `cmd` (without the router-only fields of a
// client's body when `clientBody`: reads::shardBody), the placement version (attachVersion),
// `$db`.
std::optional<net::ForwardExchange> exchangeFor(Router& router, const std::string& db,
                                                const CollectionRoutingInfo& info,
                                                const ShardId& shard, bson::BsonView cmd,
                                                bool clientBody) {
    std::optional<std::string> cached = router.shards().cachedHostOf(shard);
    if (!cached) return std::nullopt;
    bson::BsonBuilder b;
    for (bson::BsonElement e : cmd) {
        std::string_view name = e.fieldName();
        if (name == "shardVersion" || name == "databaseVersion" || name == "$db") continue;
        if (clientBody && reads::isRouterOnlyField(name)) continue;
        b.appendElement(e);
    }
    appendPlacementVersion(b, info, shard);
    b.append("$db", db);
    return net::ForwardExchange{*cached, db, b.obj(), false};
}

// A plan of the one exchange of `cmd` with `shard` (exchangeFor), its host in `*host`.
std::optional<ForwardPlan> planFor(Router& router, const std::string& db,
                                   const CollectionRoutingInfo& info, const ShardId& shard,
                                   bson::BsonView cmd, bool clientBody, std::string* host) {
    std::optional<net::ForwardExchange> exchange =
        exchangeFor(router, db, info, shard, cmd, clientBody);
    if (!exchange) return std::nullopt;
    *host = exchange->host;
    ForwardPlan plan;
    plan.exchanges.push_back(std::move(*exchange));
    return plan;
}

ShardResponse responseOf(const ShardId& shard, const std::string& host,
                         const StatusWith<bson::BsonObj>& remote) {
    ShardResponse r;
    r.shard = shard;
    r.host = host;
    r.status = remote.getStatus();
    if (remote.isOK()) {
        r.reply = remote.getValue();
        observeShardReply(r.reply);
    }
    return r;
}

// A write without shard key (one update or delete statement: cluster_write_without_shard_key.h)
// whose rounds the io thread sends: the read round, then the write round, both again when the
// document changed in between.
struct NoKeyWriteForward final : command::ForwardPlanState {
    explicit NoKeyWriteForward(CollectionRoutingInfo i) : info(std::move(i)) {}
    CollectionRoutingInfo info;
    TwoPhaseWrite write;
    std::optional<TwoPhaseSteps> steps;  // over `info` and `write` (this object never moves)
    std::string db;
    WriteKind kind = WriteKind::kUpdate;
    bool ordered = true;
    bool retryable = false;
    std::vector<ShardRequest> round;  // the requests in flight, and their hosts
    std::vector<std::string> hosts;
    bool writing = false;  // the round in flight is the write round
    int attempts = 0;      // write rounds that found the document changed
};

// Puts `requests` in flight: `plan`'s next round. False when a shard's host is not cached.
bool setRound(Router& router, NoKeyWriteForward& state, std::vector<ShardRequest> requests,
              ForwardPlan& plan) {
    plan.exchanges.clear();
    state.hosts.clear();
    for (const ShardRequest& r : requests) {
        std::optional<std::string> host = router.shards().cachedHostOf(r.shard);
        if (!host) return false;
        state.hosts.push_back(*host);
        // Reads may be sent again on a fresh connection; the write at most once.
        plan.exchanges.push_back(net::ForwardExchange{*host, state.db, r.cmd, !state.writing});
    }
    state.round = std::move(requests);
    return true;
}

// As runShardedWriteBatch ends: a retriable failure of a retryable write fails the command,
// for the driver to retry.
Status finishNoKeyWrite(const NoKeyWriteForward& state, const WriteBatchMerger& merger,
                        bson::BsonBuilder& reply) {
    if (state.retryable) {
        if (std::optional<Status> retriable = merger.firstRetriableError()) return *retriable;
    }
    merger.appendReply(reply, state.ordered);
    return Status::OK();
}

std::optional<ForwardPlan> planNoKeyWriteForward(command::OperationContext& opCtx,
                                                 const command::CommandRequest& request,
                                                 WriteKind kind, std::string coll,
                                                 CollectionRoutingInfo info, bson::BsonView stmt,
                                                 std::vector<ShardId> shards, bool ordered) {
    // The cases that need the router to build or move a document run on a worker (run()).
    if (kind == WriteKind::kUpdate &&
        (stmt["upsert"].trueValue() ||
         updateMayChangeShardKey(info.table->shardKeyPattern(), stmt["u"]))) {
        return std::nullopt;
    }
    Router& router = Router::get(opCtx);
    auto state = std::make_shared<NoKeyWriteForward>(std::move(info));
    state->db = request.db;
    state->kind = kind;
    state->ordered = ordered;
    state->retryable = opCtx.txnNumber.has_value();
    // The views stay valid: the request's message lives until its reply is sent.
    state->write = statementTwoPhaseWrite(request.body, writeStatementsField(kind), std::move(coll),
                                          stmt, 0, std::move(shards));
    state->steps.emplace(state->info, state->write);
    ForwardPlan plan;
    if (!setRound(router, *state, state->steps->readRound(), plan)) return std::nullopt;
    plan.state = std::move(state);
    return plan;
}

std::optional<Status> completeNoKeyWriteForward(
    command::OperationContext& opCtx, ForwardPlan& plan,
    const std::vector<StatusWith<bson::BsonObj>>& remotes, bson::BsonBuilder& reply) {
    auto& state = static_cast<NoKeyWriteForward&>(*plan.state);  // planNoKeyWriteForward's
    Router& router = Router::get(opCtx);
    std::vector<ShardResponse> responses;
    for (size_t i = 0; i < remotes.size(); ++i) {
        responses.push_back(responseOf(state.round[i].shard, state.hosts[i], remotes[i]));
    }
    WriteBatchMerger merger(state.kind);
    if (!state.writing) {
        auto next = state.steps->afterRead(router, responses);
        if (!next.isOK()) {
            merger.addError(0, next.getStatus());  // as run(): the statement's write error
            return finishNoKeyWrite(state, merger, reply);
        }
        if (next.getValue().stale) return std::nullopt;  // nothing applied: planned again
        if (!next.getValue().write) return finishNoKeyWrite(state, merger, reply);  // n: 0
        state.writing = true;
        if (!setRound(router, state, {*next.getValue().write}, plan)) plan.exchanges.clear();
        return std::nullopt;  // the write round, or (no host cached) planned again
    }
    switch (state.steps->afterWrite(router, responses.front())) {
        case TwoPhaseSteps::AfterWrite::kStale:
            return std::nullopt;  // nothing applied: planned again
        case TwoPhaseSteps::AfterWrite::kChanged:
            if (++state.attempts >= kTwoPhaseAttempts)
                return finishNoKeyWrite(state, merger, reply);
            state.writing = false;
            if (!setRound(router, state, state.steps->readRound(), plan)) plan.exchanges.clear();
            return std::nullopt;  // both rounds again
        case TwoPhaseSteps::AfterWrite::kDone:
            break;
    }
    const ShardResponse& r = responses.front();
    merger.addResponse({r.shard, {0}}, r, true, true);
    return finishNoKeyWrite(state, merger, reply);
}

}  // namespace

std::optional<ForwardPlan> planFindForward(command::OperationContext& opCtx,
                                           const command::CommandRequest& request) {
    if (request.db == "config") return std::nullopt;
    auto parsed = command::exec::parseFindRequest(request, request.body);
    if (!parsed.isOK()) return std::nullopt;
    const command::exec::FindRequest& req = parsed.getValue();
    const command::exec::QuerySpec& q = req.query;
    std::optional<int64_t> batchSize = req.batchSize;
    if (!batchSize && req.singleBatch && q.limit) batchSize = *q.limit;
    // Only a find the shard answers in one batch: an open shard cursor needs the router's
    // cursor machinery (run()).
    const bool oneBatch =
        req.singleBatch || (q.limit && *q.limit > 0 &&
                            *q.limit <= batchSize.value_or(command::kDefaultFirstBatchSize));
    if (!oneBatch) return std::nullopt;

    Router& router = Router::get(opCtx);
    std::string ns = request.db + "." + req.coll;
    std::optional<CollectionRoutingInfo> info = router.catalog().cachedCollectionRoutingInfo(ns);
    if (!info) return std::nullopt;
    ShardId shard = info->db.primary;
    if (info->isSharded()) {
        // q.collator is what reads::collatorArgument gives run(): null for the simple one.
        auto t = reads::targetRead(*info->table, q.filter, q.collator == nullptr);
        if (!t.isOK() || t.getValue().shards.size() != 1) return std::nullopt;
        shard = t.getValue().shards.front();
    }
    auto state = std::make_shared<FindForward>();
    auto plan = planFor(router, request.db, *info, shard, request.body, true, &state->host);
    if (!plan) return std::nullopt;
    state->shard = shard;
    state->ns = std::move(ns);
    state->batchSize = batchSize;
    plan->state = std::move(state);
    plan->exchanges.front().idempotent = true;
    return plan;
}

std::optional<Status> completeFindForward(command::OperationContext& opCtx, ForwardPlan& plan,
                                          const std::vector<StatusWith<bson::BsonObj>>& remotes,
                                          bson::BsonBuilder& reply) {
    const StatusWith<bson::BsonObj>& remote = remotes.front();
    // A read may run again: run() retries a failed exchange, a stale version or an error
    // reply and reports them its way.
    if (!remote.isOK()) return std::nullopt;
    const auto& state = static_cast<const FindForward&>(*plan.state);  // planFindForward's
    Router& router = Router::get(opCtx);
    ShardResponse r = responseOf(state.shard, state.host, remote);
    if (noteStaleError(router, r.reply)) return std::nullopt;
    if (reads::relayExhaustedShardCursor(r, state.ns, state.batchSize, reply)) {
        return Status::OK();
    }
    // An open cursor (a batch cut short by the 16 MB bound despite the limit) is left to the
    // shard's idle timeout; run() opens its own.
    return std::nullopt;
}

std::optional<ForwardPlan> planWriteForward(command::OperationContext& opCtx,
                                            const command::CommandRequest& request,
                                            WriteKind kind) {
    if (request.db == "config") return std::nullopt;
    auto coll = command::collectionName(request.firstElement(), writeCommandName(kind));
    auto raw = command::writeStatements(request, writeStatementsField(kind));
    auto ordered = command::parseOrdered(request.body, writeCommandName(kind));
    // One statement: a stale reply then means nothing was applied, so run() may redo it.
    if (!coll.isOK() || !raw.isOK() || !ordered.isOK() || raw.getValue().size() != 1) {
        return std::nullopt;
    }
    Router& router = Router::get(opCtx);
    std::string ns = request.db + "." + coll.getValue();
    std::optional<CollectionRoutingInfo> info = router.catalog().cachedCollectionRoutingInfo(ns);
    if (!info) return std::nullopt;
    bson::BsonObj owned;
    bson::BsonView stmt = raw.getValue().front();
    if (kind == WriteKind::kInsert) {
        owned = command::ensureIdFirst(stmt);  // as run(): the shard key may include _id
        stmt = owned;
    }
    ShardId shard = info->db.primary;
    if (info->isSharded()) {
        StatementTarget t = targetStatement(*info->table, kind, stmt);
        if (t.mode == StatementTarget::Mode::kWithoutShardKey) {
            return planNoKeyWriteForward(opCtx, request, kind, coll.getValue(), std::move(*info),
                                         stmt, std::move(t.shards), ordered.getValue());
        }
        if (t.mode != StatementTarget::Mode::kShards || t.shards.size() != 1) return std::nullopt;
        shard = t.shards.front();
    }
    auto state = std::make_shared<WriteForward>();
    bson::BsonObj cmd =
        buildSubCommand(request.body, writeStatementsField(kind), {stmt}, ordered.getValue());
    auto plan = planFor(router, request.db, *info, shard, cmd, false, &state->host);
    if (!plan) return std::nullopt;
    state->shard = shard;
    state->kind = kind;
    state->sharded = info->isSharded();
    state->ordered = ordered.getValue();
    state->retryable = opCtx.txnNumber.has_value();
    plan->state = std::move(state);
    return plan;
}

std::optional<Status> completeWriteForward(command::OperationContext& opCtx, ForwardPlan& plan,
                                           const std::vector<StatusWith<bson::BsonObj>>& remotes,
                                           bson::BsonBuilder& reply) {
    if (dynamic_cast<const NoKeyWriteForward*>(plan.state.get())) {
        return completeNoKeyWriteForward(opCtx, plan, remotes, reply);
    }
    const StatusWith<bson::BsonObj>& remote = remotes.front();
    const auto& state = static_cast<const WriteForward&>(*plan.state);  // planWriteForward's
    Router& router = Router::get(opCtx);
    ShardResponse r = responseOf(state.shard, state.host, remote);
    // A stale version (of the command or of its one statement): nothing was applied.
    if (r.status.isOK() && noteStaleError(router, r.reply)) return std::nullopt;
    if (!state.sharded) return relayShardReply(opCtx, r, reply);  // as runOnPrimary's caller
    // A document that would move to another shard: nothing was applied; run() moves it.
    if (r.status.isOK() && wouldChangeOwningShardIndex(r.reply) >= 0) return std::nullopt;
    WriteBatchMerger merger(state.kind);
    merger.addResponse({state.shard, {0}}, r, state.ordered);
    if (state.retryable) {
        // As runShardedWriteBatch: a retriable failure fails the command, for the driver to retry.
        if (std::optional<Status> retriable = merger.firstRetriableError()) return *retriable;
    }
    merger.appendReply(reply, state.ordered);
    return Status::OK();
}

}  // namespace tessera::router
