#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/op_id.h"
#include "base/status.h"
#include "bson/bson_builder.h"
#include "command/command.h"
#include "placement/routing_table.h"
#include "shard/clone_pacer.h"
#include "shard/range_ops.h"
#include "storage/write_observer.h"

namespace tessera::shard {

class ShardingState;

// The recipient's side of one range migration (docs/protocols/migration.md): it pulls the range
// from the donor's snapshot (`_shardsvrReadRange` with the migration id) into a tracked incoming
// range, in large storage batches, then the changed documents (`_shardsvrTransferMods`) until
// the backlog is small; the coordinator then holds the donor's writes and calls `catchUpFinal`,
// which drains the rest and copies the donor's retryable-write records. Nothing it stores is
// owned (or counted) before the commit.
class MigrationRecipient {
  public:
    enum class Phase { kPurging, kCloning, kCatchUp, kSteady, kFinalCatchUp, kDone, kFailed };

    MigrationRecipient(ShardingState& state, std::string id, std::string ns,
                       std::shared_ptr<const placement::RoutingTable> table, ShardKeyRange range,
                       std::string fromShard, std::string fromHost);

    const std::string& id() const { return _id; }
    const std::string& ns() const { return _ns; }
    const ShardKeyRange& range() const { return _range; }
    // Pacing: the clone slows down while the foreground p99 of either shard is above `factor`
    // times the p99 measured when it started (config.settings {_id: "migration"}).
    void setBudgetFactor(double factor) { _pacer.setFactor(factor); }

    // Purges leftovers of the range, creates the collection like the donor's, tracks the range,
    // clones and catches up until the backlog is below the steady threshold.
    Status cloneAndCatchUp(command::OperationContext& opCtx);
    // With the donor's writes held: until the donor reports no change left, then the donor's
    // retryable-write records. Returns the range's stored totals ({docs, bytes}).
    StatusWith<std::pair<int64_t, int64_t>> catchUpFinal(command::OperationContext& opCtx);
    // The commit is known: the range is owned, its tracking ends.
    Status committed();
    // Aborted: the range's documents are deleted and its tracking ends.
    Status aborted();

    // currentOp's part of the recipient: {desc, ns, min, max, from, to, phase, docsCloned, ...}.
    void appendProgress(bson::BsonBuilder& b) const;

  private:
    Status checkRunning(command::OperationContext& opCtx) const;
    // One `_shardsvrTransferMods` round applied; returns how many changes the donor still has.
    StatusWith<int64_t> transferModsOnce(command::OperationContext& opCtx, int64_t* applied);
    Status applyUpsert(bson::BsonView doc);
    Status applyDelete(bson::BsonView id);
    // Sleeps when the foreground latency of either shard is above the budget (pacing).
    void pace(int64_t donorP99Micros);

    ShardingState& _state;
    const std::string _id, _ns, _db, _coll;
    const std::shared_ptr<const placement::RoutingTable> _table;
    const ShardKeyRange _range;
    const std::string _fromShard, _fromHost;
    const std::chrono::steady_clock::time_point _started = std::chrono::steady_clock::now();
    const int32_t _opid = nextOpId();  // currentOp's id
    std::atomic<Phase> _phase{Phase::kPurging};
    std::atomic<int64_t> _docsCloned{0}, _bytesCloned{0}, _modsApplied{0}, _backlog{0};
    std::atomic<int64_t> _throttledMs{0};
    // Where the clone's time went: waiting for the donor's pages, writing them.
    std::atomic<int64_t> _fetchMicros{0}, _ingestMicros{0};
    // aborted() cancels a clone or catch-up still running (the coordinator gave up: a config
    // server restart, say) and waits for it to stop before it purges.
    std::atomic<bool> _cancelled{false};
    Mutex _runMutex;
    ClonePacer _pacer;  // the clone thread's; budgetMicros() is read for currentOp
    const storage::WriteUnit* _unit = nullptr;  // of the transfer-mods round being applied
};

// The migrations this shard is receiving, by id (one per collection).
class MigrationRecipients {
  public:
    Status add(std::shared_ptr<MigrationRecipient> r);
    std::shared_ptr<MigrationRecipient> get(const std::string& id) const;
    // Whether a migration — other than `exceptId`, when given — is receiving into `ns` at
    // `encodedMin` (the range deleter leaves its range alone).
    bool receiving(const std::string& ns, const std::string& encodedMin,
                   const std::string& exceptId = {}) const;
    void remove(const std::string& id);
    std::vector<std::shared_ptr<MigrationRecipient>> list() const;

  private:
    mutable Mutex _mutex;
    std::vector<std::shared_ptr<MigrationRecipient>> _items GUARDED_BY(_mutex);
};

}  // namespace tessera::shard
