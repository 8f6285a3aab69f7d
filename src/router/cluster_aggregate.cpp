#include <algorithm>

#include "command/current_op.h"
#include "command/exec/local_sessions.h"
#include "command/exec/pipeline.h"
#include "command/reply_util.h"
#include "command/write_ops_util.h"
#include "router/cluster_find.h"
#include "router/pipeline_split.h"
#include "router/router_util.h"

namespace tessera::router::reads {

using bson::BsonBuilder;
using bson::BsonObj;
using command::exec::PlanStage;

StatusWith<std::unique_ptr<PlanStage>> buildMergePipeline(std::unique_ptr<PlanStage> source,
                                                          const std::vector<BsonObj>& mergePart,
                                                          const std::string& ns,
                                                          query::CollatorPtr collator,
                                                          bool allowDiskUse) {
    if (mergePart.empty()) return source;
    std::vector<BsonObj> stages = mergePart;
    // The builder turns leading $match/$sort into the access path of a collection (none here);
    // a no-op first stage keeps them as stages over our source.
    std::string_view first = stages[0].firstElement().fieldName();
    if (first == "$match" || first == "$sort") {
        BsonBuilder b;
        b.appendInt64("$skip", 0);
        stages.insert(stages.begin(), b.obj());
    }
    command::exec::PipelineContext pctx;
    pctx.collator = std::move(collator);
    pctx.allowDiskUse = allowDiskUse;
    ASSIGN_OR_RETURN(auto root, command::exec::buildPipelineStages(
                                    pctx, nullptr, ns, command::exec::pipelineArray(stages)));
    PlanStage* p = root.get();
    if (p->child() == nullptr) {
        return Status(ErrorCodes::InternalError, "merge pipeline has no input stage");
    }
    while (p->child()->child() != nullptr) p = p->child();
    p->setChild(std::move(source));  // replaces the empty access path of "no collection"
    return root;
}

namespace {

// Adds `shard` after `ns` to a $collStats document (mongosh's getShardDistribution needs it).
BsonObj withShardField(bson::BsonView doc, const std::string& shard) {
    if (doc.hasField("shard")) return doc.copy();
    BsonBuilder b;
    bool added = false;
    for (bson::BsonElement e : doc) {
        b.appendElement(e);
        if (e.fieldName() == "ns") {
            b.append("shard", shard);
            added = true;
        }
    }
    if (!added) b.append("shard", shard);
    return b.obj();
}

BsonObj collStatsCommand(const std::string& coll, const BsonObj& stage) {
    BsonBuilder b;
    b.append("aggregate", coll);
    b.startArray("pipeline").append("0", stage).end();
    b.startObject("cursor").end();
    return b.obj();
}

// admin.aggregate([{$shardedDataDistribution: {}}]): one document per sharded collection.
// $currentOp {...} on admin (mongosh's db.currentOp(); options: command/current_op.h): the
// shards' operations in progress, as the currentOp command lists them (migrations, range
// deletions, open transactions and the commits a shard coordinates); localOps: true asks for
// the router's own operations, of which none are listed.
StatusWith<std::vector<BsonObj>> currentOpStage(Router& router, const bson::BsonElement& spec) {
    ASSIGN_OR_RETURN(command::CurrentOpStageOptions options, command::parseCurrentOpStage(spec));
    if (options.localOps) return std::vector<BsonObj>{};
    BsonBuilder cmd;
    cmd.appendInt32("currentOp", 1).appendBool("idleSessions", options.idleSessions);
    return clusterCurrentOp(router, cmd.obj());
}

StatusWith<std::vector<BsonObj>> shardedDataDistribution(command::OperationContext& opCtx,
                                                         Router& router) {
    BsonBuilder q;
    q.append("find", "collections");
    ASSIGN_OR_RETURN(BsonObj r, router.client().runCommand(router.configHost(), "config", q.obj()));
    TRY_STATUS(net::replyStatus(r));
    ASSIGN_OR_RETURN(RemoteCursor all, parseRemoteCursor("config", router.configHost(), r));
    std::vector<BsonObj> out;
    for (const BsonObj& coll : all.buffer) {
        if (coll["dropped"].trueValue() || coll["_id"].type() != bson::BsonType::String) continue;
        std::string ns(coll["_id"].stringValue());
        auto info = router.catalog().getCollectionRoutingInfo(ns);
        if (!info.isOK() || !info.getValue().isSharded()) continue;
        BsonBuilder stage;
        stage.startObject("$collStats").startObject("storageStats").end().end();
        BsonObj cmd = collStatsCommand(ns.substr(ns.find('.') + 1), stage.obj());
        // Every shard, not only the owners in this router's (maybe older) table: a shard that
        // holds only orphans (a recipient before it learns of a commit, a donor before its
        // range is deleted) is reported too. Each counts by its own placement.
        ASSIGN_OR_RETURN(auto allShards, router.shards().allShards());
        const std::vector<ShardId> owners = info.getValue().table->shards();
        std::vector<ShardRequest> reqs;
        for (const auto& s : allShards) reqs.push_back({s.id, cmd});
        auto rs = sendToShards(opCtx, router, ns.substr(0, ns.find('.')), reqs);
        BsonBuilder d;
        d.append("ns", ns);
        d.startArray("shards");
        size_t k = 0;
        for (const ShardResponse& sr : rs) {
            if (sr.status.isOK() && !sr.reply["ok"].trueValue() &&
                sr.reply["code"].numberInt() == static_cast<int>(ErrorCodes::NamespaceNotFound)) {
                continue;  // the shard does not hold the collection
            }
            TRY_STATUS(shardResponseStatus(sr));
            ASSIGN_OR_RETURN(RemoteCursor c, parseRemoteCursor(sr.shard, sr.host, sr.reply));
            bson::BsonView st = c.buffer.empty() ? bson::BsonView() : c.buffer[0].view();
            bson::BsonView ss =
                st["storageStats"].isObject() ? st["storageStats"].objValue() : bson::BsonView();
            bool owner = std::find(owners.begin(), owners.end(), sr.shard) != owners.end();
            if (!owner && ss["count"].numberLong() == 0 && ss["numOrphanDocs"].numberLong() == 0) {
                continue;  // an empty copy on a shard that owns nothing
            }
            // A shard's storageStats count and size are of its owned documents already
            // (src/shard/README.md invariant 3); numOrphanDocs is what it holds beyond them.
            int64_t owned = ss["count"].numberLong(), ownedBytes = ss["size"].numberLong();
            int64_t orphans = ss["numOrphanDocs"].numberLong();
            int64_t avg = owned > 0 ? ownedBytes / owned : 0;
            d.startObject(std::to_string(k++));
            d.append("shardName", sr.shard);
            d.appendInt64("numOrphanedDocs", orphans);
            d.appendInt64("numOwnedDocuments", owned);
            d.appendInt64("ownedSizeBytes", ownedBytes);
            d.appendInt64("orphanedSizeBytes", orphans * avg);
            d.end();
        }
        d.end();
        out.push_back(d.obj());
    }
    return out;
}

class ClusterAggregateCommand final : public command::Command {
  public:
    std::string_view name() const override { return "aggregate"; }

