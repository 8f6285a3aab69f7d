#include "command/exec/transform_stages.h"

#include <algorithm>

#include "command/exec/pipeline_stage_list.h"
#include "command/exec/query_adapters.h"

namespace tessera::command::exec {

Status SortStage::load(ExecContext& ctx) {
    uint64_t seq = 0;
    size_t bytes = 0;
    // Orders items best-first; with a limit, _items is kept as a max-heap of the best `_limit`
    // (its front is the worst kept item).
    auto better = [this](const Item& a, const Item& b) {
        int c = _fns.compare(a.key, b.key);
        return c != 0 ? c < 0 : a.seq < b.seq;
    };
    WorkingMember m;
    while (true) {
        ASSIGN_OR_RETURN(bool more, _child->next(ctx, &m));
        if (!more) break;
        TRY_STATUS(ctx.checkForInterrupt());
        ASSIGN_OR_RETURN(bson::BsonObj key, _fns.keyOf(m.doc));
        Item item{std::move(key), seq++, std::move(m)};
        m = WorkingMember();
        if (_limit > 0 && static_cast<int64_t>(_items.size()) == _limit) {
            if (!better(item, _items.front())) continue;
            std::pop_heap(_items.begin(), _items.end(), better);
            bytes -= memoryUsage(_items.back().member) + _items.back().key.size();
            _items.back() = std::move(item);
            bytes += memoryUsage(_items.back().member) + _items.back().key.size();
            std::push_heap(_items.begin(), _items.end(), better);
        } else {
            bytes += memoryUsage(item.member) + item.key.size();
            _items.push_back(std::move(item));
            if (_limit > 0) std::push_heap(_items.begin(), _items.end(), better);
        }
        _peakBytes = std::max(_peakBytes, bytes);
        if (bytes > _memoryLimit) {
            return Status(ErrorCodes::QueryExceededMemoryLimitNoDiskUseAllowed,
                          "Sort exceeded memory limit of " + std::to_string(_memoryLimit) +
                              " bytes, but did not opt in to external sorting.");
        }
    }
    if (_limit > 0) {
        std::sort_heap(_items.begin(), _items.end(), better);
    } else {
        std::stable_sort(_items.begin(), _items.end(), better);
    }
    return Status::OK();
}

StatusWith<bool> SortStage::doNext(ExecContext& ctx, WorkingMember* out) {
    if (!_loaded) {
        TRY_STATUS(load(ctx));
        _loaded = true;
    }
    if (_pos >= _items.size()) {
        _items.clear();
        return false;
    }
    *out = std::move(_items[_pos++].member);
    return true;
}

void SortStage::appendDetails(bson::BsonBuilder& b, bool withStats) const {
    b.append("sortPattern", _pattern);
    b.append("memLimit", static_cast<int64_t>(_memoryLimit));
    if (_limit > 0) b.appendNumber("limitAmount", _limit);
    b.append("type", "simple");
    if (withStats) b.appendNumber("totalDataSizeSorted", static_cast<int64_t>(_peakBytes));
}

StatusWith<bool> ProjectionStage::doNext(ExecContext& ctx, WorkingMember* out) {
    ASSIGN_OR_RETURN(bool more, _child->next(ctx, out));
    if (!more) return false;
    ASSIGN_OR_RETURN(out->doc, _fn(out->doc, out->details));
    return true;
}

void ProjectionStage::appendDetails(bson::BsonBuilder& b, bool) const {
    b.append("transformBy", _spec);
}

// ---- Pipeline stage.

namespace {

// {$sort: pattern}; a following $limit makes it a top-k sort (the $limit stays: it is free).
StatusWith<std::unique_ptr<PlanStage>> parseSort(const StageParseContext& ctx,
                                                 std::unique_ptr<PlanStage> input) {
    TRY_STATUS(checkSortSpec(ctx.spec()));
    bson::BsonObj pattern = ctx.spec().objValue().copy();
    ASSIGN_OR_RETURN(auto fns, makeSortFunctions(pattern, ctx.pctx.collator));
    int64_t topK = 0;
    if (const bson::BsonElement* next = ctx.next(); next && next->fieldName() == "$limit") {
        ASSIGN_OR_RETURN(topK, positiveIntegerArg(*next, 15957, "$limit", false));
    }
    return stack(std::move(input), std::make_unique<SortStage>(std::move(fns), pattern, topK));
}

}  // namespace

namespace stages {
const StageDescriptor kSort{"$sort", {.split = StageSplit::kSortMerge}, &parseSort};
}  // namespace stages

}  // namespace tessera::command::exec
