#include "router/cluster_forward.h"

#include "command/cursor_manager.h"
#include "command/exec/find_request.h"
#include "command/reply_util.h"
#include "command/write_ops_util.h"
#include "router/cluster_find.h"
#include "router/cluster_write_commands.h"
#include "router/cluster_write_move.h"
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
};

// The plan for `cmd` to `shard`, or nullopt when the shard's host is not cached. The command is
// encoded once, as run() would send it: `cmd` (without the router-only fields of a client's
// body when `clientBody`: reads::shardBody), the placement version (attachVersion), `$db`.
std::optional<ForwardPlan> planFor(Router& router, const std::string& db,
                                   const CollectionRoutingInfo& info, const ShardId& shard,
                                   bson::BsonView cmd, bool clientBody, std::string* host) {
    std::optional<std::string> cached = router.shards().cachedHostOf(shard);
    if (!cached) return std::nullopt;
    *host = *cached;
    bson::BsonBuilder b;
    for (bson::BsonElement e : cmd) {
        std::string_view name = e.fieldName();
        if (name == "shardVersion" || name == "databaseVersion" || name == "$db") continue;
        if (clientBody && reads::isRouterOnlyField(name)) continue;
        b.appendElement(e);
    }
    appendPlacementVersion(b, info, shard);
    b.append("$db", db);
    ForwardPlan plan;
    plan.host = *cached;
    plan.db = db;
    plan.cmd = b.obj();
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
    plan->idempotent = true;
    return plan;
}

std::optional<Status> completeFindForward(command::OperationContext& opCtx, ForwardPlan& plan,
                                          const StatusWith<bson::BsonObj>& remote,
                                          bson::BsonBuilder& reply) {
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
    plan->state = std::move(state);
    return plan;
}

std::optional<Status> completeWriteForward(command::OperationContext& opCtx, ForwardPlan& plan,
                                           const StatusWith<bson::BsonObj>& remote,
                                           bson::BsonBuilder& reply) {
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
    if (!plan.cmd["txnNumber"].eoo()) {
        // As runShardedWriteBatch: a retriable failure fails the command, for the driver to retry.
        if (std::optional<Status> retriable = merger.firstRetriableError()) return *retriable;
    }
    merger.appendReply(reply, state.ordered);
    return Status::OK();
}

}  // namespace tessera::router
