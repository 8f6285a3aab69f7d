#include "command/exec/find_request.h"
#include "command/exec/pipeline.h"
#include "command/exec/query_executor.h"
#include "command/write_ops_util.h"
#include "query/matcher.h"
#include "router/cluster_find.h"
#include "router/pipeline_split.h"

namespace tessera::router::reads {
namespace {

using bson::BsonBuilder;
using bson::BsonObj;

// The reply fields of a shard's explain (without ok and cluster-time gossip).
BsonObj explainBody(bson::BsonView reply) {
    BsonBuilder b;
    for (bson::BsonElement e : reply) {
        std::string_view n = e.fieldName();
        if (n == "ok" || n == "$clusterTime" || n == "operationTime") continue;
        b.appendElement(e);
    }
    return b.obj();
}

bson::BsonView objField(bson::BsonView doc, std::string_view name) {
    bson::BsonElement e = doc[name];
    return e.isObject() ? e.objValue() : bson::BsonView();
}

// The explain of a read of a database that does not exist: the command is parsed as a shard
// would parse it (a bad filter or stage is an error, as on a single node), then explained as
// what it is — a plan over no data (EOF), on no shard.
Status explainOnMissingDatabase(Router& router, const std::string& db, const std::string& ns,
                                bson::BsonView inner, const std::vector<BsonObj>& stages,
                                const query::CollatorPtr& collator, std::string_view verbosity,
                                BsonBuilder& reply) {
    std::string_view cmdName = inner.firstElement().fieldName();
    if (cmdName == "find") {
        command::CommandRequest req;
        req.db = db;
        req.commandName = cmdName;
        req.body = inner;
        ASSIGN_OR_RETURN(command::exec::FindRequest find,
                         command::exec::parseFindRequest(req, inner));
        find.query.collator = collator;
        TRY_STATUS(command::exec::buildQueryExecutor(nullptr, nullptr, ns, find.query).getStatus());
    } else if (cmdName == "aggregate") {
        command::exec::PipelineContext pctx;
        pctx.collator = collator;
        TRY_STATUS(command::exec::buildPipelineStages(pctx, nullptr, ns,
                                                      command::exec::pipelineArray(stages))
                       .getStatus());
    } else if (cmdName == "count" || cmdName == "distinct") {
        bson::BsonElement q = inner["query"];
        ASSIGN_OR_RETURN(auto let, command::parseLet(inner, cmdName));
        TRY_STATUS(
            query::Matcher::parse(q.isObject() ? q.objValue() : bson::BsonView(), collator, let)
                .getStatus());
    }
    reply.startObject("queryPlanner");
    reply.appendInt32("mongosPlannerVersion", 1);
    reply.append("namespace", ns);
    reply.startObject("winningPlan");
    reply.append("stage", "EOF");
    reply.appendArray("shards", bson::BsonArrayBuilder().arr());
    reply.end();
    reply.end();
    if (verbosity != "queryPlanner") {
        reply.startObject("executionStats");
        reply.appendInt64("nReturned", 0);
        reply.appendInt64("executionTimeMillis", 0);
        reply.appendInt64("totalKeysExamined", 0);
        reply.appendInt64("totalDocsExamined", 0);
        reply.startObject("executionStages");
        reply.append("stage", "EOF");
        reply.appendInt64("nReturned", 0);
        reply.appendArray("shards", bson::BsonArrayBuilder().arr());
        reply.end();
        reply.end();
    }
    reply.startObject("serverInfo").append("host", router.selfHost()).end();
    reply.append("command", inner);
    return Status::OK();
}

}  // namespace

Status runClusterExplain(command::OperationContext& opCtx, Router& router,
                         const command::CommandRequest& request, bson::BsonView inner,
                         std::string_view verbosity, BsonBuilder& reply) {
    if (inner.isEmpty()) return Status(ErrorCodes::FailedToParse, "explain of an empty command");
    std::string cmdName(inner.firstElement().fieldName());
    std::string coll = inner.firstElement().type() == bson::BsonType::String
                           ? std::string(inner.firstElement().stringValue())
                           : std::string("$cmd.aggregate");
    std::string ns = request.db + "." + coll;
    ASSIGN_OR_RETURN(query::CollatorPtr collator, collatorArgument(inner));

    std::vector<BsonObj> stages;
    BsonObj filter;
    if (cmdName == "aggregate") {
        ASSIGN_OR_RETURN(stages, pipelineStages(inner["pipeline"]));
        if (!stages.empty() && stages[0].firstElement().fieldName() == "$match" &&
            stages[0].firstElement().isObject()) {
            filter = stages[0].firstElement().objValue().copy();
        }
    } else if (inner["filter"].isObject()) {
        filter = inner["filter"].objValue().copy();
    } else if (inner["query"].isObject()) {
        filter = inner["query"].objValue().copy();
    }

    std::optional<placement::TargetingResult> targeting;
    std::optional<SplitPipeline> split;
    bool sorted = false;
    auto makeRequests =
        [&](const CollectionRoutingInfo& info) -> StatusWith<std::vector<ShardRequest>> {
        targeting.reset();
        split.reset();
        sorted = false;
        std::vector<ShardId> shards{info.db.primary};
        BsonObj innerShard = shardBody(inner, {});
        if (info.isSharded()) {
            ASSIGN_OR_RETURN(auto t, targetRead(*info.table, filter, collator == nullptr));
            targeting = t;
            shards = t.shards;
            if (shards.size() > 1 && cmdName == "aggregate") {
                ASSIGN_OR_RETURN(split, splitPipeline(stages));
                sorted = !split->mergeSort.isEmpty();
                innerShard = shardBody(inner, {"pipeline"}, [&](BsonBuilder& b) {
                    b.startArray("pipeline");
                    for (size_t i = 0; i < split->shardPart.size(); ++i) {
                        b.append(std::to_string(i), split->shardPart[i]);
                    }
                    b.end();
                });
            } else if (shards.size() > 1 && cmdName == "find") {
                sorted = inner["sort"].isObject() && !inner["sort"].objValue().isEmpty();
                int64_t skip = inner["skip"].numberLong();
                int64_t limit = inner["limit"].numberLong();
                innerShard = shardBody(inner, {"skip", "limit"}, [&](BsonBuilder& b) {
                    if (limit > 0) b.appendInt64("limit", limit + skip);
                });
            }
        }
        BsonBuilder cmd;
        cmd.append("explain", innerShard);
        cmd.append("verbosity", verbosity);
        BsonObj c = cmd.obj();
        std::vector<ShardRequest> out;
        for (const ShardId& s : shards) out.push_back({s, attachVersion(c, info, s)});
        return out;
    };
    auto routed = runRouted(opCtx, router, ns, makeRequests);
    if (routed.getStatus().is(ErrorCodes::NamespaceNotFound)) {
        return explainOnMissingDatabase(router, request.db, ns, inner, stages, collator, verbosity,
                                        reply);
    }
    ASSIGN_OR_RETURN(auto responses, std::move(routed));
    for (const ShardResponse& r : responses) TRY_STATUS(shardResponseStatus(r));

    const char* stage = responses.size() == 1 ? "SINGLE_SHARD"
                        : sorted              ? "SHARD_MERGE_SORT"
                                              : "SHARD_MERGE";
    bool withStats = false;
    reply.startObject("queryPlanner");
    reply.appendInt32("mongosPlannerVersion", 1);
    reply.startObject("winningPlan");
    reply.append("stage", stage);
    reply.startArray("shards");
    for (size_t i = 0; i < responses.size(); ++i) {
        const ShardResponse& r = responses[i];
        bson::BsonView qp = objField(r.reply, "queryPlanner");
        withStats = withStats || r.reply["executionStats"].isObject();
        reply.startObject(std::to_string(i));
        reply.append("shardName", r.shard);
        reply.append("connectionString", r.host);
        if (r.reply["serverInfo"].isObject())
            reply.append("serverInfo", objField(r.reply, "serverInfo"));
        reply.append("namespace", ns);
        reply.appendBool("indexFilterSet", false);
        if (qp["parsedQuery"].isObject()) reply.append("parsedQuery", objField(qp, "parsedQuery"));
        if (qp["winningPlan"].isObject()) {
            reply.append("winningPlan", objField(qp, "winningPlan"));
            reply.appendArray("rejectedPlans", bson::BsonArrayBuilder().arr());
        } else {
            reply.append("winningPlan", explainBody(r.reply));
        }
        reply.end();
    }
    reply.end();  // shards
    reply.end();  // winningPlan
    reply.end();  // queryPlanner

    if (withStats) {
        int64_t n = 0, keys = 0, docs = 0, millis = 0;
        bson::BsonArrayBuilder shardStats;
        for (const ShardResponse& r : responses) {
            bson::BsonView es = objField(r.reply, "executionStats");
            n += es["nReturned"].numberLong();
            keys += es["totalKeysExamined"].numberLong();
            docs += es["totalDocsExamined"].numberLong();
            millis = std::max(millis, es["executionTimeMillis"].numberLong());
            BsonBuilder s;
            s.append("shardName", r.shard);
            s.appendBool("executionSuccess", true);
            for (bson::BsonElement e : es) s.appendElement(e);
            shardStats.append(s.obj());
        }
        reply.startObject("executionStats");
        reply.appendInt64("nReturned", n);
        reply.appendInt64("executionTimeMillis", millis);
        reply.appendInt64("totalKeysExamined", keys);
        reply.appendInt64("totalDocsExamined", docs);
        reply.startObject("executionStages");
        reply.append("stage", stage);
        reply.appendInt64("nReturned", n);
        reply.appendInt64("executionTimeMillis", millis);
        reply.appendInt64("totalKeysExamined", keys);
        reply.appendInt64("totalDocsExamined", docs);
        reply.appendArray("shards", shardStats.arr());
        reply.end();
        reply.end();
    }
    if (cmdName == "aggregate") {
        reply.append("mergeType", responses.size() == 1 ? "shard" : "mongos");
        if (split) {
            reply.append("splitPipeline", split->toBson());
        } else {
            reply.appendNull("splitPipeline");
        }
        reply.startObject("shards");
        for (const ShardResponse& r : responses) {
            BsonBuilder s;
            s.append("host", r.host);
            s.appendElements(explainBody(r.reply));
            reply.append(r.shard, s.obj());
        }
        reply.end();
    }
    if (targeting) reply.append("targeting", targeting->toBson());
    reply.startObject("serverInfo").append("host", router.selfHost()).end();
    reply.append("command", inner);
    return Status::OK();
}

namespace {

class ClusterExplainCommand final : public command::Command {
  public:
    std::string_view name() const override { return "explain"; }

    Status run(command::OperationContext& opCtx, const command::CommandRequest& request,
               BsonBuilder& reply) override {
        if (request.db == "config") return forwardToConfig(opCtx, request, reply);
        bson::BsonElement inner = request.firstElement();
        if (!inner.isObject()) {
            return Status(ErrorCodes::TypeMismatch,
                          "BSON field 'explain.explain' is the wrong type, expected type 'object'");
        }
        std::string verbosity = "allPlansExecution";
        bson::BsonElement v = request.body["verbosity"];
        if (v.type() == bson::BsonType::String) verbosity = std::string(v.stringValue());
        return runClusterExplain(opCtx, Router::get(opCtx), request, inner.objValue(), verbosity,
                                 reply);
    }
};

}  // namespace

std::unique_ptr<command::Command> makeClusterExplainCommand() {
    return std::make_unique<ClusterExplainCommand>();
}

}  // namespace tessera::router::reads
