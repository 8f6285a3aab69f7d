// `tessera`: one binary, several roles: a single node (`serve`), the cluster's processes
// (`config`, `shard`, `router`) and `up`, which runs a whole local cluster as child processes.

#include <cstdio>
#include <string>
#include <vector>

#include "cli/serve.h"
#include "command/server_info.h"

namespace {

void printUsage() {
    std::fprintf(stderr,
                 "usage: tessera <command> [options]\n\n"
                 "commands:\n"
                 "  up        run a local sharded cluster: config server, shards, routers\n"
                 "  serve     run a single-node Tessera server (MongoDB wire protocol)\n"
                 "  config    run the config server of a cluster\n"
                 "  shard     run a shard of a cluster\n"
                 "  router    run a router (mongos) of a cluster\n"
                 "  version   print the version\n\n"
                 "Run 'tessera serve --help' for the options of a command.\n");
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        printUsage();
        return args.empty() ? 2 : 0;
    }
    std::string role = args[0];
    std::vector<std::string> rest(args.begin() + 1, args.end());
    if (role == "version" || role == "--version") {
        std::printf("tessera %s (MongoDB %s compatible, wire versions %d-%d)\n",
                    std::string(tessera::command::kTesseraVersion).c_str(),
                    std::string(tessera::command::kCompatibleMongoVersion).c_str(),
                    tessera::command::kMinWireVersion, tessera::command::kMaxWireVersion);
        return 0;
    }
    if (role == "serve" || role == "config" || role == "shard" || role == "router" ||
        role == "up") {
        return tessera::cli::runServe(rest, std::vector<std::string>(argv, argv + argc), role);
    }
    std::fprintf(stderr, "tessera: unknown command '%s'\n\n", role.c_str());
    printUsage();
    return 2;
}
