#include "shard/range_deleter.h"

#include "base/failpoint.h"
#include "base/log.h"
#include "base/mutex.h"
#include "bson/bson_builder.h"
#include "net/remote_client.h"
#include "shard/ownership_filter.h"
#include "shard/sharding_state.h"
#include "storage/engine.h"

namespace tessera::shard {

// Makes a range deletion throw (tests: it is retried with back-off, then given up and shown so
// in currentOp, never the end of the process).
TESSERA_FAIL_POINT_DEFINE(rangeDeletionThrows);

void RangeDeleter::start() {
    MutexLock lk(_mutex);
    if (_thread.joinable()) return;
    _stop = false;
    _thread = std::thread([this] { run(); });
}

void RangeDeleter::stop() {
    {
        MutexLock lk(_mutex);
        _stop = true;
        _cv.notify_all();
    }
    if (_thread.joinable()) _thread.join();
}

void RangeDeleter::notify() {
    MutexLock lk(_mutex);
    _notified = true;
    _cv.notify_all();
}

void RangeDeleter::run() {
    for (;;) {
        {
            UniqueLock lk(_mutex);
            _cv.wait_for(lk, std::chrono::seconds(2),
                         [&]() REQUIRES(_mutex) { return _stop || _notified; });
            if (_stop) return;
            _notified = false;
        }
        while (pass()) {
            MutexLock lk(_mutex);
            if (_stop) return;
        }
    }
}

bool RangeDeleter::pass() {
    auto md = _state.metadata();
    if (!md) return false;
    bool deleted = false;
    for (const TrackedRange& tracked : _state.trackedRanges().list()) {
        {
            MutexLock lk(_mutex);
            if (_stop) return false;
        }
        const std::string key = tracked.recordKey();
        if (!mayTryNow(key)) continue;
        try {
            deleted = processRange(md, tracked) || deleted;
        } catch (...) {
            noteFailure(key, statusFromCurrentException("range deletion"));
        }
    }
    return deleted;
}

// One tracked range: forgotten when owned again, deleted when its commit is known final.
bool RangeDeleter::processRange(const std::shared_ptr<ShardMetadata>& md,
                                const TrackedRange& tracked) {
    storage::CollectionPtr coll = _state.service().engine->getCollection(tracked.ns);
    if (!coll || coll->uuid != tracked.uuid) {
        // The collection was dropped (or is another incarnation): nothing to count apart.
        (void)_state.trackedRanges().remove(tracked.ns, tracked.range.encodedMin());
        return false;
    }
    if (_state.recipients().receiving(tracked.ns, tracked.range.encodedMin())) return false;
    auto filter = md->ownershipFilter(tracked.ns);
    if (!filter.isOK()) return false;  // placement unknown now: retried on the next pass
    const auto* chunks = dynamic_cast<const ChunkOwnershipFilter*>(filter.getValue().get());
    if (!chunks) {
        (void)_state.trackedRanges().remove(tracked.ns, tracked.range.encodedMin());
        return false;
    }
    auto owned = chunks->ownershipOf(tracked.range.encodedMin(), tracked.range.encodedMax());
    if (owned == ChunkOwnershipFilter::RangeOwnership::kAll) {
        // An incoming range whose commit is known, or an outgoing one whose migration
        // aborted: owned again, so its documents are counted as stored. A donor's range
        // is kept while its critical section holds (the commit may still come), and is
        // forgotten only once its coordinator is gone and a fresh placement still says the
        // shard owns it (a stale view must not turn a donation into owned documents).
        if (tracked.kind == TrackedRange::Kind::kIncoming) {
            (void)_state.trackedRanges().remove(tracked.ns, tracked.range.encodedMin());
            return false;
        }
        if (md->criticalSections().isEntered(CriticalSections::collectionKey(tracked.ns)) ||
            !coordinatorGone(tracked.migrationId) || !md->refreshCollection(tracked.ns).isOK()) {
            return false;
        }
        auto fresh = md->ownershipFilter(tracked.ns);
        const auto* now = fresh.isOK()
                              ? dynamic_cast<const ChunkOwnershipFilter*>(fresh.getValue().get())
                              : nullptr;
        if (now && now->ownershipOf(tracked.range.encodedMin(), tracked.range.encodedMax()) ==
                       ChunkOwnershipFilter::RangeOwnership::kAll) {
            (void)_state.trackedRanges().remove(tracked.ns, tracked.range.encodedMin());
        }
        return false;  // not owned any more: deleted in the next pass
    }
    if (owned == ChunkOwnershipFilter::RangeOwnership::kPartial) return false;
    if (tracked.kind == TrackedRange::Kind::kIncoming) {
        // A clone this process does not drive any more (it restarted): its migration may
        // still commit. Only once its coordinator is gone is the outcome final, and then
        // the freshly loaded placement tells which it was.
        if (!coordinatorGone(tracked.migrationId)) return false;
        if (!md->refreshCollection(tracked.ns).isOK()) return false;
        auto fresh = md->ownershipFilter(tracked.ns);
        const auto* now = fresh.isOK()
                              ? dynamic_cast<const ChunkOwnershipFilter*>(fresh.getValue().get())
                              : nullptr;
        if (!now) return false;
        auto after = now->ownershipOf(tracked.range.encodedMin(), tracked.range.encodedMax());
        if (after == ChunkOwnershipFilter::RangeOwnership::kAll) {
            (void)_state.trackedRanges().remove(tracked.ns, tracked.range.encodedMin());
            return false;
        }
        if (after != ChunkOwnershipFilter::RangeOwnership::kNone) return false;
    }
    MutexLock del(_deleteMutex);
    Status s = deleteRange(tracked);
    if (!s.isOK()) {
        noteFailure(tracked.recordKey(), s);
        return false;
    }
    return true;
}

bool RangeDeleter::mayTryNow(const std::string& key) {
    MutexLock lk(_mutex);
    auto it = _failures.find(key);
    if (it == _failures.end()) return true;
    return !it->second.gaveUp() && std::chrono::steady_clock::now() >= it->second.notBefore;
}

void RangeDeleter::noteFailure(const std::string& key, const Status& failure) {
    MutexLock lk(_mutex);
    Failure& f = _failures[key];
    ++f.attempts;
    f.lastError = failure;
    f.notBefore = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(500) * (int64_t{1} << std::min(f.attempts - 1, 5));
    // Given up: the range stays tracked (its documents stay invisible to every read and out of
    // every count), currentOp shows it failed, and a restart or a migration of it tries again.
    log::warning(
        "SHARDING", 22041,
        f.gaveUp() ? "Range deletion failed; given up" : "Range deletion failed, will retry",
        "{\"range\":\"" + log::jsonEscape(key) + "\",\"attempts\":" + std::to_string(f.attempts) +
            ",\"error\":\"" + log::jsonEscape(failure.toString()) + "\"}");
}

std::optional<RangeDeleter::Failure> RangeDeleter::failureOf(const std::string& key) {
    MutexLock lk(_mutex);
    auto it = _failures.find(key);
    if (it == _failures.end()) return std::nullopt;
    return it->second;
}

bool RangeDeleter::coordinatorGone(const std::string& migrationId) {
    bson::BsonBuilder find;
    find.append("find", "system.coordinators");
    find.startObject("filter").append("migrationId", migrationId).end();
    find.appendInt32("limit", 1);
    auto reply = _state.remoteClient().runCommand(_state.configHost(), "config", find.obj(),
                                                  std::chrono::seconds(10));
    if (!reply.isOK() || !net::replyStatus(reply.getValue()).isOK()) return false;  // unknown
    bson::BsonElement cursor = reply.getValue()["cursor"];
    if (!cursor.isObject()) return false;
    bson::BsonElement batch = cursor.objValue()["firstBatch"];
    return batch.type() == bson::BsonType::Array && batch.objValue().isEmpty();
}

Status RangeDeleter::deleteRange(const TrackedRange& tracked) {
    if (rangeDeletionThrows.shouldFail()) throw std::runtime_error("failpoint rangeDeletionThrows");
    auto current = _state.trackedRanges().find(tracked.ns, tracked.range.encodedMin());
    if (!current) return Status::OK();  // purged meanwhile
    storage::Engine& engine = *_state.service().engine;
    auto started = std::chrono::steady_clock::now();
    ASSIGN_OR_RETURN(int64_t n,
                     deleteUnownedInRange(engine, tracked.ns, *tracked.pattern, tracked.range,
                                          nullptr, &_state.trackedRanges()));
    TRY_STATUS(_state.trackedRanges().remove(tracked.ns, tracked.range.encodedMin()));
    _rangesDeleted.fetch_add(1);
    {
        MutexLock lk(_mutex);
        _failures.erase(tracked.recordKey());  // a later range of the same bounds starts afresh
    }
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - started)
                  .count();
    log::info("SHARDING", 22042, "Deleted a range the shard no longer owns",
              "{\"ns\":\"" + log::jsonEscape(tracked.ns) +
                  "\",\"min\":" + tracked.range.min().toJson() +
                  ",\"max\":" + tracked.range.max().toJson() + ",\"deleted\":" + std::to_string(n) +
                  ",\"durationMillis\":" + std::to_string(ms) + "}");
    return Status::OK();
}

