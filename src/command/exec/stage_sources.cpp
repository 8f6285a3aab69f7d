// The source stages $indexStats and $documents ($collStats: coll_stats.cpp, $listLocalSessions:
// local_sessions.cpp).

#include <chrono>

#include "command/exec/pipeline_stage_list.h"
#include "command/exec/scan_stages.h"
#include "command/exec/stage_expression.h"

namespace tessera::command::exec {

namespace {

using bson::BsonType;

// {$indexStats: {}}: one document per index (access counters are not kept: ops 0).
StatusWith<std::unique_ptr<PlanStage>> parseIndexStats(const StageParseContext& ctx,
                                                       std::unique_ptr<PlanStage>) {
    const bson::BsonElement& spec = ctx.spec();
    if (spec.type() != BsonType::Object) {
        return Status(28803, "The $indexStats stage specification must be an empty object");
    }
    std::vector<bson::BsonObj> docs;
    if (ctx.coll) {
        int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
        for (const auto& ix : ctx.coll->indexes) {
            bson::BsonBuilder b;
            b.append("name", ix.name);
            b.append("key", ix.keyPattern);
            b.append("host", ctx.pctx.host);
            b.startObject("accesses").appendInt64("ops", 0).appendDate("since", now).end();
            b.append("spec", ix.spec);
            docs.push_back(b.obj());
        }
    }
    return std::unique_ptr<PlanStage>(
        std::make_unique<VectorSourceStage>(std::move(docs), "INDEX_STATS"));
}

// {$documents: <expression giving an array of documents>}, only in {aggregate: 1}.
StatusWith<std::unique_ptr<PlanStage>> parseDocuments(const StageParseContext& ctx,
                                                      std::unique_ptr<PlanStage>) {
    const bson::BsonElement& spec = ctx.spec();
    ASSIGN_OR_RETURN(auto expr, StageExpression::parse(spec));
    ASSIGN_OR_RETURN(AggValue v, expr->evaluate(bson::BsonObj()));
    if (v.missing() || v.element().type() != BsonType::Array) {
        return Status(5858203, "an array is expected");
    }
    std::vector<bson::BsonObj> docs;
    for (auto e : v.element().objValue()) {
        if (e.type() != BsonType::Object) {
            return Status(ErrorCodes::TypeMismatch,
                          "$documents: each element must be an object, found " +
                              std::string(bson::typeName(e.type())));
        }
        docs.push_back(e.objValue().copy());
    }
    return std::unique_ptr<PlanStage>(
        std::make_unique<VectorSourceStage>(std::move(docs), "DOCUMENTS"));
}

}  // namespace

namespace stages {
const StageDescriptor kIndexStats{
    "$indexStats", {.firstOnly = true, .allowedInFacet = false}, &parseIndexStats};
const StageDescriptor kDocuments{
    "$documents",
    {.firstOnly = true, .collectionless = true, .allowedInFacet = false},
    &parseDocuments};
}  // namespace stages

}  // namespace tessera::command::exec
