#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace tessera::cli {

// Options of `tessera serve` (mongod-compatible spellings where mongod has them).
struct ServeOptions {
    int port = 27017;
    std::string bindIp = "127.0.0.1";
    std::string dbpath;
    bool enableTestCommands = false;
    size_t cacheSizeMB = 256;
    int workerThreads = 0;  // 0: chosen from the core count
    bool verbose = false;
};

// Parses the arguments after "serve". Accepts "--opt value" and "--opt=value", and mongod's
// `--setParameter enableTestCommands=1`.
StatusWith<ServeOptions> parseServeOptions(const std::vector<std::string>& args);

std::string serveUsage();

}  // namespace tessera::cli
