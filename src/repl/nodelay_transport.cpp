#include "repl/nodelay_transport.h"

#include <cstring>

namespace tessera::repl {

namespace {

// A connect request of libraft's, carried through the inner transport by one of ours.
struct ConnectRequest {
    raft_uv_connect req{};
    raft_uv_connect* original = nullptr;
    raft_uv_connect_cb originalCb = nullptr;
};

void noDelay(uv_stream_t* stream) {
    if (stream != nullptr && stream->type == UV_TCP) {
        uv_tcp_nodelay(reinterpret_cast<uv_tcp_t*>(stream), 1);
    }
}

}  // namespace

raft_uv_transport* NodelayTransport::transport() {
    _inner.data = this;  // the inner transport's callbacks find the guard here
    _outer.impl = this;
    _outer.init = &NodelayTransport::init;
    _outer.listen = &NodelayTransport::listen;
    _outer.connect = &NodelayTransport::connect;
    _outer.close = &NodelayTransport::close;
    return &_outer;
}

int NodelayTransport::init(raft_uv_transport* t, raft_id id, const char* address) {
    NodelayTransport* self = of(t);
    int rv = self->_inner.init(&self->_inner, id, address);
    if (rv != 0) std::memcpy(t->errmsg, self->_inner.errmsg, sizeof(t->errmsg));
    return rv;
}

int NodelayTransport::listen(raft_uv_transport* t, raft_uv_accept_cb cb) {
    NodelayTransport* self = of(t);
    self->_accept = cb;
    int rv = self->_inner.listen(&self->_inner, &NodelayTransport::onAccept);
    if (rv != 0) std::memcpy(t->errmsg, self->_inner.errmsg, sizeof(t->errmsg));
    return rv;
}

void NodelayTransport::onAccept(raft_uv_transport* inner, raft_id id, const char* address,
                                uv_stream_t* stream) {
    auto* self = static_cast<NodelayTransport*>(inner->data);
    noDelay(stream);
    self->_accept(&self->_outer, id, address, stream);
}

int NodelayTransport::connect(raft_uv_transport* t, raft_uv_connect* req, raft_id id,
                              const char* address, raft_uv_connect_cb cb) {
    NodelayTransport* self = of(t);
    auto* ours = new ConnectRequest;
    ours->req.data = ours;
    ours->original = req;
    ours->originalCb = cb;
    int rv =
        self->_inner.connect(&self->_inner, &ours->req, id, address, &NodelayTransport::onConnect);
    if (rv != 0) {
        std::memcpy(t->errmsg, self->_inner.errmsg, sizeof(t->errmsg));
        delete ours;
    }
    return rv;
}

void NodelayTransport::onConnect(raft_uv_connect* req, uv_stream_t* stream, int status) {
    auto* ours = static_cast<ConnectRequest*>(req->data);
    raft_uv_connect* original = ours->original;
    raft_uv_connect_cb cb = ours->originalCb;
    delete ours;
    if (status == 0) noDelay(stream);
    original->cb = cb;
    cb(original, stream, status);
}

void NodelayTransport::close(raft_uv_transport* t, raft_uv_transport_close_cb cb) {
    NodelayTransport* self = of(t);
    self->_closed = cb;
    self->_inner.close(&self->_inner, &NodelayTransport::onClosed);
}

void NodelayTransport::onClosed(raft_uv_transport* inner) {
    auto* self = static_cast<NodelayTransport*>(inner->data);
    if (self->_closed != nullptr) self->_closed(&self->_outer);
}

}  // namespace tessera::repl
