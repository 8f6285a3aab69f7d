#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

// tessera_repl — one replication group (a replica set) per process, behind this interface.
// Consensus (elections, terms, log matching, membership changes) is Debian's libraft; nothing
// of it leaks past this header, so the library can be swapped (README.md).
namespace tessera::repl {

using LogIndex = std::uint64_t;
using Term = std::uint64_t;
// A member's id in the group's log. Never 0 (libraft's "none"); a replica set member's `_id`
// is its MemberId (replica_set.h).
using MemberId = std::uint64_t;

// The opCode of the one message that turns a connection to a member's main port into a stream
// of its replication group (net::ServerOptions::handOverOpCode, handover_transport.h). Not one
// of MongoDB's.
constexpr int32_t kHandOverOpCode = 2300;

enum class MemberRole {
    kVoter,    // replicates and counts in elections and commit majorities
    kStandby,  // replicates, does not count (a member catching up before it votes)
    kSpare,    // configured, receives nothing
};

struct Member {
    MemberId id = 0;
    std::string address;  // "host:port" where the member's group traffic arrives
    MemberRole role = MemberRole::kVoter;

    bool operator==(const Member&) const = default;
};

enum class Role { kUnavailable, kFollower, kCandidate, kLeader };
std::string_view roleName(Role role);

// What the group replicates into: called on the group's thread only, one call at a time, in
// log order.
class StateMachine {
  public:
    virtual ~StateMachine() = default;

    // The highest index whose effect is durable in the machine's own storage. Entries at or
    // below it are not applied again (after a restart the group replays its log from its last
    // snapshot, which may be older).
    virtual LogIndex appliedIndex() const = 0;

    // Applies the committed entry at `index` (= appliedIndex() + 1 or later). Must not fail:
    // every member applies the same entries in the same order, so an entry that cannot apply
    // on one member would make the members diverge; a machine that cannot apply ends the
    // process (a disk error), and comes back through its log.
    virtual void apply(LogIndex index, std::string_view entry) = 0;

    // Makes everything applied so far durable and returns what a member that lacks the log
    // below `index` needs to catch up (the entries ≤ `index` are then discarded).
    virtual std::string snapshot(LogIndex index) = 0;

    // Installs another member's snapshot taken at `index`; on success appliedIndex() ≥ index.
    virtual Status restore(LogIndex index, std::string_view snapshot) = 0;
};

struct GroupStatus {
    Role role = Role::kUnavailable;
    Term term = 0;
    std::optional<Member> leader;     // as this member last heard
    LogIndex lastIndex = 0;           // last entry in this member's log
    LogIndex commitIndex = 0;         // highest entry this member knows a majority has
    LogIndex appliedIndex = 0;        // highest entry applied here
    std::vector<Member> members;      // the configuration this member follows
    LogIndex configurationIndex = 0;  // the log index of that configuration (grows with changes)
    // Per member, as the leader sees it (empty on a follower): the highest index it has.
    std::vector<std::pair<MemberId, LogIndex>> matchIndexes;
    // As the leader sees it (empty on a follower): the members it has not heard from within two
    // election timeouts.
    std::vector<MemberId> unreachable;
};

struct GroupOptions {
    std::filesystem::path dir;  // the log and snapshots (created if missing)
    MemberId self = 0;
    std::string selfAddress;  // "host:port" to listen on
    // Used only when `dir` holds no state yet: the initial configuration, identical on every
    // initial member. Empty for a member that waits to be added by the leader.
    std::vector<Member> bootstrap;
    // A follower that hears nothing for a random time in [t, 2t) stands for election.
    std::chrono::milliseconds electionTimeout{500};
    std::chrono::milliseconds heartbeatInterval{50};
    // How members reach each other. false: libraft's own TCP listener at selfAddress (a port of
    // its own). true: at their main ports — the server hands connections that start with
    // kHandOverOpCode to acceptStream(), and this member connects to
    // the others' main ports the same way; selfAddress is then the member's main address.
    bool handOver = false;
    unsigned snapshotThreshold = 8192;  // entries applied between two snapshots
    unsigned snapshotTrailing = 8192;   // entries kept below a snapshot, for lagging members
    // Called on the group's thread whenever role, term or leader changes.
    std::function<void(const GroupStatus&)> onStatusChange;
};

// One member of a replication group. Its consensus runs on a thread of its own; every method
// may be called from any thread. Completion callbacks run on the group's thread and must not
// block it.
class Group {
  public:
    using Done = std::function<void(Status)>;
    using Applied = std::function<void(StatusWith<LogIndex>)>;

    // Opens (or creates) the member's state in `options.dir` and starts taking part.
    static StatusWith<std::unique_ptr<Group>> start(GroupOptions options, StateMachine& machine);

    virtual ~Group() = default;

    // Appends `entry` to the log if this member leads, and calls `applied` once it is committed
    // and applied here (with its index) or cannot be: NotWritablePrimary (never appended: not
    // the leader), InterruptedDueToReplStateChange (leadership lost while in flight: the entry
    // may or may not commit under the next leader), InterruptedAtShutdown.
    virtual void propose(std::string entry, Applied applied) = 0;

    // Membership changes, one at a time, on the leader. A new member joins as a standby, is
    // caught up, and then becomes a voter (addMember does all three).
    virtual void addMember(Member member, Done done) = 0;
    virtual void removeMember(MemberId id, Done done) = 0;
    // Hands leadership to `id` (0: the most caught-up voter); `done` once it moved, or with
    // ExceededTimeLimit when no member took over within the election timeout.
    virtual void transferLeadership(MemberId id, Done done) = 0;

    // Appends an empty entry and calls `done` once it is committed and everything before it is
    // applied here: proof that this member led after the call began, with every entry committed
    // before it applied — what a linearizable read waits for, so that a deposed leader cannot
    // serve one. Fails as propose() does.
    virtual void barrier(Done done) = 0;

    virtual GroupStatus status() const = 0;

    // With GroupOptions::handOver: a connection from another member, handed over by the server
    // after the first message (`body`: that message's body). Owns `fd` (closed if unused).
    virtual void acceptStream(int fd, std::string body) = 0;

    // Leaves the group's network and stops its thread (idempotent; the destructor calls it).
    // Proposals still in flight complete with InterruptedAtShutdown.
    virtual void stop() = 0;
};

}  // namespace tessera::repl
