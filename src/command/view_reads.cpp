#include "command/view_reads.h"

#include "command/cursor_manager.h"
#include "command/exec/pipeline.h"
#include "command/exec/query_adapters.h"
#include "command/exec/transform_stages.h"
#include "storage/engine.h"

namespace tessera::command {

namespace {

StatusWith<std::unique_ptr<exec::PlanExecutor>> buildOnView(OperationContext& opCtx,
                                                            const std::string& ns,
                                                            const std::vector<bson::BsonObj>& extra,
                                                            const bson::BsonObj& findProjection,
                                                            query::CollatorPtr collator) {
    storage::Engine& engine = *opCtx.service->engine;
    auto snapshot = opCtx.snapshot();
    ASSIGN_OR_RETURN(exec::ResolvedNamespace resolved,
                     exec::resolveNamespace(engine, ns, opCtx.transaction));
    std::vector<bson::BsonObj> stages = resolved.pipeline;
    stages.insert(stages.end(), extra.begin(), extra.end());
    exec::PipelineContext pctx;
    pctx.engine = &engine;
    pctx.transaction = opCtx.transaction;
    pctx.host = opCtx.service->host;
    pctx.collator = std::move(collator);
    ASSIGN_OR_RETURN(
        auto root, exec::buildPipelineStages(pctx, resolved.coll, ns, exec::pipelineArray(stages)));
    if (!findProjection.isEmpty()) {
        ASSIGN_OR_RETURN(auto fn, exec::makeProjection(findProjection));
        auto proj = std::make_unique<exec::ProjectionStage>(std::move(fn), findProjection);
        proj->setChild(std::move(root));
        root = std::move(proj);
    }
    return std::make_unique<exec::PlanExecutor>(std::move(snapshot), resolved.coll, std::move(root),
                                                ns);
}

bson::BsonObj stage(std::string_view name, const bson::BsonObj& arg) {
    bson::BsonBuilder b;
    b.append(name, arg);
    return b.obj();
}

bson::BsonObj stage(std::string_view name, int64_t n) {
    bson::BsonBuilder b;
    b.appendInt64(name, n);
    return b.obj();
}

}  // namespace

bool isViewCollection(const storage::CollectionPtr& coll) { return coll && exec::isView(*coll); }

Status runFindOnView(OperationContext& opCtx, const exec::FindRequest& req, const std::string& ns,
                     bson::BsonBuilder& reply) {
    const exec::QuerySpec& q = req.query;
    std::vector<bson::BsonObj> extra;
    if (!q.filter.isEmpty()) extra.push_back(stage("$match", q.filter));
    if (!q.sort.isEmpty()) extra.push_back(stage("$sort", q.sort));
    if (q.skip > 0) extra.push_back(stage("$skip", q.skip));
    if (q.limit) extra.push_back(stage("$limit", *q.limit));
    ASSIGN_OR_RETURN(auto exec, buildOnView(opCtx, ns, extra, q.projection, q.collator));
    std::optional<int64_t> batchSize = req.batchSize;
    if (!batchSize) batchSize = req.singleBatch && q.limit ? *q.limit : kDefaultFirstBatchSize;
    bson::BsonArrayBuilder batch;
    bool exhausted = false;
    TRY_STATUS(fillBatch(opCtx, *exec, batchSize, batch, &exhausted));
    int64_t cursorId = 0;
    if (!exhausted && !req.singleBatch) {
        cursorId = opCtx.service->cursors->registerCursor(ns, std::move(exec), req.noCursorTimeout,
                                                          opCtx.lsid);
    }
    exec::appendCursor(reply, "firstBatch", batch, cursorId, ns, opCtx.readAtClusterTime);
    return Status::OK();
}

StatusWith<std::unique_ptr<exec::PlanExecutor>> viewQueryExecutor(
    OperationContext& opCtx, const std::string& ns, bson::BsonView filter, int64_t skip,
    std::optional<int64_t> limit, query::CollatorPtr collator) {
    std::vector<bson::BsonObj> extra;
    if (!filter.isEmpty()) extra.push_back(stage("$match", filter.copy()));
    if (skip > 0) extra.push_back(stage("$skip", skip));
    if (limit) extra.push_back(stage("$limit", *limit));
    return buildOnView(opCtx, ns, extra, bson::BsonObj(), std::move(collator));
}

}  // namespace tessera::command
