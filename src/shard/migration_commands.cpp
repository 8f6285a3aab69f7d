// The range migration commands of a shard (docs/protocols/migration.md): the donor observes the
// range and serves its snapshot and changes (_shardsvrMigrationStart, _shardsvrReadRange,
// _shardsvrTransferMods, _shardsvrFetchSessionRecords, _shardsvrMigrationRecordDonation,
// _shardsvrMigrationEnd), the recipient pulls them (_shardsvrReceiveRange,
// _shardsvrReceiveRangeCatchUp, _shardsvrReceiveRangeEnd), and unowned ranges are deleted
// (_shardsvrDeleteRange, the range deleter); currentOp lists what is in progress.

#include <set>

#include "base/log.h"
#include "base/op_id.h"
#include "bson/validate.h"
#include "command/current_op.h"
#include "command/registry.h"
#include "net/remote_client.h"
#include "query/matcher.h"
#include "shard/command_util.h"
#include "shard/direct_client.h"
#include "shard/ownership_filter.h"
#include "shard/range_ops.h"
#include "shard/sharding_state.h"
#include "storage/engine.h"
#include "txn/session_records.h"
#include "txn/session_transactions.h"

namespace tessera::shard {
namespace {

using command::CommandRequest;
using command::OperationContext;

constexpr int64_t kDefaultBatchBytes = 4 << 20;

struct RangeArgs {
    std::string ns;
    std::string db, coll;
    std::shared_ptr<const placement::RoutingTable> table;
    ShardKeyRange range;
};

// ns (the first element), min, max; the collection must be sharded in this shard's placement
// (refreshed first when `refresh`).
StatusWith<RangeArgs> parseRangeArgs(OperationContext& opCtx, const CommandRequest& request,
                                     std::string_view command, bool refresh) {
    ASSIGN_OR_RETURN(auto md, shardMetadataOf(opCtx));
    bson::BsonElement target = request.firstElement();
    if (target.type() != bson::BsonType::String) {
        return Status(ErrorCodes::TypeMismatch, std::string(command) + " takes a namespace");
    }
    RangeArgs args{std::string(target.stringValue()), "", "", nullptr, {}};
    auto dot = args.ns.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == args.ns.size()) {
        return Status(ErrorCodes::InvalidNamespace, "Invalid namespace: " + args.ns);
    }
    args.db = args.ns.substr(0, dot);
    args.coll = args.ns.substr(dot + 1);
    if (refresh) TRY_STATUS(md->refreshCollection(args.ns));
    ASSIGN_OR_RETURN(args.table, md->collection(args.ns));
    if (!args.table) {
        return Status(ErrorCodes::NamespaceNotSharded, args.ns + " is not sharded");
    }
    ASSIGN_OR_RETURN(bson::BsonView min, objectArg(request.body, "min", command));
    ASSIGN_OR_RETURN(bson::BsonView max, objectArg(request.body, "max", command));
    ASSIGN_OR_RETURN(args.range, ShardKeyRange::make(args.table->shardKeyPattern(), min, max));
    return args;
}

// The donor's migration of `request.migrationId` (an error naming what to do when it is gone).
StatusWith<std::shared_ptr<MigrationSource>> sourceOf(ShardingState& state,
                                                      const CommandRequest& request,
                                                      std::string_view command) {
    ASSIGN_OR_RETURN(std::string id, stringArg(request.body, "migrationId", command));
    auto source = state.changeCapture().get(id);
    if (!source) {
        return Status(ErrorCodes::MigrationConflict,
                      "migration " + id +
                          " is not in progress on the donor (it restarted or aborted it); the "
                          "coordinator aborts it and the move can be retried");
    }
    return source;
}

StatusWith<std::shared_ptr<MigrationRecipient>> recipientOf(ShardingState& state,
                                                            const CommandRequest& request,
                                                            std::string_view command) {
    ASSIGN_OR_RETURN(std::string id, stringArg(request.body, "migrationId", command));
    auto r = state.recipients().get(id);
    if (!r) {
        return Status(ErrorCodes::MigrationConflict,
                      "migration " + id + " is not in progress on the recipient (it restarted)");
    }
    return r;
}

// {_shardsvrMigrationStart: ns, min, max, migrationId, toShard} → {snapshotTimestamp}: the donor
// starts observing the range's writes, then opens the snapshot the clone reads (in that order:
// every write is in the snapshot or observed).
class MigrationStartCommand final : public ShardCommand {
  public:
    std::string_view name() const override { return "_shardsvrMigrationStart"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(ShardingState * state, shardingStateOf(opCtx));
        ASSIGN_OR_RETURN(RangeArgs args, parseRangeArgs(opCtx, request, name(), true));
        ASSIGN_OR_RETURN(std::string id, stringArg(request.body, "migrationId", name()));
        ASSIGN_OR_RETURN(std::string to, stringArg(request.body, "toShard", name()));
        if (auto existing = state->changeCapture().get(id)) {
            reply.appendTimestamp("snapshotTimestamp", existing->snapshot().timestamp().value);
            return Status::OK();
        }
        ASSIGN_OR_RETURN(auto md, shardMetadataOf(opCtx));
        ChunkOwnershipFilter filter(args.table, md->shardId());
        if (filter.ownershipOf(args.range.encodedMin(), args.range.encodedMax()) !=
            ChunkOwnershipFilter::RangeOwnership::kAll) {
            return Status(ErrorCodes::ConflictingOperationInProgress,
                          "this shard does not own all of the range [" + args.range.min().toJson() +
                              ", " + args.range.max().toJson() + ") of " + args.ns);
        }
        auto source = std::make_shared<MigrationSource>(id, args.ns, to,
                                                        args.table->shardKeyPattern(), args.range);
        TRY_STATUS(state->changeCapture().add(source));
        source->setSnapshot(opCtx.service->engine->snapshotIncludingInFlight());
        reply.appendTimestamp("snapshotTimestamp", source->snapshot().timestamp().value);
        log::info("SHARDING", 22050, "Migration started on the donor",
                  "{\"migrationId\":\"" + log::jsonEscape(id) + "\",\"ns\":\"" +
                      log::jsonEscape(args.ns) + "\",\"min\":" + args.range.min().toJson() +
                      ",\"max\":" + args.range.max().toJson() + ",\"to\":\"" + log::jsonEscape(to) +
                      "\"}");
        return Status::OK();
    }
};

// {_shardsvrMigrationEnd: ns, migrationId, committed: bool, waitForDelete?}: the donor stops
// observing. Aborted: the range it recorded for the commit is forgotten (it still owns it).
// Committed: the range deleter deletes the range now (waited for with waitForDelete).
class MigrationEndCommand final : public ShardCommand {
  public:
    std::string_view name() const override { return "_shardsvrMigrationEnd"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder&) override {
        ASSIGN_OR_RETURN(ShardingState * state, shardingStateOf(opCtx));
        ASSIGN_OR_RETURN(RangeArgs args, parseRangeArgs(opCtx, request, name(), true));
        ASSIGN_OR_RETURN(std::string id, stringArg(request.body, "migrationId", name()));
        bool committed = request.body["committed"].trueValue();
        state->changeCapture().remove(id);
        if (!committed) {
            auto tracked = state->trackedRanges().find(args.ns, args.range.encodedMin());
            if (tracked && tracked->kind == TrackedRange::Kind::kOutgoing) {
                TRY_STATUS(state->trackedRanges().remove(args.ns, args.range.encodedMin()));
            }
            return Status::OK();
        }
        // The donor must know the commit (its view decides what it deletes and what
        // unversioned reads see): reloaded here too; a failure is the coordinator's to retry.
        ASSIGN_OR_RETURN(auto md, shardMetadataOf(opCtx));
        TRY_STATUS(md->refreshCollection(args.ns));
        state->rangeDeleter().notify();
        if (request.body["waitForDelete"].trueValue()) {
            TRY_STATUS(state->rangeDeleter().waitUntilDeleted(
                args.ns, args.range, std::chrono::steady_clock::now() + std::chrono::minutes(30)));
        }
        return Status::OK();
    }
};

// {_shardsvrReadRange: ns, min, max, migrationId?, afterId?, afterKey?, batchBytes?}
//   → {docs, lastId, lastKey?, done, foregroundP99Micros}.
// With migrationId: read at the migration's snapshot (the clone). lastKey (BinData 0: the last
// record key) is present when the collection is clustered by the shard key; the next page
// passes it back as afterKey and starts with one seek.
class ReadRangeCommand final : public ShardCommand {
  public:
    std::string_view name() const override { return "_shardsvrReadRange"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(ShardingState * state, shardingStateOf(opCtx));
        ASSIGN_OR_RETURN(RangeArgs args, parseRangeArgs(opCtx, request, name(), false));
        int64_t batchBytes = kDefaultBatchBytes;
        if (bson::BsonElement b = request.body["batchBytes"]; !b.eoo()) {
            if (!b.isNumber() || b.numberLong() <= 0) {
                return Status(ErrorCodes::BadValue, "batchBytes must be a positive number");
            }
            batchBytes = std::min<int64_t>(b.numberLong(), 12 << 20);
        }
        std::string_view afterKey;
        if (bson::BsonElement k = request.body["afterKey"]; !k.eoo()) {
            if (k.type() != bson::BsonType::BinData) {
                return Status(ErrorCodes::TypeMismatch, "afterKey must be BinData");
            }
            afterKey = k.binaryValue().data;
        }
        storage::Engine& engine = *opCtx.service->engine;
        std::shared_ptr<MigrationSource> source;
        std::unique_ptr<storage::ReadSnapshot> own;
        storage::ReadSnapshot* snapshot = nullptr;
        if (!request.body["migrationId"].eoo()) {
            ASSIGN_OR_RETURN(source, sourceOf(*state, request, name()));
            snapshot = &source->snapshot();
        } else {
            own = engine.snapshot(std::nullopt, opCtx.prepareReads);
            snapshot = own.get();
        }
        storage::CollectionPtr coll = engine.getCollection(args.ns);
        RangePage page;
        if (coll) {
            page = readRangePage(*snapshot, *coll, args.table->shardKeyPattern(), args.range,
                                 request.body["afterId"], afterKey, batchBytes);
        } else {
            page.done = true;
        }
        bson::BsonArrayBuilder docs;
        int64_t bytes = 0;
        for (const bson::BsonObj& d : page.docs) {
            docs.append(d);
            bytes += static_cast<int64_t>(d.size());
        }
        if (source) {
            source->docsCloned.fetch_add(static_cast<int64_t>(page.docs.size()));
            source->bytesCloned.fetch_add(bytes);
            if (page.done) source->cloneDone = true;
        }
        reply.appendArray("docs", docs.arr());
        if (page.lastId) {
            reply.appendElementAs(page.lastId->firstElement(), "lastId");
        } else if (bson::BsonElement after = request.body["afterId"]; !after.eoo()) {
            reply.appendElementAs(after, "lastId");
        } else {
            reply.appendNull("lastId");
        }
        if (page.lastKey) {
            reply.appendBinary("lastKey", 0, *page.lastKey);
        } else if (!afterKey.empty()) {
            reply.appendBinary("lastKey", 0, afterKey);
        }
        reply.append("done", page.done);
        reply.appendInt64("foregroundP99Micros", state->foregroundLatency().p99Micros());
        return Status::OK();
    }
};

// {_shardsvrTransferMods: ns, migrationId} → {upserts: [doc], deletes: [{_id}], backlog}: the
// documents of the range changed since the last call (since the snapshot at first), each as it
// is now — read at a snapshot that includes every write holding a commit timestamp, so a write
// observed before its commit finished is not read without it.
class TransferModsCommand final : public ShardCommand {
  public:
    std::string_view name() const override { return "_shardsvrTransferMods"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        constexpr size_t kMaxIds = 2000;
        constexpr int64_t kMaxBytes = 8 << 20;
        ASSIGN_OR_RETURN(ShardingState * state, shardingStateOf(opCtx));
        ASSIGN_OR_RETURN(auto source, sourceOf(*state, request, name()));
        storage::Engine& engine = *opCtx.service->engine;
        std::vector<bson::BsonObj> ids = source->takeChanged(kMaxIds);
        auto snapshot = engine.snapshotIncludingInFlight();
        storage::CollectionPtr coll = engine.getCollection(source->ns());
        bson::BsonArrayBuilder upserts, deletes;
        int64_t bytes = 0;
        size_t taken = 0;
        for (; taken < ids.size() && bytes < kMaxBytes; ++taken) {
            const bson::BsonObj& id = ids[taken];
            std::optional<storage::Record> rec;
            if (coll) rec = snapshot->findById(*coll, id.firstElement());
            if (rec && source->range().containsDoc(source->pattern(), rec->doc)) {
                bytes += static_cast<int64_t>(rec->doc.size());
                upserts.append(rec->doc);
            } else {
                deletes.append(id);
            }
        }
        // Over the byte limit: the rest goes back for the next round.
        if (taken < ids.size()) {
            source->putBack(std::vector<bson::BsonObj>(
                ids.begin() + static_cast<std::ptrdiff_t>(taken), ids.end()));
        }
        source->modsTransferred.fetch_add(static_cast<int64_t>(taken));
        reply.appendArray("upserts", upserts.arr());
        reply.appendArray("deletes", deletes.arr());
        reply.appendInt64("backlog", static_cast<int64_t>(source->backlog()));
        return Status::OK();
    }
};

// {_shardsvrFetchSessionRecords: ns, migrationId} → {records: [{lsid, txnNum, stmtId, result}]}:
// the donor's retryable-write statement records, which the recipient adopts inside the critical
// section (a retry after the move must not apply a statement again).
class FetchSessionRecordsCommand final : public ShardCommand {
  public:
    std::string_view name() const override { return "_shardsvrFetchSessionRecords"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(ShardingState * state, shardingStateOf(opCtx));
        TRY_STATUS(sourceOf(*state, request, name()).getStatus());
        bson::BsonArrayBuilder records;
        for (const auto& [key, value] :
             opCtx.service->engine->sideRecords(txn::kStatementRecordPrefix)) {
            const auto* bytes = reinterpret_cast<const uint8_t*>(value.data());
            if (value.size() < 5 || !bson::validateBson(bytes, value.size()).isOK()) continue;
            records.append(bson::BsonView(value.data()));
        }
        reply.appendArray("records", records.arr());
        return Status::OK();
    }
};

// {_shardsvrMigrationRecordDonation: ns, min, max, migrationId, docs, bytes}: inside the donor's
// critical section, before the commit: the range is tracked as outgoing with the recipient's
// exact counts, so that the donor's owned counts drop by exactly that once the commit is known
// (tracked_ranges.h).
class RecordDonationCommand final : public ShardCommand {
  public:
    std::string_view name() const override { return "_shardsvrMigrationRecordDonation"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder&) override {
        ASSIGN_OR_RETURN(ShardingState * state, shardingStateOf(opCtx));
        ASSIGN_OR_RETURN(RangeArgs args, parseRangeArgs(opCtx, request, name(), false));
        ASSIGN_OR_RETURN(auto source, sourceOf(*state, request, name()));
        ASSIGN_OR_RETURN(auto md, shardMetadataOf(opCtx));
        if (!md->criticalSections().isEntered(CriticalSections::collectionKey(args.ns))) {
            return Status(ErrorCodes::IllegalOperation,
                          "a donation is recorded only inside the migration's critical section");
        }
        storage::CollectionPtr coll = opCtx.service->engine->getCollection(args.ns);
        if (!coll) return Status(ErrorCodes::NamespaceNotFound, args.ns + " does not exist");
        if (auto existing = state->trackedRanges().find(args.ns, args.range.encodedMin())) {
            if (existing->migrationId == source->id()) return Status::OK();  // a retry
        }
        TrackedRange tracked;
        tracked.ns = args.ns;
        tracked.uuid = coll->uuid;
        tracked.kind = TrackedRange::Kind::kOutgoing;
        tracked.migrationId = source->id();
        tracked.pattern =
            std::make_shared<const placement::ShardKeyPattern>(args.table->shardKeyPattern());
        tracked.range = args.range;
        tracked.docs = request.body["docs"].numberLong();
        tracked.bytes = request.body["bytes"].numberLong();
        return state->trackedRanges().add(tracked);
    }
};

// {_shardsvrReceiveRange: ns, min, max, fromShard, fromHost, migrationId, p99BudgetFactor?}
//   → {docsCloned, bytesCloned}: the recipient clones the range from the donor's snapshot and
// catches up until the backlog is small (MigrationRecipient). It stays registered for
// _shardsvrReceiveRangeCatchUp and _shardsvrReceiveRangeEnd.
class ReceiveRangeCommand final : public ShardCommand {
  public:
    std::string_view name() const override { return "_shardsvrReceiveRange"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(ShardingState * state, shardingStateOf(opCtx));
        ASSIGN_OR_RETURN(RangeArgs args, parseRangeArgs(opCtx, request, name(), true));
        ASSIGN_OR_RETURN(std::string fromHost, stringArg(request.body, "fromHost", name()));
        ASSIGN_OR_RETURN(std::string fromShard, stringArg(request.body, "fromShard", name()));
        ASSIGN_OR_RETURN(std::string id, stringArg(request.body, "migrationId", name()));
        auto recipient = std::make_shared<MigrationRecipient>(*state, id, args.ns, args.table,
                                                              args.range, fromShard, fromHost);
        if (bson::BsonElement f = request.body["p99BudgetFactor"]; f.isNumber()) {
            if (f.numberDouble() < 1) {
                return Status(ErrorCodes::BadValue, "p99BudgetFactor must be at least 1");
            }
            recipient->setBudgetFactor(f.numberDouble());
        }
        TRY_STATUS(state->recipients().add(recipient));
        Status cloned = recipient->cloneAndCatchUp(opCtx);
        if (!cloned.isOK()) {
            Status cleaned = recipient->aborted();
            state->recipients().remove(id);
            if (!cleaned.isOK()) {
                log::warning("SHARDING", 22051, "Recipient cleanup after a failed clone failed",
                             "{\"error\":\"" + log::jsonEscape(cleaned.toString()) + "\"}");
            }
            return cloned;
        }
        bson::BsonBuilder progress;
        recipient->appendProgress(progress);
        bson::BsonObj p = progress.obj();
        reply.appendNumber("docsCloned", p["docsCloned"].numberLong());
        reply.appendNumber("bytesCloned", p["bytesCloned"].numberLong());
        reply.appendNumber("modsApplied", p["modsApplied"].numberLong());
        return Status::OK();
    }
};

// {_shardsvrReceiveRangeCatchUp: ns, migrationId} → {docs, bytes}: with the donor's writes
// held, the rest of the changes and the retryable-write records; the range's totals.
class ReceiveRangeCatchUpCommand final : public ShardCommand {
  public:
    std::string_view name() const override { return "_shardsvrReceiveRangeCatchUp"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(ShardingState * state, shardingStateOf(opCtx));
        ASSIGN_OR_RETURN(auto recipient, recipientOf(*state, request, name()));
        ASSIGN_OR_RETURN(auto totals, recipient->catchUpFinal(opCtx));
        reply.appendInt64("docs", totals.first);
        reply.appendInt64("bytes", totals.second);
        return Status::OK();
    }
};

// {_shardsvrReceiveRangeEnd: ns, min, max, migrationId, committed: bool}: committed → the range
// is owned (placement reloaded first), its tracking ends; aborted → its documents are deleted.
// Idempotent, also after a restart of the recipient (the tracked range remains).
class ReceiveRangeEndCommand final : public ShardCommand {
  public:
    std::string_view name() const override { return "_shardsvrReceiveRangeEnd"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder&) override {
        ASSIGN_OR_RETURN(ShardingState * state, shardingStateOf(opCtx));
        ASSIGN_OR_RETURN(RangeArgs args, parseRangeArgs(opCtx, request, name(), true));
        ASSIGN_OR_RETURN(std::string id, stringArg(request.body, "migrationId", name()));
        bool committed = request.body["committed"].trueValue();
        auto recipient = state->recipients().get(id);
        state->recipients().remove(id);
        if (committed) {
            auto tracked = state->trackedRanges().find(args.ns, args.range.encodedMin());
            if (tracked && tracked->kind == TrackedRange::Kind::kIncoming) {
                TRY_STATUS(state->trackedRanges().remove(args.ns, args.range.encodedMin()));
            }
            return Status::OK();
        }
        if (recipient) return recipient->aborted();
        return state->rangeDeleter()
            .purge(args.ns, args.table->shardKeyPattern(), args.range)
            .getStatus();
    }
};

// {_shardsvrDeleteRange: ns, min, max} → {deleted}: the stored documents of the range this shard
// does not own, by its freshly reloaded placement (tracked ranges first).
class DeleteRangeCommand final : public ShardCommand {
  public:
    std::string_view name() const override { return "_shardsvrDeleteRange"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(ShardingState * state, shardingStateOf(opCtx));
        ASSIGN_OR_RETURN(RangeArgs args, parseRangeArgs(opCtx, request, name(), true));
        ASSIGN_OR_RETURN(int64_t deleted, state->rangeDeleter().purge(
                                              args.ns, args.table->shardKeyPattern(), args.range));
        reply.appendNumber("deleted", deleted);
        return Status::OK();
    }
};

// {currentOp: 1, <filter fields>...} on a shard: what is in progress here — the migrations
// (donor and recipient parts), range deletions, the sessions' open transactions and the commits
// this shard coordinates — as {inprog: [...]}; the other fields are a match filter on them
// (command/current_op.h). Other commands are not listed (README.md "Not done").
class CurrentOpCommand final : public command::Command {
  public:
    std::string_view name() const override { return "currentOp"; }
    bool adminOnly() const override { return true; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(ShardingState * state, shardingStateOf(opCtx));
        ASSIGN_OR_RETURN(command::CurrentOpFilter filter, command::CurrentOpFilter::parse(request));
        bson::BsonArrayBuilder inprog;
        auto add = [&](bson::BsonObj op) {
            if (filter.wants(op)) inprog.append(op);
        };
        if (txn::SessionTransactions* transactions = opCtx.service->transactions) {
            for (bson::BsonObj& op : transactions->currentOps()) add(std::move(op));
        }
        for (bson::BsonObj& op : state->coordinator().currentOps()) add(std::move(op));
        for (const auto& source : state->changeCapture().list()) {
            bson::BsonBuilder b;
            appendSourceProgress(*state, *source, b);
            add(b.obj());
        }
        for (const auto& r : state->recipients().list()) {
            bson::BsonBuilder b;
            r->appendProgress(b);
            add(b.obj());
        }
        std::vector<std::string> listedRanges;
        for (const TrackedRange& t : state->trackedRanges().list()) {
            if (state->recipients().receiving(t.ns, t.range.encodedMin())) continue;
            listedRanges.push_back(t.recordKey());
            bson::BsonBuilder b;
            b.append("type", "op")
                .appendInt32("opid", _rangeOpIds.idFor(listedRanges.back()))
                .append("desc", "rangeDeletion")
                .append("ns", t.ns)
                .appendObject("min", t.range.min())
                .appendObject("max", t.range.max())
                .append("kind", t.kind == TrackedRange::Kind::kIncoming ? "incoming" : "outgoing")
                .appendInt64("docsLeft", t.docs)
                .appendInt64("bytesLeft", t.bytes);
            if (auto failure = state->rangeDeleter().failureOf(listedRanges.back())) {
                b.append("state", failure->gaveUp() ? "failed" : "retrying")
                    .appendInt32("attempts", failure->attempts)
                    .appendInt32("maxAttempts", RangeDeleter::kMaxAttempts);
                b.startObject("lastError")
                    .appendInt32("code", failure->lastError.code())
                    .append("codeName", failure->lastError.codeName())
                    .append("errmsg", failure->lastError.reason())
                    .end();
            }
            add(b.obj());
        }
        _rangeOpIds.retainOnly(listedRanges);
        reply.appendArray("inprog", inprog.arr());
        return Status::OK();
    }

