// The router's insert, update, delete and findAndModify (MongoDB's cluster_write_cmd and
// cluster_find_and_modify_cmd). Unsharded collections: the command goes to the database primary
// as it is (runRouted retries stale versions). Sharded collections: statements are targeted one
// by one and sent in rounds of per-shard sub-batches (cluster_write_batch.h); stale statements
// are retried alone after a refresh, so the client never sees a stale error.
#include "router/cluster_write_commands.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "base/error_codes.h"
#include "command/error_labels.h"
#include "command/reply_util.h"
#include "command/write_ops_util.h"
#include "placement/targeter.h"
#include "router/cluster_forward.h"
#include "router/cluster_write_batch.h"
#include "router/cluster_write_move.h"
#include "router/cluster_write_without_shard_key.h"
#include "router/router_commands.h"
#include "router/transaction_router.h"

namespace tessera::router {
namespace {

using bson::BsonType;
using command::CommandRequest;
using command::OperationContext;

constexpr int kMaxStaleRetries = 10;

// runRouted's makeRequests returns this when the collection turned out to be sharded: the caller
// switches to the sharded path (a reserved, never-sent status).
Status becameSharded() { return Status(ErrorCodes::StaleConfig, "__tessera_became_sharded__"); }

}  // namespace

bool isBecameSharded(const Status& s) {
    return s.code() == static_cast<int>(ErrorCodes::StaleConfig) &&
           s.reason() == "__tessera_became_sharded__";
}

StatusWith<ShardResponse> runOnPrimary(OperationContext& opCtx, Router& router,
                                       const std::string& ns, const bson::BsonObj& cmd) {
    RoutedOptions options;
    options.createDbIfMissing = true;
    ASSIGN_OR_RETURN(
        auto responses,
        runRouted(
            opCtx, router, ns,
            [&](const CollectionRoutingInfo& info) -> StatusWith<std::vector<ShardRequest>> {
                if (info.isSharded()) return becameSharded();
                return std::vector<ShardRequest>{
                    {info.db.primary, attachVersion(cmd, info, info.db.primary)}};
            },
            options));
    if (responses.empty()) return Status(ErrorCodes::InternalError, "no response from primary");
    return std::move(responses.front());
}

Status relayShardReply(OperationContext& opCtx, const ShardResponse& response,
                       bson::BsonBuilder& reply) {
    if (!response.status.isOK()) return response.status;
    bson::BsonView r = response.reply;
    if (r["ok"].trueValue()) {
        for (bson::BsonElement e : r) {
            if (!isReplyMetadataField(e.fieldName())) reply.appendElement(e);
        }
        return Status::OK();
    }
    bson::BsonBuilder extra;
    for (bson::BsonElement e : r) {
        std::string_view n = e.fieldName();
        if (isReplyMetadataField(n) || n == "code" || n == "codeName" || n == "errmsg") continue;
        extra.appendElement(e);
    }
    opCtx.errorExtraInfo = extra.obj();
    int code = r["code"].numberInt();
    return Status(
        code == 0 ? static_cast<int>(ErrorCodes::UnknownError) : code,
        std::string(r["errmsg"].type() == BsonType::String ? r["errmsg"].stringValue() : "error"));
}

Status runShardedWriteBatch(OperationContext& opCtx, Router& router, std::string_view db,
                            const std::string& ns, bson::BsonView body, WriteKind kind,
                            const std::vector<bson::BsonView>& stmts, bool ordered,
                            CollectionRoutingInfo info, bson::BsonBuilder& reply) {
    const size_t n = stmts.size();
    const std::string_view field = writeStatementsField(kind);
    const std::string coll(body.firstElement().stringValue());
    WriteBatchMerger merger(kind);
    std::vector<bool> done(n, false);
    std::vector<std::set<ShardId>> doneShards(n);
    std::vector<int> staleRetries(n, 0);
    // A retryable write's sub-commands all carry the client's lsid/txnNumber and their
    // statements' client indexes (stmtIds): a shard runs each statement at most once, whichever
    // sub-command (or retry of the client's command) carries it.
    bool stop = false;
    int staleRounds = 0;

    while (!stop) {
        TRY_STATUS(opCtx.checkForInterrupt());
        std::vector<std::optional<StatementTarget>> targets(n);
        for (size_t i = 0; i < n; ++i) {
            if (done[i]) continue;
            StatementTarget t;
            if (info.isSharded()) {
                t = targetStatement(*info.table, kind, stmts[i]);
            } else {
                t.shards = {info.db.primary};  // dropped and recreated unsharded meanwhile
            }
            if (t.mode == StatementTarget::Mode::kShards && !doneShards[i].empty()) {
                std::erase_if(t.shards, [&](const ShardId& s) { return doneShards[i].count(s); });
                if (t.shards.empty()) {
                    done[i] = true;
                    continue;
                }
            }
            targets[i] = std::move(t);
        }
        RoundPlan plan = planRound(targets, ordered);
        if (plan.batches.empty() && plan.withoutShardKey.empty() && plan.errors.empty()) break;
        for (size_t i : plan.errors) {
            merger.addError(i, targets[i]->error);
            done[i] = true;
            stop = stop || ordered;
        }
        if (stop) break;

        bool sawStale = false;
        auto onStale = [&](size_t i) {
            sawStale = true;
            if (++staleRetries[i] > kMaxStaleRetries) {
                merger.addError(i, Status(ErrorCodes::StaleConfig,
                                          "routing information kept changing; gave up after " +
                                              std::to_string(kMaxStaleRetries) + " retries"));
                done[i] = true;
                stop = stop || ordered;
            }
        };

        // 1. The sub-batches, concurrently.
        std::vector<ShardRequest> requests;
        for (const SubBatch& batch : plan.batches) {
            std::vector<bson::BsonView> subStmts;
            for (size_t i : batch.indexes) subStmts.push_back(stmts[i]);
            bson::BsonObj cmd = buildSubCommand(body, field, subStmts, ordered, batch.indexes);
            requests.push_back({batch.shard, attachVersion(cmd, info, batch.shard)});
        }
        std::vector<ShardResponse> responses;
        if (!requests.empty()) responses = sendToShards(router, db, requests);
        for (size_t b = 0; b < plan.batches.size() && b < responses.size(); ++b) {
            const SubBatch& batch = plan.batches[b];
            const ShardResponse& resp = responses[b];
            SubBatchOutcome out = merger.addResponse(batch, resp, ordered);
            if (out.sawStale) noteStaleError(router, resp.reply);
            for (size_t i : out.completed) doneShards[i].insert(batch.shard);
            for (size_t i : out.stale) onStale(i);
            if (!out.skipped.empty() || (out.sawError && ordered)) stop = true;
        }
        for (const SubBatch& batch : plan.batches) {
            for (size_t i : batch.indexes) {
                if (done[i]) continue;
                bool all = true;
                for (const ShardId& s : targets[i]->shards) all = all && doneShards[i].count(s);
                if (all) done[i] = true;
            }
        }

        // 2. Single-document writes without an exact shard key, one by one.
        for (size_t i : plan.withoutShardKey) {
            if (stop) break;
            bson::BsonView stmt = stmts[i];
            bson::BsonView q = stmt["q"].objValue();
            TwoPhaseWrite write;
            write.coll = coll;
            write.filter = q.copy();
            if (stmt["sort"].isObject()) write.sort = stmt["sort"].objValue().copy();
            if (stmt["collation"].isObject()) {
                bson::BsonBuilder c;
                c.appendElement(stmt["collation"]);
                write.collation = c.obj();
            }
            if (body["let"].isObject()) {
                bson::BsonBuilder l;
                l.appendElement(body["let"]);
                write.let = l.obj();
            }
            write.shards = targets[i]->shards;
            bson::BsonView arrayFilters =
                stmt["arrayFilters"].isArray() ? stmt["arrayFilters"].objValue() : bson::BsonView();
            if (kind == WriteKind::kUpdate &&
                updateMayChangeShardKey(info.table->shardKeyPattern(), stmt["u"])) {
                write.update = stmt["u"];
                write.arrayFilters = arrayFilters.copy();
            }
            auto rewrite = [&](bson::BsonView filter) {
                bson::BsonBuilder s;
                s.append("q", filter);
                for (bson::BsonElement e : stmt) {
                    if (e.fieldName() != "q") s.appendElement(e);
                }
                return s.obj();
            };
            write.makeWriteCommand = [&](bson::BsonView filter, const ShardId&) {
                bson::BsonObj s = rewrite(filter);
                return buildSubCommand(body, field, {s}, true, {i});
            };
            write.matched = [](bson::BsonView r) { return r["n"].numberLong(); };
            write.session = sessionFields(body);
            write.stmtId = clientStatementId(body, i);
            write.callerMovesDocuments = kind == WriteKind::kUpdate && n == 1;
            auto outcome = runTwoPhaseWrite(router, info, db, write);
            if (!outcome.isOK()) {
                merger.addError(i, outcome.getStatus());
                done[i] = true;
                stop = stop || ordered;
                continue;
            }
            if (outcome.getValue().stale) {
                onStale(i);
                continue;
            }
            if (outcome.getValue().found) {
                const ShardResponse& r = outcome.getValue().response;
                SubBatchOutcome out = merger.addResponse({r.shard, {i}}, r, true, true);
                done[i] = true;
                stop = stop || (out.sawError && ordered);
                continue;
            }
            if (kind == WriteKind::kUpdate && stmt["upsert"].trueValue()) {
                // Nothing matches anywhere: insert on the shard owning the new document.
                auto target = targetUpsertInsert(*info.table, q, stmt["u"], arrayFilters);
                if (!target.isOK()) {
                    merger.addError(i, target.getStatus());
                    done[i] = true;
                    stop = stop || ordered;
                    continue;
                }
                const ShardId& shard = target.getValue().shard;
                bson::BsonObj s = rewrite(target.getValue().filter);
                bson::BsonObj cmd = buildSubCommand(body, field, {s}, true, {i});
                auto rs = sendToShards(router, db, {{shard, attachVersion(cmd, info, shard)}});
                SubBatchOutcome out = merger.addResponse({shard, {i}}, rs.front(), true);
                if (out.sawStale) {
                    noteStaleError(router, rs.front().reply);
                    onStale(i);
                    continue;
                }
                done[i] = true;
                stop = stop || (out.sawError && ordered);
                continue;
            }
            done[i] = true;  // matched nothing: n 0
        }

        if (sawStale && !stop) {
            // As runRouted: repeated stale answers mean a shard is in a critical section or
            // refreshing; from the third round on, give it time before asking again.
            if (++staleRounds >= 3) {
                std::this_thread::sleep_for(
                    std::chrono::milliseconds(20 << std::min(staleRounds - 3, 4)));
            }
            auto refreshed = router.catalog().getCollectionRoutingInfo(ns, true);
            if (!refreshed.isOK()) {
                for (size_t i = 0; i < n; ++i) {
                    if (done[i]) continue;
                    merger.addError(i, refreshed.getStatus());
                    done[i] = true;
                    if (ordered) break;
                }
                break;
            }
            info = std::move(refreshed).getValue();
        }
    }
    if (!body["txnNumber"].eoo()) {
        // A retryable write that could not reach (or was refused by a stopping) shard: the
        // client's command fails as a whole with that error and its RetryableWriteError label,
        // so the driver retries it with the same txnNumber — the shards replay the statements
        // they executed and run the others (mongos would leave it in writeErrors, which drivers
        // never retry).
        if (std::optional<Status> retriable = merger.firstRetriableError()) return *retriable;
    }
    merger.appendReply(reply, ordered);
    return Status::OK();
}

Status runWriteCommand(OperationContext& opCtx, Router& router, std::string_view db,
                       const std::string& ns, bson::BsonView body, WriteKind kind,
                       const std::vector<bson::BsonView>& stmts, bool ordered,
                       bson::BsonBuilder& reply) {
    ASSIGN_OR_RETURN(CollectionRoutingInfo info,
                     router.catalog().getCollectionRoutingInfo(ns, true));
    if (!info.isSharded()) {
        bson::BsonObj cmd = buildSubCommand(body, writeStatementsField(kind), stmts, ordered);
        auto resp = runOnPrimary(opCtx, router, ns, cmd);
        if (resp.isOK()) return relayShardReply(opCtx, resp.getValue(), reply);
        if (!isBecameSharded(resp.getStatus())) return resp.getStatus();
        ASSIGN_OR_RETURN(info, router.catalog().getCollectionRoutingInfo(ns, true));
    }
    if (kind != WriteKind::kUpdate) {
        return runShardedWriteBatch(opCtx, router, db, ns, body, kind, stmts, ordered,
                                    std::move(info), reply);
    }
    // An update that would move a document to another shard: moved here (cluster_write_move.h),
    // the update sent again when the document changed meanwhile.
    constexpr int kMaxMoveAttempts = 5;
    for (int attempt = 1;; ++attempt) {
        bson::BsonBuilder first;
        TRY_STATUS(
            runShardedWriteBatch(opCtx, router, db, ns, body, kind, stmts, ordered, info, first));
        bson::BsonObj result = first.obj();
        if (wouldChangeOwningShardIndex(result) < 0) {
            for (bson::BsonElement e : result) reply.appendElement(e);
            return Status::OK();
        }
        if (stmts.size() != 1) {
            for (bson::BsonElement e : refuseMoveInBatch(result)) reply.appendElement(e);
            return Status::OK();
        }
        bson::BsonBuilder moved;
        // A single-document statement is a retryable write; a multi-update is not.
        std::optional<int32_t> stmtId;
        if (!stmts[0]["multi"].trueValue()) stmtId = clientStatementId(body, 0);
        Status st = moveChangedDocuments(opCtx, router, db, ns, result, stmtId, moved);
        if (st.isOK()) {
            for (bson::BsonElement e : moved.obj()) reply.appendElement(e);
            return Status::OK();
        }
        // Changed meanwhile, or the router's own transaction lost a conflict: run it again.
        if (command::isTransientTransactionErrorCode(st.code()) && !inTransactionStatement() &&
            attempt < kMaxMoveAttempts) {
            ASSIGN_OR_RETURN(info, router.catalog().getCollectionRoutingInfo(ns, true));
            continue;
        }
        if (inTransactionStatement()) return st;  // the statement's error ends the transaction
        reply.appendNumber("n", int64_t{0});
        reply.appendNumber("nModified", int64_t{0});
        command::appendWriteErrors(reply, {command::WriteError{0, st, bson::BsonObj()}});
        return Status::OK();
    }
}

namespace {

// insert / update / delete.
class ClusterWriteCommand final : public command::Command {
  public:
    explicit ClusterWriteCommand(WriteKind kind) : _kind(kind) {}
    std::string_view name() const override { return writeCommandName(_kind); }
    bool supportsRetryableWrite() const override { return true; }

