#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "wire/op_msg.h"

namespace tessera::net {

// What a RequestHandler keeps between its calls — per connection (ClientContext::state) and per
// forwarded exchange (ForwardRequest::state) — as its own subclass. The network layer only
// holds it and destroys it with the connection or the exchange.
struct HandlerState {
    virtual ~HandlerState() = default;
};

// Per connection; lives as long as the connection. Only the connection's current request touches
// it (requests on one connection run one at a time), so it needs no locking.
struct ClientContext {
    int64_t connectionId = 0;
    std::string remote;   // "127.0.0.1:54321"
    std::string appName;  // from the handshake's client.application.name, set by the handler
    bool handshakeDone = false;
    std::shared_ptr<HandlerState> state;  // the handler's per-connection state
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

// One exchange with one remote that the network layer performs for the handler, without a
// thread waiting for it (RequestHandler::tryForward).
struct ForwardExchange {
    std::string host;   // "host:port"
    std::string db;     // the remote command's $db
    bson::BsonObj cmd;  // without $db
    // A read: may be sent again when a pooled connection turns out to be closed
    // (AsyncRemoteClient::Exchange::kIdempotent). Writes are sent at most once.
    bool idempotent = false;
};

// One round of exchanges, sent together (to several remotes at once, e.g. the read phase of a
// router's write without shard key); completeForward gets every reply of the round at once.
struct ForwardRequest {
    std::vector<ForwardExchange> exchanges;  // at least one
    std::shared_ptr<HandlerState> state;     // the handler's, for completeForward
};

// What a round of forwarded exchanges led to (RequestHandler::completeForward).
struct ForwardOutcome {
    std::optional<bson::BsonObj> reply;  // the request's reply
    std::optional<ForwardRequest> next;  // else: one more round (e.g. after a stale version)
};

// The contract between the network layer and the command layer.
class RequestHandler {
  public:
    virtual ~RequestHandler() = default;
    // Only with ServerOptions::forwardRequests, on an io thread, before handleRequest: a request
    // that rounds of exchanges with remotes settle (the router's targeted reads and single
    // writes: one exchange; its writes without shard key: a find on each shard, then the write).
    // Must not block: no storage, no network, no waiting on a lock held across such work.
    // nullopt: run handleRequest as usual. Never throws.
    virtual std::optional<ForwardRequest> tryForward(const Request&, ClientContext&) {
        return std::nullopt;
    }
    // On an io thread, with each exchange's reply body or failure (in the round's order): the
    // reply to send, another round to make, or neither to run handleRequest as if nothing had
    // been forwarded. The last only when the remotes applied nothing (e.g. a stale version).
    // Must not block. Never throws.
    virtual ForwardOutcome completeForward(const Request&, ClientContext&, ForwardRequest&,
                                           const std::vector<StatusWith<bson::BsonObj>>&) {
        return {};
    }
    // Only with ServerOptions::inlineRequests, on an io thread, before the pool: the reply of a
    // request the handler can settle without waiting — bounded work (a point read, a small
    // write), no journal flush, no wait on another request or process — or nullopt to run it on
    // the pool as usual, also when the handler finds out, before it changed anything, that it
    // would have to wait. Everything else on the io thread's other connections waits meanwhile.
    // Never throws.
    virtual std::optional<bson::BsonObj> runInline(const Request&, ClientContext&) {
        return std::nullopt;
    }
    // Whether the request runs on the control lane (ServerOptions::controlThreads) instead of
    // the worker pool: requests that coordinate or wait on other processes (internal DDL and
    // migration steps), so that they can never take every worker while the requests they wait
    // for — catalog reads, a shard's refresh, a critical section's exit — queue behind them.
    // Called on an io thread; must not block.
    virtual bool isControlRequest(const Request&) { return false; }
    // Runs one command on a worker thread (may block on storage). Returns the reply body
    // ({ok:1,...} or {ok:0, errmsg, code, codeName}). Never throws. When the request has
    // moreToCome, the reply is discarded.
    virtual bson::BsonObj handleRequest(const Request& request, ClientContext& client) = 0;
    // Called once per connection, on a worker thread, after its last request finished.
    virtual void onDisconnect(ClientContext& client) {}
};

}  // namespace tessera::net
