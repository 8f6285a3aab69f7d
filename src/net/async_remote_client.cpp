#include "net/async_remote_client.h"

#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "net/remote_message.h"
#include "net/replica_set_monitor.h"

namespace tessera::net {

struct AsyncRemoteClient::Connection {
    Connection(asio::io_context& context, std::string h) : socket(context), host(std::move(h)) {}

    // As RemoteClient's: the remote closed this idle connection (restart, idle timeout).
    bool closedByRemote() {
        uint8_t byte;
        ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0) return true;
        return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK;
    }

    asio::ip::tcp::socket socket;
    std::string host;
    bool timedOut = false;  // set by the exchange's timer before it closes the socket
    // Bumped when an exchange (or connect) ends: a timer callback of an earlier one, already
    // queued when its timer was cancelled, must not close the connection for a later exchange.
    uint64_t generation = 0;
    std::vector<uint8_t> readBuffer;  // a reply's first read (kFirstRead bytes once used)
};

namespace {

constexpr size_t kFirstRead = 16 * 1024;

Status unreachable(std::string_view host, std::string_view what) {
    return Status(ErrorCodes::HostUnreachable,
                  "cannot reach " + std::string(host) + ": " + std::string(what));
}

// Closes the connection's socket when the timer expires; the pending operation then fails.
// The caller calls disarm() when the operation ended.
void armTimeout(asio::steady_timer& timer,
                const std::shared_ptr<AsyncRemoteClient::Connection>& conn) {
    timer.async_wait([conn, generation = conn->generation](const asio::error_code& ec) {
        if (ec || conn->generation != generation) return;  // the operation finished first
        conn->timedOut = true;
        asio::error_code ignored;
        conn->socket.close(ignored);
    });
}

void disarm(asio::steady_timer& timer, AsyncRemoteClient::Connection& conn) {
    timer.cancel();
    ++conn.generation;
}

}  // namespace

AsyncRemoteClient::AsyncRemoteClient(asio::io_context& context, RemoteClientOptions options)
    : _context(context), _options(options), _idle(options.maxIdlePerHost) {}

AsyncRemoteClient::~AsyncRemoteClient() = default;

std::shared_ptr<AsyncRemoteClient::Connection> AsyncRemoteClient::takeIdle(std::string_view host,
                                                                           bool checkOpen) {
    return _idle.take(host,
                      [checkOpen](Connection& c) { return !checkOpen || !c.closedByRemote(); });
}

void AsyncRemoteClient::release(std::shared_ptr<Connection> conn) {
    const std::string host = conn->host;
    _idle.put(host, std::move(conn));
}

