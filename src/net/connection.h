#pragma once

// Internal to src/net: one client connection.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bson/bson_obj.h"
#include "net/asio_config.h"
#include "net/request_handler.h"
#include "net/server_state.h"
#include "wire/message.h"

namespace tessera::net {

// Reads a message, validates and parses it, runs the command on the worker pool, writes the
// reply, and repeats; one request at a time. Runs on its socket's io_context, which one io thread
// runs: every member below is touched only there.
class Connection : public std::enable_shared_from_this<Connection> {
  public:
    Connection(ServerState& server, asio::ip::tcp::socket socket, int64_t id, std::string remote);

    // The connection's coroutine; returns when the peer leaves, a framing error occurs or the
    // server shuts down (after onDisconnect ran).
    asio::awaitable<void> serve();
    // Thread-safe: closes now if idle (waiting for a request), else after the current reply.
    void requestClose();

    ClientContext& client() { return _client; }
    // The socket's executor (its io thread's context); serve() must run on it.
    asio::any_io_executor executor() { return _socket.get_executor(); }

  private:
    enum class ReadResult { kOk, kClosed };
    asio::awaitable<ReadResult> readMessage(wire::Message* out);
    // ServerOptions::handOverOpCode: answers, then gives the socket away.
    asio::awaitable<void> handOver(wire::Message message);
    // Returns false when the connection must close (framing error, write failure).
    asio::awaitable<bool> handleMessage(wire::Message message);
    asio::awaitable<bson::BsonObj> runCommand(const Request& request);
    asio::awaitable<bool> writeMessage(const wire::Message& message);
    void logFramingError(const std::string& error);
    void closeSocket();

    ServerState& _server;
    asio::ip::tcp::socket _socket;
    ClientContext _client;
    bool _busy = false;
    bool _firstMessage = true;  // the only one that may be a hand-over (ServerOptions)
    bool _closeRequested = false;
    // Received bytes not consumed yet: [_readStart, _readEnd) of _readBuffer (allocated on the
    // first read, kReadBufferSize bytes; a larger message is read into its own buffer).
    static constexpr size_t kReadBufferSize = 8 * 1024;
    std::vector<uint8_t> _readBuffer;
    size_t _readStart = 0;
    size_t _readEnd = 0;
};

// {ok: 0, errmsg, code, codeName}.
bson::BsonObj errorReply(const Status& status);

}  // namespace tessera::net
