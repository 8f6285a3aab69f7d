#pragma once

// Helpers shared by the router's own command families (generic, admin, DDL; router_*.cpp).

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bson/bson_builder.h"
#include "command/command.h"
#include "router/router.h"

namespace tessera::router {

// A command defined by a function (the router's admin and DDL commands are thin translations).
using CommandFn = std::function<Status(command::OperationContext&, const command::CommandRequest&,
                                       bson::BsonBuilder&)>;
std::unique_ptr<command::Command> makeRouterCommand(std::string name,
                                                    std::vector<std::string> aliases,
                                                    bool adminOnly, CommandFn fn);

// The request's body to forward to another process: `$db` and the gossiped metadata fields
// ($clusterTime, $readPreference, ...) removed, the OP_MSG document sequences folded back into
// the body as arrays (e.g. `documents` of an insert).
bson::BsonObj forwardableBody(const command::CommandRequest& request);
// `body` without the fields named in `drop` (and without `$db` and gossip metadata).
bson::BsonObj withoutFields(bson::BsonView body, std::initializer_list<std::string_view> drop);

// A remote reply as this command's reply: an ok reply's fields appended (metadata dropped); an
// error reply returned as its Status, extra fields in opCtx.errorExtraInfo.
Status relayRemoteReply(command::OperationContext& opCtx, bson::BsonView remote,
                        bson::BsonBuilder& reply);
// The Status of a ShardResponse (network error, or the reply's ok: 0).
Status responseStatus(const ShardResponse& r);

// Runs `cmd` on `db` at the config server and returns its reply (ok: 0 included).
StatusWith<bson::BsonObj> runOnConfig(Router& router, std::string_view db, bson::BsonView cmd);
// Runs `cmd` on admin at the config server; an error reply becomes the Status.
StatusWith<bson::BsonObj> runConfigsvrCommand(Router& router, bson::BsonView cmd);

// "db.coll" of a command whose first field names the collection; InvalidNamespace otherwise.
StatusWith<std::string> commandNamespace(const command::CommandRequest& request);
// A full namespace argument ({shardCollection: "db.c"}); InvalidNamespace when malformed.
StatusWith<std::string> nsArgument(const command::CommandRequest& request);

// Every shard's operations in progress (`shardCommand`: a {currentOp: 1, <filter>...} each shard
// answers with {inprog}), each with the field `shard` added: the currentOp command and the
// $currentOp stage (router_admin_commands.cpp).
StatusWith<std::vector<bson::BsonObj>> clusterCurrentOp(Router& router,
                                                        bson::BsonView shardCommand);

// The router's own commands parse their arguments strictly, as MongoDB's IDL does: a field that
// is neither the command's (`known`) nor a generic argument is refused with 40415 "BSON field
// '<command>.<field>' is an unknown field." — never silently dropped.
Status checkKnownFields(const command::CommandRequest& request,
                        std::initializer_list<std::string_view> known);

// Internal to registerRouterCommands: wraps every registered command so that commands run on the
// `config` database are forwarded unchanged to the config server (router_passthrough.cpp).
void registerWithConfigPassthrough(command::CommandRegistry& registry,
                                   std::shared_ptr<command::CommandRegistry> families);

}  // namespace tessera::router
