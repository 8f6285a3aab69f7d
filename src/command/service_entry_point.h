#pragma once

#include "command/command.h"
#include "command/registry.h"
#include "net/request_handler.h"

namespace tessera::command {

// The command layer's entry: turns one wire request into a command run and its reply document,
// through named phases (entry_point_phases.h: parse → admit → checkOut → run → endStatement →
// reply) that read the role's RolePolicy. It owns the rules every command shares — `$db` and
// command lookup, admin-only and test-only commands, generic arguments (maxTimeMS, lsid,
// txnNumber), the failCommand failpoint, error reply shape ({ok: 0, errmsg, code, codeName, ...})
// and op counters — so commands only parse their own arguments.
class ServiceEntryPoint : public net::RequestHandler {
  public:
    explicit ServiceEntryPoint(ServiceContext& service) : _service(service) {}

    bson::BsonObj handleRequest(const net::Request& request, net::ClientContext& client) override;
    void onDisconnect(net::ClientContext& client) override;
    // The forwarding fast path (Command::planForward): only when no role hooks are installed
    // (they run on the worker path) and failCommand is off; any doubt (unknown command, bad
    // generic arguments) leaves the request to handleRequest, which reports it.
    std::optional<net::ForwardRequest> tryForward(const net::Request& request,
                                                  net::ClientContext& client) override;
    // The command's next round, or, for a request the remotes did not settle (stale version),
    // a new plan with what the command learnt; at most kMaxForwardRounds rounds, then the
    // request is left to handleRequest (a command asks for another round only when nothing was
    // applied, Command::completeForward).
    net::ForwardOutcome completeForward(
        const net::Request& request, net::ClientContext& client, net::ForwardRequest& forward,
        const std::vector<StatusWith<bson::BsonObj>>& remotes) override;
    // Three attempts of a write without shard key (a read round and a write round each).
    static constexpr int kMaxForwardRounds = 6;
    // Internal commands (`_configsvr*`, `_shardsvr*`, `_flush*`: DDL coordination, migration
    // steps, placement refreshes) run on the control lane: they wait on other processes, and
    // those wait on this process's workers (a DDL holder needs the shards' refreshes, which read
    // the catalog here), so they must never occupy the workers. So do commitTransaction,
    // abortTransaction and prepareTransaction: statements waiting for a prepared transaction's
    // decision hold workers, and the coordinator's delivery of that decision must get through.
    bool isControlRequest(const net::Request& request) override;
    // A request whose command says it may (Command::runsInline), without failCommand and without
    // waiting for durability, runs on the io thread with OperationContext::inlineExecution; one
    // that would wait (InlineWouldBlock, before it changed anything) is left to the pool.
    std::optional<bson::BsonObj> runInline(const net::Request& request,
                                           net::ClientContext& client) override;

    // Runs a command given as a document on `db` (tests, internal callers).
    bson::BsonObj runCommand(std::string_view db, bson::BsonView body, ClientState* client);

  private:
    // Runs the request's phases (entry_point_phases.h). nullopt only with `inlineExecution`,
    // when the request would have waited.
    std::optional<bson::BsonObj> execute(CommandRequest& request, ClientState& client,
                                         bool* closeConnection, bool inlineExecution = false);

    ServiceContext& _service;
};

// {ok: 0, errmsg, code, codeName} plus `extra` fields.
bson::BsonObj errorReply(const Status& status, bson::BsonView extra = bson::BsonView());

}  // namespace tessera::command
