#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "command/exec/plan_stage.h"
#include "storage/read_snapshot.h"

namespace tessera::command::exec {

// Runs a tree of stages over one storage snapshot. Owns the snapshot, the collection metadata
// and the stages, so an open cursor keeps all of them alive between getMores. Used by one thread
// at a time (the cursor manager pins cursors).
class PlanExecutor {
  public:
    // `snapshot` may be null for plans that read no collection. `ns` is "db.coll".
    PlanExecutor(std::unique_ptr<storage::ReadSnapshot> snapshot, storage::CollectionPtr coll,
                 std::unique_ptr<PlanStage> root, std::string ns);

    const std::string& ns() const { return _ns; }
    storage::ReadSnapshot* snapshot() const { return _ctx.snapshot; }
    const storage::CollectionPtr& collection() const { return _ctx.collection; }
    PlanStage* root() const { return _root.get(); }

    // The next result (document, record key, positional details); false at the end.
    StatusWith<bool> next(const OperationContext& opCtx, WorkingMember* out);
    // The next result document; nullopt at the end.
    StatusWith<std::optional<bson::BsonObj>> nextDoc(const OperationContext& opCtx);
    // Gives a result back: the next call to next()/nextDoc() returns it first (a document that
    // did not fit into a batch).
    void stash(WorkingMember member);
    bool hasStash() const { return _stash.has_value(); }
    // Whether the end was reached (and nothing is stashed).
    bool isEOF() const { return _eof && !_stash; }

    // Explain: "COLLSCAN", "IXSCAN { a: 1 }", "IDHACK" (as MongoDB's planSummary).
    std::string planSummary() const;
    int64_t totalKeysExamined() const;
    int64_t totalDocsExamined() const;
    int64_t nReturned() const { return _nReturned; }
    std::chrono::milliseconds executionTime() const { return _elapsed; }

  private:
    std::unique_ptr<storage::ReadSnapshot> _snapshotOwner;
    std::shared_ptr<storage::PrepareReads> _boundReads;  // to the snapshot, of the current op
    ExecContext _ctx;
    std::unique_ptr<PlanStage> _root;
    std::string _ns;
    std::optional<WorkingMember> _stash;
    bool _eof = false;
    int64_t _nReturned = 0;
    std::chrono::milliseconds _elapsed{0};
};

}  // namespace tessera::command::exec
