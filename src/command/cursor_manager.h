#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "bson/bson_builder.h"
#include "command/exec/plan_executor.h"

namespace tessera::command {

struct OperationContext;

// The collection an open cursor reads (a view's: its backing collection): when it is dropped,
// renamed or replaced ($out) before a getMore, the getMore fails with QueryPlanKilled (175) as in
// MongoDB, instead of returning documents of a collection that is gone from the cursor's
// snapshot.
struct CursorSource {
    std::string ns;
    std::string uuid;  // CollectionInfo::uuid
};

// An open cursor: the executor (with its snapshot) of a find/aggregate whose results did not fit
// in the first batch.
struct ClientCursor {
    int64_t id = 0;
    std::string ns;                      // "db.coll" as the reply's cursor.ns
    std::optional<CursorSource> source;  // none: a collectionless pipeline, a find on a view
    std::unique_ptr<exec::PlanExecutor> exec;
    bool noCursorTimeout = false;
    std::optional<std::string> lsid;
    std::chrono::steady_clock::time_point lastUsed;
    int64_t nReturned = 0;  // documents returned so far (all batches)
};

class CursorManager;

// Exclusive use of a cursor for one getMore. Returns the cursor to the manager when destroyed,
// unless markExhausted() was called (then the cursor is deleted).
class PinnedCursor {
  public:
    PinnedCursor(PinnedCursor&& other) noexcept;
    PinnedCursor& operator=(PinnedCursor&&) = delete;
    ~PinnedCursor();

    ClientCursor* operator->() const { return _cursor; }
    ClientCursor& operator*() const { return *_cursor; }
    // The cursor is done (no more results or an error): delete it on release.
    void markExhausted() { _exhausted = true; }

  private:
    friend class CursorManager;
    PinnedCursor(CursorManager* manager, ClientCursor* cursor)
        : _manager(manager), _cursor(cursor) {}
    CursorManager* _manager;
    ClientCursor* _cursor;
    bool _exhausted = false;
};

// Owns all open cursors of the process.
//
// Invariants:
//  1. Cursor ids are non-zero, positive and unique among open cursors (0 means "no cursor").
//  2. A cursor is used by at most one operation at a time (pinned); a second one gets
//     CursorInUse (143).
//  3. A cursor not used for `idleTimeout` is deleted by reapIdleCursors() unless it was opened
//     with noCursorTimeout or is pinned.
//
// Thread-safe.
class CursorManager {
  public:
    using Clock = std::chrono::steady_clock;
    static constexpr std::chrono::milliseconds kDefaultIdleTimeout{10 * 60 * 1000};

    explicit CursorManager(std::chrono::milliseconds idleTimeout = kDefaultIdleTimeout);
    ~CursorManager();

    // Takes ownership of an executor and returns the new cursor id.
    int64_t registerCursor(std::string ns, std::unique_ptr<exec::PlanExecutor> exec,
                           bool noCursorTimeout = false,
                           std::optional<std::string> lsid = std::nullopt,
                           std::optional<CursorSource> source = std::nullopt);

    // Pins cursor `id` for a getMore on namespace `ns`. Errors: CursorNotFound (43) "cursor id
    // 123 not found", Unauthorized (13) when `ns` is not the cursor's namespace, CursorInUse
    // (143) when another operation holds it.
    StatusWith<PinnedCursor> pin(int64_t id, std::string_view ns);

    enum class KillResult { kKilled, kNotFound };
    // Deletes a cursor of namespace `ns`. A cursor of another namespace counts as not found.
    // A pinned cursor is deleted when its getMore releases it.
    KillResult kill(int64_t id, std::string_view ns);

    // Deletes cursors idle for longer than the timeout at time `now`; returns how many.
    size_t reapIdleCursors(Clock::time_point now = Clock::now());

    size_t numOpenCursors() const;
    std::chrono::milliseconds idleTimeout() const { return _idleTimeout; }
    void setIdleTimeout(std::chrono::milliseconds t);

  private:
    friend class PinnedCursor;
    void release(ClientCursor* cursor, bool exhausted);

    struct Entry {
        std::unique_ptr<ClientCursor> cursor;
        bool pinned = false;
        bool killPending = false;
    };

    mutable Mutex _mutex;
    std::map<int64_t, Entry> _cursors GUARDED_BY(_mutex);
    std::chrono::milliseconds _idleTimeout;
    uint64_t _rngState;
};

// MongoDB's per-batch byte budget (kMaxBytesToReturnToClientAtOnce): a batch stops before the
// document that would take it over 16 MiB (a batch always holds at least one document).
constexpr size_t kMaxBatchBytes = 16 * 1024 * 1024;
// Documents in a find/aggregate first batch when the client gives no batchSize.
constexpr int64_t kDefaultFirstBatchSize = 101;

// Fills `batch` with up to `maxDocs` (unlimited when nullopt) results of `exec`, within
// kMaxBatchBytes. Sets *exhausted when the executor has no more results (looks one result ahead
// so that the last batch carries cursor id 0).
Status fillBatch(const OperationContext& opCtx, exec::PlanExecutor& exec,
                 std::optional<int64_t> maxDocs, bson::BsonArrayBuilder& batch, bool* exhausted);

}  // namespace tessera::command
