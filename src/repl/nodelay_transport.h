#pragma once

#include <uv.h>

extern "C" {
#include <raft/uv.h>
}

namespace tessera::repl {

// libraft's TCP transport, with Nagle's algorithm off on every connection it makes or accepts.
// libraft 0.15 never sets TCP_NODELAY, so a small AppendEntries result waits for the delayed
// ACK of the previous segment (40 ms on Linux): a three-member group committed 1.2k entries/s
// with a p99 of 46 ms in bench/raft_limit before this, against 14.7k/s for one member.
// Usage: raft_uv_tcp_init(guard.inner(), loop); hand guard.transport() to raft_uv_init.
class NodelayTransport {
  public:
    NodelayTransport() = default;
    NodelayTransport(const NodelayTransport&) = delete;
    NodelayTransport& operator=(const NodelayTransport&) = delete;

    raft_uv_transport* inner() { return &_inner; }
    // The transport to give libraft: forwards to inner() (initialize that first).
    raft_uv_transport* transport();

  private:
    static NodelayTransport* of(raft_uv_transport* t) {
        return static_cast<NodelayTransport*>(t->impl);
    }
    static int init(raft_uv_transport* t, raft_id id, const char* address);
    static int listen(raft_uv_transport* t, raft_uv_accept_cb cb);
    static int connect(raft_uv_transport* t, raft_uv_connect* req, raft_id id, const char* address,
                       raft_uv_connect_cb cb);
    static void close(raft_uv_transport* t, raft_uv_transport_close_cb cb);
    static void onAccept(raft_uv_transport* inner, raft_id id, const char* address,
                         uv_stream_t* stream);
    static void onConnect(raft_uv_connect* req, uv_stream_t* stream, int status);
    static void onClosed(raft_uv_transport* inner);

    raft_uv_transport _outer{};
    raft_uv_transport _inner{};
    raft_uv_accept_cb _accept = nullptr;
    raft_uv_transport_close_cb _closed = nullptr;
};

}  // namespace tessera::repl
