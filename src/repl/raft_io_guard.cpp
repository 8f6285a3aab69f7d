#include "repl/raft_io_guard.h"

#include <cstring>
#include <unordered_map>

#include "base/failpoint.h"
#include "base/mutex.h"
#include "bson/bson_obj.h"

namespace tessera::repl {

// A network partition between members, for the fault tests: while on, this member drops every
// replication message it receives from the members its data lists ({from: ["host:port", …]}),
// as a network that loses them would (their senders see nothing). Set on both sides of a cut
// for a symmetric partition; clients still reach the member.
TESSERA_FAIL_POINT_DEFINE(replDropMessagesFrom);

namespace {

// Whether replDropMessagesFrom drops a message from `sender`.
bool dropped(const char* sender) {
    if (!replDropMessagesFrom.active() || sender == nullptr) return false;
    return replDropMessagesFrom
        .shouldFailIf([&](const std::string& data) {
            if (data.empty()) return false;
            bson::BsonView wanted(reinterpret_cast<const uint8_t*>(data.data()));
            bson::BsonElement from = wanted["from"];
            if (!from.isArray()) return false;
            for (bson::BsonElement host : from.objValue()) {
                if (host.type() == bson::BsonType::String && host.stringValue() == sender) {
                    return true;
                }
            }
            return false;
        })
        .has_value();
}

// Frees what a received message owns, as libraft does for one it cannot take.
void discard(raft_message* message) {
    switch (message->type) {
        case RAFT_IO_APPEND_ENTRIES: {
            raft_entry* entries = message->append_entries.entries;
            void* last = nullptr;
            for (unsigned i = 0; i < message->append_entries.n_entries; ++i) {
                // Entries received together share one batch.
                if (entries[i].batch != nullptr && entries[i].batch != last) {
                    last = entries[i].batch;
                    raft_free(last);
                }
            }
            if (entries != nullptr) raft_free(entries);
            break;
        }
        case RAFT_IO_INSTALL_SNAPSHOT:
            raft_configuration_close(&message->install_snapshot.conf);
            raft_free(message->install_snapshot.data.base);
            break;
        default:
            break;
    }
}

// The inner io calls its tick, receive and close callbacks with its own pointer; its `data`
// belongs to whoever created it (the fixture keeps its raft there), so the guard is found here.
struct Registry {
    Mutex mutex;
    std::unordered_map<raft_io*, RaftIoGuard*> guards GUARDED_BY(mutex);
};
Registry& registry() {
    static auto* r = new Registry();
    return *r;
}

}  // namespace

RaftIoGuard::RaftIoGuard() = default;

RaftIoGuard::~RaftIoGuard() {
    if (_inner == nullptr) return;
    Registry& r = registry();
    MutexLock lk(r.mutex);
    r.guards.erase(_inner);
}

void RaftIoGuard::wrap(raft_io* inner) {
    _inner = inner;
    {
        Registry& r = registry();
        MutexLock lk(r.mutex);
        r.guards[inner] = this;
    }
    _outer.version = inner->version;
    _outer.impl = this;
    _outer.init = &RaftIoGuard::init;
    _outer.close = &RaftIoGuard::close;
    _outer.load = &RaftIoGuard::load;
    _outer.start = &RaftIoGuard::start;
    _outer.bootstrap = &RaftIoGuard::bootstrap;
    _outer.recover = &RaftIoGuard::recover;
    _outer.set_term = &RaftIoGuard::setTerm;
    _outer.set_vote = &RaftIoGuard::setVote;
    _outer.send = &RaftIoGuard::send;
    _outer.append = &RaftIoGuard::append;
    _outer.truncate = &RaftIoGuard::truncate;
    _outer.snapshot_put = &RaftIoGuard::snapshotPut;
    _outer.snapshot_get = &RaftIoGuard::snapshotGet;
    _outer.time = &RaftIoGuard::time;
    _outer.random = &RaftIoGuard::random;
    _outer.async_work = inner->version >= 2 ? &RaftIoGuard::asyncWork : nullptr;
}

RaftIoGuard* RaftIoGuard::of(raft_io* io) { return static_cast<RaftIoGuard*>(io->impl); }

RaftIoGuard* RaftIoGuard::ofInner(raft_io* inner) {
    Registry& r = registry();
    MutexLock lk(r.mutex);
    auto it = r.guards.find(inner);
    return it == r.guards.end() ? nullptr : it->second;
}

void RaftIoGuard::copyError() { std::memcpy(_outer.errmsg, _inner->errmsg, sizeof(_outer.errmsg)); }

#define TESSERA_FORWARD(call)        \
    do {                             \
        RaftIoGuard* g = of(io);     \
        int rv = g->_inner->call;    \
        if (rv != 0) g->copyError(); \
        return rv;                   \
    } while (0)

int RaftIoGuard::init(raft_io* io, raft_id id, const char* address) {
    TESSERA_FORWARD(init(of(io)->_inner, id, address));
}

void RaftIoGuard::close(raft_io* io, raft_io_close_cb cb) {
    RaftIoGuard* g = of(io);
    g->_closeCb = cb;
    g->_inner->close(g->_inner, &RaftIoGuard::onClosed);
}

void RaftIoGuard::onClosed(raft_io* inner) {
    RaftIoGuard* g = ofInner(inner);
    if (g != nullptr && g->_closeCb != nullptr) g->_closeCb(&g->_outer);
}

int RaftIoGuard::load(raft_io* io, raft_term* term, raft_id* votedFor, raft_snapshot** snapshot,
                      raft_index* startIndex, raft_entry* entries[], size_t* nEntries) {
    TESSERA_FORWARD(load(of(io)->_inner, term, votedFor, snapshot, startIndex, entries, nEntries));
}

int RaftIoGuard::start(raft_io* io, unsigned msecs, raft_io_tick_cb tick, raft_io_recv_cb recv) {
    RaftIoGuard* g = of(io);
    g->_tick = tick;
    g->_recv = recv;
    TESSERA_FORWARD(start(g->_inner, msecs, &RaftIoGuard::onTick, &RaftIoGuard::onRecv));
}

void RaftIoGuard::onTick(raft_io* inner) {
    RaftIoGuard* g = ofInner(inner);
    if (g != nullptr && g->_tick != nullptr) g->_tick(&g->_outer);
}

void RaftIoGuard::onRecv(raft_io* inner, raft_message* message) {
    RaftIoGuard* g = ofInner(inner);
    if (g == nullptr || g->_recv == nullptr) return;
    if (dropped(message->server_address)) {
        discard(message);
        return;
    }
    if (message->type != RAFT_IO_APPEND_ENTRIES) {
        g->_recv(&g->_outer, message);
        return;
    }
    g->_answering = true;
    g->_answerCap = message->append_entries.prev_log_index + message->append_entries.n_entries;
    g->_recv(&g->_outer, message);
    g->_answering = false;
}

int RaftIoGuard::send(raft_io* io, raft_io_send* req, const raft_message* message,
                      raft_io_send_cb cb) {
    RaftIoGuard* g = of(io);
    if (g->_answering && message->type == RAFT_IO_APPEND_ENTRIES_RESULT &&
        message->append_entries_result.rejected == 0 &&
        message->append_entries_result.last_log_index > g->_answerCap) {
        // Both backends encode or copy the message before send() returns.
        raft_message capped = *message;
        capped.append_entries_result.last_log_index = g->_answerCap;
        ++g->_capped;
        TESSERA_FORWARD(send(g->_inner, req, &capped, cb));
    }
    TESSERA_FORWARD(send(g->_inner, req, message, cb));
}

int RaftIoGuard::bootstrap(raft_io* io, const raft_configuration* conf) {
    TESSERA_FORWARD(bootstrap(of(io)->_inner, conf));
}

int RaftIoGuard::recover(raft_io* io, const raft_configuration* conf) {
    TESSERA_FORWARD(recover(of(io)->_inner, conf));
}

int RaftIoGuard::setTerm(raft_io* io, raft_term term) {
    TESSERA_FORWARD(set_term(of(io)->_inner, term));
}

int RaftIoGuard::setVote(raft_io* io, raft_id serverId) {
    TESSERA_FORWARD(set_vote(of(io)->_inner, serverId));
}

int RaftIoGuard::append(raft_io* io, raft_io_append* req, const raft_entry entries[], unsigned n,
                        raft_io_append_cb cb) {
    TESSERA_FORWARD(append(of(io)->_inner, req, entries, n, cb));
}

int RaftIoGuard::truncate(raft_io* io, raft_index index) {
    TESSERA_FORWARD(truncate(of(io)->_inner, index));
}

int RaftIoGuard::snapshotPut(raft_io* io, unsigned trailing, raft_io_snapshot_put* req,
                             const raft_snapshot* snapshot, raft_io_snapshot_put_cb cb) {
    TESSERA_FORWARD(snapshot_put(of(io)->_inner, trailing, req, snapshot, cb));
}

int RaftIoGuard::snapshotGet(raft_io* io, raft_io_snapshot_get* req, raft_io_snapshot_get_cb cb) {
    TESSERA_FORWARD(snapshot_get(of(io)->_inner, req, cb));
}

raft_time RaftIoGuard::time(raft_io* io) { return of(io)->_inner->time(of(io)->_inner); }

int RaftIoGuard::random(raft_io* io, int min, int max) {
    return of(io)->_inner->random(of(io)->_inner, min, max);
}

int RaftIoGuard::asyncWork(raft_io* io, raft_io_async_work* req, raft_io_async_work_cb cb) {
    TESSERA_FORWARD(async_work(of(io)->_inner, req, cb));
}

#undef TESSERA_FORWARD

}  // namespace tessera::repl