asio::awaitable<StatusWith<std::shared_ptr<AsyncRemoteClient::Connection>>>
AsyncRemoteClient::connect(const std::string& host) {
    auto hostPort = parseHostAndPort(host);
    if (!hostPort.isOK()) co_return hostPort.getStatus();
    auto executor = co_await asio::this_coro::executor;
    asio::error_code ec;
    asio::ip::tcp::resolver resolver(executor);
    auto endpoints = co_await resolver.async_resolve(hostPort.getValue().first,
                                                     std::to_string(hostPort.getValue().second),
                                                     asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return unreachable(host, ec.message());
    auto conn = std::make_shared<Connection>(_context, host);
    asio::steady_timer timer(executor, _options.connectTimeout);
    armTimeout(timer, conn);
    co_await asio::async_connect(conn->socket, endpoints,
                                 asio::redirect_error(asio::use_awaitable, ec));
    disarm(timer, *conn);
    if (ec) {
        if (conn->timedOut) {
            co_return Status(ErrorCodes::NetworkTimeout, "connecting to " + host + " timed out");
        }
        co_return unreachable(host, ec.message());
    }
    conn->socket.set_option(asio::ip::tcp::no_delay(true), ec);
    co_return conn;
}

// What one exchange on one connection came to. `replyStarted` is false after a network error
// before any reply byte: on a pooled connection the remote may have closed while it sat idle,
// the request then never reached a live remote.
struct AsyncRemoteClient::Outcome {
    StatusWith<bson::BsonObj> result;
    bool replyStarted = false;
};

asio::awaitable<AsyncRemoteClient::Outcome> AsyncRemoteClient::exchange(
    std::shared_ptr<Connection> conn, const wire::Message& request, int32_t requestId,
    std::chrono::milliseconds timeout) {
    const std::string& host = conn->host;
    asio::steady_timer timer(co_await asio::this_coro::executor, timeout);
    armTimeout(timer, conn);
    asio::error_code ec;
    wire::Message reply;
    Status status = Status::OK();
    co_await asio::async_write(conn->socket, asio::buffer(request.data(), request.size()),
                               asio::redirect_error(asio::use_awaitable, ec));
    // One read usually brings the whole reply (one system call instead of two). Only one
    // request is in flight on a connection, so nothing may follow the reply.
    std::vector<uint8_t>& head = conn->readBuffer;
    head.resize(kFirstRead);
    size_t got = 0;
    while (!ec && got < wire::kHeaderSize) {
        got += co_await conn->socket.async_read_some(
            asio::buffer(head.data() + got, head.size() - got),
            asio::redirect_error(asio::use_awaitable, ec));
    }
    if (!ec) {
        auto parsed = wire::parseHeader(head.data());
        status = parsed.isOK() ? checkReplyHeader(host, parsed.getValue(), requestId)
                               : parsed.getStatus();
        if (status.isOK() && got > static_cast<size_t>(parsed.getValue().messageLength)) {
            status =
                Status(ErrorCodes::ProtocolError, "unexpected bytes after the reply from " + host);
        }
        if (status.isOK()) {
            reply = wire::Message::allocate(static_cast<size_t>(parsed.getValue().messageLength));
            std::memcpy(reply.mutableData(), head.data(), got);
            co_await asio::async_read(conn->socket,
                                      asio::buffer(reply.mutableData() + got, reply.size() - got),
                                      asio::redirect_error(asio::use_awaitable, ec));
        }
    }
    disarm(timer, *conn);
    if (ec) {
        if (conn->timedOut) {
            co_return Outcome{
                Status(ErrorCodes::NetworkTimeout, "request to " + host + " timed out"), true};
        }
        co_return Outcome{unreachable(host, ec.message()), got > 0};
    }
    if (!status.isOK()) co_return Outcome{status, true};  // out of step: the connection is dropped
    auto body = replyBody(host, std::move(reply));
    if (body.isOK()) release(std::move(conn));
    co_return Outcome{std::move(body), true};
}

asio::awaitable<StatusWith<bson::BsonObj>> AsyncRemoteClient::runCommand(std::string host,
                                                                         std::string db,
                                                                         bson::BsonObj cmd,
                                                                         Exchange kind) {
    if (isReplicaSetTarget(host)) co_return co_await runOnPrimary(host, db, cmd, kind);
    HostOutcome outcome = co_await runOnHost(host, db, cmd, kind);
    co_return std::move(outcome.result);
}

asio::awaitable<AsyncRemoteClient::HostOutcome> AsyncRemoteClient::runOnHost(
    const std::string& host, const std::string& db, const bson::BsonObj& cmd, Exchange kind,
    std::chrono::milliseconds timeout) {
    if (timeout.count() <= 0) timeout = _options.requestTimeout;
    const bool idempotent = kind == Exchange::kIdempotent;
    std::shared_ptr<Connection> conn = takeIdle(host, !idempotent);
    const bool pooled = conn != nullptr;
    if (!conn) {
        auto connected = co_await connect(host);
        if (!connected.isOK()) co_return HostOutcome{connected.getStatus(), false};
        conn = std::move(connected.getValue());
    }
    const int32_t requestId = nextRemoteRequestId();
    const wire::Message request = buildRemoteRequest(db, cmd, requestId);
    Outcome outcome = co_await exchange(std::move(conn), request, requestId, timeout);
    if (outcome.result.isOK() || !idempotent || !pooled || outcome.replyStarted) {
        co_return HostOutcome{std::move(outcome.result), true};
    }
    // The unchecked pooled connection was dead; a read may be sent again, on a new connection.
    auto connected = co_await connect(host);
    if (!connected.isOK()) co_return HostOutcome{connected.getStatus(), true};
    outcome = co_await exchange(std::move(connected.getValue()), request, requestId, timeout);
    co_return HostOutcome{std::move(outcome.result), true};
}

asio::awaitable<StatusWith<std::string>> AsyncRemoteClient::findPrimary(
    const std::string& target, std::chrono::steady_clock::time_point deadline) {
    ReplicaSetMonitor& monitor = ReplicaSetMonitor::get();
    const bson::BsonObj hello = primaryDiscoveryHello();
    Status lastError = Status::OK();
    for (;;) {
        if (auto primary = monitor.knownPrimary(target)) co_return *primary;
        auto members = monitor.membersToAsk(target);
        if (!members.isOK()) co_return members.getStatus();
        for (const std::string& member : members.getValue()) {
            HostOutcome reply = co_await runOnHost(member, "admin", hello, Exchange::kIdempotent,
                                                   kDiscoveryHelloTimeout);
            if (!reply.result.isOK()) {
                lastError = reply.result.getStatus();
                continue;
            }
            if (auto primary = monitor.noteHello(target, member, reply.result.getValue())) {
                co_return *primary;
            }
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            co_return ReplicaSetMonitor::noPrimaryFound(target, lastError);
        }
        // No member leads yet (an election): ask again shortly, until the deadline.
        asio::steady_timer pause(co_await asio::this_coro::executor, kDiscoveryRetryInterval);
        co_await pause.async_wait(asio::use_awaitable);
    }
}

asio::awaitable<StatusWith<bson::BsonObj>> AsyncRemoteClient::runOnPrimary(
    const std::string& target, const std::string& db, const bson::BsonObj& cmd, Exchange kind) {
    ReplicaSetMonitor& monitor = ReplicaSetMonitor::get();
    const auto deadline =
        std::chrono::steady_clock::now() + std::min(_options.requestTimeout, kFindPrimaryTimeout);
    for (;;) {
        auto primary = co_await findPrimary(target, deadline);
        if (!primary.isOK()) co_return primary.getStatus();
        HostOutcome outcome = co_await runOnHost(primary.getValue(), db, cmd, kind);
        if (!monitor.sendAgain(target, primary.getValue(), outcome.result, outcome.sent, cmd) ||
            std::chrono::steady_clock::now() >= deadline) {
            co_return std::move(outcome.result);
        }
    }
}

}  // namespace tessera::net
