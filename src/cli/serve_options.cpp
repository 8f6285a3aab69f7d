#include "cli/serve_options.h"

#include <charconv>

#include "net/replica_set_monitor.h"

namespace tessera::cli {
namespace {

StatusWith<long long> parseInteger(const std::string& flag, const std::string& value, long long lo,
                                   long long hi) {
    long long v = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || ptr != value.data() + value.size() || v < lo || v > hi) {
        return Status(ErrorCodes::BadValue, "invalid value for " + flag + ": '" + value +
                                                "' (expected an integer in [" + std::to_string(lo) +
                                                ", " + std::to_string(hi) + "])");
    }
    return v;
}

}  // namespace

std::string serveUsage(const std::string& role) {
    const std::string common =
        "  [--port 27017] [--bind_ip 127.0.0.1] [--cacheSizeMB 256] [--workerThreads N]\n"
        "  [--enableTestCommands] [--verbose]\n"
        "  [--setParameter replSnapshotEntries=N]: a replica set member snapshots its state\n"
        "  every N log entries and keeps N more for lagging members (default 8192); a member\n"
        "  further behind copies another member's data (initial sync).\n";
    if (role == "router") {
        return "usage: tessera router --configdb HOST:PORT|NAME/HOST:PORT,...\n" + common;
    }
    if (role == "config") {
        return "usage: tessera config --dbpath DIR [--replSet NAME[/HOST:PORT,...]]\n" + common +
               "  --replSet NAME/members: the config service is replica set NAME, this process\n"
               "  one of its members; routers and shards then take --configdb NAME/members.\n";
    }
    if (role == "shard") {
        return "usage: tessera shard --dbpath DIR [--configdb HOST:PORT|NAME/HOST:PORT,...] "
               "[--replSet NAME[/HOST:PORT,...]]\n" +
               common +
               "  --replSet NAME/members: the shard is replica set NAME, this process one of its\n"
               "  members (as for serve); add it to the cluster as NAME/HOST:PORT,...\n";
    }
    if (role == "up") {
        return "usage: tessera up --dbpath DIR [--shards 2] [--routers 1] [--replicas 1]\n" +
               common +
               "  Starts a config server, N shards and M routers as child processes: routers on\n"
               "  ports P … P+M-1, the config server on P+M, shard i on P+M+1+i. With\n"
               "  --replicas R (1-7) the config service (configRS) and each shard (shardI) are\n"
               "  replica sets of R members: config member j on P+M+j, member j of shard i on\n"
               "  P+M+R*(1+i)+j.\n";
    }
    if (role == "serve") {
        return "usage: tessera serve --dbpath DIR [--replSet NAME[/HOST:PORT,...]]\n" + common +
               "  --replSet NAME: a member of replica set NAME (sessions, multi-document\n"
               "  transactions, retryable writes); alone, or with the initial members listed\n"
               "  after the slash (this one among them, the same list on each). A member not\n"
               "  listed starts empty and waits for the primary to add it (rs.add).\n";
    }
    return "usage: tessera " + role + " --dbpath DIR\n" + common;
}

