#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "base/status.h"
#include "bson/bson_obj.h"
#include "command/command.h"
#include "shard/foreground_latency.h"
#include "shard/migration_recipient.h"
#include "shard/migration_source.h"
#include "shard/range_deleter.h"
#include "shard/shard_metadata.h"
#include "shard/tracked_ranges.h"
#include "txn/session_record_reaper.h"
#include "txn/transaction_coordinator.h"
#include "txn/transaction_table.h"

namespace tessera::net {
class RemoteClient;
}
namespace tessera::cluster {
class ShardRegistry;
class CatalogCache;
}  // namespace tessera::cluster

namespace tessera::command {
class CommandRegistry;
}

namespace tessera::shard {

// config.criticalSections {_id: key, reason}: the critical sections this shard is in, so that a
// restart re-enters them (MongoDB's recoverable critical section).
inline constexpr std::string_view kCriticalSectionsCollection = "criticalSections";

// The shard role's state (src/cluster/README.md "On shards", "The shard's checks"): the shard
// identity, the shard's copy of its placement (ShardMetadata), the critical sections and the
// retryable-write table. Installed by main as the service's hooks and roleState.
//
// A shard with no identity (never added to a cluster) behaves as a standalone: versions are
// ignored, nothing is filtered.
class ShardingState : public command::CommandHooks, public command::RoleState {
  public:
    // `configHostOverride`: the --configdb of the command line ("" = learn it from
    // _shardsvrSetShardIdentity).
    ShardingState(command::ServiceContext& service, std::string configHostOverride);
    ~ShardingState() override;

    // Loads the persisted shard identity (admin.system.version {_id: "shardIdentity"}) and the
    // persisted retryable-write records (statement records, config.transactions), if any.
    Status startup();
    void shutdown();

    // CommandHooks
    Status beforeCommand(command::OperationContext& opCtx, const command::CommandRequest& request,
                         const command::Command& command) override;
    StatusWith<std::shared_ptr<const command::OwnershipFilter>> ownershipFilter(
        command::OperationContext& opCtx, std::string_view ns) override;
    std::optional<bson::BsonObj> replayedReply(command::OperationContext& opCtx,
                                               const command::CommandRequest& request,
                                               const command::Command& command) override;
    void afterCommand(command::OperationContext& opCtx, const command::CommandRequest& request,
                      const command::Command& command, const Status& status,
                      const bson::BsonObj& reply) override;

    // Internal command support --------------------------------------------------------------

    // _shardsvrSetShardIdentity: persists and applies the identity. A different shard name than
    // the one already set is IllegalOperation.
    Status setShardIdentity(const std::string& shardName, const std::string& configHost,
                            const bson::BsonObj& clusterId);
    std::optional<std::string> shardName() const;
    std::string configHost() const;

    command::ServiceContext& service() { return _service; }
    // The placement copy and critical sections, or nullptr while the shard has no identity.
    std::shared_ptr<ShardMetadata> metadata() const;
    // A client for shard-to-shard and shard-to-config traffic (migrations, movePrimary cloning).
    net::RemoteClient& remoteClient() { return *_client; }
    txn::TransactionTable& transactions() { return *_transactions; }
    // The same, for what may outlive this state: the abort callback of a transaction that
    // claimed a moving statement (txn::TransactionTable::claimMove).
    std::weak_ptr<txn::TransactionTable> transactionsHandle() const { return _transactions; }
    // serverStatus's `shardRetryableWrites` section.
    void appendServerStatus(bson::BsonBuilder& b) const;

    // Migrations (docs/protocols/migration.md): the donor's change capture and sources, the
    // recipient's migrations in progress, the ranges counted apart and their deleter, and the
    // foreground latency the clone is paced by.
    ChangeCapture& changeCapture() { return _changeCapture; }
    MigrationRecipients& recipients() { return _recipients; }
    TrackedRanges& trackedRanges() { return *_tracked; }
    RangeDeleter& rangeDeleter() { return *_rangeDeleter; }
    ForegroundLatency& foregroundLatency() { return _latency; }
    // The observers a multi-document transaction's commit tells about its writes (the change
    // capture: a migration's catch-up must see transactional writes too).
    const storage::WriteUnit* transactionCommitObservers() const { return &_commitObservers; }
    // The two-phase commits this shard coordinates for its routers (txn/transaction_coordinator.h).
    txn::TransactionCoordinator& coordinator() { return *_coordinator; }

  private:
    // Everything that exists once the shard knows its name and config server. Member order is
    // destruction order in reverse: the metadata uses the source, which uses the catalog cache.
    struct Identity {
        std::string shardName;
        std::string configHost;
        bson::BsonObj clusterId;
        std::unique_ptr<cluster::ShardRegistry> registry;
        std::unique_ptr<cluster::CatalogCache> catalog;
        std::unique_ptr<PlacementSource> source;
        std::shared_ptr<ShardMetadata> metadata;
    };
    std::shared_ptr<Identity> identity() const;
    void applyIdentity(const std::string& shardName, const std::string& configHost,
                       const bson::BsonObj& clusterId);

    command::ServiceContext& _service;
    std::string _configHostOverride;
    std::unique_ptr<net::RemoteClient> _client;
    mutable Mutex _mutex;
    std::shared_ptr<Identity> _identity GUARDED_BY(_mutex);
    std::shared_ptr<txn::TransactionTable> _transactions =
        std::make_shared<txn::TransactionTable>();
    // Expires _transactions' records with their sessions (started once they are restored).
    std::unique_ptr<txn::SessionRecordReaper> _sessionReaper;
    ChangeCapture _changeCapture;
    storage::WriteUnit _commitObservers;
    MigrationRecipients _recipients;
    std::shared_ptr<TrackedRanges> _tracked;
    ForegroundLatency _latency;
    // This shard's own part of the transactions it coordinates (null without transactions).
    std::unique_ptr<txn::LocalParticipant> _localParticipant;
    std::unique_ptr<txn::TransactionCoordinator> _coordinator;
    std::unique_ptr<RangeDeleter> _rangeDeleter;  // last: its thread uses the members above
};

// Registers every _shardsvr* and _flush* command (they find the ShardingState through
// service.roleState).
void registerShardServerCommands(command::CommandRegistry& registry);

}  // namespace tessera::shard
