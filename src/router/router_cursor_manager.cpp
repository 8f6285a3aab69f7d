#include "router/router_cursor_manager.h"

#include <algorithm>

#include "base/guarded.h"
#include "base/mutex.h"
#include "bson/bson_builder.h"
#include "command/command.h"

namespace tessera::router {

using bson::BsonBuilder;
using bson::BsonObj;
using command::exec::ExecContext;
using command::exec::WorkingMember;

namespace {

std::string collOf(const std::string& ns) {
    size_t dot = ns.find('.');
    return dot == std::string::npos ? ns : ns.substr(dot + 1);
}
std::string dbOf(const std::string& ns) { return ns.substr(0, ns.find('.')); }

}  // namespace

StatusWith<RemoteCursor> parseRemoteCursor(std::string shard, std::string host,
                                           bson::BsonView reply) {
    bson::BsonElement cursor = reply["cursor"];
    if (cursor.type() != bson::BsonType::Object) {
        return Status(ErrorCodes::FailedToParse,
                      "reply of shard " + shard + " has no cursor: " + reply.toJson());
    }
    RemoteCursor rc;
    rc.shard = std::move(shard);
    rc.host = std::move(host);
    bson::BsonView c = cursor.objValue();
    rc.id = c["id"].numberLong();
    if (c["ns"].type() == bson::BsonType::String) rc.ns = std::string(c["ns"].stringValue());
    bson::BsonElement batch = c["firstBatch"];
    if (batch.eoo()) batch = c["nextBatch"];
    if (batch.type() == bson::BsonType::Array) {
        for (bson::BsonElement d : batch.objValue()) {
            if (d.type() == bson::BsonType::Object) rc.buffer.push_back(d.objValue().copy());
        }
    }
    return rc;
}

RemoteMergeStage::RemoteMergeStage(std::vector<RemoteCursor> cursors, BsonObj sort,
                                   std::shared_ptr<const bson::StringComparator> collator,
                                   RunCommandsFn run)
    : PlanStage(sort.isEmpty() ? "SHARD_MERGE" : "SHARD_MERGE_SORT"),
      _cursors(std::move(cursors)),
      _sortSpec(std::move(sort)),
      _run(std::move(run)) {
    if (!_sortSpec.isEmpty()) {
        auto parsed = query::SortPattern::parse(_sortSpec);
        // The shards accepted the same specification; an unparsable one ({$meta}) merges
        // unordered rather than failing late.
        if (parsed.isOK()) {
            _sort = std::move(parsed.getValue());
            _sort->setCollator(std::move(collator));
        }
    }
}

RemoteMergeStage::~RemoteMergeStage() { killRemoteCursors(nullptr); }

void RemoteMergeStage::killRemoteCursors(const command::OperationContext* opCtx) {
    std::vector<net::RemoteCommand> cmds;
    for (RemoteCursor& c : _cursors) {
        if (c.id == 0) continue;
        BsonBuilder b;
        b.append("killCursors", collOf(c.ns));
        b.startArray("cursors").appendInt64("0", c.id).end();
        cmds.push_back(net::RemoteCommand{c.host, dbOf(c.ns), b.obj()});
        c.id = 0;
    }
    if (!cmds.empty() && _run)
        _run(opCtx, cmds);  // best effort: a dead shard's cursor died with it
}

bool RemoteMergeStage::needsRefill() const {
    bool anyBuffered = false;
    for (const RemoteCursor& c : _cursors) {
        if (c.buffer.empty() && c.id != 0 && _sort) return true;  // the merge needs every head
        anyBuffered = anyBuffered || !c.buffer.empty();
    }
    if (anyBuffered) return false;
    return std::any_of(_cursors.begin(), _cursors.end(),
                       [](const RemoteCursor& c) { return c.id != 0; });
}

Status RemoteMergeStage::refill(ExecContext& ctx) {
    if (ctx.opCtx) TRY_STATUS(ctx.opCtx->checkForInterrupt());
    std::vector<net::RemoteCommand> cmds;
    std::vector<size_t> which;
    for (size_t i = 0; i < _cursors.size(); ++i) {
        RemoteCursor& c = _cursors[i];
        if (!c.buffer.empty() || c.id == 0) continue;
        BsonBuilder b;
        b.appendInt64("getMore", c.id);
        b.append("collection", collOf(c.ns));
        if (_getMoreBatchSize && *_getMoreBatchSize > 0) {
            b.appendInt64("batchSize", *_getMoreBatchSize);
        }
        cmds.push_back(net::RemoteCommand{c.host, dbOf(c.ns), b.obj()});
        which.push_back(i);
    }
    auto results = _run(ctx.opCtx, cmds);
    Status firstError = Status::OK();
    for (size_t k = 0; k < which.size(); ++k) {
        RemoteCursor& c = _cursors[which[k]];
        Status s = k < results.size() ? results[k].getStatus()
                                      : Status(ErrorCodes::InternalError, "no getMore reply");
        if (s.isOK()) s = net::replyStatus(results[k].getValue());
        if (!s.isOK()) {
            c.id = 0;  // a failed getMore deletes the remote cursor
            if (firstError.isOK()) {
                firstError = Status(s.errorCode(), s.reason() + " (shard " + c.shard + ")");
            }
            continue;
        }
        auto parsed = parseRemoteCursor(c.shard, c.host, results[k].getValue());
        if (!parsed.isOK()) {
            c.id = 0;
            if (firstError.isOK()) firstError = parsed.getStatus();
            continue;
        }
        c.id = parsed.getValue().id;
        c.buffer = std::move(parsed.getValue().buffer);
    }
    return firstError;
}

StatusWith<bool> RemoteMergeStage::doNext(ExecContext& ctx, WorkingMember* out) {
    while (needsRefill()) TRY_STATUS(refill(ctx));
    size_t best = _cursors.size();
    for (size_t i = 0; i < _cursors.size(); ++i) {
        if (_cursors[i].buffer.empty()) continue;
        if (best == _cursors.size()) {
            best = i;
            if (!_sort) break;
            continue;
        }
        // Ties go to the earlier shard: a stable merge.
        if (_sort->compare(_cursors[i].buffer.front(), _cursors[best].buffer.front()) < 0) {
            best = i;
        }
    }
    if (best == _cursors.size()) return false;
    *out = WorkingMember{};
    out->doc = std::move(_cursors[best].buffer.front());
    out->hasDoc = true;
    _cursors[best].buffer.pop_front();
    return true;
}

void RemoteMergeStage::appendDetails(BsonBuilder& b, bool withStats) const {
    if (!_sortSpec.isEmpty()) b.append("sortPattern", _sortSpec);
    b.startArray("shards");
    for (size_t i = 0; i < _cursors.size(); ++i) b.append(std::to_string(i), _cursors[i].shard);
    b.end();
}

StatusWith<bool> SkipLimitStage::doNext(ExecContext& ctx, WorkingMember* out) {
    while (_skip > 0) {
        ASSIGN_OR_RETURN(bool more, _child->next(ctx, out));
        if (!more) return false;
        --_skip;
    }
    if (_limit && _returned >= *_limit) return false;
    ASSIGN_OR_RETURN(bool more, _child->next(ctx, out));
    if (more) ++_returned;
    return more;
}

RouterCursorManager::RouterCursorManager(std::chrono::milliseconds idleTimeout)
    : _cursors(idleTimeout) {}

RouterCursorManager::~RouterCursorManager() {
    {
        MutexLock lk(_mutex);
        _stopping = true;
    }
    _cv.notify_all();
    if (_reaper.joinable()) _reaper.join();
}

int64_t RouterCursorManager::registerCursor(std::string ns,
                                            std::unique_ptr<command::exec::PlanExecutor> exec,
                                            bool noCursorTimeout, std::optional<std::string> lsid) {
    startReaper();
    return _cursors.registerCursor(std::move(ns), std::move(exec), noCursorTimeout,
                                   std::move(lsid));
}

void RouterCursorManager::startReaper() {
    MutexLock lk(_mutex);
    if (_reaper.joinable() || _stopping) return;
    _reaper = std::thread([this] { reaperLoop(); });
}

void RouterCursorManager::reaperLoop() {
    UniqueLock lk(_mutex);
    while (!_stopping) {
        auto period = std::clamp(_cursors.idleTimeout() / 4, std::chrono::milliseconds(100),
                                 std::chrono::milliseconds(30000));
        _cv.wait_for(lk, period, [this]() REQUIRES(_mutex) { return _stopping; });
        if (_stopping) break;
        lk.unlock();
        // Destroying a reaped cursor's executor kills its shard cursors (RemoteMergeStage).
        runLoggingExceptions("QUERY", 20530, "idle cursor reaper",
                             [this] { _cursors.reapIdleCursors(); });
        lk.lock();
    }
}

}  // namespace tessera::router
