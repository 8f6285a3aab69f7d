#include "repl/raft_fsm.h"

#include <cstring>

#include "base/error_codes.h"

namespace tessera::repl {

namespace {

constexpr size_t kIndexPrefix = sizeof(std::uint64_t);

void putIndex(char* out, LogIndex index) {
    for (size_t i = 0; i < kIndexPrefix; ++i) out[i] = static_cast<char>(index >> (56 - 8 * i));
}

LogIndex getIndex(const char* in) {
    LogIndex index = 0;
    for (size_t i = 0; i < kIndexPrefix; ++i)
        index = (index << 8) | static_cast<unsigned char>(in[i]);
    return index;
}

}  // namespace

FsmAdapter::FsmAdapter(StateMachine& machine) : _machine(machine) {
    _fsm.version = 1;
    _fsm.data = this;
    _fsm.apply = &FsmAdapter::applyEntry;
    _fsm.snapshot = &FsmAdapter::takeSnapshot;
    _fsm.restore = &FsmAdapter::restoreSnapshot;
}

raft_buffer FsmAdapter::frameEntry(std::string_view entry) {
    raft_buffer buf;
    buf.len = (kIndexPrefix + entry.size() + 7) / 8 * 8;
    buf.base = raft_calloc(1, buf.len);
    if (buf.base == nullptr) return buf;
    putIndex(static_cast<char*>(buf.base), entry.size());
    if (!entry.empty())
        std::memcpy(static_cast<char*>(buf.base) + kIndexPrefix, entry.data(), entry.size());
    return buf;
}

std::optional<std::string_view> FsmAdapter::unframeEntry(const raft_buffer& buf) {
    if (buf.len < kIndexPrefix || buf.len % 8 != 0) return std::nullopt;
    const char* bytes = static_cast<const char*>(buf.base);
    std::uint64_t size = getIndex(bytes);
    if (size > buf.len - kIndexPrefix) return std::nullopt;
    return std::string_view(bytes + kIndexPrefix, size);
}

int FsmAdapter::applyEntry(raft_fsm* fsm, const raft_buffer* buf, void** result) {
    auto* self = static_cast<FsmAdapter*>(fsm->data);
    // libraft sets last_applied to the entry's index once apply returns.
    LogIndex index = raft_last_applied(self->_raft) + 1;
    *result = nullptr;
    if (index <= self->_machine.appliedIndex()) return 0;  // replayed after a restart
    std::optional<std::string_view> entry = unframeEntry(*buf);
    if (!entry) return RAFT_MALFORMED;  // only ever framed by frameEntry: a corrupt log
    self->_machine.apply(index, *entry);
    return 0;
}

int FsmAdapter::takeSnapshot(raft_fsm* fsm, raft_buffer* bufs[], unsigned* nBufs) {
    auto* self = static_cast<FsmAdapter*>(fsm->data);
    LogIndex index = raft_last_applied(self->_raft);
    std::string payload = self->_machine.snapshot(index);
    // Version 1 FSM: libraft frees the array and each buffer with raft_free.
    auto* array = static_cast<raft_buffer*>(raft_malloc(sizeof(raft_buffer)));
    if (array == nullptr) return RAFT_NOMEM;
    array[0].len = kIndexPrefix + payload.size();
    array[0].base = raft_malloc(array[0].len);
    if (array[0].base == nullptr) {
        raft_free(array);
        return RAFT_NOMEM;
    }
    putIndex(static_cast<char*>(array[0].base), index);
    if (!payload.empty()) {
        std::memcpy(static_cast<char*>(array[0].base) + kIndexPrefix, payload.data(),
                    payload.size());
    }
    *bufs = array;
    *nBufs = 1;
    return 0;
}

int FsmAdapter::restoreSnapshot(raft_fsm* fsm, raft_buffer* buf) {
    auto* self = static_cast<FsmAdapter*>(fsm->data);
    if (buf->len < kIndexPrefix) return RAFT_MALFORMED;
    const char* bytes = static_cast<const char*>(buf->base);
    Status restored = self->_machine.restore(
        getIndex(bytes), std::string_view(bytes + kIndexPrefix, buf->len - kIndexPrefix));
    if (!restored.isOK()) return RAFT_IOERR;
    raft_free(buf->base);  // on success the buffer is the FSM's to free
    return 0;
}

Status statusFromRaft(int rv, std::string_view what) {
    std::string reason = std::string(what) + ": " + raft_strerror(rv);
    switch (rv) {
        case RAFT_NOTLEADER:
            return Status(ErrorCodes::NotWritablePrimary, std::move(reason));
        case RAFT_LEADERSHIPLOST:
            return Status(ErrorCodes::InterruptedDueToReplStateChange, std::move(reason));
        case RAFT_SHUTDOWN:
        case RAFT_CANCELED:
            return Status(ErrorCodes::InterruptedAtShutdown, std::move(reason));
        case RAFT_BADID:
        case RAFT_DUPLICATEID:
        case RAFT_DUPLICATEADDRESS:
        case RAFT_BADROLE:
        case RAFT_INVALID:
            return Status(ErrorCodes::InvalidOptions, std::move(reason));
        case RAFT_CANTCHANGE:
            return Status(ErrorCodes::ConflictingOperationInProgress, std::move(reason));
        default:
            return Status(ErrorCodes::InternalError, std::move(reason));
    }
}

}  // namespace tessera::repl
