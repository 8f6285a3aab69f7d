#include "net/connection.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <utility>

#include "base/log.h"
#include "bson/bson_builder.h"
#include "net/worker_pool.h"
#include "wire/op_msg.h"
#include "wire/op_query.h"

namespace tessera::net {
namespace {

// Room for the header, flags, section kind and checksum around a reply body.
constexpr size_t kReplyOverhead = 64;

bson::BsonObj callHandler(RequestHandler& handler, const Request& request, ClientContext& client) {
    try {
        return handler.handleRequest(request, client);
    } catch (...) {
        return errorReply(statusFromCurrentException("command"));
    }
}

// The forwarding hooks must not throw either; an exception there means "not forwarded" (before
// the exchange) or an error reply (after it: the remote may have applied the request).
std::optional<ForwardRequest> callTryForward(RequestHandler& handler, const Request& request,
                                             ClientContext& client) {
    try {
        return handler.tryForward(request, client);
    } catch (...) {
        return std::nullopt;
    }
}

ForwardOutcome callCompleteForward(RequestHandler& handler, const Request& request,
                                   ClientContext& client, ForwardRequest& forward,
                                   const std::vector<StatusWith<bson::BsonObj>>& remotes) {
    try {
        return handler.completeForward(request, client, forward, remotes);
    } catch (...) {
        return {errorReply(statusFromCurrentException("command")), std::nullopt};
    }
}

asio::awaitable<StatusWith<bson::BsonObj>> runExchange(AsyncRemoteClient& remotes,
                                                       const ForwardExchange& e) {
    return remotes.runCommand(e.host, e.db, e.cmd,
                              e.idempotent ? AsyncRemoteClient::Exchange::kIdempotent
                                           : AsyncRemoteClient::Exchange::kOnce);
}

// The round's exchanges at once, on the calling coroutine's io thread; their results in order.
asio::awaitable<std::vector<StatusWith<bson::BsonObj>>> runRound(
    AsyncRemoteClient& remotes, const std::vector<ForwardExchange>& round) {
    std::vector<StatusWith<bson::BsonObj>> results;
    if (round.size() == 1) {  // the common case: no coroutine to spawn
        results.push_back(co_await runExchange(remotes, round.front()));
        co_return results;
    }
    // Each exchange in its own coroutine on this (single-threaded) executor; the last to end
    // cancels the timer this one waits on. The exchanges outlive nothing they reference: this
    // coroutine, which owns `round` through its caller, returns only after all of them ended.
    auto executor = co_await asio::this_coro::executor;
    struct Gather {
        explicit Gather(asio::any_io_executor ex, size_t n)
            : results(n, Status(ErrorCodes::InternalError, "exchange did not end")),
              pending(n),
              done(ex, asio::steady_timer::time_point::max()) {}
        std::vector<StatusWith<bson::BsonObj>> results;
        size_t pending;
        asio::steady_timer done;
    };
    auto gather = std::make_shared<Gather>(executor, round.size());
    for (size_t i = 0; i < round.size(); ++i) {
        asio::co_spawn(
            executor,
            [&remotes, &e = round[i], gather, i]() -> asio::awaitable<void> {
                gather->results[i] = co_await runExchange(remotes, e);
            },
            [gather](std::exception_ptr) {  // a throw leaves the slot's InternalError
                if (--gather->pending == 0) gather->done.cancel();
            });
    }
    while (gather->pending > 0) {
        asio::error_code ec;
        co_await gather->done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    co_return std::move(gather->results);
}

// A reply that cannot fit in a message becomes an error (the command layer bounds batches, so
// this only guards against a bug there turning into a crash).
bson::BsonObj boundReply(bson::BsonObj reply) {
    if (reply.size() + kReplyOverhead > static_cast<size_t>(wire::kMaxMessageSizeBytes)) {
        return errorReply(Status(
            ErrorCodes::BSONObjectTooLarge,
            "reply of " + std::to_string(reply.size()) + " bytes exceeds maxMessageSizeBytes"));
    }
    return reply;
}

// Failures of a document inside an intact frame (as opposed to broken framing): invalid BSON,
// too deep, too large. MongoDB answers these with an error reply.
bool isContentError(const Status& status) {
    return status.is(ErrorCodes::InvalidBSON) || status.is(ErrorCodes::Overflow) ||
           status.is(ErrorCodes::BSONObjectTooLarge);
}

}  // namespace

bson::BsonObj errorReply(const Status& status) {
    bson::BsonBuilder b;
    b.append("ok", 0.0);
    b.append("errmsg", status.reason());
    b.append("code", static_cast<int32_t>(status.code()));
    b.append("codeName", status.codeName());
    return b.obj();
}

Connection::Connection(ServerState& server, asio::ip::tcp::socket socket, int64_t id,
                       std::string remote)
    : _server(server), _socket(std::move(socket)) {
    _client.connectionId = id;
    _client.remote = std::move(remote);
}

void Connection::requestClose() {
    auto self = shared_from_this();
    asio::post(_socket.get_executor(), [self] {
        self->_closeRequested = true;
        if (!self->_busy) self->closeSocket();
    });
}

void Connection::closeSocket() {
    asio::error_code ignored;
    _socket.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    _socket.close(ignored);
}

void Connection::logFramingError(const std::string& error) {
    log::warning("NETWORK", 22989,
                 "Error receiving request from client. Ending connection from remote",
                 "{\"error\":\"" + log::jsonEscape(error) + "\",\"remote\":\"" +
                     log::jsonEscape(_client.remote) +
                     "\",\"connectionId\":" + std::to_string(_client.connectionId) + "}");
}

asio::awaitable<void> Connection::serve() {
    auto self = shared_from_this();  // the coroutine keeps its connection alive
    while (!_closeRequested) {
        wire::Message message;
        if (co_await readMessage(&message) != ReadResult::kOk) break;
        if (_server.handOverOpCode != 0 &&
            static_cast<int32_t>(message.opCode()) == _server.handOverOpCode) {
            co_await handOver(std::move(message));
            break;
        }
        _busy = true;
        const bool keep = co_await handleMessage(std::move(message));
        _busy = false;
        if (!keep) break;
    }
    closeSocket();
    RequestHandler& handler = _server.handler;
    ClientContext& client = _client;
    co_await runOnPool(_server.workers, [&handler, &client] {
        try {
            handler.onDisconnect(client);
        } catch (...) {
            // onDisconnect must not throw; nothing useful to do on a closing connection.
        }
        return true;
    });
}

asio::awaitable<void> Connection::handOver(wire::Message message) {
    // The answer: a bare header of the same opCode, after which the peer writes its own
    // protocol; it writes nothing before it, so nothing of it sits in _readBuffer.
    wire::Message ack = wire::Message::allocate(wire::kHeaderSize);
    uint8_t* h = ack.mutableData();
    wire::writeInt32LE(h, static_cast<int32_t>(wire::kHeaderSize));
    wire::writeInt32LE(h + 4, _server.nextRequestId());
    wire::writeInt32LE(h + 8, message.header().requestId);
    wire::writeInt32LE(h + 12, _server.handOverOpCode);
    if (!co_await writeMessage(ack)) co_return;
    asio::error_code ec;
    int fd = _socket.release(ec);
    if (ec) {
        logFramingError("cannot hand the connection over: " + ec.message());
        co_return;
    }
    std::string body(reinterpret_cast<const char*>(message.data()) + wire::kHeaderSize,
                     message.size() - wire::kHeaderSize);
    _server.handOver(fd, std::move(body));
}

asio::awaitable<Connection::ReadResult> Connection::readMessage(wire::Message* out) {
    // Reads land in _readBuffer first, so a small request (header and body) usually takes one
    // system call; bytes of a following request (pipelined moreToCome messages) stay buffered.
    asio::error_code ec;
    while (_readEnd - _readStart < wire::kHeaderSize) {
        if (_readStart > 0) {
            std::memmove(_readBuffer.data(), _readBuffer.data() + _readStart,
                         _readEnd - _readStart);
            _readEnd -= _readStart;
            _readStart = 0;
        }
        if (_readBuffer.size() < kReadBufferSize) _readBuffer.resize(kReadBufferSize);
        size_t n = co_await _socket.async_read_some(
            asio::buffer(_readBuffer.data() + _readEnd, _readBuffer.size() - _readEnd),
            asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            if (ec != asio::error::eof && ec != asio::error::operation_aborted &&
                ec != asio::error::connection_reset && ec != asio::error::bad_descriptor) {
                logFramingError(ec.message());
            }
            co_return ReadResult::kClosed;
        }
        _readEnd += n;
    }
    const uint8_t* header = _readBuffer.data() + _readStart;
    auto parsed = wire::parseHeader(header);
    if (!parsed.isOK()) {
        logFramingError(parsed.getStatus().toString());
        co_return ReadResult::kClosed;
    }
    const wire::MsgHeader& h = parsed.getValue();
    const bool handOver =
        _firstMessage && _server.handOverOpCode != 0 && h.opCode == _server.handOverOpCode;
    _firstMessage = false;
    if (h.opCode != static_cast<int32_t>(wire::OpCode::kMsg) &&
        h.opCode != static_cast<int32_t>(wire::OpCode::kQuery) && !handOver) {
        logFramingError("Unsupported opCode " + std::to_string(h.opCode));
        co_return ReadResult::kClosed;
    }
    // parseHeader bounded messageLength by kMaxMessageSizeBytes, which bounds this allocation.
    wire::Message message = wire::Message::allocate(static_cast<size_t>(h.messageLength));
    const size_t buffered = std::min(message.size(), _readEnd - _readStart);
    std::memcpy(message.mutableData(), header, buffered);
    _readStart += buffered;
    if (_readStart == _readEnd) _readStart = _readEnd = 0;
    if (buffered < message.size()) {
        co_await asio::async_read(
            _socket, asio::buffer(message.mutableData() + buffered, message.size() - buffered),
            asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            if (ec != asio::error::operation_aborted && ec != asio::error::bad_descriptor) {
                logFramingError("incomplete message: " + ec.message());
            }
            co_return ReadResult::kClosed;
        }
    }
    *out = std::move(message);
    co_return ReadResult::kOk;
}

asio::awaitable<bool> Connection::handleMessage(wire::Message message) {
    if (message.opCode() == wire::OpCode::kMsg) {
        const wire::MsgHeader header = message.header();
        const uint32_t flags = message.size() >= wire::kHeaderSize + 4
                                   ? wire::readUInt32LE(message.data() + wire::kHeaderSize)
                                   : 0;
        auto parsed = wire::parseOpMsg(std::move(message));
        if (!parsed.isOK()) {
            const Status& status = parsed.getStatus();
            if (!isContentError(status)) {
                logFramingError(status.toString());
                co_return false;
            }
            // The frame is intact (exactly messageLength bytes were consumed), only a document
            // in it is unusable: answer like MongoDB and keep the connection.
            if (flags & wire::kMoreToCome) co_return true;
            co_return co_await writeMessage(
                wire::buildOpMsg(_server.nextRequestId(), header.requestId, 0, errorReply(status)));
        }
        const wire::OpMsgRequest& request = parsed.getValue();
        Status check = wire::checkOpMsgCommand(request);
        bson::BsonObj reply;
        if (check.isOK()) {
            reply = co_await runCommand(Request{&request, false, request.exhaustAllowed()});
        } else {
            reply = errorReply(check);
        }
        if (_client.closeConnection) co_return false;  // e.g. failCommand closeConnection
        if (request.moreToCome()) co_return true;
        co_return co_await writeMessage(
            wire::buildOpMsgReply(request, _server.nextRequestId(), boundReply(std::move(reply))));
    }

    auto parsed = wire::parseOpQuery(std::move(message));
    if (!parsed.isOK()) {
        logFramingError(parsed.getStatus().toString());
        co_return false;
    }
    const wire::OpQueryRequest& query = parsed.getValue();
    auto converted = wire::opQueryToOpMsgRequest(query);
    bson::BsonObj reply;
    if (converted.isOK()) {
        reply = co_await runCommand(Request{&converted.getValue(), true, false});
    } else {
        reply = errorReply(converted.getStatus());
    }
    if (_client.closeConnection) co_return false;
    co_return co_await writeMessage(
        wire::buildOpReply(_server.nextRequestId(), query.requestId, boundReply(std::move(reply))));
}

asio::awaitable<bson::BsonObj> Connection::runCommand(const Request& request) {
    RequestHandler& handler = _server.handler;
    ClientContext& client = _client;
    if (_server.remotes && !request.isLegacyOpQuery) {
        // The forwarding fast path: the exchanges run on this io thread, no worker waits.
        std::optional<ForwardRequest> forward = callTryForward(handler, request, client);
        while (forward && !forward->exchanges.empty()) {
            std::vector<StatusWith<bson::BsonObj>> remotes =
                co_await runRound(*_server.remotes, forward->exchanges);
            ForwardOutcome outcome =
                callCompleteForward(handler, request, client, *forward, remotes);
            if (outcome.reply) co_return std::move(*outcome.reply);
            forward = std::move(outcome.next);
        }
    }
    if (_server.inlineRequests && !request.isLegacyOpQuery) {
        std::optional<bson::BsonObj> reply;
        try {
            reply = handler.runInline(request, client);
        } catch (...) {
            // Despite the contract; it may have written something, so it is not run again.
            reply = errorReply(statusFromCurrentException("command"));
        }
        if (reply) co_return std::move(*reply);
    }
    // `request` and `client` outlive the call: this coroutine is suspended until it returns.
    bool control = false;
    try {
        control = handler.isControlRequest(request);
    } catch (...) {
        control = false;
    }
    co_return co_await runOnPool(
        control ? _server.control : _server.workers,
        [&handler, &client, request] { return callHandler(handler, request, client); });
}

asio::awaitable<bool> Connection::writeMessage(const wire::Message& message) {
    asio::error_code ec;
    co_await asio::async_write(_socket, asio::buffer(message.data(), message.size()),
                               asio::redirect_error(asio::use_awaitable, ec));
    co_return !ec;
}

}  // namespace tessera::net