StatusWith<ServeOptions> parseServeOptions(const std::vector<std::string>& args,
                                           const std::string& role) {
    ServeOptions opts;
    opts.role = role;
    for (size_t i = 0; i < args.size(); ++i) {
        std::string flag = args[i];
        std::string value;
        bool hasInlineValue = false;
        if (auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = flag.substr(eq + 1);
            flag = flag.substr(0, eq);
            hasInlineValue = true;
        }
        auto needValue = [&]() -> Status {
            if (hasInlineValue) return Status::OK();
            if (i + 1 >= args.size()) {
                return Status(ErrorCodes::BadValue, flag + " needs a value");
            }
            value = args[++i];
            return Status::OK();
        };
        if (flag == "--port") {
            TRY_STATUS(needValue());
            ASSIGN_OR_RETURN(long long port, parseInteger(flag, value, 0, 65535));
            opts.port = static_cast<int>(port);
        } else if (flag == "--bind_ip" || flag == "--bindIp") {
            TRY_STATUS(needValue());
            opts.bindIp = value;
        } else if (flag == "--dbpath" || flag == "--dbPath") {
            TRY_STATUS(needValue());
            opts.dbpath = value;
        } else if (flag == "--cacheSizeMB") {
            TRY_STATUS(needValue());
            ASSIGN_OR_RETURN(long long mb, parseInteger(flag, value, 16, 1 << 20));
            opts.cacheSizeMB = static_cast<size_t>(mb);
            opts.cacheSizeMBGiven = true;
        } else if (flag == "--workerThreads") {
            TRY_STATUS(needValue());
            ASSIGN_OR_RETURN(long long n, parseInteger(flag, value, 1, 256));
            opts.workerThreads = static_cast<int>(n);
        } else if (flag == "--replSet" &&
                   (role == "serve" || role == "shard" || role == "config")) {
            TRY_STATUS(needValue());
            // mongod's "name/seed1,seed2" (net::ConnectionString): here the seeds are the initial
            // members; "name" alone founds a set of one.
            opts.replSetMembers.clear();
            if (value.find('/') == std::string::npos) {
                opts.replSet = value;
            } else {
                auto parsed = net::ConnectionString::parse(value);
                if (!parsed.isOK()) {
                    return Status(ErrorCodes::BadValue,
                                  "--replSet: " + parsed.getStatus().reason());
                }
                opts.replSet = parsed.getValue().setName;
                opts.replSetMembers = std::move(parsed.getValue().hosts);
            }
            if (opts.replSet.empty()) {
                return Status(ErrorCodes::BadValue, "--replSet needs a set name");
            }
        } else if (flag == "--enableTestCommands") {
            opts.enableTestCommands = true;
        } else if (flag == "--setParameter") {
            TRY_STATUS(needValue());
            if (value == "enableTestCommands=1" || value == "enableTestCommands=true") {
                opts.enableTestCommands = true;
            } else if (value.rfind("replSnapshotEntries=", 0) == 0) {
                ASSIGN_OR_RETURN(long long n, parseInteger("replSnapshotEntries", value.substr(20),
                                                           16, 1 << 24));
                opts.replSnapshotEntries = static_cast<unsigned>(n);
            } else {
                return Status(ErrorCodes::BadValue, "unknown --setParameter " + value);
            }
        } else if (flag == "--verbose" || flag == "-v") {
            opts.verbose = true;
        } else if (flag == "--configdb" && (role == "router" || role == "shard")) {
            TRY_STATUS(needValue());
            // One config server "h:p", or the config service's replica set "name/h1:p,h2:p"
            // (reached at its primary).
            auto parsed = net::ConnectionString::parse(value);
            if (!parsed.isOK()) {
                return Status(ErrorCodes::BadValue, "--configdb: " + parsed.getStatus().reason());
            }
            opts.configdb = value;
        } else if (flag == "--shards" && role == "up") {
            TRY_STATUS(needValue());
            ASSIGN_OR_RETURN(long long n, parseInteger(flag, value, 1, 64));
            opts.shards = static_cast<int>(n);
        } else if (flag == "--replicas" && role == "up") {
            TRY_STATUS(needValue());
            ASSIGN_OR_RETURN(long long n, parseInteger(flag, value, 1, 7));
            opts.replicas = static_cast<int>(n);
        } else if (flag == "--routers" && role == "up") {
            TRY_STATUS(needValue());
            ASSIGN_OR_RETURN(long long n, parseInteger(flag, value, 1, 16));
            opts.routers = static_cast<int>(n);
        } else {
            return Status(ErrorCodes::BadValue, "unknown option '" + args[i] + "'");
        }
    }
    if (role == "router") {
        if (opts.configdb.empty()) return Status(ErrorCodes::BadValue, "--configdb is required");
    } else if (opts.dbpath.empty()) {
        return Status(ErrorCodes::BadValue, "--dbpath is required");
    }
    return opts;
}

std::vector<std::string> upChildArguments(const ServeOptions& up, const std::string& role, int port,
                                          const std::string& dbpath, const std::string& configHost,
                                          const std::string& replSet) {
    std::vector<std::string> args = {role, "--port", std::to_string(port), "--bind_ip", up.bindIp};
    if (!replSet.empty()) args.insert(args.end(), {"--replSet", replSet});
    if (!dbpath.empty()) {
        args.insert(args.end(), {"--dbpath", dbpath});
        if (up.cacheSizeMBGiven) {
            args.insert(args.end(), {"--cacheSizeMB", std::to_string(up.cacheSizeMB)});
        } else if (role == "shard") {
            args.insert(args.end(), {"--cacheSizeMB", "128"});
        }
    }
    if (role == "router" || role == "shard") args.insert(args.end(), {"--configdb", configHost});
    if (up.workerThreads > 0) {
        args.insert(args.end(), {"--workerThreads", std::to_string(up.workerThreads)});
    }
    if (up.enableTestCommands) args.push_back("--enableTestCommands");
    if (up.replSnapshotEntries > 0 && !dbpath.empty() && role != "router") {
        args.insert(args.end(), {"--setParameter",
                                 "replSnapshotEntries=" + std::to_string(up.replSnapshotEntries)});
    }
    if (up.verbose) args.push_back("--verbose");
    return args;
}

}  // namespace tessera::cli
