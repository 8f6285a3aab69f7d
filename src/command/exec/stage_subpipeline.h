#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "command/exec/agg_projection.h"
#include "command/exec/plan_stage.h"
#include "command/exec/stage_expression.h"
#include "storage/catalog_types.h"

namespace tessera::storage {
class Engine;
}

namespace tessera::command::exec {

// Builds the stages of a sub-pipeline (a BSON array of stages) over a fixed source collection.
using SubPipelineFactory =
    std::function<StatusWith<std::unique_ptr<PlanStage>>(bson::BsonView pipeline)>;

// $lookup. Per input document: the foreign documents whose `foreignField` equals a value of
// `localField` (arrays: any element; missing: null), and/or that come out of `pipeline` with the
// `let` variables bound to values computed from the input document; stored as an array at `as`.
// The foreign collection is read at the executor's snapshot. Not splittable (runs on the merging
// node, or on shards when the foreign collection is unsharded).
class LookupStage final : public PlanStage {
  public:
    struct Spec {
        std::string fromNs;
        std::string localField;  // empty without localField/foreignField
        std::string foreignField;
        std::string as;
        std::vector<std::pair<std::string, StageExpressionPtr>> let;
        bson::BsonObj pipeline;  // array, may be empty
        bson::BsonObj specForExplain;
    };
    LookupStage(Spec spec, storage::CollectionPtr foreign, SubPipelineFactory factory)
        : PlanStage("EQ_LOOKUP"),
          _spec(std::move(spec)),
          _foreign(std::move(foreign)),
          _factory(std::move(factory)),
          _setter(AggProjection::setter(_spec.as)) {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    Spec _spec;
    storage::CollectionPtr _foreign;
    SubPipelineFactory _factory;
    std::unique_ptr<AggProjection> _setter;
};

// $unionWith: the input documents, then those of the sub-pipeline over another collection.
// Not splittable as a whole (each side can be).
class UnionWithStage final : public PlanStage {
  public:
    UnionWithStage(std::unique_ptr<PlanStage> other, storage::CollectionPtr otherColl,
                   bson::BsonObj specForExplain)
        : PlanStage("UNION_WITH"),
          _other(std::move(other)),
          _otherColl(std::move(otherColl)),
          _spec(std::move(specForExplain)) {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    std::unique_ptr<PlanStage> _other;
    storage::CollectionPtr _otherColl;
    bson::BsonObj _spec;
    bool _childDone = false;
};

// $facet: buffers the input, runs each named sub-pipeline over it, outputs one document
// {name: [results], ...}. Blocking; runs on the merging node.
class FacetStage final : public PlanStage {
  public:
    struct Facet {
        std::string name;
        std::unique_ptr<PlanStage> root;
    };
    FacetStage(std::vector<Facet> facets, std::shared_ptr<std::vector<bson::BsonObj>> input,
               bson::BsonObj specForExplain)
        : PlanStage("FACET"),
          _facets(std::move(facets)),
          _input(std::move(input)),
          _spec(std::move(specForExplain)) {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    std::vector<Facet> _facets;
    std::shared_ptr<std::vector<bson::BsonObj>> _input;
    bson::BsonObj _spec;
    bool _done = false;
};

// $out: replaces the target collection with the pipeline's output: documents go to a temporary
// collection (with the target's indexes), which is then renamed over the target (dropTarget), so
// readers see either the old or the new contents. Produces no documents. Runs on the merging
// node (last stage).
class OutStage final : public PlanStage {
  public:
    OutStage(storage::Engine* engine, std::string targetNs, bson::BsonObj specForExplain)
        : PlanStage("OUT"),
          _engine(engine),
          _target(std::move(targetNs)),
          _spec(std::move(specForExplain)) {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    Status run(ExecContext& ctx);
    storage::Engine* _engine;
    std::string _target;
    bson::BsonObj _spec;
    bool _done = false;
};

// $merge: writes each output document into the target collection, matched on the `on` fields
// (a unique index must cover them): whenMatched replace | keepExisting | merge | fail |
// [update pipeline with $$new], whenNotMatched insert | discard | fail. Produces no documents.
class MergeStage final : public PlanStage {
  public:
    struct Spec {
        std::string targetNs;
        std::vector<std::string> on;  // default {_id}
        std::string whenMatched = "merge";
        bson::BsonObj whenMatchedPipeline;  // array, when whenMatched is a pipeline
        std::string whenNotMatched = "insert";
        std::vector<std::pair<std::string, StageExpressionPtr>> let;
        bson::BsonObj specForExplain;
    };
    // `factory` builds the whenMatched pipeline over a document buffer.
    MergeStage(storage::Engine* engine, Spec spec,
               std::function<StatusWith<std::unique_ptr<PlanStage>>(
                   bson::BsonView pipeline, std::shared_ptr<std::vector<bson::BsonObj>> input)>
                   factory)
        : PlanStage("MERGE"),
          _engine(engine),
          _spec(std::move(spec)),
          _factory(std::move(factory)) {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    Status run(ExecContext& ctx);
    storage::Engine* _engine;
    Spec _spec;
    std::function<StatusWith<std::unique_ptr<PlanStage>>(
        bson::BsonView, std::shared_ptr<std::vector<bson::BsonObj>>)>
        _factory;
    bool _done = false;
};

// Replaces references to the variables `vars` ("$$name" and "$$name.path") anywhere in `value`
// (except inside $literal) by {$literal: <value>} ("$$REMOVE" when the path is missing), so a
// sub-pipeline can be parsed with the variables bound. `value` is an array or document;
// returns the same kind.
bson::BsonObj substituteVariables(bson::BsonView value, bool isArray,
                                  const std::map<std::string, bson::BsonObj>& vars);

// Evaluates `let` expressions against `doc`: name -> {"": value} (missing values are absent).
StatusWith<std::map<std::string, bson::BsonObj>> evaluateLet(
    const std::vector<std::pair<std::string, StageExpressionPtr>>& let, bson::BsonView doc);

// Parses a `let` document (variable names must start with a lowercase letter: 16867 / 16870).
StatusWith<std::vector<std::pair<std::string, StageExpressionPtr>>> parseLet(
    const bson::BsonElement& let);

}  // namespace tessera::command::exec
