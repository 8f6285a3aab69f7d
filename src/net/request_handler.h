#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "bson/bson_obj.h"
#include "wire/op_msg.h"

namespace tessera::net {

// Per connection; lives as long as the connection. Only the connection's current request touches
// it (requests on one connection run one at a time), so it needs no locking.
struct ClientContext {
    int64_t connectionId = 0;
    std::string remote;   // "127.0.0.1:54321"
    std::string appName;  // from the handshake's client.application.name, set by the handler
    bool handshakeDone = false;
    std::shared_ptr<void> state;  // the command layer's per-connection state (opaque here)
    // Set by the handler to close the connection instead of replying (failCommand's
    // closeConnection); the network layer then drops the reply and closes the socket.
    bool closeConnection = false;
};

struct Request {
    // The OP_MSG, or the OP_QUERY handshake converted to an OpMsgRequest (body = the query
    // document, `$db` from fullCollectionName: "admin.$cmd" -> "admin"). Always passed
    // wire::checkOpMsgCommand: exactly one body, a string `$db`, no duplicate sequences.
    const wire::OpMsgRequest* msg = nullptr;
    bool isLegacyOpQuery = false;  // the reply will be wrapped as OP_REPLY
    bool exhaustAllowed = false;
};

// The contract between the network layer and the command layer.
class RequestHandler {
  public:
    virtual ~RequestHandler() = default;
    // Runs one command on a worker thread (may block on storage). Returns the reply body
    // ({ok:1,...} or {ok:0, errmsg, code, codeName}). Never throws. When the request has
    // moreToCome, the reply is discarded.
    virtual bson::BsonObj handleRequest(const Request& request, ClientContext& client) = 0;
    // Called once per connection, on a worker thread, after its last request finished.
    virtual void onDisconnect(ClientContext& client) {}
};

}  // namespace tessera::net
