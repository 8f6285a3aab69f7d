#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command/exec/agg_expression.h"
#include "command/exec/agg_projection.h"
#include "command/exec/plan_stage.h"
#include "command/exec/stage_expression.h"

namespace tessera::command::exec {

// One accumulator of a $group: {<op>: expr} with op one of query::Accumulator's
// ($sum $avg $min $max $first $last $push $addToSet $count $mergeObjects $stdDevPop $stdDevSamp).
struct AccumulatorSpec {
    std::string field;
    std::string op;          // "$sum", ...
    StageExpressionPtr arg;  // null for $count
};

// Parses one accumulator field {<name>: {<$op>: expr}} of $group / $bucket / $bucketAuto.
// Errors: 40236 ($-prefixed name), 40235 (dotted name), 40238 (not exactly one accumulator),
// 15952 (unknown accumulator), TypeMismatch ($count with arguments), expression errors.
StatusWith<AccumulatorSpec> parseAccumulatorField(const bson::BsonElement& f);

// $group: groups by the `_id` expression and computes the accumulators per group. Groups come
// out in order of first appearance. Buffered state above kMaxBlockingMemoryBytes fails with
// QueryExceededMemoryLimitNoDiskUseAllowed (292).
class GroupStage final : public PlanStage {
  public:
    // Parses the $group specification. Errors: 15947 (not an object), 15955 (no _id), 15952
    // (unknown accumulator), 40238 (more than one accumulator in a field), 40236 ($-prefixed
    // field names), 40235 (dotted field names).
    static StatusWith<std::unique_ptr<GroupStage>> parse(const bson::BsonElement& spec);
    // A group over a key computed by `id` (for $bucket / $sortByCount), with `accs` parsed from
    // an `output`-style document ({field: {$acc: expr}}).
    static StatusWith<std::unique_ptr<GroupStage>> make(StageExpressionPtr id, bson::BsonView accs,
                                                        bson::BsonObj specForExplain,
                                                        std::string name = "GROUP");

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    explicit GroupStage(std::string name = "GROUP") : PlanStage(std::move(name)) {}
    static Status parseAccumulators(GroupStage* stage, bson::BsonView spec, bool allowId);
    Status load(ExecContext& ctx);

    struct Group {
        AggValue key;
        std::vector<std::unique_ptr<query::Accumulator>> accs;  // one per _accs entry
    };

    bson::BsonObj _spec;
    StageExpressionPtr _id;
    std::vector<AccumulatorSpec> _accs;
    bool _loaded = false;
    std::vector<Group> _groups;
    size_t _pos = 0;
};

// $count: {name: <number of input documents>} (nothing for an empty input).
class CountStage final : public PlanStage {
  public:
    explicit CountStage(std::string field) : PlanStage("COUNT"), _field(std::move(field)) {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;

  private:
    std::string _field;
    bool _done = false;
};

// $unwind: one output document per element of the array at `path`.
class UnwindStage final : public PlanStage {
  public:
    static StatusWith<std::unique_ptr<UnwindStage>> parse(const bson::BsonElement& spec);

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;

  private:
    UnwindStage() : PlanStage("UNWIND") {}
    std::string _path;  // field path (dotted paths go through documents only), without "$"
    std::string _includeArrayIndex;
    bool _preserveNullAndEmpty = false;
    WorkingMember _current;
    std::vector<bson::BsonObj> _pending;
    size_t _pendingPos = 0;
};

// $project / $addFields / $set / $unset: reshapes each document (see agg_projection.h).
// Splittable: runs on shards.
class AggProjectionStage final : public PlanStage {
  public:
    AggProjectionStage(std::unique_ptr<AggProjection> proj, std::string stageName,
                       bson::BsonObj specForExplain)
        : PlanStage(proj->kind() == AggProjection::Kind::kAddFields ? "ADD_FIELDS" : "PROJECTION"),
          _proj(std::move(proj)),
          _stageName(std::move(stageName)),
          _spec(std::move(specForExplain)) {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    std::unique_ptr<AggProjection> _proj;
    std::string _stageName;
    bson::BsonObj _spec;
};

// $replaceRoot {newRoot: expr} / $replaceWith expr: the document becomes the value of the
// expression, which must be a document (40228 otherwise).
class ReplaceRootStage final : public PlanStage {
  public:
    ReplaceRootStage(StageExpressionPtr expr, bson::BsonObj specForExplain)
        : PlanStage("REPLACE_ROOT"), _expr(std::move(expr)), _spec(std::move(specForExplain)) {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    StageExpressionPtr _expr;
    bson::BsonObj _spec;
};

// $sample {size}: `size` documents chosen uniformly at random (all of them, in random order,
// when the input has fewer). Buffers the input (reservoir sampling keeps at most `size`).
class SampleStage final : public PlanStage {
  public:
    explicit SampleStage(int64_t size) : PlanStage("SAMPLE"), _size(size) {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    int64_t _size;
    bool _loaded = false;
    std::vector<bson::BsonObj> _docs;
    size_t _pos = 0;
};

// $bucket's group key: the index of the boundary range holding groupBy's value (the range's
// lower boundary), or `default` when outside (40066 without a default).
StatusWith<StageExpressionPtr> makeBucketKey(StageExpressionPtr groupBy,
                                             std::vector<bson::BsonObj> boundaries,
                                             std::optional<bson::BsonObj> defaultValue);

// The source of a sub-pipeline that runs over documents given at run time ($facet).
class BufferSourceStage final : public PlanStage {
  public:
    explicit BufferSourceStage(std::shared_ptr<const std::vector<bson::BsonObj>> docs)
        : PlanStage("QUEUED_DATA"), _docs(std::move(docs)) {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;

  private:
    std::shared_ptr<const std::vector<bson::BsonObj>> _docs;
    size_t _pos = 0;
};

}  // namespace tessera::command::exec
