#pragma once

// Internal to src/net: the state shared by the Server and its connections.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
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
    // The first io thread's context: the acceptors, signals, shutdown, forwarded exchanges, and
    // a share of the connections.
    asio::io_context ioc;
    // One more context per further io thread (ServerOptions::ioThreads): each runs on one
    // thread, so a connection's handlers never run concurrently without a strand, and the io
    // threads share no scheduler (no lock handed between them, no idle thread woken to pick up
    // another's completion).
    std::vector<std::unique_ptr<asio::io_context>> moreIo;
    asio::thread_pool workers;
    asio::thread_pool control;    // RequestHandler::isControlRequest
    bool inlineRequests = false;  // ServerOptions::inlineRequests
    int32_t handOverOpCode = 0;   // ServerOptions::handOverOpCode
    std::function<void(int fd, std::string body)> handOver;
    // Set with ServerOptions::forwardRequests: the connections' forwarded exchanges.
    std::unique_ptr<AsyncRemoteClient> remotes;
    const int64_t maxConnections;

    std::atomic<int64_t> totalCreated{0};
    std::atomic<int64_t> rejected{0};

    Mutex mutex;
    std::unordered_map<int64_t, std::shared_ptr<Connection>> connections GUARDED_BY(mutex);
    bool shuttingDown GUARDED_BY(mutex) = false;
    // Keep ioc.run() and each of moreIo's run() alive while serving; released once shutting
    // down with no connections left.
    std::vector<asio::executor_work_guard<asio::io_context::executor_type>> workGuards
        GUARDED_BY(mutex);

  private:
    std::atomic<int32_t> _requestIds{1};
};

}  // namespace tessera::net
