#pragma once

#include <string>
#include <vector>

#include "cli/serve_options.h"

namespace tessera::cli {

// Runs one process of `role` ("serve" = single node, "config", "shard", "router"; "up" hands over
// to runUp) until SIGTERM/SIGINT; returns the process exit code (0 after a clean shutdown, 1 when
// the node cannot start, 2 for bad arguments).
int runServe(const std::vector<std::string>& args, const std::vector<std::string>& argv,
             const std::string& role = "serve");

// `tessera up`: starts a config server, opts.shards shards and opts.routers routers as child
// processes of this binary, registers the shards, prints every child's address and the
// connection string, and supervises them until SIGTERM/SIGINT (then stops them all). A child that
// dies is reported, never restarted silently.
int runUp(const ServeOptions& opts, const std::vector<std::string>& argv);

}  // namespace tessera::cli
