#include "net/server.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <exception>
#include <sstream>
#include <thread>

#include "base/log.h"
#include "base/mutex.h"
#include "net/asio_config.h"
#include "net/connection.h"
#include "net/server_state.h"

namespace tessera::net {
namespace {

std::string endpointString(const asio::ip::tcp::endpoint& ep) {
    const asio::ip::address a = ep.address();
    std::string host = a.is_v6() ? "[" + a.to_string() + "]" : a.to_string();
    return host + ":" + std::to_string(ep.port());
}

int defaultWorkerThreads() {
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    return std::clamp(2 * hw, 2, 8);
}

std::vector<std::string> splitBindIp(const std::string& bindIp) {
    std::vector<std::string> out;
    std::stringstream ss(bindIp);
    std::string item;
    while (std::getline(ss, item, ',')) {
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
        if (!item.empty()) out.push_back(item);
    }
    return out;
}

}  // namespace

struct Server::Impl {
    Impl(ServerOptions opts, RequestHandler& handler)
        : options(std::move(opts)),
          state(handler, options.workerThreads > 0 ? options.workerThreads : defaultWorkerThreads(),
                options.controlThreads, options.maxConnections) {
        if (options.forwardRequests) state.remotes = std::make_unique<AsyncRemoteClient>(state.ioc);
        state.inlineRequests = options.inlineRequests;
        state.handOverOpCode = options.handOver ? options.handOverOpCode : 0;
        state.handOver = options.handOver;
        for (int i = 1; i < options.ioThreads; ++i) {
            state.moreIo.push_back(std::make_unique<asio::io_context>(1));
        }
    }

    // The context of the next connection: the io threads' contexts in turn.
    asio::io_context& nextConnectionContext() {
        size_t i = nextContext.fetch_add(1, std::memory_order_relaxed) % (state.moreIo.size() + 1);
        return i == 0 ? state.ioc : *state.moreIo[i - 1];
    }

    asio::awaitable<void> acceptLoop(asio::ip::tcp::acceptor& acceptor);
    void admit(asio::ip::tcp::socket socket);
    void connectionEnded(int64_t id, const std::string& remote);
    void beginShutdown();  // on the io_context
    void releaseWorkIfDrained();

    ServerOptions options;
    ServerState state;
    std::vector<std::unique_ptr<asio::ip::tcp::acceptor>> acceptors;
    std::unique_ptr<asio::signal_set> signals;
    std::atomic<int64_t> nextConnectionId{0};
    std::atomic<size_t> nextContext{0};
    std::atomic<bool> started{false};
    std::vector<std::string> listenAddresses;  // set by start()
    std::atomic<bool> ran{false};
    int port = 0;
};

asio::awaitable<void> Server::Impl::acceptLoop(asio::ip::tcp::acceptor& acceptor) {
    while (true) {
        // Each context runs on one io thread, which serializes a connection's handlers.
        asio::ip::tcp::socket socket(nextConnectionContext());
        asio::error_code ec;
        co_await acceptor.async_accept(socket, asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            {
                MutexLock lock(state.mutex);
                if (state.shuttingDown) co_return;
            }
            if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
            // E.g. EMFILE: back off briefly rather than spin.
            log::warning("NETWORK", 22986, "Error accepting new connection",
                         "{\"error\":\"" + log::jsonEscape(ec.message()) + "\"}");
            asio::steady_timer timer(state.ioc, std::chrono::milliseconds(10));
            co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            continue;
        }
        admit(std::move(socket));
    }
}

void Server::Impl::admit(asio::ip::tcp::socket socket) {
    asio::error_code ec;
    const auto remoteEp = socket.remote_endpoint(ec);
    const std::string remote = ec ? std::string("unknown") : endpointString(remoteEp);
    socket.set_option(asio::ip::tcp::no_delay(true), ec);

    std::shared_ptr<Connection> conn;
    int64_t count = 0;
    {
        MutexLock lock(state.mutex);
        if (state.shuttingDown) {
            socket.close(ec);
            return;
        }
        if (static_cast<int64_t>(state.connections.size()) >= state.maxConnections) {
            state.rejected.fetch_add(1);
            const int64_t current = static_cast<int64_t>(state.connections.size());
            socket.close(ec);
            log::info("NETWORK", 22942,
                      "Connection refused because there are too many open connections",
                      "{\"remote\":\"" + log::jsonEscape(remote) +
                          "\",\"connectionCount\":" + std::to_string(current) + "}");
            return;
        }
        const int64_t id = ++nextConnectionId;
        conn = std::make_shared<Connection>(state, std::move(socket), id, remote);
        state.connections.emplace(id, conn);
        state.totalCreated.fetch_add(1);
        count = static_cast<int64_t>(state.connections.size());
    }
    const int64_t id = conn->client().connectionId;
    log::info("NETWORK", 22943, "Connection accepted",
              "{\"remote\":\"" + log::jsonEscape(remote) + "\",\"connectionId\":" +
                  std::to_string(id) + ",\"connectionCount\":" + std::to_string(count) + "}");
    asio::co_spawn(conn->executor(), conn->serve(), [this, id, remote](std::exception_ptr e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                log::error("NETWORK", 22990, "Connection coroutine failed",
                           "{\"error\":\"" + log::jsonEscape(ex.what()) + "\"}");
            } catch (...) {
            }
        }
        connectionEnded(id, remote);
    });
}

