#include "net/remote_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "net/remote_message.h"
#include "net/replica_set_monitor.h"
#include "wire/message.h"

namespace tessera::net {
namespace {

Status unreachable(std::string_view host, std::string_view what) {
    return Status(ErrorCodes::HostUnreachable,
                  "cannot reach " + std::string(host) + ": " + std::string(what));
}

}  // namespace

// A blocking TCP connection to one host. Owned by one thread at a time (the pool hands it out).
class RemoteClient::Connection {
  public:
    Connection(std::string host, int fd) : _host(std::move(host)), _fd(fd) {}
    ~Connection() { ::close(_fd); }

    const std::string& host() const { return _host; }

    // Whether the remote closed this idle connection (it restarted, or timed the connection
    // out): a pending EOF or error, seen without blocking. A request on such a connection would
    // be sent into the void and fail on the reply, after the caller can no longer tell whether
    // it ran.
    bool closedByRemote() const {
        uint8_t byte;
        ssize_t n = ::recv(_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0) return true;
        return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK;
    }

    Status send(const wire::Message& msg, std::chrono::milliseconds timeout) {
        setTimeout(SO_SNDTIMEO, timeout);
        const uint8_t* p = msg.data();
        size_t left = msg.size();
        while (left > 0) {
            ssize_t n = ::send(_fd, p, left, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return ioError("send");
            p += n;
            left -= static_cast<size_t>(n);
        }
        return Status::OK();
    }

    StatusWith<bson::BsonObj> receive(int32_t requestId, std::chrono::milliseconds timeout) {
        setTimeout(SO_RCVTIMEO, timeout);
        // One recv usually brings the whole reply (one system call instead of two). Only one
        // request is in flight on a connection, so nothing may follow the reply.
        uint8_t head[kFirstRead];
        size_t got = 0;
        while (got < wire::kHeaderSize) {
            ASSIGN_OR_RETURN(size_t n, receiveSome(head + got, sizeof head - got));
            got += n;
        }
        ASSIGN_OR_RETURN(wire::MsgHeader h, wire::parseHeader(head));
        TRY_STATUS(checkReplyHeader(_host, h, requestId));
        if (h.messageLength < static_cast<int32_t>(wire::kHeaderSize) ||
            got > static_cast<size_t>(h.messageLength)) {
            return Status(ErrorCodes::ProtocolError,
                          "unexpected bytes after the reply from " + _host);
        }
        wire::Message msg = wire::Message::allocate(static_cast<size_t>(h.messageLength));
        std::memcpy(msg.mutableData(), head, got);
        TRY_STATUS(readFully(msg.mutableData() + got, msg.size() - got));
        return replyBody(_host, std::move(msg));
    }

  private:
    // Skips the system call when the socket already has this timeout (the usual case: every
    // request uses the client's default), which saves two system calls per request.
    void setTimeout(int option, std::chrono::milliseconds timeout) {
        auto& current = option == SO_SNDTIMEO ? _sendTimeout : _receiveTimeout;
        if (current == timeout) return;
        current = timeout;
        timeval tv{};
        tv.tv_sec = timeout.count() / 1000;
        tv.tv_usec = (timeout.count() % 1000) * 1000;
        ::setsockopt(_fd, SOL_SOCKET, option, &tv, sizeof tv);
    }

    static constexpr size_t kFirstRead = 16 * 1024;

    // At least one byte (blocking), at most `n`.
    StatusWith<size_t> receiveSome(uint8_t* p, size_t n) {
        for (;;) {
            ssize_t got = ::recv(_fd, p, n, 0);
            if (got < 0 && errno == EINTR) continue;
            if (got == 0) return unreachable(_host, "connection closed by the remote");
            if (got < 0) return ioError("recv");
            return static_cast<size_t>(got);
        }
    }

    Status readFully(uint8_t* p, size_t n) {
        while (n > 0) {
            ASSIGN_OR_RETURN(size_t got, receiveSome(p, n));
            p += got;
            n -= got;
        }
        return Status::OK();
    }

    Status ioError(const char* op) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return Status(ErrorCodes::NetworkTimeout,
                          std::string(op) + " to " + _host + " timed out");
        }
        return unreachable(_host, std::string(op) + ": " + std::strerror(errno));
    }

    std::string _host;
    int _fd;
    // The timeouts set on the socket (-1: never set).
    std::chrono::milliseconds _sendTimeout{-1};
    std::chrono::milliseconds _receiveTimeout{-1};
};

