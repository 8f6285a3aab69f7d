#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "net/request_handler.h"

namespace tessera::net {

struct ServerOptions {
    // Comma-separated IP addresses ("127.0.0.1,::1"; "localhost" means 127.0.0.1).
    std::string bindIp = "127.0.0.1";
    int port = 27017;  // 0 picks an ephemeral port (see Server::port())
    int ioThreads = 1;
    int workerThreads = 0;  // 0: clamp(2 * hardware threads, 2, 8)
    // Requests the handler settles with one remote exchange (RequestHandler::tryForward) are
    // forwarded asynchronously on the io threads, without the worker pool; the rest run as
    // usual. Run such a server with one io thread (AsyncRemoteClient's timeout contract).
    bool forwardRequests = false;
    int64_t maxConnections = 10000;
    // The control lane's threads (RequestHandler::isControlRequest): requests that wait on other
    // processes run there, never on the workers that serve what they wait for.
    int controlThreads = 16;
    // Requests the handler settles without waiting (RequestHandler::runInline: a point read, a
    // small write that does not wait for its journal) run on the io thread that read them, with
    // no hand-off to a worker and back (two thread wake-ups per request); the rest run on the
    // pool as usual. Run such a server with one io thread per core.
    bool inlineRequests = false;
    // Connections whose first message carries this opCode leave the wire protocol (0: none):
    // the server answers with a header-only message of the same opCode and hands the socket and
    // the message's body to `handOver`, which owns the descriptor from then on — how the members
    // of a replication group reach each other on their one port (src/repl/README.md).
    int32_t handOverOpCode = 0;
    std::function<void(int fd, std::string body)> handOver = nullptr;
};

// For serverStatus `connections`.
struct ConnectionStats {
    int64_t current = 0;
    int64_t available = 0;
    int64_t totalCreated = 0;
    int64_t rejected = 0;  // refused because maxConnections was reached
};

// A MongoDB wire protocol TCP server. Each connection runs as a coroutine on the io threads and
// processes one request at a time (replies go out in request order); commands run on a bounded
// worker pool, so storage work never blocks the io threads. Framing errors close the connection
// (see src/wire/README.md). With forwardRequests, requests that one exchange with another server
// settles are forwarded from the io threads without occupying a worker (the router's targeted
// reads and single writes: no thread hand-off, and one io thread serves many in flight).
//
// Lifecycle: start() binds and listens; run() serves until shutdown(); shutdown() stops accepting,
// closes idle connections at once and busy ones after their in-flight request has been answered,
// and run() returns when every connection has ended (onDisconnect included).
class Server {
  public:
    Server(ServerOptions options, RequestHandler& handler);
    // Shuts down and drains if run() was never called after start(). Never destroy a Server while
    // another thread is still inside run().
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    // Binds every bindIp address. Errors: SocketException (9001) with e.g. "Address already in
    // use: 127.0.0.1:27017", BadValue for an unparsable address.
    Status start();
    // Blocks, running the io threads, until shutdown() completes. Returns at once if start() did
    // not succeed.
    void run();
    // Thread-safe, idempotent, non-blocking (also safe before run()).
    void shutdown();
    // SIGINT/SIGTERM trigger shutdown(). Call after start(), before run().
    void handleSignals();

    // The bound port (after start(); the ephemeral one when options.port is 0).
    int port() const;
    // "ip:port" for every listening socket.
    std::vector<std::string> listenAddresses() const;
    ConnectionStats connectionStats() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> _impl;
};

}  // namespace tessera::net
