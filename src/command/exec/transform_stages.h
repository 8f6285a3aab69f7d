#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "command/exec/plan_stage.h"

namespace tessera::command::exec {

// How a SORT orders documents: a sort key per document and a comparison of two keys. Kept as
// functions so that find's sort patterns and aggregation's $sort share the stage.
struct SortKeyFunctions {
    std::function<StatusWith<bson::BsonObj>(bson::BsonView doc)> keyOf;
    std::function<int(bson::BsonView keyA, bson::BsonView keyB)> compare;
};

// SORT: buffers its input, then returns it ordered (ties keep input order). With a limit it keeps
// only the best `limit` documents (top-k). Buffered bytes above kMaxBlockingMemoryBytes fail with
// QueryExceededMemoryLimitNoDiskUseAllowed (292), as MongoDB without allowDiskUse (Tessera cannot
// spill to disk yet, so allowDiskUse does not lift the limit).
class SortStage final : public PlanStage {
  public:
    SortStage(SortKeyFunctions fns, bson::BsonObj patternForExplain, int64_t limit = 0,
              size_t memoryLimit = kMaxBlockingMemoryBytes)
        : PlanStage("SORT"),
          _fns(std::move(fns)),
          _pattern(std::move(patternForExplain)),
          _limit(limit),
          _memoryLimit(memoryLimit) {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    struct Item {
        bson::BsonObj key;
        uint64_t seq;
        WorkingMember member;
    };
    Status load(ExecContext& ctx);

    SortKeyFunctions _fns;
    bson::BsonObj _pattern;
    int64_t _limit;
    size_t _memoryLimit;
    bool _loaded = false;
    std::vector<Item> _items;
    size_t _pos = 0;
    size_t _peakBytes = 0;
};

// PROJECTION: reshapes each document (find projections, $project).
class ProjectionStage final : public PlanStage {
  public:
    using Fn = std::function<StatusWith<bson::BsonObj>(bson::BsonView doc,
                                                       const query::MatchDetails& details)>;
    ProjectionStage(Fn fn, bson::BsonObj specForExplain, std::string name = "PROJECTION_DEFAULT")
        : PlanStage(std::move(name)), _fn(std::move(fn)), _spec(std::move(specForExplain)) {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    Fn _fn;
    bson::BsonObj _spec;
};

}  // namespace tessera::command::exec
