#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "command/exec/agg_expression.h"
#include "command/exec/plan_stage.h"

namespace tessera::command::exec {

// One accumulator of a $group: {$sum|$avg|$min|$max|$first|$last|$push|$addToSet|$count: expr}.
struct AccumulatorSpec {
    std::string field;
    std::string op;  // "$sum", ...
    std::shared_ptr<const AggExpression> arg;
};

// $group: groups by the `_id` expression and computes the accumulators per group. Groups come
// out in order of first appearance. Buffered state above kMaxBlockingMemoryBytes fails with
// QueryExceededMemoryLimitNoDiskUseAllowed (292).
class GroupStage final : public PlanStage {
  public:
    // Parses the $group specification. Errors: 15947 (not an object), 15955 (no _id), 40234
    // (unknown accumulator), 40238 (more than one accumulator in a field), 40236 ($-prefixed
    // field names), 16414 (dotted field names).
    static StatusWith<std::unique_ptr<GroupStage>> parse(const bson::BsonElement& spec);

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    GroupStage() : PlanStage("GROUP") {}
    Status load(ExecContext& ctx);

    // Per group, per accumulator state.
    struct Acc {
        int64_t longSum = 0;  // $sum / $avg / $count
        double doubleSum = 0;
        bool anyDouble = false;
        bool anyLong = false;
        bool longOverflow = false;
        int64_t count = 0;
        AggValue value;  // $min / $max / $first / $last
        bool set = false;
        std::vector<AggValue> list;  // $push / $addToSet
    };
    struct Group {
        AggValue key;
        std::vector<Acc> accs;
    };

    bson::BsonObj _spec;
    std::shared_ptr<const AggExpression> _id;
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
    std::string _path;  // top-level or dotted field, without "$"
    std::string _includeArrayIndex;
    bool _preserveNullAndEmpty = false;
    WorkingMember _current;
    std::vector<bson::BsonObj> _pending;
    size_t _pendingPos = 0;
};

}  // namespace tessera::command::exec
