// The shard's identity, cache flush and critical section commands (src/cluster/README.md "On
// shards"). All run on admin and are sent by the config server.

#include "base/log.h"
#include "command/registry.h"
#include "shard/command_util.h"
#include "shard/direct_client.h"
#include "shard/sharding_state.h"
#include "txn/session_transactions.h"

namespace tessera::shard {

// Defined in migration_commands.cpp / database_commands.cpp / collection_commands.cpp.
void registerShardMigrationCommands(command::CommandRegistry& registry);
void registerShardDatabaseCommands(command::CommandRegistry& registry);
void registerShardCollectionCommands(command::CommandRegistry& registry);
void registerShardChunkStatsCommands(command::CommandRegistry& registry);
void registerShardTransactionCommands(command::CommandRegistry& registry);

namespace {

using command::CommandRequest;
using command::OperationContext;

// {_shardsvrSetShardIdentity: {shardName, configsvrConnectionString, clusterId}} (the fields may
// also be given at the top level).
class SetShardIdentityCommand final : public ShardCommand {
  public:
    std::string_view name() const override { return "_shardsvrSetShardIdentity"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder&) override {
        ASSIGN_OR_RETURN(ShardingState * state, shardingStateOf(opCtx));
        bson::BsonView args =
            request.firstElement().isObject() ? request.firstElement().objValue() : request.body;
        ASSIGN_OR_RETURN(std::string shardName, stringArg(args, "shardName", name()));
        ASSIGN_OR_RETURN(std::string host, stringArg(args, "configsvrConnectionString", name()));
        bson::BsonObj clusterId;
        if (bson::BsonElement c = args["clusterId"]; !c.eoo()) {
            bson::BsonBuilder b;
            b.appendElementAs(c, "clusterId");
            clusterId = b.obj();
        }
        return state->setShardIdentity(shardName, host, clusterId);
    }
};

// {_flushRoutingTableCacheUpdates: ns} / {_flushDatabaseCacheUpdates: db}.
class FlushCommand final : public ShardCommand {
  public:
    FlushCommand(std::string_view name, bool database) : _name(name), _database(database) {}
    std::string_view name() const override { return _name; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder&) override {
        ASSIGN_OR_RETURN(auto md, shardMetadataOf(opCtx));
        bson::BsonElement target = request.firstElement();
        if (target.type() != bson::BsonType::String || target.stringValue().empty()) {
            return Status(ErrorCodes::TypeMismatch,
                          std::string(_name) + " takes a " +
                              (_database ? "database name" : "namespace") + " string");
        }
        std::string what(target.stringValue());
        if (_database) return md->refreshDatabase(what);
        if (what.find('.') == std::string::npos) {
            return Status(ErrorCodes::InvalidNamespace, "Invalid namespace: " + what);
        }
        return md->refreshCollection(what);
    }

