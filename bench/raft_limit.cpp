// raft_limit: what a replication group (src/repl: libraft 0.15 and its libuv backend) can commit,
// the ceiling under any replicated write of Tessera.
//
// Phase "group1": a one-member group; T threads each propose an entry of --value-size bytes and
// wait until it is committed and applied (libraft fsyncs its log before it counts a member).
// Phase "group3": the same through the leader of a three-member group whose two followers are
// child processes on this machine (loopback TCP, each its own log and fsync) — the commit waits
// for the leader's and one follower's durable append.
// Compare with rocksdb_limit's fillsync (RocksDB's group commit of synced writes).
// Phase "failover": three members, each a child process with the default election timeout
// (GroupOptions); --failovers times, the leader is killed with SIGKILL and the time until
// another member leads is measured (each member reports becoming leader through a pipe); the
// killed member is started again from its directory before the next kill. The failover of a
// group alone: a router's retry and a driver's server selection come on top (issue 43's ≤ 2 s
// is measured through a router later).
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "flags.h"
#include "phase_runner.h"
#include "repl/group.h"
#include "value_source.h"

namespace tessera::bench {
namespace {

using namespace std::chrono_literals;

constexpr const char* kUsage =
    "usage: raft_limit [--threads 16] [--seconds 10] [--value-size 1024] [--max-ops N]\n"
    "                  [--dir PARENT] [--base-port 27900] [--failovers 5] [--json]\n";

class CountingMachine final : public repl::StateMachine {
  public:
    repl::LogIndex appliedIndex() const override { return _applied; }
    void apply(repl::LogIndex index, std::string_view) override { _applied = index; }
    std::string snapshot(repl::LogIndex) override { return {}; }
    Status restore(repl::LogIndex index, std::string_view) override {
        _applied = index;
        return Status::OK();
    }

  private:
    repl::LogIndex _applied = 0;  // loop thread only
};

std::vector<repl::Member> membersOf(int n, uint64_t basePort) {
    std::vector<repl::Member> out;
    for (int i = 1; i <= n; ++i) {
        out.push_back({static_cast<repl::MemberId>(i),
                       "127.0.0.1:" + std::to_string(basePort + static_cast<uint64_t>(i)),
                       repl::MemberRole::kVoter});
    }
    return out;
}

repl::GroupOptions optionsFor(const std::string& dir, const std::vector<repl::Member>& members,
                              repl::MemberId self, std::chrono::milliseconds electionTimeout) {
    repl::GroupOptions o;
    o.dir = dir + "/m" + std::to_string(self);
    o.self = self;
    o.selfAddress = members[self - 1].address;
    o.bootstrap = members;
    o.electionTimeout = electionTimeout;
    return o;
}

// A follower in a child process: takes part until the parent ends it.
[[noreturn]] void runFollower(const std::string& dir, const std::vector<repl::Member>& members,
                              repl::MemberId self) {
    CountingMachine machine;
    // A long election timeout: the parent's member, with a short one, leads.
    auto group = repl::Group::start(optionsFor(dir, members, self, 30s), machine);
    if (!group.isOK()) {
        std::cerr << "raft_limit: follower " << self << ": " << group.getStatus().toString()
                  << "\n";
        _exit(1);
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, nullptr);
    int sig = 0;
    sigwait(&set, &sig);
    group.getValue()->stop();
    _exit(0);
}

bool proposeAndWait(repl::Group& group, std::string entry, std::string* error) {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    Status outcome = Status::OK();
    group.propose(std::move(entry), [&](StatusWith<repl::LogIndex> r) {
        std::lock_guard lk(m);
        outcome = r.getStatus();
        done = true;
        cv.notify_one();
    });
    std::unique_lock lk(m);
    cv.wait(lk, [&] { return done; });
    if (!outcome.isOK()) *error = outcome.toString();
    return outcome.isOK();
}

int runGroup(int size, const std::string& dir, uint64_t basePort, const PhaseSpec& spec,
             const ValueSource& values, bool json) {
    auto members = membersOf(size, basePort);
    std::vector<pid_t> children;
    for (int i = 2; i <= size; ++i) {
        pid_t pid = fork();
        if (pid == 0) runFollower(dir, members, static_cast<repl::MemberId>(i));
        children.push_back(pid);
    }
    CountingMachine machine;
    auto started = repl::Group::start(optionsFor(dir, members, 1, 200ms), machine);
    int rc = 0;
    if (!started.isOK()) {
        std::cerr << "raft_limit: " << started.getStatus().toString() << "\n";
        rc = 1;
    } else {
        repl::Group& group = *started.getValue();
        auto deadline = std::chrono::steady_clock::now() + 20s;
        while (group.status().role != repl::Role::kLeader &&
               std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(10ms);
        }
        if (group.status().role != repl::Role::kLeader) {
            std::cerr << "raft_limit: no leader within 20 s\n";
            rc = 1;
        } else {
            PhaseResult r = runPhase(spec, [&](OpContext& ctx) {
                std::string_view v = values.slice(ctx.ticket);
                return proposeAndWait(group, std::string(v), &ctx.error);
            });
            std::cout << formatText(r) << "\n";
            if (json) std::cout << formatJson(r) << "\n";
            std::cout.flush();
            rc = r.errors > 0 || r.ops == 0 ? 1 : 0;
        }
        group.stop();
    }
    for (pid_t pid : children) {
        kill(pid, SIGTERM);
        waitpid(pid, nullptr, 0);
    }
    return rc;
}

// A member in a child process with the default timeouts, writing 'L' to `report` whenever it
// becomes the leader; runs until killed.
[[noreturn]] void runReportingMember(const std::string& dir,
                                     const std::vector<repl::Member>& members, repl::MemberId self,
                                     int report) {
    CountingMachine machine;
    repl::GroupOptions options =
        optionsFor(dir, members, self, repl::GroupOptions{}.electionTimeout);
    options.onStatusChange = [report](const repl::GroupStatus& status) {
        if (status.role == repl::Role::kLeader) {
            char leader = 'L';
            (void)!::write(report, &leader, 1);
        }
    };
    auto group = repl::Group::start(std::move(options), machine);
    if (!group.isOK()) _exit(1);
    for (;;) pause();
}

// The index of the member whose pipe says it leads, or -1 after `limit`.
int waitForLeaderReport(const std::vector<int>& pipes, int except,
                        std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        std::vector<pollfd> fds;
        for (int fd : pipes) fds.push_back({fd, POLLIN, 0});
        int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        deadline - std::chrono::steady_clock::now())
                                        .count());
        if (poll(fds.data(), fds.size(), std::max(left, 1)) <= 0) continue;
        for (size_t i = 0; i < fds.size(); ++i) {
            if (!(fds[i].revents & POLLIN)) continue;
            char buf[64];
            ssize_t n = ::read(pipes[i], buf, sizeof(buf));
            if (n > 0 && static_cast<int>(i) != except) return static_cast<int>(i);
        }
    }
    return -1;
}

