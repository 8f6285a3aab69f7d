#pragma once

#include <array>
#include <chrono>
#include <optional>
#include <string>

#include "config/coordinator.h"
#include "config/coordinator_state.h"

namespace tessera::config {

// What one migration measured, for config.changelog's moveChunk.from (MongoDB's "step i of 6").
struct MigrationSteps {
    std::array<int64_t, 6> millis{-1, -1, -1, -1, -1, -1};
    std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
    std::optional<std::chrono::steady_clock::time_point> criticalSectionStarted;
    int64_t criticalSectionMillis = -1;
    int64_t docsCloned = 0;
    int64_t bytesCloned = 0;
    void done(int step);  // step 1..6 ended now
    void criticalSectionEnded();
};

// A migration of one range [min, max) of a sharded collection from its donor to its recipient
// (docs/protocols/migration.md): 1. the donor observes the
// range and opens the clone's snapshot, 2. the recipient clones and catches up while the donor
// serves the range, 3. the donor holds the range's writes, then its reads, 4. the commit in
// config.chunks, 5. both shards learn it and the donor leaves its critical section, 6. the
// donor deletes its copy. Resumed, it finishes when the catalog names the recipient and is
// undone otherwise.
class MoveRangeCoordinator final : public Coordinator {
  public:
    MoveRangeCoordinator(ConfigServerImpl& config, MoveRangeState state)
        : Coordinator(config), _state(std::move(state)) {}

    const std::string& id() const override { return _state.id; }
    std::string_view type() const override { return "moveRange"; }
    CoordinatorTarget target() const override { return {_state.ns, false}; }

    Status run() override;
    StatusWith<CoordinatorOutcome> recover() override;
    void abandon(const BestEffort& step) override;

  private:
    Status saveState();
    // Undoes the migration: the recipient drops its copy, the donor forgets the donation and
    // exits its critical section; returns `cause` (the document stays when a shard fails, so
    // that recovery retries the abort).
    Status abort(const Status& cause);
    // The commit in config.chunks (the moved chunk, and a control chunk left on the donor).
    Status commit();
    // Whether the catalog names the recipient as the range's owner.
    StatusWith<bool> isCommitted();
    // Steps 5 and 6 (`steps`: what this process measured; null after a restart).
    Status finish(MigrationSteps* steps);
    // config.settings {_id: "migration", foregroundP99Factor} (default 3).
    double budgetFactor();

    MoveRangeState _state;
};

}  // namespace tessera::config
