#include "command/exec/scan_stages.h"

#include "bson/bson_builder.h"
#include "command/command.h"

namespace tessera::command::exec {

Status ExecContext::checkForInterrupt() {
    if (opCtx == nullptr) return Status::OK();
    ++work;
    if (opCtx->inlineExecution && work > kInlineWorkBudget) {
        return Status(ErrorCodes::InlineWouldBlock,
                      "more work than an io thread takes on: the worker pool runs it");
    }
    if (work % 128 != 0) return Status::OK();
    return opCtx->checkForInterrupt();
}

Status OwnershipCheck::resolve(ExecContext& ctx) {
    if (_resolved) return Status::OK();
    if (ctx.opCtx && ctx.collection) {
        // The operation's cache of decided filters is the only thing the lookup changes.
        ASSIGN_OR_RETURN(_filter, const_cast<OperationContext*>(ctx.opCtx)->ownershipFilter(
                                      ctx.collection->ns()));
    }
    _resolved = true;
    return Status::OK();
}

StatusWith<bool> PlanStage::next(ExecContext& ctx, WorkingMember* out) {
    auto sw = doNext(ctx, out);
    if (sw.isOK() && sw.getValue()) ++_stats.nReturned;
    return sw;
}

void PlanStage::explain(bson::BsonBuilder& b, bool withStats) const {
    b.append("stage", _name);
    appendDetails(b, withStats);
    if (withStats) {
        b.appendNumber("nReturned", _stats.nReturned);
        if (_name == "IXSCAN") b.appendNumber("keysExamined", _stats.keysExamined);
        if (_name == "COLLSCAN" || _name == "FETCH" || _name == "IDHACK") {
            b.appendNumber("docsExamined", _stats.docsExamined);
        }
        if (_name == "IDHACK") b.appendNumber("keysExamined", _stats.keysExamined);
    }
    if (_child) {
        b.startObject("inputStage");
        _child->explain(b, withStats);
        b.end();
    }
}

StatusWith<bool> CollScanStage::doNext(ExecContext& ctx, WorkingMember* out) {
    if (_done || !ctx.collection) return false;
    TRY_STATUS(_ownership.resolve(ctx));
    if (!_cursor) _cursor = ctx.snapshot->scan(*ctx.collection, _forward);
    TRY_STATUS(ctx.checkForInterrupt());
    auto rec = _cursor->next();
    while (rec && !_ownership.owns(rec->doc)) {  // orphans are skipped
        ++_stats.docsExamined;
        TRY_STATUS(ctx.checkForInterrupt());
        rec = _cursor->next();
    }
    if (!rec) {
        _done = true;
        _cursor.reset();
        return false;
    }
    ++_stats.docsExamined;
    out->recordKey = std::move(rec->recordKey);
    out->indexKey.clear();
    out->doc = std::move(rec->doc);
    out->hasDoc = true;
    out->details.reset();
    return true;
}

void CollScanStage::appendDetails(bson::BsonBuilder& b, bool) const {
    b.append("direction", _forward ? "forward" : "backward");
}

StatusWith<bool> IdHackStage::doNext(ExecContext& ctx, WorkingMember* out) {
    if (_done || !ctx.collection) return false;
    TRY_STATUS(_ownership.resolve(ctx));
    _done = true;
    ++_stats.keysExamined;
    auto rec = ctx.snapshot->findById(*ctx.collection, _id.firstElement());
    if (!rec) return false;
    ++_stats.docsExamined;
    if (!_ownership.owns(rec->doc)) return false;
    out->recordKey = std::move(rec->recordKey);
    out->indexKey.clear();
    out->doc = std::move(rec->doc);
    out->hasDoc = true;
    out->details.reset();
    return true;
}

StatusWith<bool> IndexScanStage::doNext(ExecContext& ctx, WorkingMember* out) {
    if (!ctx.collection) return false;
    TRY_STATUS(_ownership.resolve(ctx));
    while (_rangeIdx < _ranges.size()) {
        if (!_cursor) {
            _cursor =
                ctx.snapshot->indexScan(*ctx.collection, _index, _ranges[_rangeIdx], _forward);
        }
        TRY_STATUS(ctx.checkForInterrupt());
        auto entry = _cursor->next();
        if (!entry) {
            _cursor.reset();
            ++_rangeIdx;
            continue;
        }
        ++_stats.keysExamined;
        // A multikey index holds a record once per distinct key (array element): return it once.
        if (_index.multikey) {
            if (!_seen.insert(entry->recordKey).second) {
                ++_dupsDropped;
                continue;
            }
        }
        if (_ownership.active()) {
            // Ownership is decided on the document: fetch it here (FETCH then passes it on;
            // covered plans get it too, so they cannot return orphans either).
            auto doc = ctx.snapshot->findByRecordKey(*ctx.collection, entry->recordKey);
            if (!doc || !_ownership.owns(*doc)) continue;
            out->recordKey = std::move(entry->recordKey);
            out->indexKey = std::move(entry->key);
            out->doc = std::move(*doc);
            out->hasDoc = true;
            out->details.reset();
            return true;
        }
        out->recordKey = std::move(entry->recordKey);
        out->indexKey = std::move(entry->key);
        out->doc = bson::BsonObj();
        out->hasDoc = false;
        out->details.reset();
        return true;
    }
    return false;
}

void IndexScanStage::appendDetails(bson::BsonBuilder& b, bool withStats) const {
    b.append("keyPattern", _index.keyPattern);
    b.append("indexName", _index.name);
    b.append("isMultiKey", _index.multikey);
    b.append("isUnique", _index.unique);
    b.append("isSparse", _index.sparse);
    b.append("direction", _forward ? "forward" : "backward");
    b.append("indexBounds", _bounds);
    if (withStats) b.appendNumber("dupsDropped", _dupsDropped);
}

StatusWith<bool> FetchStage::doNext(ExecContext& ctx, WorkingMember* out) {
    while (true) {
        ASSIGN_OR_RETURN(bool more, _child->next(ctx, out));
        if (!more) return false;
        if (out->hasDoc) return true;
        ++_stats.docsExamined;
        auto doc = ctx.snapshot->findByRecordKey(*ctx.collection, out->recordKey);
        if (!doc) continue;
        out->doc = std::move(*doc);
        out->hasDoc = true;
        return true;
    }
}

StatusWith<bool> VectorSourceStage::doNext(ExecContext&, WorkingMember* out) {
    if (_pos >= _docs.size()) return false;
    out->recordKey.clear();
    out->indexKey.clear();
    out->doc = _docs[_pos++];
    out->hasDoc = true;
    out->details.reset();
    return true;
}

}  // namespace tessera::command::exec
