#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "command/command.h"
#include "command/exec/plan_stage.h"
#include "storage/read_snapshot.h"

namespace tessera::command::exec {

// The ownership filter of the scanned collection: on a shard, the scan stages below skip
// documents the shard does not own (orphans), so that every read built on them — finds, counts,
// updates and deletes — ignores orphans. The filter is the operation's
// (OperationContext::ownershipFilter: decided once per namespace, at admission for the command's
// own namespace), taken by the stage when it first runs. Null (no filtering) everywhere else;
// when the operation cannot know the placement, the scan fails with that error.
class OwnershipCheck {
  public:
    // Takes the operation's filter (first call only).
    Status resolve(ExecContext& ctx);
    // Whether the document may be returned (after resolve).
    bool owns(bson::BsonView doc) const { return !_filter || _filter->owns(doc); }
    // Whether a filter applies (then index scans must fetch to decide).
    bool active() const { return _filter != nullptr; }

  private:
    bool _resolved = false;
    std::shared_ptr<const OwnershipFilter> _filter;
};

// COLLSCAN: every document of the collection in record-key order.
class CollScanStage final : public PlanStage {
  public:
    explicit CollScanStage(bool forward = true) : PlanStage("COLLSCAN"), _forward(forward) {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    bool _forward;
    std::unique_ptr<storage::RecordCursor> _cursor;
    bool _done = false;
    OwnershipCheck _ownership;
};

// IDHACK: point lookup of one `_id` value on the _id index.
class IdHackStage final : public PlanStage {
  public:
    // `idHolder` is a document whose first element is the `_id` value to look up.
    explicit IdHackStage(bson::BsonObj idHolder) : PlanStage("IDHACK"), _id(std::move(idHolder)) {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;

  private:
    bson::BsonObj _id;
    bool _done = false;
    OwnershipCheck _ownership;
};

// IXSCAN: entries of one index within a list of disjoint key ranges, visited in order. Records
// seen before are skipped when the index is multikey (a document with an array appears once per
// element).
class IndexScanStage final : public PlanStage {
  public:
    IndexScanStage(storage::IndexSpec index, std::vector<storage::KeyRange> ranges, bool forward,
                   bson::BsonObj boundsForExplain)
        : PlanStage("IXSCAN"),
          _index(std::move(index)),
          _ranges(std::move(ranges)),
          _forward(forward),
          _bounds(std::move(boundsForExplain)) {}

    const storage::IndexSpec& index() const { return _index; }

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    storage::IndexSpec _index;
    std::vector<storage::KeyRange> _ranges;
    bool _forward;
    bson::BsonObj _bounds;
    size_t _rangeIdx = 0;
    std::unique_ptr<storage::IndexCursor> _cursor;
    std::set<std::string> _seen;
    int64_t _dupsDropped = 0;
    OwnershipCheck _ownership;
};

// FETCH: loads the document of an index entry (skipping entries whose record vanished).
class FetchStage final : public PlanStage {
  public:
    FetchStage() : PlanStage("FETCH") {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;
};

// A fixed list of documents (tests, $collStats, results computed up front).
class VectorSourceStage final : public PlanStage {
  public:
    explicit VectorSourceStage(std::vector<bson::BsonObj> docs, std::string name = "QUEUED_DATA")
        : PlanStage(std::move(name)), _docs(std::move(docs)) {}

  protected:
    StatusWith<bool> doNext(ExecContext& ctx, WorkingMember* out) override;

  private:
    std::vector<bson::BsonObj> _docs;
    size_t _pos = 0;
};

}  // namespace tessera::command::exec
