#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "net/asio_config.h"
#include "net/idle_pool.h"
#include "net/remote_client.h"
#include "wire/message.h"

namespace tessera::net {

// RemoteClient's asynchronous sibling: one OP_MSG exchange awaited by a coroutine on an io
// thread, so that no thread waits for the remote (the router's forwarded requests,
// RequestHandler::tryForward). Pooled connections per host; each is used by one exchange at a
// time. The result contract is RemoteClient::runCommand's: a Status error means the exchange
// failed (HostUnreachable 6, NetworkTimeout 89, ProtocolError 17) and the connection was
// discarded; otherwise the reply body as the remote sent it, `ok: 0` included.
//
// Thread-safe pool. The sockets belong to `context`; the timeout closes a socket from a timer
// handler, which must not run concurrently with the exchange: run the context on one thread, or
// call from a strand (the timer uses the calling coroutine's executor).
class AsyncRemoteClient {
  public:
    explicit AsyncRemoteClient(asio::io_context& context, RemoteClientOptions options = {});
    ~AsyncRemoteClient();
    AsyncRemoteClient(const AsyncRemoteClient&) = delete;
    AsyncRemoteClient& operator=(const AsyncRemoteClient&) = delete;

    // kOnce: the request is sent at most once, on a connection checked to be still open (a
    // remote that restarted may have closed a pooled one). kIdempotent (a read): a pooled
    // connection is used unchecked, saving a system call per exchange, and when it turns out to
    // be dead (a network error before any reply byte) the request is sent again on a new one.
    enum class Exchange { kOnce, kIdempotent };

    asio::awaitable<StatusWith<bson::BsonObj>> runCommand(std::string host, std::string db,
                                                          bson::BsonObj cmd,
                                                          Exchange kind = Exchange::kOnce);

    struct Connection;

  private:
    // As RemoteClient's: one member's answer to the hello that looks for the primary, and the
    // pause before the members are asked again while none leads.
    static constexpr std::chrono::milliseconds kDiscoveryHelloTimeout{1000};
    static constexpr std::chrono::milliseconds kDiscoveryRetryInterval{50};

    // One exchange with one process; `sent` false when the request certainly did not run.
    struct HostOutcome {
        StatusWith<bson::BsonObj> result;
        bool sent = false;
    };
    // `timeout` 0: options.requestTimeout.
    asio::awaitable<HostOutcome> runOnHost(const std::string& host, const std::string& db,
                                           const bson::BsonObj& cmd, Exchange kind,
                                           std::chrono::milliseconds timeout = {});
    // RemoteClient::runOnPrimary's contract, without a thread waiting.
    asio::awaitable<StatusWith<bson::BsonObj>> runOnPrimary(const std::string& target,
                                                            const std::string& db,
                                                            const bson::BsonObj& cmd,
                                                            Exchange kind);
    asio::awaitable<StatusWith<std::string>> findPrimary(
        const std::string& target, std::chrono::steady_clock::time_point deadline);
    std::shared_ptr<Connection> takeIdle(std::string_view host, bool checkOpen);
    void release(std::shared_ptr<Connection> conn);
    asio::awaitable<StatusWith<std::shared_ptr<Connection>>> connect(const std::string& host);
    struct Outcome;
    // One request/reply on `conn`; releases it to the pool when the exchange succeeded.
    asio::awaitable<Outcome> exchange(std::shared_ptr<Connection> conn,
                                      const wire::Message& request, int32_t requestId,
                                      std::chrono::milliseconds timeout);

    asio::io_context& _context;
    RemoteClientOptions _options;
    IdlePool<std::shared_ptr<Connection>> _idle;
};

}  // namespace tessera::net
