#include "command/exec/query_stages.h"

#include "command/exec/pipeline_stage_list.h"
#include "query/matcher.h"

namespace tessera::command::exec {

StatusWith<bool> FilterStage::doNext(ExecContext& ctx, WorkingMember* out) {
    while (true) {
        ASSIGN_OR_RETURN(bool more, _child->next(ctx, out));
        if (!more) return false;
        out->details.reset();
        if (_matcher->matches(out->doc, &out->details)) return true;
        TRY_STATUS(ctx.checkForInterrupt());
    }
}

void FilterStage::appendDetails(bson::BsonBuilder& b, bool) const {
    b.append("filter", _matcher->filter());
}

StatusWith<bool> SkipStage::doNext(ExecContext& ctx, WorkingMember* out) {
    while (true) {
        ASSIGN_OR_RETURN(bool more, _child->next(ctx, out));
        if (!more) return false;
        if (_skipped >= _n) return true;
        ++_skipped;
    }
}

void SkipStage::appendDetails(bson::BsonBuilder& b, bool) const {
    b.appendNumber("skipAmount", _n);
}

StatusWith<bool> LimitStage::doNext(ExecContext& ctx, WorkingMember* out) {
    if (_returned >= _n) return false;
    ASSIGN_OR_RETURN(bool more, _child->next(ctx, out));
    if (!more) return false;
    ++_returned;
    return true;
}

void LimitStage::appendDetails(bson::BsonBuilder& b, bool) const {
    b.appendNumber("limitAmount", _n);
}

// ---- Pipeline stages.

namespace {

StatusWith<std::unique_ptr<PlanStage>> parseMatch(const StageParseContext& ctx,
                                                  std::unique_ptr<PlanStage> input) {
    const bson::BsonElement& st = ctx.spec();
    if (st.type() != bson::BsonType::Object) {
        return Status(15959, "the match filter must be an expression in an object");
    }
    ASSIGN_OR_RETURN(auto matcher, query::Matcher::parse(st.objValue(), ctx.pctx.collator));
    return stack(std::move(input), std::make_unique<FilterStage>(
                                       std::shared_ptr<const query::Matcher>(std::move(matcher))));
}

StatusWith<std::unique_ptr<PlanStage>> parseSkip(const StageParseContext& ctx,
                                                 std::unique_ptr<PlanStage> input) {
    ASSIGN_OR_RETURN(int64_t n, positiveIntegerArg(ctx.spec(), 15956, "$skip", true));
    return stack(std::move(input), std::make_unique<SkipStage>(n));
}

StatusWith<std::unique_ptr<PlanStage>> parseLimit(const StageParseContext& ctx,
                                                  std::unique_ptr<PlanStage> input) {
    ASSIGN_OR_RETURN(int64_t n, positiveIntegerArg(ctx.spec(), 15957, "$limit", false));
    return stack(std::move(input), std::make_unique<LimitStage>(n));
}

}  // namespace

namespace stages {
const StageDescriptor kMatch{"$match", {.split = StageSplit::kStreaming}, &parseMatch};
const StageDescriptor kSkip{"$skip", {.split = StageSplit::kSkipLimit}, &parseSkip};
const StageDescriptor kLimit{"$limit", {.split = StageSplit::kSkipLimit}, &parseLimit};
}  // namespace stages

}  // namespace tessera::command::exec
