#include "cli/serve.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "base/log.h"
#include "base/mutex.h"
#include "cli/serve_options.h"
#include "command/cursor_manager.h"
#include "command/registry.h"
#include "command/retryable_write_hooks.h"
#include "command/service_entry_point.h"
#include "config/config_server.h"
#include "net/server.h"
#include "repl/replica_set.h"
#include "router/router.h"
#include "router/transaction_router.h"
#include "shard/sharding_state.h"
#include "storage/engine.h"
#include "storage/synced_copy.h"
#include "txn/session_records.h"
#include "txn/session_transactions.h"

namespace tessera::cli {
namespace {

constexpr int kRouterWorkerThreads = 64;
constexpr int kStorageWorkerThreads = 32;
// A replica set member's group (its log and snapshots), inside its dbpath.
constexpr std::string_view kReplicationDir = "replication";

// Starts this process over (below); `message`: the log line that says why.
[[noreturn]] void restartInPlace(const std::vector<std::string>& argv, std::string_view message);

std::string hostName() {
    char buf[256] = {};
    gethostname(buf, sizeof buf - 1);
    return buf;
}

// This member's address among `members` (the one on this process's port whose host names this
// machine), or none: a member to be added, which waits.
std::optional<std::string> selfAmong(const std::vector<std::string>& members,
                                     const ServeOptions& opts, int port) {
    const std::string bound = opts.bindIp.substr(0, opts.bindIp.find(','));
    for (const std::string& member : members) {
        const size_t colon = member.rfind(':');
        if (member.substr(colon + 1) != std::to_string(port)) continue;
        const std::string host = member.substr(0, colon);
        if (host == bound || host == hostName() || host == "localhost" || host == "127.0.0.1") {
            return member;
        }
    }
    return std::nullopt;
}

// Starts this process's replica set member (`--replSet`) on `service`'s engine; `service.host`
// becomes its address among the members. The only member of its set waits until it is its
// writable primary, so that `serve --replSet` takes writes from its first request.
StatusWith<std::unique_ptr<repl::ReplicaSet>> joinReplicaSet(
    const ServeOptions& opts, command::ServiceContext& service, int port,
    repl::ReplicaSet::LeadershipHooks hooks) {
    if (!opts.replSetMembers.empty()) {
        if (auto self = selfAmong(opts.replSetMembers, opts, port)) {
            service.host = *self;
        } else {
            log::startupWarning("This member (" + service.host +
                                ") is not among the --replSet members: it waits, empty, until "
                                "the primary adds it (rs.add)");
        }
    }
    repl::ReplicaSetOptions setOptions;
    setOptions.name = opts.replSet;
    setOptions.self = service.host;
    setOptions.members = opts.replSetMembers;
    setOptions.dir = std::filesystem::path(opts.dbpath) / kReplicationDir;
    // A member too far behind copies another's data, then starts over to install the copy
    // (storage::installSyncedCopy, before the engine opens).
    setOptions.dbpath = opts.dbpath;
    setOptions.snapshotEntries = opts.replSnapshotEntries;
    setOptions.restartToInstallCopy = [argv = service.argv] {
        restartInPlace(argv, "Restarting to install an initial sync's copy");
    };
    ASSIGN_OR_RETURN(std::unique_ptr<repl::ReplicaSet> set,
                     repl::ReplicaSet::start(setOptions, *service.engine, std::move(hooks)));
    service.replicaSet = set.get();
    // Alone in the set's configuration as it stands (members may have been added since the
    // command line's list founded it).
    const std::vector<repl::SetMember> members = set->state().members;
    const bool alone = members.size() == 1 && members.front().self;
    if (alone &&
        !set->waitUntilWritable(std::chrono::steady_clock::now() + std::chrono::seconds(30))) {
        service.replicaSet = nullptr;
        return Status(ErrorCodes::ExceededTimeLimit,
                      "a one-member replica set did not become primary within 30 s");
    }
    return set;
}

// Starts this process over with the same arguments (same pid): every file and socket but the
// standard streams closed by the exec itself (marked close-on-exec first: closing them here would
// pull them from under the threads still running, which fail on them, and the process dies
// before it execs — the fault suite saw it). What the previous image did not finish is abandoned
// as by kill -9, whose recovery every persisted operation has. After a step-down the caller has
// stopped the replica set (its log on disk) first; after an initial sync's copy the group's own
// thread restarts, with the snapshot it received saved — as kill -9 would, which libraft's log
// survives.
[[noreturn]] void restartInPlace(const std::vector<std::string>& argv, std::string_view message) {
    log::info("CONTROL", 4300106, message, "{}");
    std::fflush(stdout);
    std::fflush(stderr);
    constexpr unsigned kCloseRangeCloexec = 1u << 2;  // linux/close_range.h
    if (::syscall(SYS_close_range, 3u, ~0u, kCloseRangeCloexec) != 0) {
        for (int fd = 3, n = static_cast<int>(::sysconf(_SC_OPEN_MAX)); fd < n; ++fd) {
            ::fcntl(fd, F_SETFD, FD_CLOEXEC);
        }
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv("/proc/self/exe", args.data());
    std::fprintf(stderr, "tessera: restarting failed: %s\n", std::strerror(errno));
    ::_exit(1);
}

// The leadership hooks of a member whose role runs only while it is primary (a shard, the config
// service): its first step-up starts the role from the replicated storage (`start`); losing that
// leadership calls `restart`, which starts the process over (restartInPlace, src/repl/README.md
// "Shards and the config service as replica sets"). The role's in-memory state — placement caches,
// critical sections, coordinators, prepared transactions — was the primary's, stale once another
// member writes; the next step-up starts it from storage again.
repl::ReplicaSet::LeadershipHooks primaryOnlyRole(std::function<Status()> start,
                                                  std::function<void()> restart) {
    enum class Role { kNotStarted, kStarted, kRestarting };
    auto role = std::make_shared<std::atomic<Role>>(Role::kNotStarted);
    repl::ReplicaSet::LeadershipHooks hooks;
    hooks.stepUp = [start = std::move(start), role]() -> Status {
        switch (role->load()) {
            case Role::kStarted:
                return Status::OK();
            case Role::kRestarting:
                // Elected again before the restart took the member out of its group: its role
                // state is the stale one, so it never becomes writable in this image.
                return Status(ErrorCodes::InterruptedDueToReplStateChange,
                              "this member restarts after stepping down");
            case Role::kNotStarted:
                break;
        }
        TRY_STATUS(start());
        role->store(Role::kStarted);
        return Status::OK();
    };
    hooks.stepDown = [restart = std::move(restart), role] {
        if (role->exchange(Role::kRestarting) != Role::kStarted) {
            role->store(Role::kNotStarted);
            return;
        }
        log::info("REPL", 4300105, "Lost the primary's role: restarting to reload the role's state",
                  "{}");
        restart();
    };
    return hooks;
}

// Periodically reaps cursors idle past their timeout, until stopped.
class CursorReaper {
  public:
    explicit CursorReaper(command::CursorManager& cursors)
        : _thread([this, &cursors] {
              UniqueLock lock(_mutex);
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
            MutexLock lock(_mutex);
            _stop = true;
        }
        _wake.notify_all();
        _thread.join();
    }

  private:
    Mutex _mutex;
    CondVar _wake;
    bool _stop GUARDED_BY(_mutex) = false;
    std::thread _thread;
};

}  // namespace

int runServe(const std::vector<std::string>& args, const std::vector<std::string>& argv,
             const std::string& role) {
    if (std::find(args.begin(), args.end(), "--help") != args.end()) {
        std::fputs(serveUsage(role).c_str(), stdout);
        return 0;
    }
    auto parsed = parseServeOptions(args, role);
    if (!parsed.isOK()) {
        std::fprintf(stderr, "tessera %s: %s\n\n%s", role.c_str(),
                     parsed.getStatus().reason().c_str(), serveUsage(role).c_str());
        return 2;
    }
    const ServeOptions& opts = parsed.getValue();
    if (role == "up") return runUp(opts, argv);
    log::setVerbose(opts.verbose);

    // Every role but the router stores data.
    std::unique_ptr<storage::Engine> engine;
    if (role != "router") {
        // A replica set member's initial sync that finished before this start: its copy of
        // another member's data becomes the database (the group's folder stays).
        auto installed = storage::installSyncedCopy(opts.dbpath, {std::string(kReplicationDir)});
        if (!installed.isOK()) {
            std::fprintf(stderr, "tessera %s: cannot install the initial sync's copy in %s: %s\n",
                         role.c_str(), opts.dbpath.c_str(),
                         installed.getStatus().toString().c_str());
            return 1;
        }
        if (installed.getValue()) {
            log::info("REPL", 4300118, "Installed the copy of an initial sync",
                      "{\"dbpath\":\"" + log::jsonEscape(opts.dbpath) + "\"}");
        }
        storage::EngineOptions engineOptions;
        engineOptions.dbpath = opts.dbpath;
        engineOptions.blockCacheBytes = opts.cacheSizeMB << 20;
        auto opened = storage::Engine::open(engineOptions);
        if (!opened.isOK()) {
            std::fprintf(stderr, "tessera %s: cannot open --dbpath %s: %s\n", role.c_str(),
                         opts.dbpath.c_str(), opened.getStatus().toString().c_str());
            return 1;
        }
        engine = std::move(opened.getValue());
    }

    command::CommandRegistry registry;
    if (role == "router") {
        router::registerRouterCommands(registry);
    } else {
        command::registerAllCommands(registry);
        if (role == "config") config::registerConfigServerCommands(registry);
        if (role == "shard") shard::registerShardServerCommands(registry);
    }
    command::CursorManager cursors;
    command::ServiceContext service;
    service.engine = engine.get();
    service.cursors = &cursors;
    service.registry = &registry;
    service.enableTestCommands = opts.enableTestCommands;
    service.host = hostName() + ":" + std::to_string(opts.port);
    service.port = opts.port;
    service.argv = argv;
    service.role = role == "router"   ? command::ClusterRole::kRouter
                   : role == "shard"  ? command::ClusterRole::kShard
                   : role == "config" ? command::ClusterRole::kConfig
                                      : command::ClusterRole::kStandalone;
    service.replSetName = opts.replSet;
    command::ServiceEntryPoint entryPoint(service);
    // A replica set member (`serve --replSet`): transactions, and retryable writes recorded per
    // session (command::RetryableWriteHooks: each statement's record in its write's batch,
    // src/txn/README.md). A shard has its own (ShardingState).
    std::unique_ptr<txn::SessionTransactions> transactions;
    std::unique_ptr<command::RetryableWriteHooks> retryableWrites;
    if (role == "shard") {
        // A shard takes part in its routers' transactions (participant mode, set up with its
        // sharding state below).
        transactions = std::make_unique<txn::SessionTransactions>(engine.get());
        service.transactions = transactions.get();
    }
    if (role == "serve" && !opts.replSet.empty()) {
        transactions = std::make_unique<txn::SessionTransactions>(engine.get());
        service.transactions = transactions.get();
        retryableWrites = std::make_unique<command::RetryableWriteHooks>(
            service, [&entryPoint](std::string_view db, const bson::BsonObj& cmd) {
                bson::BsonObj reply = entryPoint.runCommand(db, cmd, nullptr);
                if (reply["ok"].trueValue()) return Status::OK();
                bson::BsonElement code = reply["code"], errmsg = reply["errmsg"];
                return Status(code.isNumber() ? static_cast<ErrorCodes>(code.numberInt())
                                              : ErrorCodes::InternalError,
                              errmsg.type() == bson::BsonType::String
                                  ? std::string(errmsg.stringValue())
                                  : "recording the retryable write failed");
            });
        service.hooks = retryableWrites.get();
    }

    net::ServerOptions serverOptions;
    serverOptions.bindIp = opts.bindIp;
    serverOptions.port = opts.port;
    if (role == "router") {
        // A router's commands mostly wait on shards: targeted finds and single writes are
        // forwarded on the io thread without a thread waiting (ServerOptions::forwardRequests);
        // the rest run on the pool, which bounds the requests in flight, not CPU use.
        serverOptions.forwardRequests = true;
        serverOptions.workerThreads = kRouterWorkerThreads;
    }
    if (role == "serve" || role == "shard") {
        // Point reads and small writes by `_id` run on the io thread that read them (no hand-off
        // to a worker and back), one io thread per core; the rest runs on the pool, whose
        // threads mostly wait — for the journal (concurrent `j: true` writes share one fsync,
        // so as many writers as clients must be able to wait in it), locks, other processes.
        serverOptions.workerThreads = kStorageWorkerThreads;
        serverOptions.inlineRequests = true;
        serverOptions.ioThreads =
            static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    }
    if (opts.workerThreads > 0) serverOptions.workerThreads = opts.workerThreads;
    // The other members of a replica set reach this one's group at this port (src/repl).
    std::atomic<repl::ReplicaSet*> handedOverTo{nullptr};
    if (!opts.replSet.empty()) {
        serverOptions.handOverOpCode = repl::kHandOverOpCode;
        serverOptions.handOver = [&handedOverTo](int fd, std::string body) {
            if (repl::ReplicaSet* set = handedOverTo.load()) {
                set->acceptStream(fd, std::move(body));
            } else {
                ::close(fd);
            }
        };
    }
    net::Server server(serverOptions, entryPoint);
    Status started = server.start();
    if (!started.isOK()) {
        std::fprintf(stderr, "tessera %s: cannot listen: %s\n", role.c_str(),
                     started.toString().c_str());
        return 1;
    }
    service.port = server.port();
    service.host = hostName() + ":" + std::to_string(server.port());
    if (!opts.replSet.empty() && opts.bindIp != "0.0.0.0" && opts.bindIp != "::") {
        // This member, as clients reach it (drivers connect to what `hosts` names).
        service.host =
            opts.bindIp.substr(0, opts.bindIp.find(',')) + ":" + std::to_string(server.port());
    }
    if (opts.enableTestCommands) {
        log::startupWarning("Test commands are enabled (configureFailPoint); never in production");
    }
    service.connections.current = [&server] { return server.connectionStats().current; };
    service.connections.totalCreated = [&server] { return server.connectionStats().totalCreated; };
    service.connections.available = serverOptions.maxConnections;

    // The role's state. Installed before the first request is served (the server accepts
    // connections only in run()), started after the listener is up so that a role that calls
    // other processes at startup can be reached back — and, on a replica set member whose role
    // runs only while it is primary (a shard, the config service), each time it steps up.
    std::unique_ptr<config::ConfigServer> configServer;
    std::unique_ptr<shard::ShardingState> shardingState;
    std::unique_ptr<router::Router> router;
    std::function<Status()> startRole = [] { return Status::OK(); };
    if (role == "shard") {
        shardingState = std::make_unique<shard::ShardingState>(service, opts.configdb);
        service.roleState = shardingState.get();
        service.hooks = shardingState.get();
        transactions->enableParticipantMode(shardingState->transactionCommitObservers());
        // Retryable writes its routers carried out in transactions of their own (a document
        // moved to another shard): answered from their records from the commit on.
        transactions->onSideRecordsCommitted([state = shardingState.get()](const auto& records) {
            txn::adoptStatementRecords(records, state->transactions());
        });
        // ... and held as moving while such a transaction, prepared before a restart, waits for
        // its decision: their retries wait for it, as before the restart.
        transactions->onPreparedSideRecordsRecovered(
            [state = shardingState.get()](const auto& records, storage::Transaction& txn) {
                txn::holdStatementRecords(records, state->transactionsHandle(), txn);
            });
        service.appendRoleServerStatus = [state = shardingState.get()](bson::BsonBuilder& b) {
            state->appendServerStatus(b);
        };
        // What a shard does once its data is its own to change: its persisted state loaded
        // (identity, critical sections, ranges to delete, retryable writes' records),
        // transactions prepared before a crash prepared again before the first request, then
        // the coordinations it ran finished (txn/transaction_coordinator.h).
        startRole = [&transactions, &shardingState]() -> Status {
            TRY_STATUS(transactions->restoreCommitted().getStatus());
            TRY_STATUS(shardingState->startup());
            TRY_STATUS(transactions->recoverPrepared().getStatus());
            shardingState->coordinator().start();
            return Status::OK();
        };
    } else if (role == "config") {
        configServer = std::make_unique<config::ConfigServer>(service);
        service.roleState = configServer.get();
        service.hooks = configServer->hooks();
        // The catalog's indexes and cluster id, interrupted chunk operations repaired, the
        // coordinators resumed and the balancer started.
        startRole = [&configServer] { return configServer->startup(); };
    } else if (transactions) {
        // A commit retried after this restart finds its transaction committed
        // (SessionTransactions::restoreCommitted).
        startRole = [&transactions] { return transactions->restoreCommitted().getStatus(); };
    }

    // A replica set member: its storage writes through the set's group from here on, before any
    // request is served or any background task of the role writes.
    std::unique_ptr<repl::ReplicaSet> replicaSet;
    std::atomic<bool> restarting{false};  // a step-down's restartInPlace is under way
    if (!opts.replSet.empty()) {
        repl::ReplicaSet::LeadershipHooks hooks;
        if (role == "shard" || role == "config") {
            // Not an orderly shutdown: the role's threads may wait on other processes for a
            // long time (a coordinator's remote call), while this member, out of its group
            // meanwhile, could be the vote its set needs. The group leaves with its log on disk
            // (at most 2 s), then the process starts over.
            hooks = primaryOnlyRole(startRole, [&handedOverTo, &restarting, argv = service.argv] {
                restarting.store(true);
                std::thread([&handedOverTo, argv] {
                    if (repl::ReplicaSet* set = handedOverTo.exchange(nullptr)) set->stop();
                    restartInPlace(argv, "Restarting after stepping down");
                }).detach();
            });
        } else {
            // A new primary learns what its predecessor executed: retryable writes' records and
            // transactions' outcomes, replicated with their writes.
            hooks.stepUp = [&transactions, &retryableWrites]() -> Status {
                if (transactions) TRY_STATUS(transactions->restoreCommitted().getStatus());
                if (retryableWrites) retryableWrites->restoreRecords();
                return Status::OK();
            };
        }
        auto joined = joinReplicaSet(opts, service, server.port(), std::move(hooks));
        if (!joined.isOK()) {
            std::fprintf(stderr, "tessera %s: replica set %s: %s\n", role.c_str(),
                         opts.replSet.c_str(), joined.getStatus().toString().c_str());
            return 1;
        }
        replicaSet = std::move(joined.getValue());
        handedOverTo.store(replicaSet.get());
    }
    if (retryableWrites) retryableWrites->startup();

    // Without a replica set, or as a `serve --replSet` member, the role starts now.
    Status roleStarted = Status::OK();
    if (!replicaSet || role == "serve") roleStarted = startRole();
    if (roleStarted.isOK() && role == "router") {
        router = std::make_unique<router::Router>(opts.configdb, service.host);
        service.roleState = router.get();
        service.routerTransactions = &router->transactions();
        service.appendRoleServerStatus = [r = router.get()](bson::BsonBuilder& b) {
            r->appendServerStatus(b);
        };
        router->startBackgroundTasks();
    }
    if (!roleStarted.isOK()) {
        std::fprintf(stderr, "tessera %s: cannot start: %s\n", role.c_str(),
                     roleStarted.toString().c_str());
        return 1;
    }
    log::info("NETWORK", 23016, "Waiting for connections",
              "{\"port\":" + std::to_string(server.port()) + ",\"ssl\":\"off\",\"role\":\"" + role +
                  "\",\"dbpath\":\"" + log::jsonEscape(opts.dbpath) + "\"}");
    server.handleSignals();
    {
        CursorReaper reaper(cursors);
        server.run();  // until SIGTERM/SIGINT
    }
    while (restarting.load()) {
        // A shutdown signal met a restart under way: the exec ends this image (tearing the
        // replica set down here would race the restarting thread that stops it).
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (replicaSet) {
        handedOverTo.store(nullptr);
        replicaSet->stop();
    }
    if (router) router->stopBackgroundTasks();
    if (shardingState) shardingState->shutdown();
    if (configServer) configServer->shutdown();
    log::info("CONTROL", 20565, "Now exiting");
    return 0;
}

}  // namespace tessera::cli