  private:
    KeyedOpIds _rangeOpIds;  // the tracked ranges', stable while listed

    static void appendSourceProgress(ShardingState& state, const MigrationSource& s,
                                     bson::BsonBuilder& b) {
        auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - s.started)
                           .count();
        auto md = state.metadata();
        auto enteredAt =
            md ? md->criticalSections().enteredAt(CriticalSections::collectionKey(s.ns()))
               : std::nullopt;
        bool inSection = enteredAt.has_value();
        int64_t criticalSectionMs = inSection
                                        ? std::chrono::duration_cast<std::chrono::milliseconds>(
                                              std::chrono::steady_clock::now() - *enteredAt)
                                              .count()
                                        : 0;
        b.append("type", "op")
            .appendInt32("opid", s.opid)
            .append("desc", "migration")
            .append("role", "donor")
            .append("migrationId", s.id())
            .append("ns", s.ns())
            .appendObject("min", s.range().min())
            .appendObject("max", s.range().max())
            .append("from", state.shardName().value_or(""))
            .append("to", s.toShard())
            .append("phase", inSection            ? "criticalSection"
                             : s.cloneDone.load() ? "catchUp"
                                                  : "cloning")
            .appendInt64("docsCloned", s.docsCloned.load())
            .appendInt64("bytesCloned", s.bytesCloned.load())
            .appendInt64("modsTransferred", s.modsTransferred.load())
            .appendInt64("backlog", static_cast<int64_t>(s.backlog()))
            .appendInt64("criticalSectionMs", criticalSectionMs)
            .appendInt64("elapsedMillis", elapsed);
    }
};

}  // namespace