void Server::Impl::connectionEnded(int64_t id, const std::string& remote) {
    int64_t count;
    {
        MutexLock lock(state.mutex);
        state.connections.erase(id);
        count = static_cast<int64_t>(state.connections.size());
    }
    log::info("NETWORK", 22944, "Connection ended",
              "{\"remote\":\"" + log::jsonEscape(remote) + "\",\"connectionId\":" +
                  std::to_string(id) + ",\"connectionCount\":" + std::to_string(count) + "}");
    releaseWorkIfDrained();
}

void Server::Impl::releaseWorkIfDrained() {
    MutexLock lock(state.mutex);
    if (!state.shuttingDown || !state.connections.empty()) return;
    for (auto& guard : state.workGuards) guard.reset();
}

void Server::Impl::beginShutdown() {
    asio::error_code ec;
    for (auto& acceptor : acceptors) acceptor->close(ec);
    if (signals) signals->cancel(ec);
    std::vector<std::shared_ptr<Connection>> conns;
    {
        MutexLock lock(state.mutex);
        for (auto& [id, conn] : state.connections) conns.push_back(conn);
    }
    for (auto& conn : conns) conn->requestClose();
    releaseWorkIfDrained();
}

Server::Server(ServerOptions options, RequestHandler& handler)
    : _impl(std::make_unique<Impl>(std::move(options), handler)) {}

Server::~Server() {
    shutdown();
    if (_impl->started && !_impl->ran.load()) run();
    _impl->state.workers.join();
    _impl->state.control.join();
}