namespace {

// Connects with a bound on the time (non-blocking connect + poll), then switches the socket back
// to blocking mode with TCP_NODELAY (requests are small and latency-bound).
StatusWith<int> connectTo(std::string_view hostAndPort, std::chrono::milliseconds timeout) {
    ASSIGN_OR_RETURN(auto hp, parseHostAndPort(hostAndPort));
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    std::string port = std::to_string(hp.second);
    int rc = ::getaddrinfo(hp.first.c_str(), port.c_str(), &hints, &res);
    if (rc != 0) return unreachable(hostAndPort, gai_strerror(rc));
    Status last = unreachable(hostAndPort, "no address");
    for (addrinfo* ai = res; ai; ai = ai->ai_next) {
        int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) continue;
        int flags = ::fcntl(fd, F_GETFL, 0);
        ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
        int c = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (c != 0 && errno == EINPROGRESS) {
            pollfd pfd{fd, POLLOUT, 0};
            int p = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
            int err = 0;
            socklen_t len = sizeof err;
            if (p == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
                c = 0;
            } else {
                errno = p == 0 ? ETIMEDOUT : (err ? err : errno);
            }
        }
        if (c == 0) {
            ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
            int one = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            ::freeaddrinfo(res);
            return fd;
        }
        last = unreachable(hostAndPort, std::strerror(errno));
        ::close(fd);
    }
    ::freeaddrinfo(res);
    return last;
}

}  // namespace

RemoteClient::RemoteClient(RemoteClientOptions options)
    : _options(options), _idle(options.maxIdlePerHost) {}
RemoteClient::~RemoteClient() = default;

StatusWith<std::unique_ptr<RemoteClient::Connection>> RemoteClient::acquire(std::string_view host) {
    if (auto conn = _idle.take(host, [](Connection& c) { return !c.closedByRemote(); })) {
        return conn;
    }
    ASSIGN_OR_RETURN(int fd, connectTo(host, _options.connectTimeout));
    return std::make_unique<Connection>(std::string(host), fd);
}

void RemoteClient::release(std::unique_ptr<Connection> conn) {
    const std::string host = conn->host();
    _idle.put(host, std::move(conn));
}

void RemoteClient::dropConnections(std::string_view host) { _idle.drop(host); }

StatusWith<bson::BsonObj> RemoteClient::runCommand(std::string_view host, std::string_view db,
                                                   bson::BsonView cmd,
                                                   std::chrono::milliseconds timeout,
                                                   std::string* servedBy) {
    if (timeout.count() <= 0) timeout = _options.requestTimeout;
    if (servedBy) *servedBy = std::string(host);
    if (isReplicaSetTarget(host) && prefersPrimary(cmd)) {
        return runPreferringPrimary(host, db, cmd, timeout, servedBy);
    }
    if (isReplicaSetTarget(host)) return runOnPrimary(host, db, cmd, timeout);
    bool sent = false;
    return runOnHost(host, db, cmd, timeout, sent);
}

StatusWith<bson::BsonObj> RemoteClient::runPreferringPrimary(std::string_view target,
                                                             std::string_view db,
                                                             bson::BsonView cmd,
                                                             std::chrono::milliseconds timeout,
                                                             std::string* servedBy) {
    ReplicaSetMonitor& monitor = ReplicaSetMonitor::get();
    // One round of the members' hellos (no waiting for an election): a read can be served now.
    auto primary = findPrimary(target, std::chrono::steady_clock::now());
    Status last = primary.getStatus();
    if (primary.isOK()) {
        bool sent = false;
        auto reply = runOnHost(primary.getValue(), db, cmd, timeout, sent);
        if (!monitor.sendAgain(target, primary.getValue(), reply, sent, cmd)) {
            if (servedBy) *servedBy = primary.getValue();
            return reply;
        }
        last = reply.isOK() ? replyStatus(reply.getValue()) : reply.getStatus();
    }
    // No primary (the set lost its majority, or elects one): the first member that answers.
    ASSIGN_OR_RETURN(std::vector<std::string> members, monitor.membersToAsk(target));
    for (const std::string& member : members) {
        bool sent = false;
        auto reply = runOnHost(member, db, cmd, timeout, sent);
        Status answered = reply.isOK() ? replyStatus(reply.getValue()) : reply.getStatus();
        if (answered.isOK()) {
            if (servedBy) *servedBy = member;
            return reply;
        }
        last = answered;
    }
    return ReplicaSetMonitor::noPrimaryFound(target, last);
}

