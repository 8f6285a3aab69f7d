#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "repl/group.h"
#include "repl/initial_sync.h"
#include "repl/storage_replica.h"
#include "repl/sync_source.h"
#include "storage/engine.h"

namespace tessera::repl {

// What a process started with `--replSet NAME` is: one member of a MongoDB-style replica set —
// its storage replicated through a group (group.h, storage_replica.h) — and what the command
// layer asks of it (hello, rs.status(), who may write, stepping down). A set of one member is
// the same code path as a set of three (README.md).
struct ReplicaSetOptions {
    std::string name;  // the set's name (`_id` of its configuration)
    std::string self;  // "host:port": this member, as the others and the clients reach it
    // The initial members (this one among them), identical on every initial member; empty: this
    // member alone. Used only when `dir` holds no replication state yet. A member not among them
    // starts empty and waits for the primary to add it (rs.add).
    std::vector<std::string> members;
    std::filesystem::path dir;  // the group's log and snapshots
    // Initial sync (README.md "Initial sync"): the member's dbpath, where a copy of another
    // member's data is received and the copies this member serves are kept, and how the process
    // starts over to install a received copy (never returns). Without them a member too far
    // behind the group's log cannot catch up.
    std::filesystem::path dbpath;
    std::function<void()> restartToInstallCopy;
    std::chrono::milliseconds electionTimeout{500};
    std::chrono::milliseconds heartbeatInterval{50};
    unsigned snapshotEntries = 0;  // GroupOptions' snapshot threshold and trailing (0: default)
};

// MongoDB's member states (rs.status() `state`/`stateStr`).
enum class MemberState {
    kStartup = 0,
    kPrimary = 1,
    kSecondary = 2,
    kStartup2 = 5,  // copying another member's data (initial sync)
    kUnknown = 6,
    kDown = 8
};
std::string_view memberStateName(MemberState state);

struct SetMember {
    int64_t id = 0;  // the configuration's `_id`: the group's member id (memberIdOf)
    std::string host;
    bool voter = true;
    bool self = false;
    MemberState state = MemberState::kUnknown;
    // The highest log index it is known to have (the primary knows everyone's; others their
    // own), none when unknown.
    std::optional<LogIndex> appliedIndex;
};

// One consistent view of the set from this member.
struct ReplicaSetState {
    std::string name;
    std::string me;
    bool writablePrimary = false;  // leads, and took over (step-up finished): writes run here
    bool secondary = false;  // a voter that follows (or stands): serves reads with secondaryOk
    std::optional<std::string> primary;  // as this member last heard
    Term term = 0;
    int64_t configVersion = 1;  // grows with every membership change
    LogIndex appliedIndex = 0;
    std::vector<SetMember> members;
    std::optional<InitialSyncProgress> initialSync;  // while this member copies another's data
};

class ReplicaSet {
  public:
    // What the server does when this member's leadership changes, both called on a thread of
    // the set's own, one at a time, in order:
    // - `stepUp` runs before this member accepts writes as primary (after every earlier entry is
    //   applied here): what a new primary reloads from storage — its sessions' retryable writes
    //   and transaction outcomes, written by the previous primary; a shard's role. An error is
    //   retried every 100 ms while the member leads.
    // - `stepDown` (optional) runs once the member lost the leadership in which `stepUp`
    //   succeeded (writes were refused from the moment it was lost).
    struct LeadershipHooks {
        std::function<Status()> stepUp;
        std::function<void()> stepDown;
    };

    // Joins (or, with empty state, founds) the set; `engine`'s writes go through the group from
    // here on. Call once the server listens (the members reach each other at its port).
    static StatusWith<std::unique_ptr<ReplicaSet>> start(ReplicaSetOptions options,
                                                         storage::Engine& engine,
                                                         LeadershipHooks hooks);
    ~ReplicaSet();

    ReplicaSetState state() const;
    bool isWritablePrimary() const { return _writable.load(std::memory_order_acquire); }
    const ReplicaSetOptions& options() const { return _options; }

    // A connection another member opened to this process's port (net::ServerOptions::handOver).
    void acceptStream(int fd, std::string body);

    // Waits until this member is a writable primary (a set of one: at once) or `deadline`.
    bool waitUntilWritable(std::chrono::steady_clock::time_point deadline) const;

