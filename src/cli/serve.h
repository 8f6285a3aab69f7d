#pragma once

#include <string>
#include <vector>

namespace tessera::cli {

// Runs `tessera serve` until SIGTERM/SIGINT; returns the process exit code (0 after a clean
// shutdown, 1 when the node cannot start, 2 for bad arguments).
int runServe(const std::vector<std::string>& args, const std::vector<std::string>& argv);

}  // namespace tessera::cli
