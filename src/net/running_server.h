#pragma once

// For tests: a Server serving on a loopback port from its own thread until stopped or destroyed.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

#include "net/server.h"

namespace tessera::net::test {

class RunningServer {
  public:
    // `handler` must outlive the server. Serves on `options.port` (0: a free port).
    explicit RunningServer(RequestHandler& handler, ServerOptions options = anyPort()) {
        _server = std::make_unique<Server>(options, handler);
        Status s = _server->start();
        EXPECT_TRUE(s.isOK()) << s.toString();
        _thread = std::thread([this] { _server->run(); });
    }
    ~RunningServer() { stop(); }
    RunningServer(const RunningServer&) = delete;
    RunningServer& operator=(const RunningServer&) = delete;

    // Shuts the server down and waits until it has; idempotent.
    void stop() {
        if (!_server) return;
        _server->shutdown();
        _thread.join();
        _server.reset();
    }
    int port() const { return _server->port(); }
    static ServerOptions anyPort() {
        ServerOptions o;
        o.port = 0;
        return o;
    }
    std::string host() const { return "127.0.0.1:" + std::to_string(port()); }

  private:
    std::unique_ptr<Server> _server;
    std::thread _thread;
};

}  // namespace tessera::net::test
