#include "repl/handover_transport.h"

#include <unistd.h>

#include <cstring>

#include "base/log.h"

namespace tessera::repl {

namespace {

constexpr size_t kHeaderSize = 16;

void putInt32LE(std::string& out, int32_t v) {
    for (int i = 0; i < 4; ++i)
        out.push_back(static_cast<char>((static_cast<uint32_t>(v) >> (8 * i)) & 0xff));
}

int32_t getInt32LE(const char* p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
    return static_cast<int32_t>(v);
}

// "host:port" (an IPv6 host in brackets) → host, port; false if malformed.
bool splitAddress(std::string_view address, std::string* host, int* port) {
    size_t colon = address.rfind(':');
    if (colon == std::string_view::npos || colon + 1 >= address.size()) return false;
    std::string_view h = address.substr(0, colon);
    if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
    int p = 0;
    for (char c : address.substr(colon + 1)) {
        if (c < '0' || c > '9') return false;
        p = p * 10 + (c - '0');
        if (p > 65535) return false;
    }
    *host = std::string(h);
    *port = p;
    return !host->empty() && p > 0;
}

}  // namespace

// A connection being made: resolve (for a host name), connect, write the preamble, read the
// answer. Ends in finish(), once; freed when its socket handle is closed (or at once without
// one), after every callback of its requests has run.
struct HandoverTransport::Attempt {
    HandoverTransport* owner = nullptr;
    raft_uv_connect* req = nullptr;
    raft_uv_connect_cb cb = nullptr;
    std::string host;
    int port = 0;
    std::string preamble;
    uv_getaddrinfo_t resolve{};
    bool resolving = false;
    uv_tcp_t* tcp = nullptr;  // raft_malloc'd: libraft frees it once it owns it
    uv_connect_t connectReq{};
    uv_write_t writeReq{};
    char answer[kHeaderSize] = {};
    size_t answered = 0;
    bool finished = false;
};

std::string HandoverTransport::preamble(uint64_t id, std::string_view address) {
    std::string body;
    for (int i = 7; i >= 0; --i) body.push_back(static_cast<char>(id >> (8 * i)));
    body.append(address);
    std::string message;
    putInt32LE(message, static_cast<int32_t>(kHeaderSize + body.size()));
    putInt32LE(message, 1);  // requestId
    putInt32LE(message, 0);  // responseTo
    putInt32LE(message, kHandOverOpCode);
    message += body;
    return message;
}

raft_uv_transport* HandoverTransport::transport(uv_loop_t* loop) {
    _loop = loop;
    _t.impl = this;
    _t.init = &HandoverTransport::init;
    _t.listen = &HandoverTransport::listen;
    _t.connect = &HandoverTransport::connect;
    _t.close = &HandoverTransport::close;
    return &_t;
}

int HandoverTransport::init(raft_uv_transport* t, raft_id id, const char* address) {
    HandoverTransport* self = of(t);
    self->_id = id;
    self->_address = address;
    uv_timer_init(self->_loop, &self->_timer);
    self->_timer.data = self;
    self->_timerOpen = true;
    return 0;
}

int HandoverTransport::listen(raft_uv_transport* t, raft_uv_accept_cb cb) {
    of(t)->_accept = cb;
    return 0;
}

void HandoverTransport::accept(int fd, std::string_view body) {
    if (_accept == nullptr || _closing || body.size() < 8) {
        ::close(fd);
        return;
    }
    uint64_t id = 0;
    for (size_t i = 0; i < 8; ++i) id = (id << 8) | static_cast<unsigned char>(body[i]);
    std::string address(body.substr(8));
    auto* tcp = static_cast<uv_tcp_t*>(raft_malloc(sizeof(uv_tcp_t)));
    if (tcp == nullptr) {
        ::close(fd);
        return;
    }
    uv_tcp_init(_loop, tcp);
    if (int rv = uv_tcp_open(tcp, fd); rv != 0) {
        log::warning("REPL", 4300030, "Cannot take over a member's connection",
                     std::string("{\"error\":\"") + uv_strerror(rv) + "\"}");
        ::close(fd);
        uv_close(reinterpret_cast<uv_handle_t*>(tcp), [](uv_handle_t* h) { raft_free(h); });
        return;
    }
    uv_tcp_nodelay(tcp, 1);
    _accept(&_t, id, address.c_str(), reinterpret_cast<uv_stream_t*>(tcp));
}

int HandoverTransport::connect(raft_uv_transport* t, raft_uv_connect* req, raft_id id,
                               const char* address, raft_uv_connect_cb cb) {
    HandoverTransport* self = of(t);
    auto* attempt = new Attempt;
    attempt->owner = self;
    attempt->req = req;
    attempt->cb = cb;
    req->cb = cb;
    if (!splitAddress(address, &attempt->host, &attempt->port)) {
        delete attempt;
        return RAFT_NOCONNECTION;
    }
    attempt->preamble = preamble(self->_id, self->_address);
    self->_attempts.insert(attempt);
    sockaddr_storage addr{};
    if (uv_ip4_addr(attempt->host.c_str(), attempt->port, reinterpret_cast<sockaddr_in*>(&addr)) ==
            0 ||
        uv_ip6_addr(attempt->host.c_str(), attempt->port, reinterpret_cast<sockaddr_in6*>(&addr)) ==
            0) {
        self->startConnect(attempt, reinterpret_cast<const sockaddr*>(&addr));
        return 0;
    }
    // A host name: resolved first.
    attempt->resolve.data = attempt;
    attempt->resolving = true;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    std::string port = std::to_string(attempt->port);
    int rv = uv_getaddrinfo(
        self->_loop, &attempt->resolve,
        [](uv_getaddrinfo_t* r, int status, addrinfo* res) {
            auto* a = static_cast<Attempt*>(r->data);
            a->resolving = false;
            if (status != 0 || res == nullptr || a->finished) {
                if (res != nullptr) uv_freeaddrinfo(res);
                a->owner->finish(a, a->finished ? RAFT_CANCELED : RAFT_NOCONNECTION);
                return;
            }
            a->owner->startConnect(a, res->ai_addr);
            uv_freeaddrinfo(res);
        },
        attempt->host.c_str(), port.c_str(), &hints);
    if (rv != 0) {
        attempt->resolving = false;
        self->_attempts.erase(attempt);
        delete attempt;
        return RAFT_NOCONNECTION;
    }
    return 0;
}

void HandoverTransport::startConnect(Attempt* attempt, const sockaddr* addr) {
    attempt->tcp = static_cast<uv_tcp_t*>(raft_malloc(sizeof(uv_tcp_t)));
    if (attempt->tcp == nullptr) {
        finish(attempt, RAFT_NOMEM);
        return;
    }
    uv_tcp_init(_loop, attempt->tcp);
    attempt->tcp->data = attempt;
    uv_tcp_nodelay(attempt->tcp, 1);
    attempt->connectReq.data = attempt;
    int rv =
        uv_tcp_connect(&attempt->connectReq, attempt->tcp, addr, [](uv_connect_t* c, int status) {
            auto* a = static_cast<Attempt*>(c->data);
            if (a->finished) return;
            if (status != 0) {
                a->owner->finish(a, RAFT_NOCONNECTION);
                return;
            }
            uv_buf_t buf =
                uv_buf_init(a->preamble.data(), static_cast<unsigned>(a->preamble.size()));
            a->writeReq.data = a;
            int wrv = uv_write(
                &a->writeReq, reinterpret_cast<uv_stream_t*>(a->tcp), &buf, 1,
                [](uv_write_t* w, int wstatus) {
                    auto* aw = static_cast<Attempt*>(w->data);
                    if (aw->finished) return;
                    if (wstatus != 0) {
                        aw->owner->finish(aw, RAFT_NOCONNECTION);
                        return;
                    }
                    int rrv = uv_read_start(
                        reinterpret_cast<uv_stream_t*>(aw->tcp),
                        [](uv_handle_t* h, size_t, uv_buf_t* out) {
                            auto* ar = static_cast<Attempt*>(h->data);
                            *out = uv_buf_init(ar->answer + ar->answered,
                                               static_cast<unsigned>(kHeaderSize - ar->answered));
                        },
                        [](uv_stream_t* s, ssize_t n, const uv_buf_t*) {
                            auto* ar = static_cast<Attempt*>(s->data);
                            if (ar->finished) return;
                            if (n < 0) {
                                ar->owner->finish(ar, RAFT_NOCONNECTION);
                                return;
                            }
                            ar->answered += static_cast<size_t>(n);
                            if (ar->answered < kHeaderSize) return;
                            uv_read_stop(s);
                            bool ok = getInt32LE(ar->answer) == static_cast<int32_t>(kHeaderSize) &&
                                      getInt32LE(ar->answer + 12) == kHandOverOpCode;
                            ar->owner->finish(ar, ok ? 0 : RAFT_NOCONNECTION);
                        });
                    if (rrv != 0) aw->owner->finish(aw, RAFT_NOCONNECTION);
                });
            if (wrv != 0) a->owner->finish(a, RAFT_NOCONNECTION);
        });
    if (rv != 0) finish(attempt, RAFT_NOCONNECTION);
}

void HandoverTransport::finish(Attempt* attempt, int status) {
    if (attempt->finished) {
        // Canceled while resolving: the resolver's callback ends it now.
        if (!attempt->resolving && attempt->tcp == nullptr) forget(attempt);
        return;
    }
    attempt->finished = true;
    if (status == 0) {
        // The stream is libraft's from here on (it sets the handle's data and frees it).
        uv_tcp_t* tcp = attempt->tcp;
        tcp->data = nullptr;
        raft_uv_connect* req = attempt->req;
        raft_uv_connect_cb cb = attempt->cb;
        attempt->tcp = nullptr;
        forget(attempt);
        cb(req, reinterpret_cast<uv_stream_t*>(tcp), 0);
        return;
    }
    attempt->cb(attempt->req, nullptr, status);
    if (attempt->resolving) {
        uv_cancel(reinterpret_cast<uv_req_t*>(&attempt->resolve));  // its callback forgets it
        return;
    }
    if (attempt->tcp != nullptr) {
        // Pending connect/write/read callbacks run (and see `finished`) before the close's.
        uv_close(reinterpret_cast<uv_handle_t*>(attempt->tcp), [](uv_handle_t* h) {
            auto* a = static_cast<Attempt*>(h->data);
            raft_free(h);
            a->tcp = nullptr;
            a->owner->forget(a);
        });
        return;
    }
    forget(attempt);
}

void HandoverTransport::forget(Attempt* attempt) {
    HandoverTransport* self = attempt->owner;
    self->_attempts.erase(attempt);
    delete attempt;
    self->maybeFinishClose();
}

void HandoverTransport::close(raft_uv_transport* t, raft_uv_transport_close_cb cb) {
    HandoverTransport* self = of(t);
    self->_closing = true;
    self->_closeCb = cb;
    std::set<Attempt*> pending = self->_attempts;
    for (Attempt* a : pending) {
        if (!a->finished) self->finish(a, RAFT_CANCELED);
    }
    if (self->_timerOpen) {
        uv_close(reinterpret_cast<uv_handle_t*>(&self->_timer), &HandoverTransport::onTimerClosed);
    } else {
        self->_timerClosed = true;
        self->maybeFinishClose();
    }
}

void HandoverTransport::onTimerClosed(uv_handle_t* handle) {
    auto* self = static_cast<HandoverTransport*>(handle->data);
    self->_timerOpen = false;
    self->_timerClosed = true;
    self->maybeFinishClose();
}

void HandoverTransport::maybeFinishClose() {
    if (!_closing || !_timerClosed || !_attempts.empty() || _closeCb == nullptr) return;
    raft_uv_transport_close_cb cb = _closeCb;
    _closeCb = nullptr;
    cb(&_t);
}

}  // namespace tessera::repl