    Status run(command::OperationContext& opCtx, const command::CommandRequest& request,
               BsonBuilder& reply) override {
        if (request.db == "config") return forwardToConfig(opCtx, request, reply);
        Router& router = Router::get(opCtx);
        const bson::BsonView body = request.body;
        if (body["explain"].trueValue()) {
            BsonObj inner = shardBody(body, {"explain"});
            return runClusterExplain(opCtx, router, request, inner, "queryPlanner", reply);
        }
        ASSIGN_OR_RETURN(std::vector<BsonObj> stages, pipelineStages(body["pipeline"]));
        bson::BsonElement cursorArg = body["cursor"];
        if (cursorArg.type() != bson::BsonType::Object) {
            return Status(ErrorCodes::FailedToParse,
                          "The 'cursor' option is required, except for aggregate with the "
                          "explain argument");
        }
        std::optional<int64_t> batchSize;
        if (cursorArg.objValue()["batchSize"].isNumber()) {
            batchSize = cursorArg.objValue()["batchSize"].numberLong();
            if (*batchSize < 0) {
                return Status(51024, "BSON field 'batchSize' value must be >= 0");
            }
        }
        ASSIGN_OR_RETURN(query::CollatorPtr collator, collatorArgument(body));
        bool allowDiskUse = body["allowDiskUse"].trueValue();
        bool collectionless = request.firstElement().isNumber();
        std::string coll;
        if (collectionless) {
            coll = "$cmd.aggregate";
        } else {
            ASSIGN_OR_RETURN(coll, command::collectionName(request.firstElement(), "aggregate"));
        }
        std::string ns = request.db + "." + coll;
        std::string_view firstStage =
            stages.empty() ? std::string_view() : stages[0].firstElement().fieldName();

        if (body["pipeline"].isArray()) {
            TRY_STATUS(command::checkAggregateReadConcern(body, body["pipeline"].objValue()));
        }
        // Stages answered by the router itself: placement from the catalog, and the sessions
        // this router has seen (a mongos keeps its own logical session cache).
        const bool routerStage = request.db == "admin" &&
                                 (firstStage == "$shardedDataDistribution" ||
                                  firstStage == "$listLocalSessions" || firstStage == "$currentOp");
        if (routerStage) {
            std::vector<BsonObj> docs;
            if (firstStage == "$listLocalSessions") {
                if (opCtx.lsid) command::exec::recordLocalSession(*opCtx.lsid);
                docs = command::exec::listLocalSessions();
            } else if (firstStage == "$currentOp") {
                ASSIGN_OR_RETURN(docs, currentOpStage(router, stages[0].firstElement()));
            } else {
                ASSIGN_OR_RETURN(docs, shardedDataDistribution(opCtx, router));
            }
            RemoteCursor c;
            c.shard = "config";
            c.ns = ns;
            c.buffer.assign(docs.begin(), docs.end());
            std::vector<RemoteCursor> cs;
            cs.push_back(std::move(c));
            auto source = std::make_unique<RemoteMergeStage>(std::move(cs), BsonObj(), nullptr,
                                                             runCommandsFn(router));
            std::vector<BsonObj> rest(stages.begin() + 1, stages.end());
            ASSIGN_OR_RETURN(
                auto root,
                // The source stands in for the collection, so the stages after it are checked
                // as stages over a stream, not as a collectionless {aggregate: 1}.
                buildMergePipeline(std::move(source), rest, request.db + ".$routerStage", collator,
                                   allowDiskUse));
            return replyWithCursor(opCtx, router, std::move(root), ns, batchSize, false, false,
                                   reply);
        }
        if (request.db == "admin") return forwardToConfig(opCtx, request, reply);

        const bool touchesOther = pipelineTouchesOtherCollections(stages);
        const bool collStats = firstStage == "$collStats";
        // Decided by the last round of runRouted.
        std::optional<SplitPipeline> split;
        Status splitError = Status::OK();
        auto makeRequests =
            [&](const CollectionRoutingInfo& info) -> StatusWith<std::vector<ShardRequest>> {
            split.reset();
            std::vector<ShardId> shards{info.db.primary};
            BsonObj shardCmd = shardBody(body, {});
            if (info.isSharded() && collStats) {
                shards = info.table->shards();
                split = SplitPipeline{};
                split->mergePart.assign(stages.begin() + 1, stages.end());
                shardCmd = collStatsCommand(coll, stages[0]);
            } else if (info.isSharded()) {
                BsonObj filter;
                if (firstStage == "$match" && stages[0].firstElement().isObject()) {
                    filter = stages[0].firstElement().objValue().copy();
                }
                ASSIGN_OR_RETURN(auto t, targetRead(*info.table, filter, collator == nullptr));
                shards = t.shards;
                if (shards.size() > 1 || touchesOther) {
                    ASSIGN_OR_RETURN(split, splitPipeline(stages));
                    if (pipelineTouchesOtherCollections(split->mergePart)) {
                        return Status(ErrorCodes::NotImplemented,
                                      "$lookup, $graphLookup, $unionWith, $out and $merge are not "
                                      "supported yet in a pipeline on a sharded collection (" +
                                          ns + ")");
                    }
                    shardCmd = shardBody(body, {"pipeline", "cursor"}, [&](BsonBuilder& b) {
                        b.startArray("pipeline");
                        for (size_t i = 0; i < split->shardPart.size(); ++i) {
                            b.append(std::to_string(i), split->shardPart[i]);
                        }
                        b.end();
                        b.startObject("cursor").end();
                    });
                }
            }
            std::vector<ShardRequest> out;
            for (const ShardId& s : shards) out.push_back({s, attachVersion(shardCmd, info, s)});
            return out;
        };
        RoutedOptions options;
        options.createDbIfMissing = touchesOther;  // $out/$merge create the database
        auto routed = runRoutedRead(opCtx, router, ns, makeRequests, options);
        if (routed.getStatus().is(ErrorCodes::NamespaceNotFound)) {
            // No such database: the pipeline runs over no documents, built (so parsed and
            // validated) as a shard builds it; stages that make documents ($documents) still
            // make them.
            command::exec::PipelineContext pctx;
            pctx.collator = collator;
            pctx.allowDiskUse = allowDiskUse;
            ASSIGN_OR_RETURN(auto root,
                             command::exec::buildPipelineStages(
                                 pctx, nullptr, ns, command::exec::pipelineArray(stages)));
            return replyWithCursor(opCtx, router, std::move(root), ns, batchSize, false, false,
                                   reply);
        }
        ASSIGN_OR_RETURN(auto responses, std::move(routed));
        ASSIGN_OR_RETURN(auto cursors, cursorsFromResponses(router, responses));
        for (RemoteCursor& c : cursors) {
            c.ns = ns;
            if (collStats) {
                for (BsonObj& d : c.buffer) d = withShardField(d, c.shard);
            }
        }
        std::unique_ptr<PlanStage> root = std::make_unique<RemoteMergeStage>(
            std::move(cursors), split ? split->mergeSort : BsonObj(), collator,
            runCommandsFn(router));
        if (split) {
            ASSIGN_OR_RETURN(root, buildMergePipeline(std::move(root), split->mergePart, ns,
                                                      collator, allowDiskUse));
        }
        return replyWithCursor(opCtx, router, std::move(root), ns, batchSize, false, false, reply);
    }
};

}  // namespace

std::unique_ptr<command::Command> makeClusterAggregateCommand() {
    return std::make_unique<ClusterAggregateCommand>();
}

}  // namespace tessera::router::reads
