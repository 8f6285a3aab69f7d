#include "shard/migration_recipient.h"

#include <future>
#include <thread>

#include "base/failpoint.h"
#include "base/log.h"
#include "base/mutex.h"
#include "bson/validate.h"
#include "net/remote_client.h"
#include "shard/command_util.h"
#include "shard/sharding_state.h"
#include "storage/collection_writer.h"
#include "storage/engine.h"
#include "txn/session_records.h"

namespace tessera::shard {
namespace {

constexpr std::chrono::minutes kRequestTimeout{5};
// Catch-up ends ("steady") once the donor's backlog is at most this many documents: what is left
// is drained inside the short critical section.
constexpr int64_t kSteadyBacklog = 500;
constexpr int kMaxCatchUpRounds = 200;
constexpr int64_t kCloneBatchBytes = 8 << 20;

// Test only: the recipient stops after cloning, before catch-up (crash tests).
TESSERA_FAIL_POINT_DEFINE(migrationRecipientHangAfterClone);

int64_t micros(std::chrono::steady_clock::duration d) {
    return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

// Holds the migration while `fp` is on and `cancelled` is not set (logged with the failpoint's
// name, as the config server's hangs are, so that crash tests can wait for it).
void hangWhileSet(FailPoint& fp, const std::atomic<bool>& cancelled) {
    if (!fp.shouldFail()) return;
    log::info("SHARDING", 22052, "Hanging at failpoint", "{\"failpoint\":\"" + fp.name() + "\"}");
    while (fp.active() && !cancelled.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

std::string_view phaseName(MigrationRecipient::Phase p) {
    switch (p) {
        case MigrationRecipient::Phase::kPurging:
            return "purging";
        case MigrationRecipient::Phase::kCloning:
            return "cloning";
        case MigrationRecipient::Phase::kCatchUp:
            return "catchUp";
        case MigrationRecipient::Phase::kSteady:
            return "steady";
        case MigrationRecipient::Phase::kFinalCatchUp:
            return "criticalSection";
        case MigrationRecipient::Phase::kDone:
            return "done";
        case MigrationRecipient::Phase::kFailed:
            return "failed";
    }
    return "unknown";
}

}  // namespace

MigrationRecipient::MigrationRecipient(ShardingState& state, std::string id, std::string ns,
                                       std::shared_ptr<const placement::RoutingTable> table,
                                       ShardKeyRange range, std::string fromShard,
                                       std::string fromHost)
    : _state(state),
      _id(std::move(id)),
      _ns(std::move(ns)),
      _db(_ns.substr(0, _ns.find('.'))),
      _coll(_ns.substr(_ns.find('.') + 1)),
      _table(std::move(table)),
      _range(std::move(range)),
      _fromShard(std::move(fromShard)),
      _fromHost(std::move(fromHost)) {}

void MigrationRecipient::pace(int64_t donorP99Micros) {
    int64_t local = _state.foregroundLatency().p99Micros();
    std::chrono::milliseconds pause = _pacer.next(std::max(local, donorP99Micros));
    if (pause.count() > 0) {
        std::this_thread::sleep_for(pause);
        _throttledMs.fetch_add(pause.count());
    }
}

Status MigrationRecipient::checkRunning(command::OperationContext& opCtx) const {
    if (_cancelled.load()) {
        return Status(ErrorCodes::Interrupted, "migration " + _id + " was aborted");
    }
    return opCtx.checkForInterrupt();
}

Status MigrationRecipient::cloneAndCatchUp(command::OperationContext& opCtx) {
    MutexLock run(_runMutex);
    command::ServiceContext& service = _state.service();
    net::RemoteClient& client = _state.remoteClient();
    storage::Engine& engine = *service.engine;
    const placement::ShardKeyPattern& pattern = _table->shardKeyPattern();

    // Moving back is always allowed: what this shard still holds of the range (a donation not
    // purged yet, an aborted clone) goes first.
    _phase = Phase::kPurging;
    TRY_STATUS(_state.rangeDeleter().purge(_ns, pattern, _range, _id).getStatus());
    TRY_STATUS(createCollectionLike(service, client, _fromHost, _db, _coll));
    // Stored like the donor's: clustered by the shard key (a no-op when it is already).
    TRY_STATUS(engine.clusterCollection(_ns, pattern.toBson()));
    storage::CollectionPtr coll = engine.getCollection(_ns);
    if (!coll) return Status(ErrorCodes::NamespaceNotFound, _ns + " vanished while receiving");
    TrackedRange tracked;
    tracked.ns = _ns;
    tracked.uuid = coll->uuid;
    tracked.kind = TrackedRange::Kind::kIncoming;
    tracked.migrationId = _id;
    tracked.pattern = std::make_shared<const placement::ShardKeyPattern>(pattern);
    tracked.range = _range;
    TRY_STATUS(_state.trackedRanges().add(tracked));

    _phase = Phase::kCloning;
    // The next page is fetched while this one is written (the donor's read and the network
    // overlap the recipient's ingest).
    auto fetch = [this, &client](bson::BsonObj after) -> StatusWith<bson::BsonObj> {
        bson::BsonBuilder rr;
        rr.append("_shardsvrReadRange", _ns);
        rr.append("min", _range.min());
        rr.append("max", _range.max());
        rr.append("migrationId", _id);
        rr.appendInt64("batchBytes", kCloneBatchBytes);
        for (bson::BsonElement e : after.view()) rr.appendElement(e);
        auto start = std::chrono::steady_clock::now();
        auto page = client.runCommand(_fromHost, "admin", rr.obj(), kRequestTimeout);
        _fetchMicros.fetch_add(micros(std::chrono::steady_clock::now() - start));
        if (page.isOK()) TRY_STATUS(net::replyStatus(page.getValue()));
        return page;
    };
    std::future<StatusWith<bson::BsonObj>> next =
        std::async(std::launch::async, fetch, bson::BsonObj());
    for (;;) {
        StatusWith<bson::BsonObj> fetched = next.get();
        TRY_STATUS(fetched.getStatus());
        TRY_STATUS(checkRunning(opCtx));
        const bson::BsonObj page = std::move(fetched.getValue());
        bool last = page["done"].trueValue();
        if (!last) {
            bson::BsonElement lastKey = page["lastKey"];
            bson::BsonElement lastId = page["lastId"];
            bson::BsonBuilder a;
            if (lastKey.type() == bson::BsonType::BinData) a.appendElementAs(lastKey, "afterKey");
            if (!lastId.eoo() && !lastId.isNull()) a.appendElementAs(lastId, "afterId");
            bson::BsonObj after = a.obj();
            if (after.isEmpty()) {
                last = true;
            } else {
                pace(page["foregroundP99Micros"].numberLong());
                next = std::async(std::launch::async, fetch, std::move(after));
            }
        }
        auto ingestStart = std::chrono::steady_clock::now();
        std::vector<bson::BsonView> docs;
        int64_t bytes = 0;
        if (page["docs"].type() == bson::BsonType::Array) {
            for (bson::BsonElement d : page["docs"].objValue()) {
                if (!d.isObject()) continue;
                docs.push_back(d.objValue());
                bytes += static_cast<int64_t>(docs.back().size());
            }
        }
        int64_t skipped = 0;
        int64_t inserted = 0;
        Status written = _state.trackedRanges().write([&](const storage::WriteUnit& unit) {
            ASSIGN_OR_RETURN(inserted, insertDocuments(engine, _ns, docs, &skipped, &unit));
            return Status::OK();
        });
        if (!written.isOK()) {
            if (!last) (void)next.wait_for(kRequestTimeout);  // never leave the fetch running
            return written;
        }
        _ingestMicros.fetch_add(micros(std::chrono::steady_clock::now() - ingestStart));
        _docsCloned.fetch_add(inserted);
        _bytesCloned.fetch_add(bytes);
        if (last) break;
    }
    log::info("SHARDING", 22053, "Cloned a range",
              "{\"migrationId\":\"" + log::jsonEscape(_id) +
                  "\",\"docs\":" + std::to_string(_docsCloned.load()) +
                  ",\"bytes\":" + std::to_string(_bytesCloned.load()) +
                  ",\"fetchMillis\":" + std::to_string(_fetchMicros.load() / 1000) +
                  ",\"ingestMillis\":" + std::to_string(_ingestMicros.load() / 1000) +
                  ",\"throttledMillis\":" + std::to_string(_throttledMs.load()) + "}");
    hangWhileSet(migrationRecipientHangAfterClone, _cancelled);

    _phase = Phase::kCatchUp;
    for (int round = 0; round < kMaxCatchUpRounds; ++round) {
        TRY_STATUS(checkRunning(opCtx));
        int64_t applied = 0;
        ASSIGN_OR_RETURN(int64_t left, transferModsOnce(opCtx, &applied));
        if (left <= kSteadyBacklog && applied <= kSteadyBacklog) break;
    }
    _phase = Phase::kSteady;
    return Status::OK();
}

StatusWith<int64_t> MigrationRecipient::transferModsOnce(command::OperationContext& opCtx,
                                                         int64_t* applied) {
    bson::BsonBuilder tm;
    tm.append("_shardsvrTransferMods", _ns).append("migrationId", _id);
    ASSIGN_OR_RETURN(bson::BsonObj reply, _state.remoteClient().runCommand(
                                              _fromHost, "admin", tm.obj(), kRequestTimeout));
    TRY_STATUS(net::replyStatus(reply));
    *applied = 0;
    TRY_STATUS(_state.trackedRanges().write([&](const storage::WriteUnit& unit) -> Status {
        _unit = &unit;
        Status s = Status::OK();
        if (reply["deletes"].type() == bson::BsonType::Array) {
            for (bson::BsonElement id : reply["deletes"].objValue()) {
                if (!id.isObject()) continue;
                s = applyDelete(id.objValue());
                if (!s.isOK()) break;
                ++*applied;
            }
        }
        if (s.isOK() && reply["upserts"].type() == bson::BsonType::Array) {
            for (bson::BsonElement doc : reply["upserts"].objValue()) {
                if (!doc.isObject()) continue;
                s = applyUpsert(doc.objValue());
                if (!s.isOK()) break;
                ++*applied;
            }
        }
        _unit = nullptr;
        return s;
    }));
    _modsApplied.fetch_add(*applied);
    int64_t left = reply["backlog"].numberLong();
    _backlog = left;
    return left;
}

Status MigrationRecipient::applyUpsert(bson::BsonView doc) {
    storage::Engine& engine = *_state.service().engine;
    storage::CollectionPtr coll = engine.getCollection(_ns);
    if (!coll) return Status(ErrorCodes::NamespaceNotFound, _ns + " vanished while receiving");
    ASSIGN_OR_RETURN(auto writer, engine.writer(coll, _unit));
    const placement::ShardKeyPattern& pattern = _table->shardKeyPattern();
    for (int attempt = 0; attempt < 100; ++attempt) {
        std::optional<storage::Record> existing = writer->currentById(doc.getField("_id"));
        StatusWith<Timestamp> written = Timestamp{};
        if (!existing) {
            written = writer->insert(doc, storage::WriteOptions{});
        } else if (!_range.containsDoc(pattern, existing->doc)) {
            // Another document of this shard has the same _id (an _id is unique per shard only).
            log::warning("SHARDING", 22021, "Skipped a received document whose _id exists already",
                         "{\"ns\":\"" + log::jsonEscape(_ns) + "\"}");
            return Status::OK();
        } else {
            written =
                writer->update(existing->recordKey, existing->doc, doc, storage::WriteOptions{});
        }
        if (written.isOK()) return Status::OK();
        if (!written.getStatus().is(ErrorCodes::WriteConflict) &&
            !written.getStatus().is(ErrorCodes::NoSuchKey)) {
            return written.getStatus();
        }
    }
    return Status(ErrorCodes::WriteConflict, "could not apply a transferred document");
}

Status MigrationRecipient::applyDelete(bson::BsonView id) {
    storage::Engine& engine = *_state.service().engine;
    storage::CollectionPtr coll = engine.getCollection(_ns);
    if (!coll) return Status::OK();
    ASSIGN_OR_RETURN(auto writer, engine.writer(coll, _unit));
    for (int attempt = 0; attempt < 100; ++attempt) {
        std::optional<storage::Record> existing = writer->currentById(id.getField("_id"));
        if (!existing || !_range.containsDoc(_table->shardKeyPattern(), existing->doc)) {
            return Status::OK();
        }
        auto removed = writer->remove(existing->recordKey, existing->doc, storage::WriteOptions{});
        if (removed.isOK() || removed.getStatus().is(ErrorCodes::NoSuchKey)) return Status::OK();
        if (!removed.getStatus().is(ErrorCodes::WriteConflict)) return removed.getStatus();
    }
    return Status(ErrorCodes::WriteConflict, "could not apply a transferred delete");
}

StatusWith<std::pair<int64_t, int64_t>> MigrationRecipient::catchUpFinal(
    command::OperationContext& opCtx) {
    MutexLock run(_runMutex);
    TRY_STATUS(checkRunning(opCtx));
    _phase = Phase::kFinalCatchUp;
    // The donor holds its writes now: its backlog only shrinks.
    for (;;) {
        TRY_STATUS(checkRunning(opCtx));
        int64_t applied = 0;
        ASSIGN_OR_RETURN(int64_t left, transferModsOnce(opCtx, &applied));
        if (left == 0 && applied == 0) break;
    }
    // The retryable-write records move with the documents: a retry that reaches this shard
    // after the commit finds the statement executed (not applied twice).
    bson::BsonBuilder sr;
    sr.append("_shardsvrFetchSessionRecords", _ns).append("migrationId", _id);
    ASSIGN_OR_RETURN(bson::BsonObj records, _state.remoteClient().runCommand(
                                                _fromHost, "admin", sr.obj(), kRequestTimeout));
    TRY_STATUS(net::replyStatus(records));
    std::vector<std::pair<std::string, std::string>> install;
    if (records["records"].type() == bson::BsonType::Array) {
        for (bson::BsonElement r : records["records"].objValue()) {
            if (!r.isObject()) continue;
            std::optional<txn::StatementRecord> s = txn::parseStatementRecord(r.objValue());
            if (!s) continue;
            if (!_state.transactions().adopt(s->lsid, s->txnNumber, s->stmtId, s->result)) {
                continue;  // this shard knows a newer txnNumber of the session
            }
            install.emplace_back(
                txn::statementRecordKey(s->lsid, s->stmtId),
                txn::statementRecordValue(s->lsid, s->txnNumber, s->stmtId, s->result));
        }
    }
    if (!install.empty()) TRY_STATUS(_state.service().engine->writeSideRecords(install));
    // Every document of the range is written here now, at this shard's timestamps: reads of the
    // collection at older cluster times would miss them once the range is owned.
    if (auto md = _state.metadata()) {
        md->raiseSnapshotFloor(_ns, _state.service().engine->lastCommitTimestamp());
    }
    auto tracked = _state.trackedRanges().find(_ns, _range.encodedMin());
    if (!tracked) return Status(ErrorCodes::InternalError, "the received range is not tracked");
    return std::make_pair(tracked->docs, tracked->bytes);
}

Status MigrationRecipient::committed() {
    _phase = Phase::kDone;
    return _state.trackedRanges().remove(_ns, _range.encodedMin());
}

Status MigrationRecipient::aborted() {
    _cancelled = true;
    MutexLock run(_runMutex);
    _phase = Phase::kFailed;
    auto tracked = _state.trackedRanges().find(_ns, _range.encodedMin());
    if (!tracked || tracked->migrationId != _id) return Status::OK();
    // Not receiving any more: the deleter's purge may take it.
    _state.recipients().remove(_id);
    return _state.rangeDeleter().purge(_ns, _table->shardKeyPattern(), _range).getStatus();
}

void MigrationRecipient::appendProgress(bson::BsonBuilder& b) const {
    auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now() - _started)
                       .count();
    b.append("type", "op")
        .appendInt32("opid", _opid)
        .append("desc", "migration")
        .append("role", "recipient")
        .append("migrationId", _id)
        .append("ns", _ns)
        .appendObject("min", _range.min())
        .appendObject("max", _range.max())
        .append("from", _fromShard)
        .append("to", _state.shardName().value_or(""))
        .append("phase", phaseName(_phase.load()))
        .appendInt64("docsCloned", _docsCloned.load())
        .appendInt64("bytesCloned", _bytesCloned.load())
        .appendInt64("modsApplied", _modsApplied.load())
        .appendInt64("backlog", _backlog.load())
        .appendInt64("throttledMillis", _throttledMs.load())
        .appendInt64("cloneFetchMillis", _fetchMicros.load() / 1000)
        .appendInt64("cloneIngestMillis", _ingestMicros.load() / 1000)
        .appendInt64("foregroundP99BudgetMicros", _pacer.budgetMicros())
        .appendInt64("elapsedMillis", elapsed);
}

Status MigrationRecipients::add(std::shared_ptr<MigrationRecipient> r) {
    MutexLock lk(_mutex);
    for (const auto& other : _items) {
        if (other->ns() == r->ns()) {
            return Status(
                ErrorCodes::ConflictingOperationInProgress,
                "this shard is already receiving a range of " + r->ns() + " (" + other->id() + ")");
        }
    }
    _items.push_back(std::move(r));
    return Status::OK();
}

std::shared_ptr<MigrationRecipient> MigrationRecipients::get(const std::string& id) const {
    MutexLock lk(_mutex);
    for (const auto& r : _items) {
        if (r->id() == id) return r;
    }
    return nullptr;
}

bool MigrationRecipients::receiving(const std::string& ns, const std::string& encodedMin,
                                    const std::string& exceptId) const {
    MutexLock lk(_mutex);
    for (const auto& r : _items) {
        if (r->id() == exceptId) continue;
        if (r->ns() == ns && r->range().encodedMin() == encodedMin) return true;
    }
    return false;
}

void MigrationRecipients::remove(const std::string& id) {
    MutexLock lk(_mutex);
    std::erase_if(_items, [&](const auto& r) { return r->id() == id; });
}

std::vector<std::shared_ptr<MigrationRecipient>> MigrationRecipients::list() const {
    MutexLock lk(_mutex);
    return _items;
}

}  // namespace tessera::shard
