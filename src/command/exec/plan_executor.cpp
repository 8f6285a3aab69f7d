#include "command/exec/plan_executor.h"

#include "command/command.h"
#include "command/exec/scan_stages.h"

namespace tessera::command::exec {

PlanExecutor::PlanExecutor(std::unique_ptr<storage::ReadSnapshot> snapshot,
                           storage::CollectionPtr coll, std::unique_ptr<PlanStage> root,
                           std::string ns)
    : _snapshotOwner(std::move(snapshot)), _root(std::move(root)), _ns(std::move(ns)) {
    _ctx.snapshot = _snapshotOwner.get();
    _ctx.collection = std::move(coll);
}

StatusWith<bool> PlanExecutor::next(const OperationContext& opCtx, WorkingMember* out) {
    if (_stash) {
        *out = std::move(*_stash);
        _stash.reset();
        return true;
    }
    if (_eof) return false;
    auto start = std::chrono::steady_clock::now();
    if (_ctx.snapshot && opCtx.prepareReads != _boundReads) {
        // Another operation reads on (a getMore): its waits for prepared transactions.
        _boundReads = opCtx.prepareReads;
        _ctx.snapshot->bindPrepareReads(_boundReads);
    }
    _ctx.opCtx = &opCtx;
    auto sw = _root->next(_ctx, out);
    _ctx.opCtx = nullptr;
    _elapsed += std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    if (!sw.isOK()) return sw;
    // A read that met a prepared transaction it could not wait for found nothing there: the
    // results are not to be trusted from that point on.
    TRY_STATUS(opCtx.readConflict());
    if (!sw.getValue()) {
        _eof = true;
        return false;
    }
    ++_nReturned;
    return true;
}

StatusWith<std::optional<bson::BsonObj>> PlanExecutor::nextDoc(const OperationContext& opCtx) {
    WorkingMember m;
    ASSIGN_OR_RETURN(bool more, next(opCtx, &m));
    if (!more) return std::optional<bson::BsonObj>();
    return std::optional<bson::BsonObj>(std::move(m.doc));
}

void PlanExecutor::stash(WorkingMember member) {
    --_nReturned;
    _stash = std::move(member);
}

namespace {

// Compact key pattern for planSummary: "{ a: 1, b: -1 }".
std::string keyPatternSummary(bson::BsonView kp) {
    std::string s = "{ ";
    bool first = true;
    for (auto e : kp) {
        if (!first) s += ", ";
        first = false;
        s += std::string(e.fieldName()) + ": " + e.toString(false);
    }
    return s + " }";
}

template <typename F>
void forEachStage(const PlanStage* s, F&& f) {
    for (; s != nullptr; s = s->child()) f(s);
}

}  // namespace

std::string PlanExecutor::planSummary() const {
    std::string summary;
    forEachStage(_root.get(), [&](const PlanStage* s) {
        if (s->name() == "COLLSCAN" || s->name() == "IDHACK" || s->name() == "EOF") {
            summary = s->name();
        } else if (s->name() == "IXSCAN") {
            summary = "IXSCAN " +
                      keyPatternSummary(static_cast<const IndexScanStage*>(s)->index().keyPattern);
        }
    });
    return summary;
}

int64_t PlanExecutor::totalKeysExamined() const {
    int64_t n = 0;
    forEachStage(_root.get(), [&](const PlanStage* s) { n += s->stats().keysExamined; });
    return n;
}

int64_t PlanExecutor::totalDocsExamined() const {
    int64_t n = 0;
    forEachStage(_root.get(), [&](const PlanStage* s) { n += s->stats().docsExamined; });
    return n;
}

}  // namespace tessera::command::exec