StatusWith<bson::BsonObj> RemoteClient::runOnHost(std::string_view host, std::string_view db,
                                                  bson::BsonView cmd,
                                                  std::chrono::milliseconds timeout, bool& sent) {
    int32_t requestId = nextRemoteRequestId();
    wire::Message msg = buildRemoteRequest(db, cmd, requestId);
    // A pooled connection may have been closed by the remote since it was last used (restart):
    // a failed send on a reused connection is retried once on a fresh one. Nothing was executed
    // then, because the request never left this process completely.
    sent = false;
    for (int attempt = 0; attempt < 2; ++attempt) {
        ASSIGN_OR_RETURN(auto conn, acquire(host));
        Status sendStatus = conn->send(msg, timeout);
        if (!sendStatus.isOK()) {
            if (attempt == 0) continue;
            sent = true;  // perhaps in part: the remote may have read it
            return sendStatus;
        }
        sent = true;
        auto reply = conn->receive(requestId, timeout);
        if (!reply.isOK()) return reply.getStatus();
        release(std::move(conn));
        return reply;
    }
    return unreachable(host, "send failed");
}

StatusWith<std::string> RemoteClient::findPrimary(std::string_view target,
                                                  std::chrono::steady_clock::time_point deadline) {
    ReplicaSetMonitor& monitor = ReplicaSetMonitor::get();
    const bson::BsonObj hello = primaryDiscoveryHello();
    Status lastError = Status::OK();
    for (;;) {
        if (auto primary = monitor.knownPrimary(target)) return *primary;
        ASSIGN_OR_RETURN(std::vector<std::string> members, monitor.membersToAsk(target));
        for (const std::string& member : members) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            bool sent = false;
            auto reply = runOnHost(
                member, "admin", hello,
                std::clamp(left, std::chrono::milliseconds(1), kDiscoveryHelloTimeout), sent);
            if (!reply.isOK()) {
                lastError = reply.getStatus();
                continue;
            }
            if (auto primary = monitor.noteHello(target, member, reply.getValue())) {
                return *primary;
            }
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            return ReplicaSetMonitor::noPrimaryFound(target, lastError);
        }
        // No member leads yet (an election): ask again shortly, until the deadline.
        std::this_thread::sleep_for(kDiscoveryRetryInterval);
    }
}

StatusWith<bson::BsonObj> RemoteClient::runOnPrimary(std::string_view target, std::string_view db,
                                                     bson::BsonView cmd,
                                                     std::chrono::milliseconds timeout) {
    ReplicaSetMonitor& monitor = ReplicaSetMonitor::get();
    const auto deadline = std::chrono::steady_clock::now() + std::min(timeout, kFindPrimaryTimeout);
    for (;;) {
        ASSIGN_OR_RETURN(std::string primary, findPrimary(target, deadline));
        bool sent = false;
        auto reply = runOnHost(primary, db, cmd, timeout, sent);
        if (!monitor.sendAgain(target, primary, reply, sent, cmd) ||
            std::chrono::steady_clock::now() >= deadline) {
            return reply;
        }
    }
}

std::vector<StatusWith<bson::BsonObj>> RemoteClient::runCommands(
    const std::vector<RemoteCommand>& cmds) {
    if (cmds.size() == 1) return {runCommand(cmds[0].host, cmds[0].db, cmds[0].cmd)};
    return runCommands(cmds, [] {});
}

