#pragma once

// libraft's headers declare C functions without extern "C" of their own.
extern "C" {
#include <raft.h>
}

#include <optional>
#include <string_view>

#include "repl/group.h"

namespace tessera::repl {

// Binds a StateMachine to libraft's FSM interface (internal to src/repl; the simulation tests
// drive it through libraft's in-memory fixture). libraft tells an FSM neither the index of the
// entry it applies nor that of a snapshot it restores, so the adapter reads the first from the
// raft instance it serves and carries the second in the snapshot's first 8 bytes.
class FsmAdapter {
  public:
    explicit FsmAdapter(StateMachine& machine);
    FsmAdapter(const FsmAdapter&) = delete;
    FsmAdapter& operator=(const FsmAdapter&) = delete;

    raft_fsm* fsm() { return &_fsm; }

    // An entry as libraft carries it: an 8-byte length, the entry, zero padding to a multiple
    // of 8 bytes. libraft 0.15's network decoder places each entry of an AppendEntries message
    // at an 8-byte boundary while its sender does not pad them, so an entry of any other length
    // is read from the wrong offset — out of its buffer — by the follower. Allocated with
    // raft_malloc (libraft frees it); base == nullptr when out of memory.
    static raft_buffer frameEntry(std::string_view entry);
    // The entry inside a framed buffer; nullopt if the frame is malformed.
    static std::optional<std::string_view> unframeEntry(const raft_buffer& buf);
    // The raft instance this FSM is given to (before it starts).
    void bind(raft* instance) { _raft = instance; }

  private:
    static int applyEntry(raft_fsm* fsm, const raft_buffer* buf, void** result);
    static int takeSnapshot(raft_fsm* fsm, raft_buffer* bufs[], unsigned* nBufs);
    static int restoreSnapshot(raft_fsm* fsm, raft_buffer* buf);

    StateMachine& _machine;
    raft* _raft = nullptr;
    raft_fsm _fsm{};
};

// libraft's error numbers as Tessera statuses.
Status statusFromRaft(int rv, std::string_view what);

}  // namespace tessera::repl
