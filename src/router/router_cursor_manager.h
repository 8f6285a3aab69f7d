#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "bson/bson_obj.h"
#include "command/cursor_manager.h"
#include "command/exec/plan_stage.h"
#include "net/remote_client.h"
#include "query/sort.h"

namespace tessera::router {

// Runs commands of an operation (null: of none, a cursor killed by its destruction) on remote
// hosts concurrently (RemoteClient::runCommands; a fake in tests).
using RunCommandsFn = std::function<std::vector<StatusWith<bson::BsonObj>>(
    const command::OperationContext*, const std::vector<net::RemoteCommand>&)>;

// A cursor opened on one shard by a find/aggregate the router sent.
struct RemoteCursor {
    std::string shard;
    std::string host;
    std::string ns;                    // the remote cursor's namespace ("db.coll")
    int64_t id = 0;                    // 0: the shard has no more results
    std::deque<bson::BsonObj> buffer;  // received, not yet returned
};

// {cursor: {id, ns, firstBatch|nextBatch}} of a reply → the cursor's state; FailedToParse when
// the reply has no cursor document.
StatusWith<RemoteCursor> parseRemoteCursor(std::string shard, std::string host,
                                           bson::BsonView reply);

// The router side of a cursor over several shards (MongoDB's AsyncResultsMerger as a stage):
// returns the documents of the shards' cursors, merge-sorted by `sort` (each shard returns its
// results in that order) or, without a sort, in whatever order they arrive. When the buffers it
// needs are empty it sends getMore to those shards (concurrently). Destroying the stage kills the
// remote cursors still open (best effort), so killCursors / the idle timeout of the router's
// cursor release the shards' cursors too.
class RemoteMergeStage final : public command::exec::PlanStage {
  public:
    // `sort` empty: arrival order. `collator` applies to the sort (nullptr: binary).
    RemoteMergeStage(std::vector<RemoteCursor> cursors, bson::BsonObj sort,
                     std::shared_ptr<const bson::StringComparator> collator, RunCommandsFn run);
    ~RemoteMergeStage() override;

    // Documents per shard getMore (nullopt: the shard's default, up to 16 MB).
    void setGetMoreBatchSize(std::optional<int64_t> n) { _getMoreBatchSize = n; }
    const std::vector<RemoteCursor>& cursors() const { return _cursors; }
    // Sends killCursors for the open remote cursors, as requests of `opCtx` (null: of no
    // operation, outside any transaction — the destructor's best effort), and forgets them.
    void killRemoteCursors(const command::OperationContext* opCtx);

  protected:
    StatusWith<bool> doNext(command::exec::ExecContext& ctx,
                            command::exec::WorkingMember* out) override;
    void appendDetails(bson::BsonBuilder& b, bool withStats) const override;

  private:
    // getMore on every open cursor whose buffer is empty (all of them when `all`, else only
    // until one document is available).
    Status refill(command::exec::ExecContext& ctx);
    bool needsRefill() const;

    std::vector<RemoteCursor> _cursors;
    bson::BsonObj _sortSpec;
    std::optional<query::SortPattern> _sort;
    RunCommandsFn _run;
    std::optional<int64_t> _getMoreBatchSize;
};

// Router-side skip and limit over a merged stream (limit 0: none).
class SkipLimitStage final : public command::exec::PlanStage {
  public:
    SkipLimitStage(int64_t skip, std::optional<int64_t> limit)
        : PlanStage("SHARD_MERGE_SKIP_LIMIT"), _skip(skip), _limit(limit) {}

  protected:
    StatusWith<bool> doNext(command::exec::ExecContext& ctx,
                            command::exec::WorkingMember* out) override;

  private:
    int64_t _skip;
    std::optional<int64_t> _limit;
    int64_t _returned = 0;
};

// The router's client cursors: ids handed out by find/aggregate, used by getMore/killCursors.
// A cursor is an executor whose leaf is a RemoteMergeStage (possibly with router-side stages
// on top), kept in a command::CursorManager (ids random, non-zero, unique; pinning; idle
// timeout). A background thread reaps cursors idle for longer than the timeout (10 min), which
// kills their shard cursors. Thread-safe.
class RouterCursorManager {
  public:
    explicit RouterCursorManager(
        std::chrono::milliseconds idleTimeout = command::CursorManager::kDefaultIdleTimeout);
    ~RouterCursorManager();
    RouterCursorManager(const RouterCursorManager&) = delete;
    RouterCursorManager& operator=(const RouterCursorManager&) = delete;

    command::CursorManager& cursors() { return _cursors; }

    int64_t registerCursor(std::string ns, std::unique_ptr<command::exec::PlanExecutor> exec,
                           bool noCursorTimeout, std::optional<std::string> lsid);
    command::CursorManager::KillResult kill(int64_t id, std::string_view ns) {
        return _cursors.kill(id, ns);
    }
    size_t numOpenCursors() const { return _cursors.numOpenCursors(); }

  private:
    void startReaper();
    void reaperLoop();

    command::CursorManager _cursors;
    Mutex _mutex;
    CondVar _cv;
    bool _stopping GUARDED_BY(_mutex) = false;
    std::thread _reaper;
};

}  // namespace tessera::router
