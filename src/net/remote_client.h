#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "net/idle_pool.h"

namespace tessera::net {

// One command for RemoteClient::runCommands.
struct RemoteCommand {
    std::string host;   // "host:port", or a replica set "name/h1:p1,h2:p2" (sent to its primary)
    std::string db;     // becomes the command's `$db`
    bson::BsonObj cmd;  // the command body without `$db`
};

struct RemoteClientOptions {
    std::chrono::milliseconds connectTimeout{5000};
    // Bound on one request/reply exchange. Internal commands that may run long (a migration's
    // clone) pass their own larger bound through runCommand's `timeout`.
    std::chrono::milliseconds requestTimeout{120000};
    // Idle connections kept per host; more are closed when returned.
    size_t maxIdlePerHost = 64;
};

// The client side of the wire protocol, used by the cluster roles to talk to each other (router →
// shards and config, config → shards, shard → shard and config). Pooled, blocking connections:
// the caller's thread sends one OP_MSG and waits for its reply. Thread-safe.
//
// Result contract: a Status error means the exchange failed (HostUnreachable 6 when the host
// cannot be reached or the connection broke, NetworkTimeout 89 on a timeout, ProtocolError 17 on
// a malformed reply) and the connection is discarded; otherwise the reply body is returned as the
// remote sent it, `ok: 0` included (use `replyStatus` to turn that into a Status).
class RemoteClient {
  public:
    explicit RemoteClient(RemoteClientOptions options = {});
    ~RemoteClient();
    RemoteClient(const RemoteClient&) = delete;
    RemoteClient& operator=(const RemoteClient&) = delete;

    // Runs `cmd` on `db` at `host`. `timeout` overrides options.requestTimeout when non-zero.
    // A replica set's connection string as `host` reaches its primary (net::ReplicaSetMonitor):
    // a member that refuses the command as not primary, or cannot be reached, sends it on to the
    // next primary; no primary within kFindPrimaryTimeout is FailedToSatisfyReadPreference.
    // A read with `$readPreference: {mode: "primaryPreferred"}` goes to the primary one round of
    // the members' hellos finds, else to the first member that answers it (a Tessera member
    // applies only committed entries: what a secondary answers is committed, maybe older);
    // `servedBy` (optional) names the member that answered, where its cursor lives.
    StatusWith<bson::BsonObj> runCommand(std::string_view host, std::string_view db,
                                         bson::BsonView cmd, std::chrono::milliseconds timeout = {},
                                         std::string* servedBy = nullptr);

    // Runs several commands concurrently (each on its own connection: all requests are sent
    // before the first reply is read). Results are in the order of `cmds`.
    std::vector<StatusWith<bson::BsonObj>> runCommands(const std::vector<RemoteCommand>& cmds);
    // The same, running `meanwhile` on this thread once every request is sent and before the
    // first reply is read (work of the caller's own that overlaps the round trips).
    std::vector<StatusWith<bson::BsonObj>> runCommands(const std::vector<RemoteCommand>& cmds,
                                                       const std::function<void()>& meanwhile);

    // Closes the idle connections to `host` (after a remote restarted).
    void dropConnections(std::string_view host);

    class Connection;

  private:
    // How long one member may take to answer the hello that looks for its set's primary, and
    // how often the members are asked again while none leads.
    static constexpr std::chrono::milliseconds kDiscoveryHelloTimeout{1000};
    static constexpr std::chrono::milliseconds kDiscoveryRetryInterval{50};

    // One exchange with one process. `sent`: whether the request may have reached it (false:
    // it certainly did not run).
    StatusWith<bson::BsonObj> runOnHost(std::string_view host, std::string_view db,
                                        bson::BsonView cmd, std::chrono::milliseconds timeout,
                                        bool& sent);
    // A replica set's command, at its primary (ReplicaSetMonitor): sent again to the next
    // primary while members refuse it as not primary or cannot be reached, for at most
    // kFindPrimaryTimeout.
    StatusWith<bson::BsonObj> runOnPrimary(std::string_view target, std::string_view db,
                                           bson::BsonView cmd, std::chrono::milliseconds timeout);
    // A read preferring the primary (runCommand): the primary, else any member.
    StatusWith<bson::BsonObj> runPreferringPrimary(std::string_view target, std::string_view db,
                                                   bson::BsonView cmd,
                                                   std::chrono::milliseconds timeout,
                                                   std::string* servedBy);
    // The primary of `target`, as known or asked of its members until `deadline`.
    StatusWith<std::string> findPrimary(std::string_view target,
                                        std::chrono::steady_clock::time_point deadline);
    StatusWith<std::unique_ptr<Connection>> acquire(std::string_view host);
    void release(std::unique_ptr<Connection> conn);

    RemoteClientOptions _options;
    IdlePool<std::unique_ptr<Connection>> _idle;
};

// The Status of a reply document: OK for `ok: 1`, else the reply's code (UnknownError when it
// has none) and errmsg. A reply with `writeErrors` or `writeConcernError` is still OK here.
Status replyStatus(bson::BsonView reply);

// Splits "host:port" (IPv4 name or address). BadValue (FailedToParse 9) on a malformed string.
StatusWith<std::pair<std::string, int>> parseHostAndPort(std::string_view hostAndPort);

}  // namespace tessera::net
