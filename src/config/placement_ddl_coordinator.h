#pragma once

// The placement DDL coordinators (docs/protocols/ddl-coordinators.md "Placement DDL"):
// shardCollection, dropCollection and dropDatabase. Each holds writes to its namespace in a
// critical section on the shards concerned from before it reads anything to decide placement until
// its commit is visible, so that no acknowledged write lands under a placement the commit does not
// keep; the sections it entered are exited on every path that removes its document.

#include <optional>
#include <string>

#include "config/coordinator.h"
#include "config/coordinator_state.h"
#include "placement/shard_key_pattern.h"

namespace tessera::config {

class PlacementDdlCoordinator : public Coordinator {
  public:
    const std::string& id() const override { return _state.id; }
    std::string_view type() const override { return _state.type; }
    CoordinatorTarget target() const override { return {_state.target, database()}; }
    void abandon(const BestEffort& step) override;

  protected:
    PlacementDdlCoordinator(ConfigServerImpl& config, PlacementDdlState state)
        : Coordinator(config), _state(std::move(state)) {}

    bool database() const { return _state.type == "dropDatabase"; }
    Status saveState();
    // Writes the document, then enters the critical section of the target on every shard of
    // the state (undone, and the document removed, if one fails).
    Status begin();
    // Exits every critical section and removes the document (kept when a shard fails: recovery
    // exits the sections again).
    Status end();

    PlacementDdlState _state;
};

// What shardCollection was asked (config_commands.cpp parses it).
struct ShardCollectionRequest {
    std::string ns;
    placement::ShardKeyPattern pattern;
    bool unique = false;
    int numInitialChunks = 0;
    bool simpleCollationGiven = false;  // collation: {locale: "simple"}
    bool implicitlyCreateIndex = true;
    std::string primary;  // the database's primary shard
};

// shardCollection: under the primary's critical section, what exists there (options, indexes,
// documents) decides the initial chunks; the other shards that get chunks get the collection
// with the same options and indexes; the chunks and then the collection entry are the commit.
// Resumed, it finishes when config.collections has the entry and is undone otherwise (the empty
// copies it made dropped).
class ShardCollectionCoordinator final : public PlacementDdlCoordinator {
  public:
    // The live operation.
    ShardCollectionCoordinator(ConfigServerImpl& config, ShardCollectionRequest request);
    // Resumed from its document.
    ShardCollectionCoordinator(ConfigServerImpl& config, PlacementDdlState state)
        : PlacementDdlCoordinator(config, std::move(state)) {}

    Status run() override;
    StatusWith<CoordinatorOutcome> recover() override;
    void abandon(const BestEffort& step) override;

  private:
    struct Plan;
    StatusWith<Plan> decide();
    // Every shard learns the placement, then the primary releases the writes it held.
    Status finish();
    // Drops the empty copies this attempt made, then end().
    Status abort();

    std::optional<ShardCollectionRequest> _request;  // the live operation's
};

// dropCollection of a sharded collection: the catalog entries first (routers and shards then
// see it unsharded), then every shard's copy; every step idempotent, so that it rolls forward
// when resumed. An unsharded collection is dropped on its primary alone, without a document.
class DropCollectionCoordinator final : public PlacementDdlCoordinator {
  public:
    DropCollectionCoordinator(ConfigServerImpl& config, const std::string& ns);
    DropCollectionCoordinator(ConfigServerImpl& config, PlacementDdlState state)
        : PlacementDdlCoordinator(config, std::move(state)) {}

    Status run() override;
    StatusWith<CoordinatorOutcome> recover() override;
    // Whether run() dropped something (the reply names the namespace then).
    bool dropped() const { return _dropped; }

  private:
    Status dropSharded();

    bool _dropped = false;
};

// dropDatabase: every sharded collection of the database (a DropCollectionCoordinator each),
// the database on every shard, then its catalog entry; rolls forward when resumed.
class DropDatabaseCoordinator final : public PlacementDdlCoordinator {
  public:
    // The live operation on `db`, its critical section on `shards`.
    DropDatabaseCoordinator(ConfigServerImpl& config, const std::string& db,
                            std::vector<std::string> shards);
    DropDatabaseCoordinator(ConfigServerImpl& config, PlacementDdlState state)
        : PlacementDdlCoordinator(config, std::move(state)) {}

    Status run() override;
    StatusWith<CoordinatorOutcome> recover() override;

  private:
    Status steps();
};

}  // namespace tessera::config
