#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include "base/mutex.h"
#include "repl/group.h"
#include "storage/engine.h"
#include "storage/replication.h"

namespace tessera::repl {

// One member's storage engine replicated through its group (README.md, "Plan" 5): the engine's
// commit log (every write becomes one entry, and returns once the group committed and applied
// it) and the group's state machine (every committed entry is written to the engine, in log
// order, on every member).
//
// An entry is the writing member's id, the writing process's incarnation (random, so that
// entries of this member's previous run — replayed or committed late — are never taken for a
// writer of this run), a sequence number of its own, then the batch. When an entry is applied on
// the process whose writer still waits for it, the batch is written as is and the writer updates
// the engine's in-memory state itself; any other entry — another member's, an earlier run's, or
// one whose writer gave up on a leadership change — is applied "from elsewhere".
class StorageReplica final : public storage::CommitLog, public StateMachine {
  public:
    // `address`: this member's "host:port", what its snapshots name as the member to copy a
    // lagging member's data from.
    StorageReplica(storage::Engine& engine, MemberId self, std::string address = {});

    // How a member whose log lacks what the group no longer keeps catches up (restore() of a
    // snapshot beyond what it applied): `index` and the snapshot's payload (the member that took
    // it). OK only once this member's data has applied the log to `index`. Set before the group
    // starts; without it such a snapshot is refused.
    using CatchUp = std::function<Status(LogIndex index, std::string_view source)>;
    void setCatchUp(CatchUp catchUp) { _catchUp = std::move(catchUp); }

    // Called by a writer whose entry failed because this member's leadership ended, before
    // that writer returns: libraft fails its writers before its status shows the change, and
    // the writer's client may retry at once. Set before the group starts.
    void setOnLeadershipLost(std::function<void()> f) { _onLeadershipLost = std::move(f); }

    // The group this replica proposes to: set once it started, before the engine writes; null
    // before the group stops.
    void attach(Group* group);

    // storage::CommitLog
    Status commit(std::string_view batch) override;

    // StateMachine (the group's thread)
    LogIndex appliedIndex() const override;
    void apply(LogIndex index, std::string_view entry) override;
    std::string snapshot(LogIndex index) override;
    Status restore(LogIndex index, std::string_view snapshot) override;

  private:
    // One writer waiting for its entry. Its own condition variable: one apply wakes one writer,
    // not all of them (with a shared one, 16 writers meant 16 wake-ups per entry, which made the
    // member's writes 2x slower). Lives in _waiting, whose nodes never move.
    struct Waiter {
        bool done = false;
        Status outcome = Status::OK();
        CondVar finished;
    };

    storage::Engine& _engine;
    const MemberId _self;
    const std::string _address;
    CatchUp _catchUp;
    std::function<void()> _onLeadershipLost;
    const uint64_t _incarnation;
    // The engine's committed log index, read once and then kept here: apply() writes it with
    // each batch, and libraft asks for it before every entry.
    std::atomic<LogIndex> _applied{0};
    Mutex _mutex;
    Group* _group GUARDED_BY(_mutex) = nullptr;
    uint64_t _nextSequence GUARDED_BY(_mutex) = 0;
    std::unordered_map<uint64_t, Waiter> _waiting GUARDED_BY(_mutex);  // sequence → its writer
};

}  // namespace tessera::repl
