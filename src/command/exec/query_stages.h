#pragma once

#include <memory>

#include "command/exec/plan_stage.h"
#include "query/matcher.h"

namespace tessera::command::exec {

// FILTER: re-checks the full predicate on every document (index bounds are only a superset) and
// records the positional match for `$` projections and updates.
class FilterStage final : public PlanStage {
  public:
    explicit FilterStage(std::shared_ptr<const query::Matcher> matcher)
        : PlanStage("FILTER"), _matcher(std::move(matcher)) {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    std::shared_ptr<const query::Matcher> _matcher;
};

class SkipStage final : public PlanStage {
  public:
    explicit SkipStage(int64_t n) : PlanStage("SKIP"), _n(n) {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    int64_t _n;
    int64_t _skipped = 0;
};

class LimitStage final : public PlanStage {
  public:
    explicit LimitStage(int64_t n) : PlanStage("LIMIT"), _n(n) {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    int64_t _n;
    int64_t _returned = 0;
};

}  // namespace tessera::command::exec
