#pragma once

// $bucketAuto, $redact and $graphLookup.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command/exec/agg_expression.h"
#include "command/exec/agg_projection.h"
#include "command/exec/agg_stages.h"
#include "command/exec/plan_stage.h"
#include "command/exec/stage_expression.h"
#include "command/exec/stage_subpipeline.h"

namespace tessera::command::exec {

// Rounds bucket boundaries of $bucketAuto to a preferred-number series ("R5", "R10", "R20",
// "R40", "1-2-5", "E6", "E12", "E24", "E48") or to powers of two ("POWERSOF2").
class GranularityRounder {
  public:
    // 40257 for an unknown name; NotImplemented for R80 / E96 / E192 (not supported yet).
    static StatusWith<std::shared_ptr<const GranularityRounder>> make(std::string_view name);
    // The smallest series value strictly greater than `v` (0 for 0), as a double (Decimal128
    // inputs are rounded as doubles too). `v` must be a non-negative number.
    AggValue roundUp(const bson::BsonElement& v) const;
    // The largest series value strictly smaller than `v` (0 for 0).
    AggValue roundDown(const bson::BsonElement& v) const;
    const std::string& name() const { return _name; }

  private:
    GranularityRounder(std::string name, std::vector<double> series)
        : _name(std::move(name)), _series(std::move(series)) {}
    std::string _name;
    std::vector<double> _series;  // in [1, 10) ascending; empty for POWERSOF2
};

// $bucketAuto {groupBy, buckets, output?, granularity?}: sorts the input by groupBy (missing is
// null) and cuts it into at most `buckets` buckets of about equal size, equal keys always in the
// same bucket; each output document is {_id: {min, max}, <output accumulators>} (default
// {count: {$sum: 1}}). A bucket's max is the next bucket's min (the last one's is its largest
// key); with a granularity, boundaries are rounded to the series. Blocking (100 MB limit: 292).
// Errors: 40240 (not an object), 40239 (groupBy), 40241/40242/40243 (buckets), 40244 (output),
// 40245 (unknown option), 40246 (groupBy and buckets required), 40261/40257 (granularity),
// 40258/40259/40260 (granularity over a non-number, NaN, negative key).
class BucketAutoStage final : public PlanStage {
  public:
    static StatusWith<std::unique_ptr<BucketAutoStage>> parse(const bson::BsonElement& spec);

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    BucketAutoStage() : PlanStage("BUCKET_AUTO") {}
    Status load(ExecContext& ctx);
    Status makeBuckets();

    struct Entry {
        AggValue key;
        bson::BsonObj doc;
    };
    bson::BsonObj _spec;
    StageExpressionPtr _groupBy;
    int32_t _nBuckets = 0;
    std::vector<AccumulatorSpec> _accs;
    std::shared_ptr<const GranularityRounder> _rounder;
    bool _loaded = false;
    std::vector<Entry> _input;
    std::vector<bson::BsonObj> _output;
    size_t _pos = 0;
};

// $redact <expr>: evaluates the expression on the document, with $$CURRENT rebound to each
// embedded document in turn ($$ROOT stays the whole document); $$KEEP keeps the (sub)document
// as is, $$PRUNE removes it, $$DESCEND keeps its scalar fields and redacts its embedded documents
// (also inside arrays). Any other result: 17053. Splittable (stream stage).
class RedactStage final : public PlanStage {
  public:
    static StatusWith<std::unique_ptr<RedactStage>> parse(const bson::BsonElement& spec);

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    RedactStage() : PlanStage("REDACT") {}
    // The redacted `obj` ($$CURRENT) under `root`; nullopt when pruned.
    StatusWith<std::optional<bson::BsonObj>> redactObject(bson::BsonView obj,
                                                          bson::BsonView root) const;
    // Appends the redacted value of `e` as `name` unless it is pruned.
    Status redactValue(bson::BsonBuilder& b, std::string_view name, const bson::BsonElement& e,
                       bson::BsonView root) const;

    bson::BsonObj _spec;
    std::shared_ptr<const AggExpression> _expr;
};

// $graphLookup: per input document, a breadth-first search over the `from` collection: start
// with the values of `startWith` (each element of an array), find the documents whose
// `connectToField` equals one of the values (and that match restrictSearchWithMatch), then
// recurse on their `connectFromField` values, at most maxDepth + 1 rounds. Each found document
// (de-duplicated by _id; 40271 when it has none) goes once into the array `as`, in the order
// found, with its round number (0-based, a long) at `depthField` when given. 40099 past 100 MB.
class GraphLookupStage final : public PlanStage {
  public:
    struct Spec {
        std::string fromNs;
        std::string as;
        std::string connectFromField;
        std::string connectToField;
        StageExpressionPtr startWith;
        bson::BsonObj restrictSearchWithMatch;  // empty: none
        std::string depthField;                 // empty: none
        std::optional<int64_t> maxDepth;
        bson::BsonObj specForExplain;
    };
    // Parses the specification (`db` is the pipeline's database for `from`). Errors: FailedToParse
    // (not an object, `from` not a string), 40100/40101/40102 (maxDepth), 40185 / the matcher's
    // errors (restrictSearchWithMatch), 40103 (string options), 40104 (unknown option), 40105
    // (a required option missing), InvalidNamespace, 16410 ($-prefixed field paths).
    static StatusWith<Spec> parseSpec(const bson::BsonElement& st, const std::string& db);

    // `factory` builds a pipeline over the `from` collection (views resolved), `foreign` is that
    // collection (null when missing).
    GraphLookupStage(Spec spec, storage::CollectionPtr foreign, SubPipelineFactory factory)
        : PlanStage("GRAPH_LOOKUP"),
          _spec(std::move(spec)),
          _foreign(std::move(foreign)),
          _factory(std::move(factory)),
          _setter(AggProjection::setter(_spec.as)),
          _depthSetter(_spec.depthField.empty() ? nullptr
                                                : AggProjection::setter(_spec.depthField)) {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    // The documents of the `from` collection whose connectToField is one of `values`.
    StatusWith<std::vector<bson::BsonObj>> query(ExecContext& ctx,
                                                 const std::vector<AggValue>& values);

    Spec _spec;
    storage::CollectionPtr _foreign;
    SubPipelineFactory _factory;
    std::unique_ptr<AggProjection> _setter;
    std::unique_ptr<AggProjection> _depthSetter;
};

// Every value at `path` (dotted) in `doc`, MongoDB's visitAllValuesAtPath: arrays along the path
// are traversed, an array at the end gives each of its elements. Values are {"": v} holders.
std::vector<AggValue> valuesAtPath(bson::BsonView doc, std::string_view path);

}  // namespace tessera::command::exec
