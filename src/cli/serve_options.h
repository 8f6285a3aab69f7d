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
    std::string replSet;  // serve: a member of this replica set
    // serve --replSet NAME/h1:p1,h2:p2,...: the set's initial members ("host:port", this one
    // among them, identical on each); empty: a set of this member alone.
    std::vector<std::string> replSetMembers;
    // --setParameter replSnapshotEntries=N: a replica set member snapshots its state every N
    // applied entries and keeps N entries below the snapshot for lagging members (0: the
    // group's default, repl::GroupOptions). A member further behind needs an initial sync.
    unsigned replSnapshotEntries = 0;
    size_t cacheSizeMB = 256;
    bool cacheSizeMBGiven = false;  // --cacheSizeMB was on the command line
    int workerThreads = 0;          // 0: chosen from the role and the core count
    bool verbose = false;
    std::string configdb;  // shard, router: the config server "host:port"
    int shards = 2;        // up: number of shards
    int routers = 1;       // up: number of routers (ports port … port + routers - 1)
    int replicas = 1;      // up: members of each shard's replica set (1: a plain shard process)
};

// Parses the arguments after "serve". Accepts "--opt value" and "--opt=value", and mongod's
// `--setParameter enableTestCommands=1` and `--setParameter replSnapshotEntries=N`.
// `role` selects which options are required and allowed (--dbpath for every role but router,
// --configdb for router, --shards/--routers only for up).
StatusWith<ServeOptions> parseServeOptions(const std::vector<std::string>& args,
                                           const std::string& role = "serve");

std::string serveUsage(const std::string& role = "serve");

// `tessera up`'s arguments for one child (argv without the executable): its role, port and
// dbpath, the config server's address, and every option of `up` that applies to the child —
// --workerThreads to every child, --cacheSizeMB to every child with storage (shards default to
// 128 MB, so that a 3-shard cluster on a laptop stays small), --enableTestCommands, --verbose;
// `replSet` ("name/members", empty: none) to a shard member.
std::vector<std::string> upChildArguments(const ServeOptions& up, const std::string& role, int port,
                                          const std::string& dbpath, const std::string& configHost,
                                          const std::string& replSet = "");

}  // namespace tessera::cli
