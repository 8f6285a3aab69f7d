#include "router/cluster_find.h"

#include "command/exec/find_request.h"
#include "command/exec/query_executor.h"
#include "command/registry.h"
#include "command/reply_util.h"
#include "query/projection.h"
#include "router/cluster_forward.h"
#include "router/router_commands.h"
#include "router/router_util.h"

namespace tessera::router {
namespace reads {

bool relayExhaustedShardCursor(const ShardResponse& r, const std::string& ns,
                               std::optional<int64_t> batchSize, bson::BsonBuilder& reply) {
    if (!r.status.isOK() || !net::replyStatus(r.reply).isOK()) return false;
    bson::BsonElement cursor = r.reply["cursor"];
    if (cursor.type() != bson::BsonType::Object) return false;
    bson::BsonView c = cursor.objValue();
    if (c["id"].numberLong() != 0) return false;
    bson::BsonElement batch = c["firstBatch"];
    if (batch.eoo()) batch = c["nextBatch"];
    if (batch.type() != bson::BsonType::Array) return false;
    const int64_t maxDocs = batchSize.value_or(command::kDefaultFirstBatchSize);
    if (maxDocs <= 0) return false;  // batchSize 0 opens a router cursor
    int64_t n = 0;
    size_t bytes = 0;
    for (bson::BsonElement d : batch.objValue()) {
        if (d.type() != bson::BsonType::Object) return false;
        size_t size = d.objValue().size();
        if (n > 0 && bytes + size > command::kMaxBatchBytes) return false;
        bytes += size;
        if (++n > maxDocs) return false;
    }
    reply.startObject("cursor");
    reply.appendArray("firstBatch", batch.objValue());
    reply.appendInt64("id", 0);
    reply.append("ns", ns);
    reply.end();
    return true;
}

namespace {

using bson::BsonBuilder;
using bson::BsonObj;
using command::exec::ExecContext;
using command::exec::WorkingMember;

// A find projection applied on the router (when the shards were asked without it so that the
// sort fields reach the merge).
class RouterProjectionStage final : public command::exec::PlanStage {
  public:
    explicit RouterProjectionStage(std::unique_ptr<query::Projection> proj)
        : PlanStage("PROJECTION"), _proj(std::move(proj)) {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override {
        ASSIGN_OR_RETURN(bool more, _child->next(ctx, out));
        if (!more) return false;
        ASSIGN_OR_RETURN(out->doc, _proj->apply(out->doc));
        return true;
    }

  private:
    std::unique_ptr<query::Projection> _proj;
};

StatusWith<int64_t> cursorIdArgument(const bson::BsonElement& e, std::string_view command) {
    if (e.type() == bson::BsonType::Int64 || e.type() == bson::BsonType::Int32) {
        return e.numberLong();
    }
    return Status(ErrorCodes::TypeMismatch,
                  "BSON field '" + std::string(command) + "." + std::string(e.fieldName()) +
                      "' is the wrong type '" + std::string(bson::typeName(e.type())) +
                      "', expected type 'long'");
}

// find: unsharded → the primary; sharded → the targeted shards, merged (k-way merge by the sort),
// skip/limit applied here, projection here when it could drop a sort field.
class ClusterFindCommand final : public command::Command {
  public:
    std::string_view name() const override { return "find"; }

    std::optional<command::ForwardPlan> planForward(
        command::OperationContext& opCtx, const command::CommandRequest& request) override {
        return planFindForward(opCtx, request);
    }
    std::optional<Status> completeForward(command::OperationContext& opCtx,
                                          const command::CommandRequest&,
                                          command::ForwardPlan& plan,
                                          const std::vector<StatusWith<BsonObj>>& remotes,
                                          BsonBuilder& reply) override {
        return completeFindForward(opCtx, plan, remotes, reply);
    }

