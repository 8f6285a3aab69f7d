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
#include "bson/validate.h"
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

namespace {

// The statements of one client batch as the write loop tracks them: which are finished, the
// shards that applied each (a multi-shard statement retried after a stale answer goes only to
// the others), and each one's target — computed once and kept until the routing table is
// refreshed (retargetAll), so a batch of n statements is targeted in O(n).
class BatchStatements final : public RoundStatements {
  public:
    BatchStatements(const std::vector<bson::BsonView>& stmts, WriteKind kind,
                    const CollectionRoutingInfo* info)
        : _stmts(stmts),
          _kind(kind),
          _info(info),
          _done(stmts.size(), false),
          _doneShards(stmts.size()),
          _targets(stmts.size()) {}

    size_t size() const override { return _stmts.size(); }
    size_t bytes(size_t i) const override { return _stmts[i].size(); }
    const StatementTarget* target(size_t i) override {
        if (_done[i]) return nullptr;
        if (!_targets[i]) {
            StatementTarget t;
            if (_info->isSharded()) {
                t = targetStatement(*_info->table, _kind, _stmts[i]);
            } else {
                t.shards = {_info->db.primary};  // unsharded (or dropped and recreated so)
            }
            if (t.mode == StatementTarget::Mode::kShards && !_doneShards[i].empty()) {
                std::erase_if(t.shards, [&](const ShardId& s) { return _doneShards[i].count(s); });
                if (t.shards.empty()) {
                    markDone(i);
                    return nullptr;
                }
            }
            _targets[i] = std::move(t);
        }
        return &*_targets[i];
    }

    bool done(size_t i) const { return _done[i]; }
    void markDone(size_t i) {
        _done[i] = true;
        _targets[i].reset();
    }
    // Statement i was applied by `shard`; finished once every shard it targets did.
    void appliedOn(size_t i, const ShardId& shard) {
        _doneShards[i].insert(shard);
        if (_done[i] || !_targets[i]) return;
        for (const ShardId& s : _targets[i]->shards) {
            if (!_doneShards[i].count(s)) return;
        }
        markDone(i);
    }
    // The routing table changed: every pending statement is targeted again when next planned.
    void retargetAll(const CollectionRoutingInfo* info) {
        _info = info;
        for (auto& t : _targets) t.reset();
    }
    // The first statement at or after `from` that is not finished (size() when none is).
    size_t firstPending(size_t from) const {
        while (from < _done.size() && _done[from]) ++from;
        return from;
    }

  private:
    const std::vector<bson::BsonView>& _stmts;
    const WriteKind _kind;
    const CollectionRoutingInfo* _info;
    std::vector<bool> _done;
    std::vector<std::set<ShardId>> _doneShards;
    std::vector<std::optional<StatementTarget>> _targets;
};

// The limits of one sub-command of `body`: its fields other than the statements, and the
// routing versions the router attaches, within the internal BSON size limit.
SubBatchLimits subBatchLimits(bson::BsonView body, std::string_view field, bool ordered) {
    constexpr size_t kVersionsAndSlack = 1024;
    const size_t fixed = buildSubCommand(body, field, {}, ordered).size() + kVersionsAndSlack;
    SubBatchLimits limits;
    limits.maxBytes = fixed < bson::kMaxInternalDocumentSize
                          ? bson::kMaxInternalDocumentSize - fixed
                          : 0;  // one statement per sub-batch
    return limits;
}

// Whether the statements fit one sub-command (the unsharded fast path sends them as one).
bool fitsOneSubCommand(bson::BsonView body, WriteKind kind,
                       const std::vector<bson::BsonView>& stmts, bool ordered) {
    const SubBatchLimits limits = subBatchLimits(body, writeStatementsField(kind), ordered);
    if (stmts.size() > limits.maxStatements) return false;
    size_t bytes = 0;
    for (bson::BsonView s : stmts) bytes += s.size() + SubBatchLimits::kStatementOverheadBytes;
    return bytes <= limits.maxBytes;
}

}  // namespace

