#pragma once

extern "C" {
#include <raft.h>
}

namespace tessera::repl {

// A raft_io that forwards to another one (libraft's libuv backend, or its in-memory fixture in
// the simulation tests) and corrects one thing on the way: libraft 0.15 has a follower answer
// an AppendEntries that needed no disk write with its whole log's last index, and its leader
// takes that (capped by its own last index) as the follower's match index. A follower holding
// leftover entries of an old term beyond the leader's log thus "matches" entries it does not
// have — one the leader appended after sending — and the leader may commit an entry that only
// it holds: a majority-acknowledged write that a failover can lose. Found by
// simulation_test.cpp; upstream still answers the same way. The guard caps a successful answer
// at what the request it answers proved: prevLogIndex + number of entries. (A follower
// answers a request that needed a write only once the write is done, and that write leaves
// its log ending at exactly that index, so those answers are already right.)
//
// Usage: build the inner io, then `guard.wrap(&inner)` and hand `guard.io()` to raft_init (or
// swap it in before raft_start). The guard must outlive the raft instance.
class RaftIoGuard {
  public:
    RaftIoGuard();
    ~RaftIoGuard();
    RaftIoGuard(const RaftIoGuard&) = delete;
    RaftIoGuard& operator=(const RaftIoGuard&) = delete;

    void wrap(raft_io* inner);
    raft_io* io() { return &_outer; }

    // How many answers were capped (for tests and logs).
    unsigned long long cappedAnswers() const { return _capped; }

  private:
    static RaftIoGuard* of(raft_io* io);
    static RaftIoGuard* ofInner(raft_io* inner);
    void copyError();

    static int init(raft_io* io, raft_id id, const char* address);
    static void close(raft_io* io, raft_io_close_cb cb);
    static int load(raft_io* io, raft_term* term, raft_id* votedFor, raft_snapshot** snapshot,
                    raft_index* startIndex, raft_entry* entries[], size_t* nEntries);
    static int start(raft_io* io, unsigned msecs, raft_io_tick_cb tick, raft_io_recv_cb recv);
    static int bootstrap(raft_io* io, const raft_configuration* conf);
    static int recover(raft_io* io, const raft_configuration* conf);
    static int setTerm(raft_io* io, raft_term term);
    static int setVote(raft_io* io, raft_id serverId);
    static int send(raft_io* io, raft_io_send* req, const raft_message* message,
                    raft_io_send_cb cb);
    static int append(raft_io* io, raft_io_append* req, const raft_entry entries[], unsigned n,
                      raft_io_append_cb cb);
    static int truncate(raft_io* io, raft_index index);
    static int snapshotPut(raft_io* io, unsigned trailing, raft_io_snapshot_put* req,
                           const raft_snapshot* snapshot, raft_io_snapshot_put_cb cb);
    static int snapshotGet(raft_io* io, raft_io_snapshot_get* req, raft_io_snapshot_get_cb cb);
    static raft_time time(raft_io* io);
    static int random(raft_io* io, int min, int max);
    static int asyncWork(raft_io* io, raft_io_async_work* req, raft_io_async_work_cb cb);
    static void onTick(raft_io* inner);
    static void onRecv(raft_io* inner, raft_message* message);
    static void onClosed(raft_io* inner);

    raft_io _outer{};
    raft_io* _inner = nullptr;
    raft_io_tick_cb _tick = nullptr;
    raft_io_recv_cb _recv = nullptr;
    raft_io_close_cb _closeCb = nullptr;
    // While libraft handles an AppendEntries: the index its successful answer may claim.
    bool _answering = false;
    raft_index _answerCap = 0;
    unsigned long long _capped = 0;
};

}  // namespace tessera::repl