    Status run(command::OperationContext& opCtx, const command::CommandRequest& request,
               BsonBuilder& reply) override {
        if (request.db == "config") return forwardToConfig(opCtx, request, reply);
        ASSIGN_OR_RETURN(command::exec::FindRequest req,
                         command::exec::parseFindRequest(request, request.body));
        ASSIGN_OR_RETURN(query::CollatorPtr collator, collatorArgument(request.body));
        Router& router = Router::get(opCtx);
        std::string ns = request.db + "." + req.coll;
        const command::exec::QuerySpec& q = req.query;

        // What the last round of runRouted decided (it may retry after stale errors).
        bool merged = false;
        bool projectOnRouter = false;
        auto makeRequests =
            [&](const CollectionRoutingInfo& info) -> StatusWith<std::vector<ShardRequest>> {
            std::vector<ShardId> shards{info.db.primary};
            merged = false;
            projectOnRouter = false;
            if (info.isSharded()) {
                ASSIGN_OR_RETURN(auto t, targetRead(*info.table, q.filter, collator == nullptr));
                shards = t.shards;
            }
            BsonObj body;
            if (shards.size() == 1) {
                body = shardBody(request.body, {});
            } else {
                merged = true;
                std::vector<std::string_view> drop{"skip", "limit", "batchSize"};
                if (!q.sort.isEmpty() && !q.projection.isEmpty()) {
                    auto proj = query::Projection::parse(q.projection);
                    if (proj.isOK() && !proj.getValue()->requiresMatchDetails()) {
                        projectOnRouter = true;
                        drop.push_back("projection");
                    }
                }
                body = shardBody(request.body, drop, [&](BsonBuilder& b) {
                    if (q.limit) b.appendInt64("limit", *q.limit + q.skip);
                    if (req.batchSize) b.appendInt64("batchSize", *req.batchSize + q.skip);
                });
            }
            std::vector<ShardRequest> out;
            for (const ShardId& s : shards) out.push_back({s, attachVersion(body, info, s)});
            return out;
        };
        auto routed = runRoutedRead(opCtx, router, ns, makeRequests);
        if (routed.getStatus().is(ErrorCodes::NamespaceNotFound)) {
            // No such database: the answer of a missing collection, after the same parsing of
            // the filter, sort and projection that a shard would do (a bad filter is an error,
            // not an empty result).
            command::exec::QuerySpec spec = q;
            spec.collator = collator;
            TRY_STATUS(command::exec::buildQueryExecutor(nullptr, nullptr, ns, spec).getStatus());
            return replyWithCursor(opCtx, router, emptySource(router, ns), ns, 0, true, false,
                                   reply);
        }
        ASSIGN_OR_RETURN(auto responses, std::move(routed));
        std::optional<int64_t> batchSize = req.batchSize;
        if (!batchSize && req.singleBatch && q.limit) batchSize = *q.limit;
        if (!merged && responses.size() == 1 &&
            relayExhaustedShardCursor(responses.front(), ns, batchSize, reply)) {
            return Status::OK();
        }
        ASSIGN_OR_RETURN(auto cursors, cursorsFromResponses(router, responses));
        for (RemoteCursor& c : cursors) c.ns = ns;

        std::unique_ptr<command::exec::PlanStage> root = std::make_unique<RemoteMergeStage>(
            std::move(cursors), merged ? q.sort : BsonObj(), collator, runCommandsFn(router));
        if (merged && (q.skip > 0 || q.limit)) {
            auto sl = std::make_unique<SkipLimitStage>(q.skip, q.limit);
            sl->setChild(std::move(root));
            root = std::move(sl);
        }
        if (projectOnRouter) {
            ASSIGN_OR_RETURN(auto proj, query::Projection::parse(q.projection));
            auto ps = std::make_unique<RouterProjectionStage>(std::move(proj));
            ps->setChild(std::move(root));
            root = std::move(ps);
        }
        return replyWithCursor(opCtx, router, std::move(root), ns, batchSize, req.singleBatch,
                               req.noCursorTimeout, reply);
    }
};

// getMore on a router cursor (or, on `config`, on a config server cursor).
class ClusterGetMoreCommand final : public command::Command {
  public:
    std::string_view name() const override { return "getMore"; }