Status Server::start() {
    invariant(!_impl->started);
    auto& ioc = _impl->state.ioc;
    const std::vector<std::string> ips = splitBindIp(_impl->options.bindIp);
    if (ips.empty()) return Status(ErrorCodes::BadValue, "bindIp lists no address");
    if (_impl->options.port < 0 || _impl->options.port > 65535) {
        return Status(ErrorCodes::BadValue, "invalid port " + std::to_string(_impl->options.port));
    }
    int port = _impl->options.port;
    std::vector<std::unique_ptr<asio::ip::tcp::acceptor>> acceptors;
    for (const std::string& ip : ips) {
        asio::error_code ec;
        asio::ip::address address =
            asio::ip::make_address(ip == "localhost" ? std::string("127.0.0.1") : ip, ec);
        if (ec) return Status(ErrorCodes::BadValue, "Invalid bindIp address: " + ip);
        asio::ip::tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
        auto acceptor = std::make_unique<asio::ip::tcp::acceptor>(ioc);
        auto fail = [&](const asio::error_code& e) {
            return Status(ErrorCodes::SocketException,
                          e.message() + ": " + endpointString(endpoint));
        };
        acceptor->open(endpoint.protocol(), ec);
        if (ec) return fail(ec);
        acceptor->set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
        if (address.is_v6()) acceptor->set_option(asio::ip::v6_only(true), ec);
        acceptor->bind(endpoint, ec);
        if (ec) return fail(ec);
        acceptor->listen(asio::socket_base::max_listen_connections, ec);
        if (ec) return fail(ec);
        // With port 0, every address shares the port the first one got.
        if (port == 0) port = acceptor->local_endpoint().port();
        acceptors.push_back(std::move(acceptor));
    }
    _impl->acceptors = std::move(acceptors);
    _impl->port = port;
    _impl->started = true;
    {
        MutexLock lock(_impl->state.mutex);
        _impl->state.workGuards.push_back(asio::make_work_guard(ioc));
        for (auto& more : _impl->state.moreIo) {
            _impl->state.workGuards.push_back(asio::make_work_guard(*more));
        }
    }
    for (auto& acceptor : _impl->acceptors) {
        _impl->listenAddresses.push_back(endpointString(acceptor->local_endpoint()));
        log::info("NETWORK", 23015, "Listening on",
                  "{\"address\":\"" + log::jsonEscape(_impl->listenAddresses.back()) + "\"}");
        asio::co_spawn(ioc, _impl->acceptLoop(*acceptor), asio::detached);
    }
    log::info("NETWORK", 23016, "Waiting for connections",
              "{\"port\":" + std::to_string(port) + ",\"ssl\":\"off\"}");
    bool alreadyShuttingDown;
    {
        MutexLock lock(_impl->state.mutex);
        alreadyShuttingDown = _impl->state.shuttingDown;
    }
    if (alreadyShuttingDown) {
        Impl* impl = _impl.get();
        asio::post(ioc, [impl] { impl->beginShutdown(); });
    }
    return Status::OK();
}

void Server::run() {
    if (!_impl->started || _impl->ran.exchange(true)) return;
    auto runIo = [](asio::io_context& ioc) {
        while (true) {
            try {
                ioc.run();
                return;
            } catch (const std::exception& e) {
                log::error("NETWORK", 22991, "Uncaught exception on an io thread",
                           "{\"error\":\"" + log::jsonEscape(e.what()) + "\"}");
            }
        }
    };
    std::vector<std::thread> extra;
    for (auto& more : _impl->state.moreIo) {
        extra.emplace_back([&runIo, &ctx = *more] { runIo(ctx); });
    }
    runIo(_impl->state.ioc);
    for (auto& t : extra) t.join();
    log::info("NETWORK", 4784923, "Network layer shut down");
}

void Server::shutdown() {
    {
        MutexLock lock(_impl->state.mutex);
        if (_impl->state.shuttingDown) return;
        _impl->state.shuttingDown = true;
    }
    if (!_impl->started) return;
    Impl* impl = _impl.get();
    asio::post(impl->state.ioc, [impl] { impl->beginShutdown(); });
}

void Server::handleSignals() {
    Impl* impl = _impl.get();
    impl->signals = std::make_unique<asio::signal_set>(impl->state.ioc, SIGINT, SIGTERM);
    impl->signals->async_wait([this](const asio::error_code& ec, int signo) {
        if (ec) return;
        log::info("CONTROL", 23377, "Received signal",
                  "{\"signal\":" + std::to_string(signo) + "}");
        shutdown();
    });
}

int Server::port() const { return _impl->port; }

std::vector<std::string> Server::listenAddresses() const { return _impl->listenAddresses; }

ConnectionStats Server::connectionStats() const {
    ConnectionStats s;
    {
        MutexLock lock(_impl->state.mutex);
        s.current = static_cast<int64_t>(_impl->state.connections.size());
    }
    s.available = std::max<int64_t>(0, _impl->state.maxConnections - s.current);
    s.totalCreated = _impl->state.totalCreated.load();
    s.rejected = _impl->state.rejected.load();
    return s;
}

}  // namespace tessera::net
