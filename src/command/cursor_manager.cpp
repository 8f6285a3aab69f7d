#include "command/cursor_manager.h"

#include <random>

#include "base/mutex.h"
#include "command/command.h"

namespace tessera::command {

PinnedCursor::PinnedCursor(PinnedCursor&& other) noexcept
    : _manager(other._manager), _cursor(other._cursor), _exhausted(other._exhausted) {
    other._manager = nullptr;
    other._cursor = nullptr;
}

PinnedCursor::~PinnedCursor() {
    if (_manager && _cursor) _manager->release(_cursor, _exhausted);
}

CursorManager::CursorManager(std::chrono::milliseconds idleTimeout)
    : _idleTimeout(idleTimeout),
      _rngState(std::random_device{}() ^ (uint64_t{std::random_device{}()} << 32)) {}

CursorManager::~CursorManager() = default;

namespace {
// splitmix64: a fast, well-distributed generator for cursor ids (ids are not secrets here;
// MongoDB's are random too so that they are hard to guess across connections).
uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
}  // namespace

int64_t CursorManager::registerCursor(std::string ns, std::unique_ptr<exec::PlanExecutor> exec,
                                      bool noCursorTimeout, std::optional<std::string> lsid,
                                      std::optional<CursorSource> source) {
    auto cursor = std::make_unique<ClientCursor>();
    cursor->ns = std::move(ns);
    cursor->source = std::move(source);
    cursor->exec = std::move(exec);
    cursor->noCursorTimeout = noCursorTimeout;
    cursor->lsid = std::move(lsid);
    cursor->lastUsed = Clock::now();
    MutexLock lk(_mutex);
    int64_t id;
    do {
        id = static_cast<int64_t>(splitmix64(_rngState) & 0x7fffffffffffffffULL);
    } while (id == 0 || _cursors.count(id));
    cursor->id = id;
    _cursors[id].cursor = std::move(cursor);
    return id;
}

StatusWith<PinnedCursor> CursorManager::pin(int64_t id, std::string_view ns) {
    MutexLock lk(_mutex);
    auto it = _cursors.find(id);
    if (it == _cursors.end() || it->second.killPending) {
        return Status(ErrorCodes::CursorNotFound, "cursor id " + std::to_string(id) + " not found");
    }
    Entry& e = it->second;
    if (e.cursor->ns != ns) {
        return Status(ErrorCodes::Unauthorized,
                      "Requested getMore on namespace '" + std::string(ns) + "', but cursor " +
                          std::to_string(id) + " belongs to a different namespace " + e.cursor->ns);
    }
    if (e.pinned) {
        return Status(ErrorCodes::CursorInUse,
                      "cursor id " + std::to_string(id) + " is already in use");
    }
    e.pinned = true;
    return PinnedCursor(this, e.cursor.get());
}

void CursorManager::release(ClientCursor* cursor, bool exhausted) {
    std::unique_ptr<ClientCursor> doomed;  // destroyed outside the lock (snapshot teardown)
    {
        MutexLock lk(_mutex);
        auto it = _cursors.find(cursor->id);
        invariant(it != _cursors.end() && it->second.pinned);
        if (exhausted || it->second.killPending) {
            doomed = std::move(it->second.cursor);
            _cursors.erase(it);
        } else {
            it->second.pinned = false;
            it->second.cursor->lastUsed = Clock::now();
        }
    }
}

CursorManager::KillResult CursorManager::kill(int64_t id, std::string_view ns) {
    std::unique_ptr<ClientCursor> doomed;
    MutexLock lk(_mutex);
    auto it = _cursors.find(id);
    if (it == _cursors.end() || it->second.killPending || it->second.cursor->ns != ns) {
        return KillResult::kNotFound;
    }
    if (it->second.pinned) {
        it->second.killPending = true;
    } else {
        doomed = std::move(it->second.cursor);
        _cursors.erase(it);
    }
    return KillResult::kKilled;
}

size_t CursorManager::reapIdleCursors(Clock::time_point now) {
    std::vector<std::unique_ptr<ClientCursor>> doomed;
    MutexLock lk(_mutex);
    for (auto it = _cursors.begin(); it != _cursors.end();) {
        Entry& e = it->second;
        if (!e.pinned && !e.cursor->noCursorTimeout && now - e.cursor->lastUsed > _idleTimeout) {
            doomed.push_back(std::move(e.cursor));
            it = _cursors.erase(it);
        } else {
            ++it;
        }
    }
    return doomed.size();
}

size_t CursorManager::numOpenCursors() const {
    MutexLock lk(_mutex);
    size_t n = 0;
    for (const auto& [id, e] : _cursors) n += e.killPending ? 0 : 1;
    return n;
}

void CursorManager::setIdleTimeout(std::chrono::milliseconds t) {
    MutexLock lk(_mutex);
    _idleTimeout = t;
}

Status fillBatch(const OperationContext& opCtx, exec::PlanExecutor& exec,
                 std::optional<int64_t> maxDocs, bson::BsonArrayBuilder& batch, bool* exhausted) {
    *exhausted = false;
    size_t bytes = 0;
    int64_t n = 0;
    exec::WorkingMember m;
    while (!maxDocs || n < *maxDocs) {
        ASSIGN_OR_RETURN(bool more, exec.next(opCtx, &m));
        if (!more) {
            *exhausted = true;
            return Status::OK();
        }
        if (n > 0 && bytes + m.doc.size() > kMaxBatchBytes) {
            exec.stash(std::move(m));
            return Status::OK();
        }
        bytes += m.doc.size();
        batch.append(m.doc.view());
        ++n;
    }
    // The batch is full by count: look ahead so that a cursor with nothing left is not kept open
    // (the client would need one more round trip to learn that).
    if (maxDocs && *maxDocs == 0) return Status::OK();
    ASSIGN_OR_RETURN(bool more, exec.next(opCtx, &m));
    if (!more) {
        *exhausted = true;
    } else {
        exec.stash(std::move(m));
    }
    return Status::OK();
}

}  // namespace tessera::command
