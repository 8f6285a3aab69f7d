#include "shard/sharding_state.h"

#include <set>
#include <vector>

#include "base/log.h"
#include "base/mutex.h"
#include "bson/validate.h"
#include "cluster/catalog_cache.h"
#include "command/generic_args.h"
#include "command/retryable_write_record.h"
#include "command/service_entry_point.h"
#include "command/write_ops_util.h"
#include "net/remote_client.h"
#include "net/replica_set_monitor.h"
#include "placement/stale_info.h"
#include "shard/direct_client.h"
#include "shard/persisted_placement.h"
#include "storage/collection_writer.h"
#include "storage/engine.h"
#include "storage/read_snapshot.h"
#include "storage/transaction.h"
#include "txn/session_records.h"
#include "txn/session_transactions.h"

namespace tessera::shard {
namespace {

using command::CommandRequest;
using command::OperationContext;

// What beforeCommand admitted for one operation (OperationContext::admission): its admissions on
// critical sections, left when the operation ends (whatever the path: the admission is owned by
// the operation), and the retryable write it executes.
struct ShardAdmission final : command::OperationAdmission {
    ~ShardAdmission() override {
        for (const auto& [key, isWrite] : admittedKeys) {
            metadata->criticalSections().leave(key, isWrite);
        }
    }
    std::shared_ptr<ShardMetadata> metadata;
    std::vector<std::pair<std::string, bool>> admittedKeys;  // (key, as a write)
    // A retryable write begun in the session's TransactionTable (ended by afterCommand). Its
    // records are written in its document writes' batches by one of the two recorders, which
    // observe the operation's write unit while it runs: an insert/update/delete's statements
    // (also opCtx.statements), or a findAndModify's whole reply. Without either (a node's
    // bulkWrite), the reply is persisted in config.transactions after the command.
    bool retryableWrite = false;
    // A client CRUD command: its latency feeds ForegroundLatency (migration pacing).
    bool foreground = false;
    std::chrono::steady_clock::time_point started;
    std::unique_ptr<command::StatementRecorder> statements;
    std::unique_ptr<command::FindAndModifyRecorder> findAndModify;
};

ShardAdmission* admissionOf(OperationContext& opCtx) {
    return static_cast<ShardAdmission*>(opCtx.admission.get());
}

// A reply as a retry replays it: without the writeConcernError of the first attempt.
bson::BsonObj withoutWriteConcernError(const bson::BsonObj& reply) {
    if (!reply.hasField("writeConcernError")) return reply;
    bson::BsonBuilder b;
    for (bson::BsonElement e : reply) {
        if (e.fieldName() != "writeConcernError") b.appendElement(e);
    }
    return b.obj();
}

// Whether a command only reads its namespace, so that a migration's catch-up (a critical section
// that blocks writes only) lets it through. Anything not listed counts as a write.
bool isReadOnlyCommand(const CommandRequest& request) {
    static const std::set<std::string_view> kReads = {
        "find", "count", "distinct", "listIndexes", "collStats", "dataSize", "explain"};
    if (request.commandName == "aggregate") {
        bson::BsonElement pipeline = request.body["pipeline"];
        if (pipeline.type() != bson::BsonType::Array) return false;
        for (bson::BsonElement stage : pipeline.objValue()) {
            if (!stage.isObject()) return false;
            std::string_view name = stage.objValue().firstElement().fieldName();
            if (name == "$out" || name == "$merge") return false;
        }
        return true;
    }
    return kReads.count(request.commandName) > 0;
}

// The commands that write documents (DDL sent by the config server's coordinators is not one:
// they run inside critical sections they entered themselves).
bool isDocumentWriteCommand(std::string_view name) {
    return name == "insert" || name == "update" || name == "delete" || name == "findAndModify";
}

// The client commands whose latency is the shard's foreground latency.
bool isForegroundCommand(std::string_view name) {
    return name == "find" || name == "insert" || name == "update" || name == "delete" ||
           name == "findAndModify" || name == "aggregate" || name == "count" || name == "getMore";
}

// Databases whose collections are never sharded (and never filtered or version-checked).
bool isLocalOnlyDb(std::string_view db) { return db == "admin" || db == "config" || db == "local"; }

constexpr std::string_view kIdentityId = "shardIdentity";

// A find's command::kRetryableWriteStatusField: whether this shard executed the statement
// (TransactionTable::executed; InlineWouldBlock on an io thread where it would wait).
StatusWith<bool> retryableWriteExecuted(txn::TransactionTable& transactions,
                                        OperationContext& opCtx, const CommandRequest& request,
                                        bson::BsonElement question) {
    const std::string field(command::kRetryableWriteStatusField);
    if (request.commandName != "find") {
        return Status(ErrorCodes::InvalidOptions, field + " is only taken by find");
    }
    if (!question.isObject()) {
        return Status(ErrorCodes::TypeMismatch, field + " must be {lsid, txnNumber, stmtId}");
    }
    bson::BsonView q = question.objValue();
    bson::BsonElement lsid = q["lsid"];
    bson::BsonElement id = lsid.isObject() ? lsid.objValue()["id"] : bson::BsonElement();
    bson::BsonElement txnNumber = q["txnNumber"];
    bson::BsonElement stmtId = q["stmtId"];
    if (id.type() != bson::BsonType::BinData || txnNumber.type() != bson::BsonType::Int64 ||
        txnNumber.numberLong() < 0 || stmtId.type() != bson::BsonType::Int32) {
        return Status(ErrorCodes::TypeMismatch,
                      field + " must be {lsid: {id: UUID}, txnNumber: long, stmtId: int}");
    }
    for (bson::BsonElement e : q) {
        if (e.fieldName() != "lsid" && e.fieldName() != "txnNumber" && e.fieldName() != "stmtId") {
            return Status(ErrorCodes::InvalidOptions,
                          field + " has an unknown field '" + std::string(e.fieldName()) + "'");
        }
    }
    auto deadline =
        opCtx.deadline.value_or(std::chrono::steady_clock::now() + std::chrono::seconds(60));
    return transactions.executed(std::string(id.binaryValue().data), txnNumber.numberLong(),
                                 stmtId.numberInt(), deadline, !opCtx.inlineExecution);
}

}  // namespace

ShardingState::ShardingState(command::ServiceContext& service, std::string configHostOverride)
    : _service(service),
      _configHostOverride(std::move(configHostOverride)),
      _client(std::make_unique<net::RemoteClient>()),
      _tracked(std::make_shared<TrackedRanges>(*service.engine)),
      _coordinator(std::make_unique<txn::TransactionCoordinator>(*service.engine, *_client)),
      _rangeDeleter(std::make_unique<RangeDeleter>(*this)) {
    _commitObservers.addObserver(&_changeCapture);
    if (service.transactions) {
        _localParticipant = std::make_unique<txn::LocalParticipant>(
            *service.transactions, [this] { return shardName().value_or(std::string()); });
        _coordinator->setLocalParticipant(_localParticipant.get());
        // A router's staged commit without journal: the prepare answered before its sync tells
        // its coordinator once durable (docs/protocols/two-phase-commit.md "Staged commit").
        service.transactions->onPreparedUnsynced(
            [this](const std::string& lsid, int64_t txnNumber,
                   const txn::SessionTransactions::Coordinator& coordinator, Timestamp prepareTs) {
                _coordinator->notifyWhenDurable(lsid, txnNumber,
                                                {coordinator.shard, coordinator.host}, prepareTs);
            });
    }
}

ShardingState::~ShardingState() { shutdown(); }

Status ShardingState::startup() {
    storage::Engine& engine = *_service.engine;
    auto snapshot = engine.snapshot();
    if (storage::CollectionPtr coll = engine.getCollection("admin.system.version")) {
        bson::BsonBuilder idb;
        idb.append("_id", kIdentityId);
        bson::BsonObj idHolder = idb.obj();
        if (auto rec = snapshot->findById(*coll, idHolder.firstElement())) {
            bson::BsonView doc = rec->doc;
            bson::BsonElement name = doc["shardName"];
            bson::BsonElement host = doc["configsvrConnectionString"];
            if (name.type() == bson::BsonType::String && host.type() == bson::BsonType::String) {
                bson::BsonObj clusterId;
                if (bson::BsonElement c = doc["clusterId"]; !c.eoo()) {
                    bson::BsonBuilder cb;
                    cb.appendElementAs(c, "clusterId");
                    clusterId = cb.obj();
                }
                applyIdentity(std::string(name.stringValue()), std::string(host.stringValue()),
                              clusterId);
                log::info("SHARDING", 22100, "Loaded the shard identity",
                          "{\"shardName\":\"" + log::jsonEscape(name.stringValue()) + "\"}");
            }
        }
    }
    // Critical sections entered before a restart are entered again before the first request
    // (a migration's donor must not accept writes to a range being copied).
    auto md = metadata();
    if (storage::CollectionPtr coll =
            engine.getCollection("config." + std::string(kCriticalSectionsCollection));
        coll && md) {
        auto cursor = snapshot->scan(*coll);
        while (auto rec = cursor->next()) {
            bson::BsonView doc = rec->doc;
            bson::BsonElement key = doc["_id"];
            if (key.type() != bson::BsonType::String) continue;
            bson::BsonElement reason = doc["reason"];
            std::string why = reason.type() == bson::BsonType::String
                                  ? std::string(reason.stringValue())
                                  : std::string();
            auto block = doc["block"].type() == bson::BsonType::String &&
                                 doc["block"].stringValue() == "writes"
                             ? CriticalSections::Block::kWrites
                             : CriticalSections::Block::kAll;
            Status entered = md->criticalSections().enter(
                std::string(key.stringValue()), why,
                std::chrono::steady_clock::now() + std::chrono::seconds(1), block);
            log::info("SHARDING", 22102, "Re-entered a critical section after restart",
                      "{\"key\":\"" + log::jsonEscape(key.stringValue()) +
                          "\",\"ok\":" + (entered.isOK() ? "true" : "false") + "}");
        }
    }
    // The ranges counted apart; the deleter purges those no longer owned (a donor's range
    // after a commit, a recipient's partial clone after a crash).
    TRY_STATUS(_tracked->load());
    _rangeDeleter->start();
    // The statements' records (side records), then the whole replies of config.transactions
    // (the newest txnNumber of a session wins).
    size_t restored = txn::restoreStatementRecords(engine, *_transactions) +
                      txn::restoreTransactionRecords(engine, *_transactions);
    if (restored > 0) {
        log::info("SHARDING", 22101, "Restored retryable write records",
                  "{\"count\":" + std::to_string(restored) + "}");
    }
    if (txn::SessionTransactions* transactions = _service.transactions) {
        for (const auto& [lsid, txnNumber] : _transactions->newestTxnNumbers()) {
            transactions->restoreRetryableWrite(lsid, txnNumber);
        }
    }
    _sessionReaper = std::make_unique<txn::SessionRecordReaper>(
        *_transactions, engine, [this](std::string_view db, const bson::BsonObj& cmd) {
            return runLocalCommand(_service, db, cmd).getStatus();
        });
    _sessionReaper->start();
    return Status::OK();
}

void ShardingState::appendServerStatus(bson::BsonBuilder& b) const {
    b.startObject("shardRetryableWrites")
        .appendNumber("sessions", static_cast<int64_t>(_transactions->size()))
        .appendNumber("movingStatements", static_cast<int64_t>(_transactions->movingStatements()))
        .appendNumber("retriesWaitingForMove",
                      static_cast<int64_t>(_transactions->retriesWaitingForMove()))
        .end();
}

void ShardingState::shutdown() {
    if (_sessionReaper) _sessionReaper->stop();
    if (_coordinator) _coordinator->stop();
    if (_rangeDeleter) _rangeDeleter->stop();
}

std::shared_ptr<ShardingState::Identity> ShardingState::identity() const {
    MutexLock lk(_mutex);
    return _identity;
}

std::shared_ptr<ShardMetadata> ShardingState::metadata() const {
    auto id = identity();
    return id ? id->metadata : nullptr;
}

std::optional<std::string> ShardingState::shardName() const {
    auto id = identity();
    if (!id) return std::nullopt;
    return id->shardName;
}

std::string ShardingState::configHost() const {
    auto id = identity();
    return id ? id->configHost : _configHostOverride;
}

void ShardingState::applyIdentity(const std::string& shardName, const std::string& configHost,
                                  const bson::BsonObj& clusterId) {
    auto id = std::make_shared<Identity>();
    id->shardName = shardName;
    id->configHost = _configHostOverride.empty() ? configHost : _configHostOverride;
    id->clusterId = clusterId;
    id->registry = std::make_unique<cluster::ShardRegistry>(*_client, id->configHost);
    id->catalog = std::make_unique<cluster::CatalogCache>(*_client, *id->registry);
    id->source = std::make_unique<PersistedPlacementSource>(
        std::make_unique<CatalogPlacementSource>(*id->catalog), _service);
    id->metadata = std::make_shared<ShardMetadata>(shardName, *id->source);
    id->metadata->setTrackedRanges(_tracked);
    MutexLock lk(_mutex);
    _identity = std::move(id);
}

Status ShardingState::setShardIdentity(const std::string& shardName, const std::string& configHost,
                                       const bson::BsonObj& clusterId) {
    if (shardName.empty()) {
        return Status(ErrorCodes::BadValue, "shardName must be a non-empty string");
    }
    if (auto current = identity()) {
        if (current->shardName != shardName) {
            return Status(ErrorCodes::IllegalOperation,
                          "shard identity is already set to '" + current->shardName +
                              "', cannot set it to '" + shardName + "'");
        }
        return Status::OK();  // idempotent
    }
    // "h:p", or the config service's replica set "name/h1:p,h2:p" (reached at its primary).
    TRY_STATUS(net::ConnectionString::parse(configHost).getStatus());
    const std::string& host = configHost;
    bson::BsonBuilder u;
    u.append("_id", kIdentityId);
    u.append("shardName", shardName);
    u.append("configsvrConnectionString", host);
    if (!clusterId.isEmpty()) u.appendElementAs(clusterId.firstElement(), "clusterId");
    bson::BsonBuilder cmd;
    cmd.append("update", "system.version");
    cmd.startArray("updates");
    cmd.startObject("0");
    cmd.startObject("q").append("_id", kIdentityId).end();
    cmd.append("u", u.obj());
    cmd.append("upsert", true);
    cmd.end();
    cmd.end();
    ASSIGN_OR_RETURN(bson::BsonObj reply, runLocalCommand(_service, "admin", cmd.obj()));
    if (reply.hasField("writeErrors")) {
        return Status(ErrorCodes::InternalError,
                      "failed to persist the shard identity: " + reply.toJson());
    }
    applyIdentity(shardName, host, clusterId);
    log::info("SHARDING", 22102, "Shard identity set",
              "{\"shardName\":\"" + log::jsonEscape(shardName) + "\",\"configsvr\":\"" +
                  log::jsonEscape(host) + "\"}");
    return Status::OK();
}

Status ShardingState::beforeCommand(OperationContext& opCtx, const CommandRequest& request,
                                    const command::Command&) {
    if (bson::BsonElement question = request.body[command::kRetryableWriteStatusField];
        !question.eoo()) {
        ASSIGN_OR_RETURN(bool executed,
                         retryableWriteExecuted(*_transactions, opCtx, request, question));
        bson::BsonBuilder b;
        b.appendBool(command::kRetryableWriteExecutedField, executed);
        opCtx.replyExtraFields = b.obj();
    }
    auto admission = std::make_unique<ShardAdmission>();
    auto id = identity();
    if (!id || isLocalOnlyDb(request.db)) {
        opCtx.admission = std::move(admission);
        return Status::OK();
    }
    admission->metadata = id->metadata;
    admission->foreground = isForegroundCommand(request.commandName);
    if (admission->foreground) admission->started = std::chrono::steady_clock::now();
    ShardAdmission& a = *admission;
    opCtx.admission = std::move(admission);  // leaves what it admitted, also on the errors below
    bson::BsonView body = request.body;
    bson::BsonView inner;
    if (request.commandName == "explain" && request.firstElement().isObject()) {
        inner = request.firstElement().objValue();
    }
    auto field = [&](std::string_view name) {
        bson::BsonElement e = body[name];
        return e.eoo() && !inner.isEmpty() ? inner[name] : e;
    };
    bson::BsonElement first = inner.isEmpty() ? body.firstElement() : inner.firstElement();
    std::optional<std::string> ns;
    if (first.type() == bson::BsonType::String && !first.stringValue().empty() &&
        !request.commandName.starts_with("_")) {
        ns = request.db + "." + std::string(first.stringValue());
    }
    bson::BsonElement shardVersion = field("shardVersion");
    bson::BsonElement dbVersion = field("databaseVersion");
    const bool isWrite = !isReadOnlyCommand(request);
    if (!shardVersion.eoo() && ns) {
        ASSIGN_OR_RETURN(placement::ChunkVersion received,
                         placement::ChunkVersion::parse(shardVersion));
        TRY_STATUS(a.metadata->checkShardVersion(*ns, received, opCtx.deadline,
                                                 &opCtx.errorExtraInfo,
                                                 /*mayWait=*/!opCtx.inlineExecution, isWrite));
        a.admittedKeys.emplace_back(CriticalSections::collectionKey(*ns), isWrite);
    }
    if (!dbVersion.eoo()) {
        if (!dbVersion.isObject()) {
            return Status(ErrorCodes::TypeMismatch, "databaseVersion must be an object");
        }
        ASSIGN_OR_RETURN(auto received, placement::DatabaseVersion::parse(dbVersion.objValue()));
        TRY_STATUS(a.metadata->checkDatabaseVersion(request.db, received, opCtx.deadline,
                                                    &opCtx.errorExtraInfo,
                                                    /*mayWait=*/!opCtx.inlineExecution));
        a.admittedKeys.emplace_back(CriticalSections::databaseKey(request.db), true);
    }
    // A read at a cluster time older than a range this shard received would miss it.
    if (ns) {
        std::optional<Timestamp> readTs = opCtx.readAtClusterTime;
        if (opCtx.transaction) readTs = opCtx.transaction->readTimestamp();
        if (readTs) TRY_STATUS(a.metadata->checkSnapshotFloor(*ns, *readTs));
    }
    // The placement this operation reads and writes its own namespace with, decided now, for
    // the whole operation (after the version check, so at the version it admitted).
    if (ns) {
        ASSIGN_OR_RETURN(auto filter, opCtx.ownershipFilter(*ns));
        // A write sent to this shard directly (no shardVersion) to a sharded collection still
        // waits for a migration's critical section: the recipient's last catch-up must not miss
        // it (docs/protocols/migration.md).
        if (filter && shardVersion.eoo() && isDocumentWriteCommand(request.commandName)) {
            TRY_STATUS(a.metadata->admitUnversionedWrite(*ns, opCtx.deadline,
                                                         /*mayWait=*/!opCtx.inlineExecution));
            a.admittedKeys.emplace_back(CriticalSections::collectionKey(*ns), true);
        }
    }
    // Every write of the operation is seen by the migrations in progress (their catch-up).
    opCtx.writeUnit.addObserver(&_changeCapture);
    return Status::OK();
}

std::optional<bson::BsonObj> ShardingState::replayedReply(OperationContext& opCtx,
                                                          const CommandRequest& request,
                                                          const command::Command& command) {
    ShardAdmission* a = admissionOf(opCtx);
    if (!a || !opCtx.lsid || !opCtx.txnNumber || !txn::isRetryableWriteCommand(command.name())) {
        return std::nullopt;
    }
    auto deadline =
        opCtx.deadline.value_or(std::chrono::steady_clock::now() + std::chrono::seconds(60));
    // The session's transactions and retryable writes share one order of txnNumbers.
    if (txn::SessionTransactions* transactions = _service.transactions) {
        Status ordered = transactions->beginRetryableWrite(*opCtx.lsid, *opCtx.txnNumber,
                                                           !opCtx.inlineExecution);
        if (!ordered.isOK()) return command::errorReply(ordered);
    }
    auto started =
        _transactions->begin(*opCtx.lsid, *opCtx.txnNumber, deadline, !opCtx.inlineExecution);
    // A reply returned here ends the command (afterCommand is not called).
    if (!started.isOK()) return command::errorReply(started.getStatus());
    txn::ExecutedView executed = std::move(started).getValue();
    std::string_view name = command.name();
    if (name == "insert" || name == "update" || name == "delete" || name == "bulkWrite") {
        // Statement by statement: the command skips what ran (retryable_statements.h).
        a->statements = std::make_unique<command::StatementRecorder>(*opCtx.lsid, *opCtx.txnNumber,
                                                                     std::move(executed));
        opCtx.statements = a->statements.get();
        opCtx.writeUnit.addObserver(a->statements.get());
    } else if (auto done = executed.find(txn::kWholeCommand)) {
        _transactions->finish(*opCtx.lsid, *opCtx.txnNumber, {});
        return command::replayedWholeReply(*done);  // executed: replay
    } else if (name == "findAndModify") {
        a->findAndModify = command::findAndModifyRecorder(request, *opCtx.lsid, *opCtx.txnNumber);
        if (a->findAndModify) opCtx.writeUnit.addObserver(a->findAndModify.get());
    }
    a->retryableWrite = true;
    return std::nullopt;  // execute; afterCommand ends the attempt
}

void ShardingState::afterCommand(OperationContext& opCtx, const CommandRequest&,
                                 const command::Command&, const Status& status,
                                 const bson::BsonObj& reply) {
    ShardAdmission* a = admissionOf(opCtx);
    if (!a) return;
    if (a->statements) opCtx.writeUnit.removeObserver(a->statements.get());
    if (a->findAndModify) opCtx.writeUnit.removeObserver(a->findAndModify.get());
    opCtx.statements = nullptr;
    if (a->retryableWrite) {
        txn::ExecutedStatements executed;
        // Statements whose document the router moves to another shard: their retries wait
        // for its transaction (txn::TransactionTable::claimMove).
        std::vector<txn::StmtId> moving;
        if (a->statements) {
            // Each statement that wrote is durable already, with its write — also when the
            // command failed later on.
            executed = a->statements->newlyExecuted();
            moving = a->statements->moving();
        } else if (status.isOK()) {
            // findAndModify: its reply went into its write's batch (FindAndModifyRecorder);
            // kept in memory without the reply's writeConcernError (a retry waits for its own).
            executed[txn::kWholeCommand] = withoutWriteConcernError(reply);
        } else if (a->findAndModify && status.is(ErrorCodes::WouldChangeOwningShard)) {
            moving.push_back(txn::kWholeCommand);
        }
        _transactions->finish(*opCtx.lsid, *opCtx.txnNumber, executed, moving);
    }
    if (a->foreground) {
        _latency.record(std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::steady_clock::now() - a->started));
    }
    opCtx.admission.reset();  // leaves the critical sections now, before the reply is sent
}

StatusWith<std::shared_ptr<const command::OwnershipFilter>> ShardingState::ownershipFilter(
    OperationContext& opCtx, std::string_view ns) {
    auto dot = ns.find('.');
    if (dot == std::string_view::npos) return std::shared_ptr<const command::OwnershipFilter>();
    std::string_view db = ns.substr(0, dot);
    std::string_view coll = ns.substr(dot + 1);
    if (isLocalOnlyDb(db) || coll.starts_with("system.")) {
        return std::shared_ptr<const command::OwnershipFilter>();
    }
    auto id = identity();
    if (!id) return std::shared_ptr<const command::OwnershipFilter>();
    return id->metadata->ownershipFilter(ns, /*mayWait=*/!opCtx.inlineExecution);
}

}  // namespace tessera::shard
