#include "command/exec/pipeline.h"

#include "command/exec/agg_stages.h"
#include "command/exec/pipeline_stage_registry.h"
#include "command/exec/query_adapters.h"
#include "command/exec/query_executor.h"
#include "command/exec/transform_stages.h"
#include "query/matcher.h"
#include "storage/engine.h"

namespace tessera::command::exec {

using bson::BsonType;

namespace {

std::string dbOfNs(std::string_view ns) { return std::string(ns.substr(0, ns.find('.'))); }

// Builds one pipeline: checks every stage against its descriptor's constraints, turns leading
// $match stages (and a following $sort) into the access path's query so that indexes serve them,
// and lets each further stage's parser stack its PlanStage on the ones before.
class Builder {
  public:
    Builder(const PipelineContext& pctx, storage::CollectionPtr coll, std::string ns,
            BuildContext context = BuildContext::kTop,
            std::shared_ptr<std::vector<bson::BsonObj>> feed = nullptr)
        : _pctx(pctx),
          _coll(std::move(coll)),
          _ns(std::move(ns)),
          _db(dbOfNs(_ns)),
          _context(context),
          _feed(std::move(feed)) {}

    StatusWith<std::unique_ptr<PlanStage>> build(bson::BsonView pipeline, bson::BsonObj hint) {
        std::vector<bson::BsonElement> stages;
        std::vector<const StageDescriptor*> descriptors;
        for (auto s : pipeline) {
            if (s.type() != BsonType::Object || s.objValue().nFields() != 1) {
                return Status(40323,
                              "A pipeline stage specification object must contain "
                              "exactly one field.");
            }
            bson::BsonElement st = s.objValue().firstElement();
            std::string_view name = st.fieldName();
            const StageDescriptor* d = findStage(name);
            if (!d) {
                return Status(40324,
                              "Unrecognized pipeline stage name: '" + std::string(name) + "'");
            }
            if (!d->parse) {
                return Status(ErrorCodes::NotImplemented,
                              "pipeline stage " + std::string(name) + " is not supported yet");
            }
            stages.push_back(st);
            descriptors.push_back(d);
        }
        for (size_t k = 0; k < stages.size(); ++k) {
            TRY_STATUS(checkPosition(*descriptors[k], k, stages.size()));
        }
        if (isCollectionlessNs(_ns) && !_feed &&
            (stages.empty() || !descriptors[0]->constraints.collectionless)) {
            return Status(ErrorCodes::InvalidNamespace,
                          "{aggregate: 1} is not valid for '" +
                              (stages.empty() ? std::string("an empty pipeline")
                                              : std::string(stages[0].fieldName())) +
                              "'; a collection is required.");
        }
        if (!stages.empty() && stages[0].fieldName() == "$documents" && !isCollectionlessNs(_ns)) {
            return Status(ErrorCodes::InvalidNamespace,
                          "$documents' can only be run with {aggregate: 1}");
        }

        size_t i = 0;
        std::unique_ptr<PlanStage> root;
        if (_feed) {
            root = std::make_unique<BufferSourceStage>(_feed);
        } else if (!stages.empty() && descriptors[0]->constraints.firstOnly) {
            // A source stage produces the documents itself.
        } else {
            ASSIGN_OR_RETURN(root, accessPath(stages, &i, std::move(hint)));
        }
        for (; i < stages.size(); ++i) {
            StageParseContext ctx{_pctx, _coll, _ns, _db, _context, stages, i};
            ASSIGN_OR_RETURN(root, descriptors[i]->parse(ctx, std::move(root)));
        }
        return root;
    }

  private:
    // 40602 (a source not first), 40600 (not allowed in $facet), 40601 ($out/$merge not last),
    // and the sub-pipelines that refuse writing stages.
    Status checkPosition(const StageDescriptor& d, size_t k, size_t n) const {
        std::string name(d.name);
        const StageConstraints& c = d.constraints;
        if (c.firstOnly && (k != 0 || _feed)) {
            return Status(40602, name + " is only valid as the first stage in a pipeline");
        }
        if (_context == BuildContext::kFacet && !c.allowedInFacet) {
            return Status(40600, name + " is not allowed to be used within a $facet stage");
        }
        if (!c.writes) return Status::OK();
        switch (_context) {
            case BuildContext::kLookup:
                return Status(51047, name + " is not allowed within a $lookup's sub-pipeline");
            case BuildContext::kUnionWith:
                return Status(31441, name + " is not allowed within a $unionWith's sub-pipeline");
            case BuildContext::kView:
                return Status(ErrorCodes::OptionNotSupportedOnView,
                              name + " cannot be used in a view definition");
            case BuildContext::kMergePipeline:
                return Status(ErrorCodes::InvalidOptions,
                              name + " is not allowed in a $merge pipeline");
            default:
                break;
        }
        if (k + 1 != n) {
            return Status(40601, name + " can only be the final stage in the pipeline");
        }
        return Status::OK();
    }