int runFailovers(const std::string& dir, uint64_t basePort, uint64_t kills, bool json) {
    auto members = membersOf(3, basePort);
    std::vector<int> pipes(3, -1);
    std::vector<pid_t> pids(3, -1);
    auto startMember = [&](int i) {
        int fds[2];
        if (pipe(fds) != 0) return false;
        pid_t pid = fork();
        if (pid == 0) {
            ::close(fds[0]);
            runReportingMember(dir, members, static_cast<repl::MemberId>(i + 1), fds[1]);
        }
        ::close(fds[1]);
        if (pipes[i] >= 0) ::close(pipes[i]);
        pipes[i] = fds[0];
        pids[i] = pid;
        return pid > 0;
    };
    for (int i = 0; i < 3; ++i) startMember(i);
    PhaseResult r;
    r.tool = "raft_limit";
    r.phase = "failover";
    r.threads = 1;
    auto began = std::chrono::steady_clock::now();
    int leader = waitForLeaderReport(pipes, -1, std::chrono::seconds(20));
    for (uint64_t k = 0; k < kills && leader >= 0; ++k) {
        auto killed = std::chrono::steady_clock::now();
        kill(pids[leader], SIGKILL);
        waitpid(pids[leader], nullptr, 0);
        int next = waitForLeaderReport(pipes, leader, std::chrono::seconds(20));
        if (next < 0) {
            ++r.errors;
            if (r.firstError.empty()) r.firstError = "no new leader within 20 s";
            break;
        }
        r.latency.record(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                   std::chrono::steady_clock::now() - killed)
                                                   .count()));
        ++r.ops;
        startMember(leader);  // back from its directory, as a follower
        leader = next;
    }
    if (leader < 0 && r.errors == 0) {
        ++r.errors;
        r.firstError = "no leader within 20 s";
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    for (int i = 0; i < 3; ++i) {
        if (pids[i] > 0) {
            kill(pids[i], SIGKILL);
            waitpid(pids[i], nullptr, 0);
        }
        if (pipes[i] >= 0) ::close(pipes[i]);
    }
    std::cout << formatText(r) << "\n";
    if (json) std::cout << formatJson(r) << "\n";
    std::cout.flush();
    return r.errors > 0 || r.ops == 0 ? 1 : 0;
}

int run(int argc, char** argv) {
    Flags flags({"threads", "seconds", "value-size", "max-ops", "dir", "base-port", "failovers"},
                {"json", "help"});
    std::string err;
    if (!flags.parse(argc, argv, &err)) {
        std::cerr << "raft_limit: " << err << "\n" << kUsage;
        return 2;
    }
    if (flags.has("help")) {
        std::cout << kUsage;
        return 0;
    }
    uint64_t threads = 0, valueSize = 0, maxOps = 0, basePort = 0, failovers = 0;
    double seconds = 0;
    if (!flags.getUint("threads", 16, &threads, &err) ||
        !flags.getUint("value-size", 1024, &valueSize, &err) ||
        !flags.getUint("max-ops", 100'000'000, &maxOps, &err) ||
        !flags.getUint("base-port", 27900, &basePort, &err) ||
        !flags.getUint("failovers", 5, &failovers, &err) ||
        !flags.getDouble("seconds", 10, &seconds, &err)) {
        std::cerr << "raft_limit: " << err << "\n" << kUsage;
        return 2;
    }
    if (threads == 0 || valueSize == 0) {
        std::cerr << "raft_limit: --threads and --value-size must be positive\n";
        return 2;
    }
    std::string parent = flags.getString("dir", std::filesystem::temp_directory_path().string());
    std::string tmpl = parent + "/raft_limit.XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
        std::perror(("raft_limit: mkdtemp in " + parent).c_str());
        return 1;
    }
    const std::string dir = tmpl;
    ValueSource values(valueSize);
    int rc = 0;
    for (int size : {1, 3}) {
        PhaseSpec spec{
            "raft_limit", "group" + std::to_string(size), threads, seconds, maxOps, valueSize, 1};
        rc |=
            runGroup(size, dir + "/g" + std::to_string(size),
                     basePort + static_cast<uint64_t>(size) * 10, spec, values, flags.has("json"));
    }
    if (failovers > 0)
        rc |= runFailovers(dir + "/failover", basePort + 40, failovers, flags.has("json"));
    std::filesystem::remove_all(dir);
    return rc;
}

}  // namespace
}  // namespace tessera::bench

int main(int argc, char** argv) { return tessera::bench::run(argc, argv); }
