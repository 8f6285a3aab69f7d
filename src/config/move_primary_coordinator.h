#pragma once

#include <string>

#include "config/coordinator.h"
#include "config/coordinator_state.h"

namespace tessera::config {

// movePrimary: a database's unsharded collections from its primary shard `from` to `to`. The old
// primary holds the database's writes (its critical section), the new one clones them, the
// catalog names the new primary, both shards learn it, the old one drops its copies and leaves
// the critical section. Resumed, it finishes when the catalog names `to` and is undone
// otherwise.
class MovePrimaryCoordinator final : public Coordinator {
  public:
    MovePrimaryCoordinator(ConfigServerImpl& config, MovePrimaryState state)
        : Coordinator(config), _state(std::move(state)) {}

    const std::string& id() const override { return _state.id; }
    std::string_view type() const override { return "movePrimary"; }
    CoordinatorTarget target() const override { return {_state.db, true}; }

    Status run() override;
    StatusWith<CoordinatorOutcome> recover() override;
    void abandon(const BestEffort& step) override;

  private:
    Status saveState();
    // After the commit: refreshes, the old primary's copies dropped, its section exited.
    Status finish();
    // The recipient's clones dropped, the old primary's section exited, the document removed.
    Status abort();

    MovePrimaryState _state;
};

}  // namespace tessera::config