    std::optional<command::ForwardPlan> planForward(OperationContext& opCtx,
                                                    const CommandRequest& request) override {
        return planWriteForward(opCtx, request, _kind);
    }
    std::optional<Status> completeForward(OperationContext& opCtx, const CommandRequest&,
                                          command::ForwardPlan& plan,
                                          const StatusWith<bson::BsonObj>& remote,
                                          bson::BsonBuilder& reply) override {
        return completeWriteForward(opCtx, plan, remote, reply);
    }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        Router& router = Router::get(opCtx);
        ASSIGN_OR_RETURN(std::string coll,
                         command::collectionName(request.firstElement(), writeCommandName(_kind)));
        ASSIGN_OR_RETURN(auto raw, command::writeStatements(request, writeStatementsField(_kind)));
        ASSIGN_OR_RETURN(bool ordered,
                         command::parseOrdered(request.body, writeCommandName(_kind)));
        std::string ns = request.db + "." + coll;

        // Inserts get their `_id` here, as mongos does: the shard key may include it.
        std::vector<bson::BsonObj> owned;
        std::vector<bson::BsonView> stmts;
        if (_kind == WriteKind::kInsert) {
            owned.reserve(raw.size());
            for (bson::BsonView d : raw) owned.push_back(command::ensureIdFirst(d));
            for (const bson::BsonObj& d : owned) stmts.push_back(d);
        } else {
            stmts = raw;
        }

        return runWriteCommand(opCtx, router, request.db, ns, request.body, _kind, stmts, ordered,
                               reply);
    }

  private:
    WriteKind _kind;
};

}  // namespace

void registerClusterWriteCommands(command::CommandRegistry& registry) {
    registry.add(std::make_unique<ClusterWriteCommand>(WriteKind::kInsert));
    registry.add(std::make_unique<ClusterWriteCommand>(WriteKind::kUpdate));
    registry.add(std::make_unique<ClusterWriteCommand>(WriteKind::kDelete));
    registry.add(makeClusterFindAndModifyCommand());
    registry.add(makeClusterBulkWriteCommand());
}

}  // namespace tessera::router
