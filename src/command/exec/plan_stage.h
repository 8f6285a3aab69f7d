#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson_builder.h"
#include "bson/bson_obj.h"
#include "query/match_details.h"
#include "storage/catalog_types.h"

namespace tessera::storage {
class ReadSnapshot;
}

namespace tessera::command {
struct OperationContext;
}

namespace tessera::command::exec {

// What flows between stages: a record (key + document) or an index entry not yet fetched.
struct WorkingMember {
    std::string recordKey;  // empty for documents that do not come from a collection
    std::string indexKey;   // set by IXSCAN
    bson::BsonObj doc;
    bool hasDoc = false;
    // The positional match of the filter (for projection / update `$`), set by FILTER.
    query::MatchDetails details;
};

// Shared by the stages of one executor. `opCtx` changes between batches (each getMore has its
// own operation); the snapshot and the collection stay for the executor's lifetime.
struct ExecContext {
    const OperationContext* opCtx = nullptr;
    storage::ReadSnapshot* snapshot = nullptr;
    storage::CollectionPtr collection;  // null for a missing collection or collectionless stages
    uint64_t work = 0;

    // MaxTimeMSExpired once the operation's deadline has passed; checked every 128 units of work
    // so that the clock is not read per document. On an io thread (OperationContext::
    // inlineExecution) InlineWouldBlock past kInlineWorkBudget units: a read that turns out
    // larger than it looked (a findOne whose filter skips many entries) runs again on the pool
    // rather than hold the io thread's other connections.
    Status checkForInterrupt();
    static constexpr uint64_t kInlineWorkBudget = 64;
};

// Counters shown by explain's executionStats.
struct StageStats {
    int64_t nReturned = 0;
    int64_t keysExamined = 0;  // IXSCAN
    int64_t docsExamined = 0;  // COLLSCAN, FETCH, IDHACK
};

// A pull-based operator (MongoDB's PlanStage / DocumentSource). next() produces the next member
// or returns false at the end; errors (interrupt, memory limit) end the stream.
class PlanStage {
  public:
    explicit PlanStage(std::string name) : _name(std::move(name)) {}
    virtual ~PlanStage() = default;
    PlanStage(const PlanStage&) = delete;
    PlanStage& operator=(const PlanStage&) = delete;

    const std::string& name() const { return _name; }
    const StageStats& stats() const { return _stats; }
    PlanStage* child() const { return _child.get(); }
    void setChild(std::unique_ptr<PlanStage> child) { _child = std::move(child); }

    // The next member, false at the end of the stream.
    StatusWith<bool> next(ExecContext& ctx, WorkingMember* out);

    // Appends {stage, <details>, inputStage: {...}} for explain; with stats when executed.
    void explain(bson::BsonBuilder& b, bool withStats) const;

  protected:
    virtual StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) = 0;
    // Stage-specific explain fields (indexName, filter, sortPattern, ...).
    virtual void appendDetails(bson::BsonBuilder& b, bool withStats) const {}

    StageStats _stats;
    std::unique_ptr<PlanStage> _child;

  private:
    std::string _name;
};

// Approximate in-memory footprint of a buffered document (for the 100 MB sort/group limits).
inline size_t memoryUsage(const WorkingMember& m) {
    return m.doc.size() + m.recordKey.size() + m.indexKey.size() + sizeof(WorkingMember);
}

// MongoDB's internalQueryMaxBlockingSortMemoryUsageBytes.
constexpr size_t kMaxBlockingMemoryBytes = size_t{100} * 1024 * 1024;

}  // namespace tessera::command::exec