  private:
    std::string_view _name;
    bool _database;
};

// Records (or removes) an entered critical section in config.criticalSections {_id: key,
// reason, block: "writes" | "all"}.
Status persistCriticalSection(command::ServiceContext& service, const std::string& key,
                              const std::string& reason, bool entered,
                              CriticalSections::Block block = CriticalSections::Block::kAll) {
    bson::BsonBuilder cmd;
    if (entered) {
        cmd.append("update", kCriticalSectionsCollection);
        cmd.startArray("updates").startObject("0");
        cmd.startObject("q").append("_id", key).end();
        cmd.startObject("u")
            .append("_id", key)
            .append("reason", reason)
            .append("block", block == CriticalSections::Block::kWrites ? "writes" : "all")
            .end();
        cmd.append("upsert", true);
        cmd.end().end();
    } else {
        cmd.append("delete", kCriticalSectionsCollection);
        cmd.startArray("deletes").startObject("0");
        cmd.startObject("q").append("_id", key).end();
        cmd.appendInt32("limit", 1);
        cmd.end().end();
    }
    cmd.startObject("writeConcern").append("j", true).end();
    return runLocalCommand(service, "config", cmd.obj()).getStatus();
}

// {_shardsvrMigrationCriticalSection: ns, enter: bool, reason, block?: "writes" | "all"} and
// {_shardsvrDatabaseCriticalSection: db, enter: bool}. block "writes" (a migration's catch-up)
// holds back writes only; "all" (the default; a migration's commit upgrades to it) also reads.
class CriticalSectionCommand final : public ShardCommand {
  public:
    CriticalSectionCommand(std::string_view name, bool database)
        : _name(name), _database(database) {}
    std::string_view name() const override { return _name; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder&) override {
        ASSIGN_OR_RETURN(auto md, shardMetadataOf(opCtx));
        bson::BsonElement target = request.firstElement();
        if (target.type() != bson::BsonType::String || target.stringValue().empty()) {
            return Status(ErrorCodes::TypeMismatch, std::string(_name) + " takes a string");
        }
        bson::BsonElement enter = request.body["enter"];
        if (enter.type() != bson::BsonType::Bool) {
            return Status(ErrorCodes::TypeMismatch,
                          "BSON field '" + std::string(_name) + ".enter' must be a boolean");
        }
        std::string what(target.stringValue());
        std::string key =
            _database ? CriticalSections::databaseKey(what) : CriticalSections::collectionKey(what);
        if (enter.boolValue()) {
            std::string reason;
            if (bson::BsonElement r = request.body["reason"]; !r.eoo()) reason = r.toString(false);
            auto block = CriticalSections::Block::kAll;
            if (bson::BsonElement b = request.body["block"]; !b.eoo()) {
                if (b.type() != bson::BsonType::String ||
                    (b.stringValue() != "writes" && b.stringValue() != "all") || _database) {
                    return Status(ErrorCodes::BadValue,
                                  "block must be \"writes\" or \"all\" (collections only)");
                }
                if (b.stringValue() == "writes") block = CriticalSections::Block::kWrites;
            }
            // A migration's upgrade to "all" needs no drain of reads: no write can change what
            // they read any more.
            bool drainReads = !md->criticalSections().entered(key).has_value();
            auto deadline = std::chrono::steady_clock::now() + ShardMetadata::kCriticalSectionWait;
            TRY_STATUS(md->criticalSections().enter(key, reason, deadline, block, drainReads));
            // No new write runs; a transaction that wrote before would commit under the old
            // placement: doomed (its client runs it again) or, prepared, awaited.
            if (Status fenced = fenceTransactions(opCtx, what, deadline); !fenced.isOK()) {
                md->criticalSections().exit(key);
                return fenced;
            }
            // Persisted before the coordinator is told: a donor that restarts during the copy
            // re-enters the section at startup instead of accepting writes the recipient's copy
            // would miss (ShardingState::startup).
            Status persisted = persistCriticalSection(*opCtx.service, key, reason, true,
                                                      *md->criticalSections().entered(key));
            if (!persisted.isOK()) md->criticalSections().exit(key);
            return persisted;
        }
        // Reload before releasing the waiters, so they check against the committed placement.
        // A failed reload keeps the section (the coordinator retries the exit): the shard's own
        // view decides what unversioned reads and the range deleter treat as owned.
        Status refreshed = _database ? md->refreshDatabase(what) : md->refreshCollection(what);
        TRY_STATUS(refreshed.withContext("cannot leave the critical section of " + what +
                                         " before reloading its placement: "));
        TRY_STATUS(persistCriticalSection(*opCtx.service, key, "", false));
        md->criticalSections().exit(key);
        return Status::OK();
    }

  private:
    Status fenceTransactions(OperationContext& opCtx, const std::string& what,
                             std::chrono::steady_clock::time_point deadline) const {
        storage::Engine* engine = opCtx.service->engine;
        if (!engine) return Status::OK();
        bool database = _database;
        auto affects = [&](const storage::CollectionInfo& coll) {
            return database ? coll.db == what : coll.ns() == what;
        };
        std::string reason = std::string(database ? "the primary shard of database '"
                                                  : "the placement of collection '") +
                             what + "' is changing (a critical section); run it again";
        ASSIGN_OR_RETURN(size_t doomed, engine->fenceTransactionWriters(affects, reason, deadline));
        if (doomed > 0) {
            // Their documents are released now: the range deleter may delete the moved range.
            if (opCtx.service->transactions) opCtx.service->transactions->abortDoomed();
            log::info("SHARDING", 22131,
                      "Aborted transactions writing a namespace whose placement changes",
                      "{\"namespace\":\"" + log::jsonEscape(what) +
                          "\",\"transactions\":" + std::to_string(doomed) + "}");
        }
        return Status::OK();
    }

    std::string_view _name;
    bool _database;
};

}  // namespace

void registerShardServerCommands(command::CommandRegistry& registry) {
    registry.add(std::make_unique<SetShardIdentityCommand>());
    registry.add(std::make_unique<FlushCommand>("_flushRoutingTableCacheUpdates", false));
    registry.add(
        std::make_unique<FlushCommand>("_flushRoutingTableCacheUpdatesWithWriteConcern", false));
    registry.add(std::make_unique<FlushCommand>("_flushDatabaseCacheUpdates", true));
    registry.add(
        std::make_unique<FlushCommand>("_flushDatabaseCacheUpdatesWithWriteConcern", true));
    registry.add(
        std::make_unique<CriticalSectionCommand>("_shardsvrMigrationCriticalSection", false));
    registry.add(
        std::make_unique<CriticalSectionCommand>("_shardsvrDatabaseCriticalSection", true));
    registerShardMigrationCommands(registry);
    registerShardDatabaseCommands(registry);
    registerShardCollectionCommands(registry);
    registerShardChunkStatsCommands(registry);
    registerShardTransactionCommands(registry);
}

}  // namespace tessera::shard
