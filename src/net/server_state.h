#pragma once

// Internal to src/net: the state shared by the Server and its connections.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "net/asio_config.h"
#include "net/async_remote_client.h"
#include "net/request_handler.h"

namespace tessera::net {

class Connection;

struct ServerState {
    ServerState(RequestHandler& h, int workerThreads, int controlThreads, int64_t maxConns)
        : handler(h),
          workers(static_cast<size_t>(workerThreads)),
          control(static_cast<size_t>(std::max(1, controlThreads))),
          maxConnections(maxConns) {}

    int32_t nextRequestId() { return _requestIds.fetch_add(1, std::memory_order_relaxed); }

    RequestHandler& handler;
    asio::io_context ioc;
    asio::thread_pool workers;
    asio::thread_pool control;    // RequestHandler::isControlRequest
    bool inlineRequests = false;  // ServerOptions::inlineRequests
    // Set with ServerOptions::forwardRequests: the connections' forwarded exchanges.
    std::unique_ptr<AsyncRemoteClient> remotes;
    const int64_t maxConnections;

    std::atomic<int64_t> totalCreated{0};
    std::atomic<int64_t> rejected{0};

    std::mutex mutex;
    // Guarded by mutex.
    std::unordered_map<int64_t, std::shared_ptr<Connection>> connections;
    bool shuttingDown = false;
    // Keeps ioc.run() alive while serving; released once shutting down with no connections left.
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> workGuard;

  private:
    std::atomic<int32_t> _requestIds{1};
};

}  // namespace tessera::net
