#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/status.h"
#include "command/command.h"

namespace tessera::command {
class CommandRegistry;
}

namespace tessera::config {

class ConfigServerImpl;

// The config server role (src/cluster/README.md "On the config server"): owns the catalog in the
// `config` database and runs the DDL coordinators (shardCollection, moveRange, movePrimary, ...).
// One per config process, owned by main; `service.roleState` points at it.
class ConfigServer final : public command::RoleState {
  public:
    // `service` is the config process's ServiceContext (service.engine = its storage, role
    // kConfig). Must outlive this object.
    explicit ConfigServer(command::ServiceContext& service);
    ~ConfigServer();
    ConfigServer(const ConfigServer&) = delete;
    ConfigServer& operator=(const ConfigServer&) = delete;

    // Creates config.version {_id: 1, clusterId: ObjectId} if missing, the catalog indexes, then
    // resumes unfinished coordinators (config.system.coordinators) in a background thread.
    Status startup();
    // Stops background work; idempotent.
    void shutdown();

    // The implementation, for the _configsvr* commands.
    ConfigServerImpl& impl() { return *_impl; }
    // The command hooks of the config process (service.hooks): retryable writes of the catalog
    // (command::RetryableWriteHooks), so that a client's retried write through a router's `config`
    // passthrough is applied at most once.
    command::CommandHooks* hooks();

  private:
    std::unique_ptr<ConfigServerImpl> _impl;
};

// All _configsvr* commands of src/cluster/README.md (admin-only), registered into the config
// process's registry in addition to the single-node commands.
void registerConfigServerCommands(command::CommandRegistry& registry);

}  // namespace tessera::config
