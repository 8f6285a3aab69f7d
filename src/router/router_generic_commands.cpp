// The generic commands of a router: the single-node families that need no storage (handshake,
// diagnostics, failpoints, sessions). hello answers as mongos (`msg: "isdbgrid"`, cmd_hello.cpp
// checks the process role).

#include "base/wall_clock.h"
#include "command/registry.h"
#include "router/router_commands.h"
#include "router/router_util.h"

namespace tessera::router {

void registerRouterGenericCommands(command::CommandRegistry& registry) {
    command::registerHandshakeCommands(registry);
    command::registerDiagnosticCommands(registry);
    command::registerTestCommands(registry);
    command::registerSessionCommands(registry);
    // {isdbgrid: 1}: {isdbgrid: 1, hostname} (MongoDB's IsDbGridCmd).
    registry.add(makeRouterCommand("isdbgrid", {}, false,
                                   [](command::OperationContext& opCtx,
                                      const command::CommandRequest&, bson::BsonBuilder& reply) {
                                       reply.appendInt32("isdbgrid", 1);
                                       reply.append("hostname", opCtx.service ? opCtx.service->host
                                                                              : std::string());
                                       return Status::OK();
                                   }));
}

}  // namespace tessera::router