StatusWith<int64_t> RangeDeleter::purge(const std::string& ns,
                                        const placement::ShardKeyPattern& pattern,
                                        const ShardKeyRange& range,
                                        const std::string& recipientId) {
    MutexLock del(_deleteMutex);
    auto md = _state.metadata();
    if (!md) return Status(ErrorCodes::ShardingStateNotInitialized, "no shard identity");
    ASSIGN_OR_RETURN(auto filter, md->ownershipFilter(ns));
    for (const TrackedRange& tracked : _state.trackedRanges().list(ns)) {
        if (!(tracked.range.encodedMin() < range.encodedMax() &&
              range.encodedMin() < tracked.range.encodedMax())) {
            continue;
        }
        if (_state.recipients().receiving(ns, tracked.range.encodedMin(), recipientId)) {
            return Status(
                ErrorCodes::ConflictingOperationInProgress,
                "a migration is receiving into " + ns + " " + tracked.range.min().toJson());
        }
        const auto* chunks = dynamic_cast<const ChunkOwnershipFilter*>(filter.get());
        if (chunks && chunks->ownershipOf(tracked.range.encodedMin(), tracked.range.encodedMax()) !=
                          ChunkOwnershipFilter::RangeOwnership::kNone) {
            // Owned (a finished migration's incoming range): only the tracking goes.
            TRY_STATUS(_state.trackedRanges().remove(ns, tracked.range.encodedMin()));
            continue;
        }
        TRY_STATUS(deleteRange(tracked));
    }
    // Anything else unowned in the range (none while the invariant holds; older data dirs).
    return deleteUnownedInRange(*_state.service().engine, ns, pattern, range, filter.get(),
                                &_state.trackedRanges());
}

Status RangeDeleter::waitUntilDeleted(const std::string& ns, const ShardKeyRange& range,
                                      std::chrono::steady_clock::time_point deadline) {
    for (;;) {
        bool left = false;
        for (const TrackedRange& t : _state.trackedRanges().list(ns)) {
            if (t.kind == TrackedRange::Kind::kOutgoing &&
                t.range.encodedMin() < range.encodedMax() &&
                range.encodedMin() < t.range.encodedMax()) {
                left = true;
            }
        }
        if (!left) return Status::OK();
        if (std::chrono::steady_clock::now() > deadline) {
            return Status(ErrorCodes::ExceededTimeLimit,
                          "the donated range of " + ns + " is still being deleted");
        }
        notify();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

}  // namespace tessera::shard
