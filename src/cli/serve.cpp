#include "cli/serve.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "base/log.h"
#include "cli/serve_options.h"
#include "command/cursor_manager.h"
#include "command/registry.h"
#include "command/service_entry_point.h"
#include "net/server.h"
#include "storage/engine.h"

namespace tessera::cli {
namespace {

std::string hostName() {
    char buf[256] = {};
    gethostname(buf, sizeof buf - 1);
    return buf;
}

// Periodically reaps cursors idle past their timeout, until stopped.
class CursorReaper {
  public:
    explicit CursorReaper(command::CursorManager& cursors)
        : _thread([this, &cursors] {
              std::unique_lock lock(_mutex);
              while (!_stop) {
                  _wake.wait_for(lock, std::chrono::seconds(5));
                  if (_stop) break;
                  lock.unlock();
                  cursors.reapIdleCursors();
                  lock.lock();
              }
          }) {}
    ~CursorReaper() {
        {
            std::lock_guard lock(_mutex);
            _stop = true;
        }
        _wake.notify_all();
        _thread.join();
    }

  private:
    std::mutex _mutex;
    std::condition_variable _wake;
    bool _stop = false;
    std::thread _thread;
};

}  // namespace

int runServe(const std::vector<std::string>& args, const std::vector<std::string>& argv) {
    if (std::find(args.begin(), args.end(), "--help") != args.end()) {
        std::fputs(serveUsage().c_str(), stdout);
        return 0;
    }
    auto parsed = parseServeOptions(args);
    if (!parsed.isOK()) {
        std::fprintf(stderr, "tessera serve: %s\n\n%s", parsed.getStatus().reason().c_str(),
                     serveUsage().c_str());
        return 2;
    }
    const ServeOptions& opts = parsed.getValue();
    log::setVerbose(opts.verbose);

    storage::EngineOptions engineOptions;
    engineOptions.dbpath = opts.dbpath;
    engineOptions.blockCacheBytes = opts.cacheSizeMB << 20;
    auto engine = storage::Engine::open(engineOptions);
    if (!engine.isOK()) {
        std::fprintf(stderr, "tessera serve: cannot open --dbpath %s: %s\n", opts.dbpath.c_str(),
                     engine.getStatus().toString().c_str());
        return 1;
    }

    command::CommandRegistry registry;
    command::registerAllCommands(registry);
    command::CursorManager cursors;
    command::ServiceContext service;
    service.engine = engine.getValue().get();
    service.cursors = &cursors;
    service.registry = &registry;
    service.enableTestCommands = opts.enableTestCommands;
    service.host = hostName() + ":" + std::to_string(opts.port);
    service.port = opts.port;
    service.argv = argv;
    command::ServiceEntryPoint entryPoint(service);

    net::ServerOptions serverOptions;
    serverOptions.bindIp = opts.bindIp;
    serverOptions.port = opts.port;
    if (opts.workerThreads > 0) serverOptions.workerThreads = opts.workerThreads;
    net::Server server(serverOptions, entryPoint);
    Status started = server.start();
    if (!started.isOK()) {
        std::fprintf(stderr, "tessera serve: cannot listen: %s\n", started.toString().c_str());
        return 1;
    }
    service.port = server.port();
    service.connections.current = [&server] { return server.connectionStats().current; };
    service.connections.totalCreated = [&server] { return server.connectionStats().totalCreated; };
    service.connections.available = serverOptions.maxConnections;
    if (opts.enableTestCommands) {
        log::startupWarning("Test commands are enabled (configureFailPoint); never in production");
    }
    log::info("NETWORK", 23016, "Waiting for connections",
              "{\"port\":" + std::to_string(server.port()) + ",\"ssl\":\"off\",\"dbpath\":\"" +
                  log::jsonEscape(opts.dbpath) + "\"}");
    server.handleSignals();
    {
        CursorReaper reaper(cursors);
        server.run();  // until SIGTERM/SIGINT
    }
    log::info("CONTROL", 20565, "Now exiting");
    return 0;
}

}  // namespace tessera::cli