    Status run(command::OperationContext& opCtx, const command::CommandRequest& request,
               BsonBuilder& reply) override {
        if (request.db == "config") return forwardToConfig(opCtx, request, reply);
        TRY_STATUS(checkKnownFields(request, {"collection", "batchSize"}));
        ASSIGN_OR_RETURN(int64_t id, cursorIdArgument(request.firstElement(), "getMore"));
        bson::BsonElement collElem = request.body["collection"];
        if (collElem.eoo()) {
            return Status(40414, "BSON field 'getMore.collection' is missing but a required field");
        }
        ASSIGN_OR_RETURN(std::string coll, command::collectionName(collElem, "getMore"));
        ASSIGN_OR_RETURN(auto batchSize,
                         command::exec::nonNegativeArgument(request.body, "batchSize", "getMore"));
        if (batchSize && *batchSize == 0) batchSize.reset();
        std::string ns = request.db + "." + coll;
        Router& router = Router::get(opCtx);
        ASSIGN_OR_RETURN(command::PinnedCursor cursor, router.cursors().cursors().pin(id, ns));
        bson::BsonArrayBuilder batch;
        bool exhausted = false;
        Status s = command::fillBatch(opCtx, *cursor->exec, batchSize, batch, &exhausted);
        if (!s.isOK()) {
            cursor.markExhausted();
            return s;
        }
        cursor->nReturned += static_cast<int64_t>(batch.count());
        if (exhausted) cursor.markExhausted();
        command::exec::appendCursor(reply, "nextBatch", batch, exhausted ? 0 : id, ns);
        return Status::OK();
    }
};

class ClusterKillCursorsCommand final : public command::Command {
  public:
    std::string_view name() const override { return "killCursors"; }

    Status run(command::OperationContext& opCtx, const command::CommandRequest& request,
               BsonBuilder& reply) override {
        if (request.db == "config") return forwardToConfig(opCtx, request, reply);
        TRY_STATUS(checkKnownFields(request, {"cursors"}));
        ASSIGN_OR_RETURN(std::string coll,
                         command::collectionName(request.firstElement(), "killCursors"));
        bson::BsonElement cursors = request.body["cursors"];
        if (cursors.eoo()) {
            return Status(40414,
                          "BSON field 'killCursors.cursors' is missing but a required field");
        }
        TRY_STATUS(command::expectType(cursors, bson::BsonType::Array, "killCursors"));
        std::vector<int64_t> ids;
        for (auto e : cursors.objValue()) {
            ASSIGN_OR_RETURN(int64_t id, cursorIdArgument(e, "killCursors.cursors"));
            ids.push_back(id);
        }
        std::string ns = request.db + "." + coll;
        Router& router = Router::get(opCtx);
        bson::BsonArrayBuilder killed, notFound;
        for (int64_t id : ids) {
            if (router.cursors().kill(id, ns) == command::CursorManager::KillResult::kKilled) {
                killed.append(id);
            } else {
                notFound.append(id);
            }
        }
        reply.appendArray("cursorsKilled", killed.arr());
        reply.appendArray("cursorsNotFound", notFound.arr());
        reply.appendArray("cursorsAlive", bson::BsonArrayBuilder().arr());
        reply.appendArray("cursorsUnknown", bson::BsonArrayBuilder().arr());
        return Status::OK();
    }
};

}  // namespace

std::unique_ptr<command::Command> makeClusterFindCommand() {
    return std::make_unique<ClusterFindCommand>();
}
std::unique_ptr<command::Command> makeClusterGetMoreCommand() {
    return std::make_unique<ClusterGetMoreCommand>();
}
std::unique_ptr<command::Command> makeClusterKillCursorsCommand() {
    return std::make_unique<ClusterKillCursorsCommand>();
}

}  // namespace reads

void registerClusterReadCommands(command::CommandRegistry& registry) {
    registry.add(reads::makeClusterFindCommand());
    registry.add(reads::makeClusterGetMoreCommand());
    registry.add(reads::makeClusterKillCursorsCommand());
    registry.add(reads::makeClusterCountCommand());
    registry.add(reads::makeClusterDistinctCommand());
    registry.add(reads::makeClusterAggregateCommand());
    registry.add(reads::makeClusterExplainCommand());
}

}  // namespace tessera::router
