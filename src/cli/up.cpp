// `tessera up`: a local cluster as child processes of one supervisor (ARCHITECTURE.md
// "Processes"). The supervisor restarts nothing: a child that dies is reported with its exit
// status and log file, and the rest keeps running, so that `kill -9` of a child is a realistic
// fault to observe, not something papered over.

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bson/bson_builder.h"
#include "cli/serve.h"
#include "cli/serve_options.h"
#include "net/remote_client.h"

namespace tessera::cli {
namespace {

std::atomic<int> gStopSignal{0};

void onStopSignal(int sig) { gStopSignal.store(sig); }

struct Child {
    std::string name;  // "config", "shard0" (or its members "shard0.0", …), "router0"
    std::string role;
    int port = 0;
    std::string dbpath;  // empty for routers
    std::string logPath;
    std::string replSet;  // a set member's "name/h:p,…" (config or shard; empty: a plain process)
    bool lastOfSet = true;  // a shard's last member: once it serves, the shard is added
    pid_t pid = -1;
    bool exited = false;
};

std::string selfExe(const std::vector<std::string>& argv) {
    std::error_code ec;
    auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? argv.at(0) : p.string();
}

// Starts `child` with stdout/stderr appended to its log file.
Status spawn(Child& child, const std::string& exe, const ServeOptions& opts,
             const std::string& configHost) {
    std::vector<std::string> args = {exe};
    for (std::string& a :
         upChildArguments(opts, child.role, child.port, child.dbpath, configHost, child.replSet)) {
        args.push_back(std::move(a));
    }

    int logFd = ::open(child.logPath.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (logFd < 0) {
        return Status(ErrorCodes::InternalError,
                      "cannot open " + child.logPath + ": " + std::strerror(errno));
    }
    pid_t pid = ::fork();
    if (pid < 0) {
        ::close(logFd);
        return Status(ErrorCodes::InternalError, std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
        ::dup2(logFd, STDOUT_FILENO);
        ::dup2(logFd, STDERR_FILENO);
        ::setpgid(0, 0);  // Ctrl-C reaches the supervisor, which stops the children in order
        std::vector<char*> cargs;
        for (auto& a : args) cargs.push_back(a.data());
        cargs.push_back(nullptr);
        ::execv(exe.c_str(), cargs.data());
        std::fprintf(stderr, "tessera up: exec %s failed: %s\n", exe.c_str(), std::strerror(errno));
        ::_exit(127);
    }
    ::close(logFd);
    child.pid = pid;
    return Status::OK();
}

std::string describeExit(int status) {
    if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
        return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
               strsignal(WTERMSIG(status)) + ")";
    }
    return "stopped";
}

// Polls `ping` on the child until it answers or `deadline`; fails early when the child exits.
Status waitUntilServing(Child& child, net::RemoteClient& client, const std::string& host,
                        std::chrono::steady_clock::time_point deadline) {
    bson::BsonBuilder ping;
    ping.append("ping", 1);
    bson::BsonObj cmd = ping.obj();
    while (std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (::waitpid(child.pid, &status, WNOHANG) == child.pid) {
            child.exited = true;
            return Status(ErrorCodes::InternalError, child.name + " " + describeExit(status) +
                                                         " during startup; see " + child.logPath);
        }
        auto reply = client.runCommand(host, "admin", cmd, std::chrono::milliseconds(2000));
        if (reply.isOK() && net::replyStatus(reply.getValue()).isOK()) return Status::OK();
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return Status(ErrorCodes::NetworkTimeout, child.name + " did not start serving on " + host +
                                                  " within 60 s; see " + child.logPath);
}

void stopAll(std::vector<Child>& children) {
    // Routers first, shards, then the config server: the reverse of the start order.
    for (auto it = children.rbegin(); it != children.rend(); ++it) {
        if (it->pid > 0 && !it->exited) ::kill(it->pid, SIGTERM);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (auto& c : children) {
        while (c.pid > 0 && !c.exited) {
            int status = 0;
            pid_t r = ::waitpid(c.pid, &status, WNOHANG);
            if (r == c.pid || (r < 0 && errno == ECHILD)) {
                c.exited = true;
                break;
            }
            if (std::chrono::steady_clock::now() > deadline) {
                std::fprintf(stderr, "tessera up: %s (pid %d) did not stop; killing it\n",
                             c.name.c_str(), c.pid);
                ::kill(c.pid, SIGKILL);
                ::waitpid(c.pid, &status, 0);
                c.exited = true;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }
}

}  // namespace

int runUp(const ServeOptions& opts, const std::vector<std::string>& argv) {
    const std::string exe = selfExe(argv);
    const std::string host = opts.bindIp == "0.0.0.0" ? "127.0.0.1" : opts.bindIp;
    std::error_code ec;
    std::filesystem::create_directories(opts.dbpath, ec);
    if (ec) {
        std::fprintf(stderr, "tessera up: cannot create %s: %s\n", opts.dbpath.c_str(),
                     ec.message().c_str());
        return 1;
    }

    std::vector<Child> children;
    auto add = [&](const std::string& name, const std::string& role, int port, bool stores) {
        Child c;
        c.name = name;
        c.role = role;
        c.port = port;
        if (stores) c.dbpath = opts.dbpath + "/" + name;
        c.logPath = opts.dbpath + "/" + name + ".log";
        children.push_back(std::move(c));
        return &children.back();
    };
    // With --replicas R, the config service and every shard are replica sets of R members on
    // consecutive ports, named after them; each member knows all (the same list on each).
    // Returns the set's connection string, or its one process's address.
    auto addSet = [&](const std::string& name, const std::string& setName, const std::string& role,
                      int firstPort) {
        if (opts.replicas == 1) {
            add(name, role, firstPort, true);
            return host + ":" + std::to_string(firstPort);
        }
        std::string replSet = setName + "/";
        for (int j = 0; j < opts.replicas; ++j) {
            replSet += (j ? "," : "") + host + ":" + std::to_string(firstPort + j);
        }
        for (int j = 0; j < opts.replicas; ++j) {
            Child* member = add(name + "." + std::to_string(j), role, firstPort + j, true);
            member->replSet = replSet;
            member->lastOfSet = j + 1 == opts.replicas;
        }
        return replSet;
    };
    const int configPort = opts.port + opts.routers;
    const std::string configHost = addSet("config", "configRS", "config", configPort);
    for (int i = 0; i < opts.shards; ++i) {
        const std::string name = "shard" + std::to_string(i);
        addSet(name, name, "shard", configPort + opts.replicas * (1 + i));
    }
    for (int i = 0; i < opts.routers; ++i) {
        add("router" + std::to_string(i), "router", opts.port + i, false);
    }

    struct sigaction sa {};
    sa.sa_handler = onStopSignal;
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);

    net::RemoteClient client;
    auto fail = [&](const Status& s) {
        std::fprintf(stderr, "tessera up: %s\n", s.reason().c_str());
        stopAll(children);
        return 1;
    };
    auto deadline = [] { return std::chrono::steady_clock::now() + std::chrono::seconds(60); };
    for (auto& c : children) {
        if (!c.dbpath.empty()) std::filesystem::create_directories(c.dbpath, ec);
        Status s = spawn(c, exe, opts, configHost);
        if (!s.isOK()) return fail(s);
        std::string childHost = host + ":" + std::to_string(c.port);
        s = waitUntilServing(c, client, childHost, deadline());
        if (!s.isOK()) return fail(s);
        if (c.role == "shard" && c.lastOfSet) {
            // Registering is idempotent: a restarted `tessera up` finds its shards registered.
            // A replica set is added once all its members serve (the config service finds its
            // primary, waiting for the election if there is none yet).
            const std::string shardName =
                c.replSet.empty() ? c.name : c.name.substr(0, c.name.find('.'));
            bson::BsonBuilder add;
            add.append("_configsvrAddShard", c.replSet.empty() ? childHost : c.replSet);
            add.append("name", shardName);
            auto reply = client.runCommand(configHost, "admin", add.obj());
            Status added = reply.isOK() ? net::replyStatus(reply.getValue()) : reply.getStatus();
            if (!added.isOK()) {
                return fail(added.withContext("cannot add " + shardName + " to the cluster: "));
            }
        }
        if (gStopSignal.load()) {
            stopAll(children);
            return 0;
        }
    }

    std::printf("Tessera cluster is up (data in %s):\n", opts.dbpath.c_str());
    for (const auto& c : children) {
        std::printf("  %-9s %s:%d  pid %d  log %s\n", c.name.c_str(), host.c_str(), c.port, c.pid,
                    c.logPath.c_str());
    }
    std::string uri = "mongodb://";
    for (int i = 0; i < opts.routers; ++i) {
        uri += (i ? "," : "") + host + ":" + std::to_string(opts.port + i);
    }
    std::printf("Connect with: mongosh \"%s/\"\n", uri.c_str());
    std::printf("Stop with Ctrl-C (stops every child).\n");
    std::fflush(stdout);

    int running = static_cast<int>(children.size());
    while (!gStopSignal.load() && running > 0) {
        int status = 0;
        pid_t pid = ::waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            for (auto& c : children) {
                if (c.pid != pid) continue;
                c.exited = true;
                --running;
                std::fprintf(stderr,
                             "tessera up: %s (%s:%d, pid %d) %s; it is not restarted. See %s\n",
                             c.name.c_str(), host.c_str(), c.port, c.pid,
                             describeExit(status).c_str(), c.logPath.c_str());
            }
            continue;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::printf("tessera up: stopping the cluster\n");
    std::fflush(stdout);
    stopAll(children);
    return 0;
}

}  // namespace tessera::cli