namespace {

// The option fields collMod can change on an existing collection.
constexpr std::string_view kModifiableOptions[] = {"validator", "validationLevel",
                                                   "validationAction"};

bool sameElement(bson::BsonElement a, bson::BsonElement b) {
    if (a.eoo() || b.eoo()) return a.eoo() == b.eoo();
    bson::BsonBuilder x, y;
    x.appendElementAs(a, "v");
    y.appendElementAs(b, "v");
    return x.obj().binaryEqual(y.obj());
}

// Makes the existing local collection's validator and validation settings those of the donor.
Status alignOptions(command::ServiceContext& service, const std::string& db,
                    const std::string& coll, bson::BsonView donorOptions,
                    bson::BsonView localOptions) {
    if (!sameElement(donorOptions["collation"], localOptions["collation"])) {
        return Status(ErrorCodes::InvalidOptions,
                      "this shard holds " + db + "." + coll +
                          " with another default collation than the donor's; it is a leftover of "
                          "an older collection of that name: drop it on this shard, then retry");
    }
    bson::BsonBuilder mod;
    mod.append("collMod", coll);
    bool differs = false;
    for (std::string_view field : kModifiableOptions) {
        bson::BsonElement want = donorOptions[field];
        if (sameElement(want, localOptions[field])) continue;
        differs = true;
        if (!want.eoo()) {
            mod.appendElement(want);
        } else if (field == "validator") {
            mod.startObject("validator").end();  // none
        } else if (field == "validationLevel") {
            mod.append("validationLevel", "strict");
        } else {
            mod.append("validationAction", "error");
        }
    }
    if (!differs) return Status::OK();
    return runLocalCommand(service, db, mod.obj()).getStatus();
}

}  // namespace

