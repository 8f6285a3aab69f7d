#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace tessera::cli {

// Options of `tessera serve|config|shard|router|up` (mongod/mongos spellings where they have them).
struct ServeOptions {
    std::string role = "serve";  // serve, config, shard, router, up
    int port = 27017;
    std::string bindIp = "127.0.0.1";
    std::string dbpath;
    bool enableTestCommands = false;
    size_t cacheSizeMB = 256;
    int workerThreads = 0;  // 0: chosen from the core count
    bool verbose = false;
    std::string configdb;  // shard, router: the config server "host:port"
    int shards = 2;        // up: number of shards
    int routers = 1;       // up: number of routers (ports port … port + routers - 1)
};

// Parses the arguments after "serve". Accepts "--opt value" and "--opt=value", and mongod's
// `--setParameter enableTestCommands=1`.
// `role` selects which options are required and allowed (--dbpath for every role but router,
// --configdb for router, --shards/--routers only for up).
StatusWith<ServeOptions> parseServeOptions(const std::vector<std::string>& args,
                                           const std::string& role = "serve");

std::string serveUsage(const std::string& role = "serve");

}  // namespace tessera::cli