std::vector<StatusWith<bson::BsonObj>> RemoteClient::runCommands(
    const std::vector<RemoteCommand>& cmds, const std::function<void()>& meanwhile) {
    struct InFlight {
        std::unique_ptr<Connection> conn;
        int32_t requestId = 0;
        Status status;
    };
    std::vector<InFlight> inflight(cmds.size());
    // A replica set is sent to at its primary; a command it refused is sent again (below).
    std::vector<std::string> hosts;
    hosts.reserve(cmds.size());
    for (const RemoteCommand& c : cmds) {
        if (!isReplicaSetTarget(c.host)) {
            hosts.push_back(c.host);
            continue;
        }
        // A read preferring the primary does not wait for an election (runPreferringPrimary).
        const auto wait = prefersPrimary(c.cmd)
                              ? std::chrono::milliseconds(0)
                              : std::min(_options.requestTimeout, kFindPrimaryTimeout);
        auto primary = findPrimary(c.host, std::chrono::steady_clock::now() + wait);
        hosts.push_back(primary.isOK() ? primary.getValue() : std::string());
        if (!primary.isOK()) inflight[hosts.size() - 1].status = primary.getStatus();
    }
    for (size_t i = 0; i < cmds.size(); ++i) {
        if (hosts[i].empty()) continue;
        auto conn = acquire(hosts[i]);
        if (!conn.isOK()) {
            inflight[i].status = conn.getStatus();
            continue;
        }
        inflight[i].conn = std::move(conn.getValue());
        inflight[i].requestId = nextRemoteRequestId();
        inflight[i].status = inflight[i].conn->send(
            buildRemoteRequest(cmds[i].db, cmds[i].cmd, inflight[i].requestId),
            _options.requestTimeout);
    }
    meanwhile();
    std::vector<StatusWith<bson::BsonObj>> results;
    results.reserve(cmds.size());
    for (size_t i = 0; i < inflight.size(); ++i) {
        InFlight& f = inflight[i];
        if (!f.status.isOK()) {
            results.emplace_back(f.status);
            continue;
        }
        auto reply = f.conn->receive(f.requestId, _options.requestTimeout);
        if (reply.isOK()) release(std::move(f.conn));
        results.push_back(std::move(reply));
    }
    for (size_t i = 0; i < cmds.size(); ++i) {
        if (!isReplicaSetTarget(cmds[i].host)) continue;
        const bool preferring = prefersPrimary(cmds[i].cmd);
        if (hosts[i].empty()) {
            // No primary: a read that prefers one goes to any member that answers.
            if (preferring) {
                results[i] = runPreferringPrimary(cmds[i].host, cmds[i].db, cmds[i].cmd,
                                                  _options.requestTimeout, nullptr);
            }
            continue;
        }
        const bool sent = results[i].isOK() || inflight[i].conn;  // no connection: never sent
        if (ReplicaSetMonitor::get().sendAgain(cmds[i].host, hosts[i], results[i], sent,
                                               cmds[i].cmd)) {
            results[i] = preferring ? runPreferringPrimary(cmds[i].host, cmds[i].db, cmds[i].cmd,
                                                           _options.requestTimeout, nullptr)
                                    : runOnPrimary(cmds[i].host, cmds[i].db, cmds[i].cmd,
                                                   _options.requestTimeout);
        }
    }
    return results;
}

Status replyStatus(bson::BsonView reply) {
    bson::BsonElement ok = reply["ok"];
    bool isOk = false;
    if (ok.type() == bson::BsonType::Double)
        isOk = ok.doubleValue() != 0;
    else if (ok.type() == bson::BsonType::Int32)
        isOk = ok.int32Value() != 0;
    else if (ok.type() == bson::BsonType::Int64)
        isOk = ok.int64Value() != 0;
    else if (ok.type() == bson::BsonType::Bool)
        isOk = ok.boolValue();
    if (isOk) return Status::OK();
    bson::BsonElement code = reply["code"];
    bson::BsonElement msg = reply["errmsg"];
    int c = code.eoo() ? static_cast<int>(ErrorCodes::UnknownError) : code.numberInt();
    std::string m = msg.type() == bson::BsonType::String ? std::string(msg.stringValue())
                                                         : std::string("command failed");
    return Status(c, std::move(m));
}

StatusWith<std::pair<std::string, int>> parseHostAndPort(std::string_view hostAndPort) {
    size_t colon = hostAndPort.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 >= hostAndPort.size()) {
        return Status(ErrorCodes::FailedToParse,
                      "expected host:port, got '" + std::string(hostAndPort) + "'");
    }
    int port = 0;
    for (char c : hostAndPort.substr(colon + 1)) {
        if (c < '0' || c > '9' || port > 65535) {
            return Status(ErrorCodes::FailedToParse,
                          "bad port in '" + std::string(hostAndPort) + "'");
        }
        port = port * 10 + (c - '0');
    }
    if (port <= 0 || port > 65535) {
        return Status(ErrorCodes::FailedToParse, "bad port in '" + std::string(hostAndPort) + "'");
    }
    return std::make_pair(std::string(hostAndPort.substr(0, colon)), port);
}

}  // namespace tessera::net