// Makes the local `ns` like the donor's: created with the donor's options if missing, else its
// validator and validation settings aligned (a shard that held the collection before may have
// missed a collMod); the donor's indexes created, and indexes the donor no longer has dropped,
// so that every shard holding the collection's data enforces exactly the donor's indexes.
Status createCollectionLike(command::ServiceContext& service, net::RemoteClient& client,
                            const std::string& donorHost, const std::string& db,
                            const std::string& coll) {
    bson::BsonBuilder lc;
    lc.append("listCollections", 1);
    lc.startObject("filter").append("name", coll).end();
    ASSIGN_OR_RETURN(bson::BsonObj lcReply, client.runCommand(donorHost, db, lc.obj()));
    TRY_STATUS(net::replyStatus(lcReply));
    std::vector<bson::BsonObj> colls = cursorBatch(lcReply, "firstBatch");
    bson::BsonView options;
    if (!colls.empty() && colls[0]["options"].isObject()) options = colls[0]["options"].objValue();

    const std::string ns = db + "." + coll;
    if (storage::CollectionPtr local = service.engine->getCollection(ns)) {
        TRY_STATUS(alignOptions(service, db, coll, options, local->options));
    } else {
        bson::BsonBuilder create;
        create.append("create", coll);
        for (bson::BsonElement e : options) {
            if (e.fieldName() != "uuid") create.appendElement(e);
        }
        auto created = runLocalCommand(service, db, create.obj());
        if (!created.isOK() && !created.getStatus().is(ErrorCodes::NamespaceExists)) {
            return created.getStatus();
        }
    }
    bson::BsonBuilder li;
    li.append("listIndexes", coll);
    ASSIGN_OR_RETURN(bson::BsonObj liReply, client.runCommand(donorHost, db, li.obj()));
    TRY_STATUS(net::replyStatus(liReply));
    bson::BsonArrayBuilder specs;
    std::set<std::string, std::less<>> donorNames;
    for (const bson::BsonObj& spec : cursorBatch(liReply, "firstBatch")) {
        if (spec["name"].type() != bson::BsonType::String) continue;
        donorNames.emplace(spec["name"].stringValue());
        if (spec["name"].stringValue() == "_id_") continue;
        bson::BsonBuilder s;
        for (bson::BsonElement e : spec) {
            if (e.fieldName() != "ns") s.appendElement(e);
        }
        specs.append(s.obj());
    }
    if (storage::CollectionPtr local = service.engine->getCollection(ns)) {
        for (const storage::IndexSpec& index : local->indexes) {
            if (index.isIdIndex() || donorNames.count(index.name)) continue;
            bson::BsonBuilder drop;
            drop.append("dropIndexes", coll).append("index", index.name);
            TRY_STATUS(runLocalCommand(service, db, drop.obj()).getStatus());
            log::info("SHARDING", 22031, "Dropped an index the donor does not have",
                      "{\"ns\":\"" + log::jsonEscape(ns) + "\",\"index\":\"" +
                          log::jsonEscape(index.name) + "\"}");
        }
    }
    if (specs.count() == 0) return Status::OK();
    bson::BsonBuilder ci;
    ci.append("createIndexes", coll);
    ci.appendArray("indexes", specs.arr());
    auto indexed = runLocalCommand(service, db, ci.obj());
    if (!indexed.isOK()) {
        log::warning("SHARDING", 22030, "Could not create the donor's indexes",
                     "{\"ns\":\"" + log::jsonEscape(ns) + "\",\"error\":\"" +
                         log::jsonEscape(indexed.getStatus().toString()) + "\"}");
        return indexed.getStatus();
    }
    return Status::OK();
}

void registerShardMigrationCommands(command::CommandRegistry& registry) {
    registry.add(std::make_unique<MigrationStartCommand>());
    registry.add(std::make_unique<MigrationEndCommand>());
    registry.add(std::make_unique<ReadRangeCommand>());
    registry.add(std::make_unique<TransferModsCommand>());
    registry.add(std::make_unique<FetchSessionRecordsCommand>());
    registry.add(std::make_unique<RecordDonationCommand>());
    registry.add(std::make_unique<ReceiveRangeCommand>());
    registry.add(std::make_unique<ReceiveRangeCatchUpCommand>());
    registry.add(std::make_unique<ReceiveRangeEndCommand>());
    registry.add(std::make_unique<DeleteRangeCommand>());
    registry.add(std::make_unique<CurrentOpCommand>());
}

}  // namespace tessera::shard
