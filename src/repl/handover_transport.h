#pragma once

#include <uv.h>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "repl/group.h"

extern "C" {
#include <raft/uv.h>
}

namespace tessera::repl {

// libraft's transport over the members' main ports, so that a member is reached at the one
// address clients use (MongoDB's `host:port` of a replica set member). Connecting: TCP to the
// member's port, one wire message of kHandOverOpCode whose body is this member's id (8 bytes,
// big-endian) and address, then a bare header of the same opCode back from the server; from
// there on the stream is libraft's. Accepting: the server answers that message and hands the
// socket over (Group::acceptStream → accept()). Internal to src/repl; all on the loop thread.
class HandoverTransport {
  public:
    HandoverTransport() = default;
    HandoverTransport(const HandoverTransport&) = delete;
    HandoverTransport& operator=(const HandoverTransport&) = delete;

    // The transport to give raft_uv_init.
    raft_uv_transport* transport(uv_loop_t* loop);

    // A socket the server handed over, with the body of its first message. Owns `fd`.
    void accept(int fd, std::string_view body);

    // The first message of a connection from member `id` at `address`.
    static std::string preamble(uint64_t id, std::string_view address);

  private:
    struct Attempt;

    static HandoverTransport* of(raft_uv_transport* t) {
        return static_cast<HandoverTransport*>(t->impl);
    }
    static int init(raft_uv_transport* t, raft_id id, const char* address);
    static int listen(raft_uv_transport* t, raft_uv_accept_cb cb);
    static int connect(raft_uv_transport* t, raft_uv_connect* req, raft_id id, const char* address,
                       raft_uv_connect_cb cb);
    static void close(raft_uv_transport* t, raft_uv_transport_close_cb cb);
    static void onTimerClosed(uv_handle_t* handle);

    void startConnect(Attempt* attempt, const sockaddr* addr);
    void finish(Attempt* attempt, int status);
    void forget(Attempt* attempt);
    void maybeFinishClose();

    raft_uv_transport _t{};
    uv_loop_t* _loop = nullptr;
    uint64_t _id = 0;
    std::string _address;
    raft_uv_accept_cb _accept = nullptr;
    uv_timer_t _timer{};  // only for its close callback, which ends close() asynchronously
    bool _timerOpen = false;
    bool _closing = false;
    bool _timerClosed = false;
    raft_uv_transport_close_cb _closeCb = nullptr;
    std::set<Attempt*> _attempts;  // connections being made
};

}  // namespace tessera::repl