Status runShardedWriteBatch(OperationContext& opCtx, Router& router, std::string_view db,
                            const std::string& ns, bson::BsonView body, WriteKind kind,
                            const std::vector<bson::BsonView>& stmts, bool ordered,
                            CollectionRoutingInfo info, bson::BsonBuilder& reply) {
    const size_t n = stmts.size();
    const std::string_view field = writeStatementsField(kind);
    const std::string coll(body.firstElement().stringValue());
    const SubBatchLimits limits = subBatchLimits(body, field, ordered);
    WriteBatchMerger merger(kind);
    BatchStatements statements(stmts, kind, &info);
    std::vector<int> staleRetries(n, 0);
    // A retryable write's sub-commands all carry the client's lsid/txnNumber and their
    // statements' client indexes (stmtIds): a shard runs each statement at most once, whichever
    // sub-command (or retry of the client's command) carries it.
    bool stop = false;
    int staleRounds = 0;
    size_t first = 0;  // ordered: no statement before it is pending

    while (!stop) {
        TRY_STATUS(opCtx.checkForInterrupt());
        if (ordered) first = statements.firstPending(first);
        RoundPlan plan = planRound(statements, first, ordered, limits);
        if (plan.batches.empty() && plan.withoutShardKey.empty() && plan.errors.empty()) break;
        for (size_t i : plan.errors) {
            merger.addError(i, statements.target(i)->error);
            statements.markDone(i);
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
                statements.markDone(i);
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
        if (!requests.empty()) responses = sendToShards(opCtx, router, db, requests);
        for (size_t b = 0; b < plan.batches.size() && b < responses.size(); ++b) {
            const SubBatch& batch = plan.batches[b];
            const ShardResponse& resp = responses[b];
            SubBatchOutcome out = merger.addResponse(batch, resp, ordered);
            if (out.sawStale) noteStaleError(router, resp.reply);
            for (size_t i : out.completed) statements.appliedOn(i, batch.shard);
            for (size_t i : out.stale) onStale(i);
            if (!out.skipped.empty() || (out.sawError && ordered)) stop = true;
        }

        // 2. Single-document writes without an exact shard key, one by one.
        for (size_t i : plan.withoutShardKey) {
            if (stop) break;
            bson::BsonView stmt = stmts[i];
            bson::BsonView q = stmt["q"].objValue();
            TwoPhaseWrite write =
                statementTwoPhaseWrite(body, field, coll, stmt, i, statements.target(i)->shards);
            bson::BsonView arrayFilters =
                stmt["arrayFilters"].isArray() ? stmt["arrayFilters"].objValue() : bson::BsonView();
            if (kind == WriteKind::kUpdate &&
                updateMayChangeShardKey(info.table->shardKeyPattern(), stmt["u"])) {
                write.update = stmt["u"];
                write.arrayFilters = arrayFilters.copy();
            }
            auto rewrite = [&](bson::BsonView filter) {  // the upsert's insert below
                bson::BsonBuilder s;
                s.append("q", filter);
                for (bson::BsonElement e : stmt) {
                    if (e.fieldName() != "q") s.appendElement(e);
                }
                return s.obj();
            };
            write.callerMovesDocuments = kind == WriteKind::kUpdate && n == 1;
            auto outcome = runTwoPhaseWrite(opCtx, router, info, db, write);
            if (!outcome.isOK()) {
                merger.addError(i, outcome.getStatus());
                statements.markDone(i);
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
                statements.markDone(i);
                stop = stop || (out.sawError && ordered);
                continue;
            }
            if (kind == WriteKind::kUpdate && stmt["upsert"].trueValue()) {
                // Nothing matches anywhere: insert on the shard owning the new document.
                auto target = targetUpsertInsert(*info.table, q, stmt["u"], arrayFilters);
                if (!target.isOK()) {
                    merger.addError(i, target.getStatus());
                    statements.markDone(i);
                    stop = stop || ordered;
                    continue;
                }
                const ShardId& shard = target.getValue().shard;
                bson::BsonObj s = rewrite(target.getValue().filter);
                bson::BsonObj cmd = buildSubCommand(body, field, {s}, true, {i});
                auto rs =
                    sendToShards(opCtx, router, db, {{shard, attachVersion(cmd, info, shard)}});
                SubBatchOutcome out = merger.addResponse({shard, {i}}, rs.front(), true);
                if (out.sawStale) {
                    noteStaleError(router, rs.front().reply);
                    onStale(i);
                    continue;
                }
                statements.markDone(i);
                stop = stop || (out.sawError && ordered);
                continue;
            }
            statements.markDone(i);  // matched nothing: n 0
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
                    if (statements.done(i)) continue;
                    merger.addError(i, refreshed.getStatus());
                    statements.markDone(i);
                    if (ordered) break;
                }
                break;
            }
            info = std::move(refreshed).getValue();
            statements.retargetAll(&info);
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
    if (!info.isSharded() && !fitsOneSubCommand(body, kind, stmts, ordered)) {
        // Too large for one command to the primary: cut in pieces by the batch loop, which
        // sends an unsharded collection's statements to its primary.
        return runShardedWriteBatch(opCtx, router, db, ns, body, kind, stmts, ordered,
                                    std::move(info), reply);
    }
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
        if (command::isTransientTransactionErrorCode(st.code()) && !inTransactionStatement(opCtx) &&
            attempt < kMaxMoveAttempts) {
            ASSIGN_OR_RETURN(info, router.catalog().getCollectionRoutingInfo(ns, true));
            continue;
        }
        if (inTransactionStatement(opCtx)) return st;  // the statement's error ends the transaction
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
                                          const std::vector<StatusWith<bson::BsonObj>>& remotes,
                                          bson::BsonBuilder& reply) override {
        return completeWriteForward(opCtx, plan, remotes, reply);
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

        // Inserts get their `_id` here, as mongos does: the shard key may include it. Documents
        // that have it first already (drivers put it there) are used as they are, uncopied.
        std::vector<bson::BsonObj> owned;
        std::vector<bson::BsonView> stmts = raw;
        if (_kind == WriteKind::kInsert) {
            for (bson::BsonView& d : stmts) {
                bson::BsonElement first = d.firstElement();
                if (!first.eoo() && first.fieldName() == "_id") continue;
                owned.push_back(command::ensureIdFirst(d));
                d = owned.back();
            }
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
