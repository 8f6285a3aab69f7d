#include "command/exec/query_stages.h"

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

}  // namespace tessera::command::exec