    // A write concern of `w` members: once `w` members (this one included) have every entry
    // this member has applied. UnsatisfiableWriteConcern when the set has fewer voters,
    // WriteConcernFailed at `deadline` (none: no limit, as MongoDB's wtimeout 0).
    Status awaitReplication(size_t w,
                            std::optional<std::chrono::steady_clock::time_point> deadline);
    // UnsatisfiableWriteConcern when `w` asks for more members than the set's voters.
    Status checkSatisfiable(size_t w) const;
    // A linearizable read's proof: a barrier of this member's term committed (it still leads,
    // and every write acknowledged before the call is applied here). NotWritablePrimary on a
    // member that does not lead, ExceededTimeLimit at `deadline`.
    Status confirmLeadership(std::chrono::steady_clock::time_point deadline);

    // replSetStepDown: hands the primary role to the most caught-up secondary, and this member
    // may not be primary again for `frozenFor` (MongoDB's stepDownSecs); fails with
    // NotWritablePrimary on a secondary and ExceededTimeLimit when none took over in time.
    Status stepDown(std::chrono::seconds frozenFor);
    // replSetFreeze: this member may not become primary for `secs` (0: from now on it may);
    // IllegalOperation on the primary (MongoDB's NotSecondary, 95). A member elected while frozen
    // hands the leadership on at once and never takes writes. Kept in the group's folder, so that
    // it outlives a restart (a shard's member restarts after stepping down).
    Status freeze(std::chrono::seconds secs);
    // replSetReconfig's one change at a time: a member added (caught up, then voting) or removed.
    Status addMember(const std::string& host, std::chrono::steady_clock::time_point deadline);
    Status removeMember(const std::string& host, std::chrono::steady_clock::time_point deadline);

    // Leaves the set's network (the process is stopping); writes in flight and after fail.
    void stop();

    // The copies of this member's data it serves to members that run an initial sync.
    SyncSource& syncSource() { return _syncSource; }

  private:
    ReplicaSet(ReplicaSetOptions options, storage::Engine& engine, MemberId self,
               LeadershipHooks hooks);
    void onStatusChange(const GroupStatus& status);
    void stepUpLoop();
    // StorageReplica::CatchUp: an initial sync, then the restart that installs its copy.
    Status catchUp(LogIndex index, std::string_view source);
    // A write found this member's leadership lost (StorageReplica::setOnLeadershipLost).
    void leadershipLost();
    bool frozen() const;
    void freezeUntil(int64_t wallMillis);  // and kept in the group's folder
    // A frozen member elected: the leadership to another member.
    void handOverWhileFrozen(Term term);
    Status handOver();  // the leadership to a caught-up voter (stepDown, handOverWhileFrozen)
    Status waitDone(std::function<void(Group::Done)> start,
                    std::chrono::steady_clock::time_point deadline);

    const ReplicaSetOptions _options;
    storage::Engine& _engine;
    const MemberId _self;
    const LeadershipHooks _hooks;
    StorageReplica _replica;
    SyncSource _syncSource;
    InitialSync _initialSync;
    std::unique_ptr<Group> _group;
    std::atomic<bool> _writable{false};
    std::atomic<int64_t> _frozenUntilMillis{0};  // wall clock; 0: not frozen

    mutable Mutex _mutex;
    mutable CondVar _changed;
    Term _leaderTerm GUARDED_BY(_mutex) = 0;  // the term this member leads in (0: it does not)
    Term _writableTerm GUARDED_BY(_mutex) = 0;
    Term _steppedUpTerm GUARDED_BY(_mutex) = 0;  // the term whose stepUp hook succeeded (0: none)
    Term _lostTerm GUARDED_BY(_mutex) = 0;       // a term whose leadership a write found lost
    bool _stopping GUARDED_BY(_mutex) = false;
    std::vector<std::string> _memberHosts GUARDED_BY(_mutex);  // the configuration, last heard
    std::thread _stepUpThread;
};

// A member's id in the group, from its address alone (a hash in [1, 2^31)), so that a member
// that waits to be added knows its id before anyone tells it, and `_id` in rs.conf() is the same
// number on every member.
MemberId memberIdOf(std::string_view host);

}  // namespace tessera::repl