    // The collection's access path for the leading $match stages and a following $sort (plus
    // a top-k bound from a $limit after it); advances *i past the stages it consumed.
    StatusWith<std::unique_ptr<PlanStage>> accessPath(const std::vector<bson::BsonElement>& stages,
                                                      size_t* i, bson::BsonObj hint) {
        QuerySpec spec;
        spec.hint = std::move(hint);
        spec.collator = _pctx.collator;
        std::vector<bson::BsonObj> matches;
        for (; *i < stages.size() && stages[*i].fieldName() == "$match"; ++*i) {
            if (stages[*i].type() != BsonType::Object) {
                return Status(15959, "the match filter must be an expression in an object");
            }
            matches.push_back(stages[*i].objValue().copy());
        }
        if (matches.size() == 1) {
            spec.filter = matches[0];
        } else if (matches.size() > 1) {
            bson::BsonBuilder b;
            b.startArray("$and");
            for (size_t k = 0; k < matches.size(); ++k) {
                b.append(std::to_string(k), matches[k]);
            }
            b.end();
            spec.filter = b.obj();
        }
        ASSIGN_OR_RETURN(auto matcher, query::Matcher::parse(spec.filter, _pctx.collator));
        std::optional<SortKeyFunctions> sortFns;
        if (*i < stages.size() && stages[*i].fieldName() == "$sort") {
            TRY_STATUS(checkSortSpec(stages[*i]));
            spec.sort = stages[*i].objValue().copy();
            ASSIGN_OR_RETURN(sortFns, makeSortFunctions(spec.sort, _pctx.collator));
            ++*i;
        }
        bool sortProvided = false;
        ASSIGN_OR_RETURN(
            auto root,
            buildAccessPath(_coll, spec, std::shared_ptr<const query::Matcher>(std::move(matcher)),
                            &sortProvided));
        if (sortFns && !sortProvided) {
            int64_t topK = 0;
            if (*i < stages.size() && stages[*i].fieldName() == "$limit") {
                ASSIGN_OR_RETURN(topK, positiveIntegerArg(stages[*i], 15957, "$limit", false));
            }
            root = stack(std::move(root),
                         std::make_unique<SortStage>(std::move(*sortFns), spec.sort, topK));
        }
        return root;
    }

    const PipelineContext& _pctx;
    storage::CollectionPtr _coll;
    std::string _ns;
    std::string _db;
    BuildContext _context;
    std::shared_ptr<std::vector<bson::BsonObj>> _feed;
};

}  // namespace

StatusWith<std::unique_ptr<PlanStage>> buildSubPipeline(
    const PipelineContext& pctx, storage::CollectionPtr coll, std::string ns, BuildContext context,
    std::shared_ptr<std::vector<bson::BsonObj>> feed, bson::BsonView pipeline) {
    Builder b(pctx, std::move(coll), std::move(ns), context, std::move(feed));
    return b.build(pipeline, bson::BsonObj());
}

SubPipelineFactory subPipelineFactory(const PipelineContext& pctx,
                                      const ResolvedNamespace& resolved, BuildContext context) {
    storage::CollectionPtr coll = resolved.coll;
    std::string ns = resolved.ns;
    std::vector<bson::BsonObj> viewStages = resolved.pipeline;
    return [pctx, coll, ns, viewStages,
            context](bson::BsonView pipeline) -> StatusWith<std::unique_ptr<PlanStage>> {
        bson::BsonObj full;
        if (viewStages.empty()) {
            full = bson::BsonObj(pipeline.copy());
        } else {
            std::vector<bson::BsonObj> all = viewStages;
            for (auto s : pipeline) all.push_back(s.objValue().copy());
            full = pipelineArray(all);
        }
        Builder b(pctx, coll, ns, context);
        return b.build(full, bson::BsonObj());
    };
}

StatusWith<std::unique_ptr<PlanExecutor>> buildPipelineExecutor(
    const PipelineContext& pctx, std::unique_ptr<storage::ReadSnapshot> snapshot,
    storage::CollectionPtr coll, std::string ns, bson::BsonView pipeline, bson::BsonObj hint) {
    Builder builder(pctx, coll, ns);
    ASSIGN_OR_RETURN(auto root, builder.build(pipeline, std::move(hint)));
    return std::make_unique<PlanExecutor>(std::move(snapshot), std::move(coll), std::move(root),
                                          std::move(ns));
}

StatusWith<std::unique_ptr<PlanStage>> buildPipelineStages(const PipelineContext& pctx,
                                                           storage::CollectionPtr coll,
                                                           std::string ns, bson::BsonView pipeline,
                                                           bson::BsonObj hint) {
    Builder builder(pctx, std::move(coll), std::move(ns));
    return builder.build(pipeline, std::move(hint));
}

Status validatePipeline(const PipelineContext& pctx, const std::string& ns, bson::BsonView pipeline,
                        bool forView) {
    Builder builder(pctx, nullptr, ns, forView ? BuildContext::kView : BuildContext::kTop);
    return builder.build(pipeline, bson::BsonObj()).getStatus();
}

}  // namespace tessera::command::exec
