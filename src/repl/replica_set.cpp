#include "repl/replica_set.h"

#include <algorithm>
#include <fstream>
#include <random>

#include "base/error_codes.h"
#include "base/log.h"
#include "base/wall_clock.h"
#include "storage/replication.h"

namespace tessera::repl {

namespace {

constexpr const char* kComponent = "REPL";
// How long a new primary waits for its barrier (every earlier entry applied) before trying again.
constexpr auto kStepUpBarrierLimit = std::chrono::seconds(10);
constexpr auto kStepUpRetry = std::chrono::milliseconds(100);
constexpr auto kReplicationPoll = std::chrono::milliseconds(2);
// How often a member elected while frozen tries again to hand the leadership on.
constexpr auto kFrozenHandOverRetry = std::chrono::milliseconds(200);
// In the group's folder (libraft ignores files it does not name): until when this member may not
// become primary, as wall-clock milliseconds.
constexpr const char* kFrozenUntilFile = "frozen-until";

}  // namespace

std::string_view memberStateName(MemberState state) {
    switch (state) {
        case MemberState::kStartup:
            return "STARTUP";
        case MemberState::kPrimary:
            return "PRIMARY";
        case MemberState::kSecondary:
            return "SECONDARY";
        case MemberState::kStartup2:
            return "STARTUP2";
        case MemberState::kUnknown:
            return "UNKNOWN";
        case MemberState::kDown:
            return "(not reachable/healthy)";
    }
    return "UNKNOWN";
}

MemberId memberIdOf(std::string_view host) {
    // FNV-1a, folded into [1, 2^31): stable across processes and versions.
    uint64_t h = 14695981039346656037ull;
    for (char c : host) {
        h ^= static_cast<unsigned char>(c);
        h *= 1099511628211ull;
    }
    return (h % 0x7fffffffull) + 1;
}

ReplicaSet::ReplicaSet(ReplicaSetOptions options, storage::Engine& engine, MemberId self,
                       LeadershipHooks hooks)
    : _options(std::move(options)),
      _engine(engine),
      _self(self),
      _hooks(std::move(hooks)),
      _replica(engine, self, _options.self),
      _syncSource(engine, _options.dbpath),
      _initialSync(InitialSync::Options{_options.dbpath, _options.self, _options.members}) {
    _replica.setOnLeadershipLost([this] { leadershipLost(); });
    if (!_options.dbpath.empty() && _options.restartToInstallCopy) {
        _replica.setCatchUp(
            [this](LogIndex index, std::string_view source) { return catchUp(index, source); });
    }
}

// libraft fails the writers of a leader that lost its leadership before its state says so (and
// this member's status is read every 10 ms): a writer's client, told its write was interrupted,
// could retry here at once and pass the member-state gate of a member that no longer leads —
// where the interrupted write, applied meanwhile as another leader's entry, is found while the
// record that makes its retry a replay is not (the fault suite saw E11000 for a retried insert).
// So the writer stops writes here before it returns.
void ReplicaSet::leadershipLost() {
    MutexLock lk(_mutex);
    _lostTerm = _leaderTerm;
    if (_writable.exchange(false)) {
        log::info(kComponent, 4300101, "Stepped down: a write found the leadership lost",
                  "{\"term\":" + std::to_string(_leaderTerm) + "}");
    }
}

Status ReplicaSet::catchUp(LogIndex index, std::string_view source) {
    // The members to copy from: the command line's, and the configuration's as last heard.
    std::vector<std::string> members;
    {
        MutexLock lk(_mutex);
        members = _memberHosts;
    }
    Status copied = _initialSync.run(index, source, members);
    if (!copied.isOK()) return copied;
    log::info(kComponent, 4300117, "Initial sync: restarting to install the copy",
              "{\"neededIndex\":" + std::to_string(index) + "}");
    _options.restartToInstallCopy();
    return Status(ErrorCodes::InternalError, "the restart after an initial sync returned");
}

StatusWith<std::unique_ptr<ReplicaSet>> ReplicaSet::start(ReplicaSetOptions options,
                                                          storage::Engine& engine,
                                                          LeadershipHooks hooks) {
    std::vector<std::string> initial = options.members;
    if (initial.empty()) initial.push_back(options.self);
    GroupOptions group;
    group.dir = options.dir;
    group.self = memberIdOf(options.self);
    group.selfAddress = options.self;
    group.handOver = true;
    group.electionTimeout = options.electionTimeout;
    group.heartbeatInterval = options.heartbeatInterval;
    if (options.snapshotEntries > 0) {
        group.snapshotThreshold = options.snapshotEntries;
        group.snapshotTrailing = options.snapshotEntries;
    }
    if (std::find(initial.begin(), initial.end(), options.self) != initial.end()) {
        for (const std::string& host : initial) {
            MemberId id = memberIdOf(host);
            for (const Member& m : group.bootstrap) {
                if (m.id == id) {
                    return Status(ErrorCodes::BadValue,
                                  "replica set members " + m.address + " and " + host +
                                      " are the same member (one address listed twice)");
                }
            }
            group.bootstrap.push_back(Member{id, host, MemberRole::kVoter});
        }
    }  // else: a member the primary adds (rs.add) — it waits, empty, until then.
    std::unique_ptr<ReplicaSet> set(
        new ReplicaSet(std::move(options), engine, group.self, std::move(hooks)));
    ReplicaSet* raw = set.get();
    group.onStatusChange = [raw](const GroupStatus& status) { raw->onStatusChange(status); };
    auto started = Group::start(std::move(group), set->_replica);
    if (!started.isOK()) return started.getStatus();
    set->_group = std::move(started.getValue());
    set->_replica.attach(set->_group.get());
    storage::setCommitLog(engine, &set->_replica);
    if (std::ifstream in(raw->_options.dir / kFrozenUntilFile); in) {
        int64_t until = 0;
        if (in >> until && until > wallClockMillis()) raw->_frozenUntilMillis.store(until);
    }
    set->_stepUpThread = std::thread([raw] { raw->stepUpLoop(); });
    // A status change may have come before the thread waited: it re-reads the state.
    raw->onStatusChange(raw->_group->status());
    log::info(kComponent, 4300100, "Replica set member started",
              "{\"set\":\"" + log::jsonEscape(raw->_options.name) + "\",\"me\":\"" +
                  log::jsonEscape(raw->_options.self) + "\",\"id\":" + std::to_string(raw->_self) +
                  "}");
    return set;
}

ReplicaSet::~ReplicaSet() {
    stop();
    storage::setCommitLog(_engine, nullptr);  // the replica goes with this object
}

void ReplicaSet::stop() {
    {
        MutexLock lk(_mutex);
        if (_stopping) return;
        _stopping = true;
        _changed.notify_all();
    }
    _writable.store(false, std::memory_order_release);
    _initialSync.stop();  // the group's thread may be copying another member's data
    if (_stepUpThread.joinable()) _stepUpThread.join();
    if (_group) _group->stop();
    // The engine keeps its commit log: a write after this fails (NotWritablePrimary) instead of
    // reaching RocksDB without the group.
    _replica.attach(nullptr);
}

void ReplicaSet::onStatusChange(const GroupStatus& status) {
    MutexLock lk(_mutex);
    if (!status.members.empty()) {
        _memberHosts.clear();
        for (const Member& m : status.members) _memberHosts.push_back(m.address);
    }
    Term leading = status.role == Role::kLeader ? status.term : 0;
    if (leading == _leaderTerm) return;
    _leaderTerm = leading;
    if (_writableTerm != leading) {
        if (_writable.exchange(false)) {
            log::info(kComponent, 4300101, "Stepped down: no longer primary",
                      "{\"term\":" + std::to_string(status.term) + "}");
        }
    }
    _changed.notify_all();
}

// A member that became leader writes only once every entry of earlier terms is applied here (a
// barrier of its own term commits after them) and its step-up hook reloaded what the previous
// primary recorded; until then hello says it is not writable and writes are refused.
void ReplicaSet::stepUpLoop() {
    UniqueLock lk(_mutex);
    while (true) {
        _changed.wait(lk, [&]() REQUIRES(_mutex) {
            return _stopping || (_steppedUpTerm != 0 && _steppedUpTerm != _leaderTerm) ||
                   (_leaderTerm != 0 && _writableTerm != _leaderTerm);
        });
        if (_stopping) return;
        if (_steppedUpTerm != 0 && _steppedUpTerm != _leaderTerm) {
            // The leadership of the last successful step-up is gone (writes were refused at
            // once, on the loop thread): what the server runs only while primary stops.
            const Term lost = _steppedUpTerm;
            _steppedUpTerm = 0;
            lk.unlock();
            log::info(kComponent, 4300104, "Stepping down: primary-only work stops",
                      "{\"term\":" + std::to_string(lost) + "}");
            if (_hooks.stepDown) _hooks.stepDown();
            lk.lock();
            continue;
        }
        const Term term = _leaderTerm;
        if (frozen()) {
            lk.unlock();
            handOverWhileFrozen(term);
            lk.lock();
            if (_leaderTerm == term) _changed.wait_for(lk, kFrozenHandOverRetry);
            continue;
        }
        lk.unlock();
        Status ready = waitDone([this](Group::Done done) { _group->barrier(std::move(done)); },
                                std::chrono::steady_clock::now() + kStepUpBarrierLimit);
        if (ready.isOK() && _hooks.stepUp) ready = _hooks.stepUp();
        lk.lock();
        if (ready.isOK()) _steppedUpTerm = term;  // its stepDown is owed even if already lost
        if (ready.isOK() && _leaderTerm == term && _lostTerm == term) {
            _writableTerm = term;  // a write found this leadership lost during the step-up
        } else if (ready.isOK() && _leaderTerm == term) {
            _writableTerm = term;
            _writable.store(true, std::memory_order_release);
            _changed.notify_all();
            log::info(kComponent, 4300102, "Transition to primary complete; accepting writes",
                      "{\"term\":" + std::to_string(term) + "}");
        } else if (!ready.isOK() && _leaderTerm == term) {
            log::warning(kComponent, 4300103, "Taking over as primary failed; trying again",
                         "{\"term\":" + std::to_string(term) + ",\"error\":\"" +
                             log::jsonEscape(ready.toString()) + "\"}");
            _changed.wait_for(lk, kStepUpRetry);
        }
    }
}

Status ReplicaSet::waitDone(std::function<void(Group::Done)> start,
                            std::chrono::steady_clock::time_point deadline) {
    struct Outcome {
        Mutex mutex;
        CondVar cv;
        std::optional<Status> status GUARDED_BY(mutex);
    };
    auto outcome = std::make_shared<Outcome>();
    start([outcome](Status s) {
        MutexLock lk(outcome->mutex);
        outcome->status = std::move(s);
        outcome->cv.notify_all();
    });
    UniqueLock lk(outcome->mutex);
    if (!outcome->cv.wait_until(
            lk, deadline, [&]() REQUIRES(outcome->mutex) { return outcome->status.has_value(); })) {
        return Status(ErrorCodes::ExceededTimeLimit, "the replica set did not answer in time");
    }
    return *outcome->status;
}

bool ReplicaSet::waitUntilWritable(std::chrono::steady_clock::time_point deadline) const {
    UniqueLock lk(_mutex);
    // _writable becomes true under _mutex, with a notification.
    return _changed.wait_until(lk, deadline, [&] { return isWritablePrimary(); });
}

ReplicaSetState ReplicaSet::state() const {
    GroupStatus status = _group->status();
    ReplicaSetState state;
    state.name = _options.name;
    state.me = _options.self;
    state.writablePrimary = isWritablePrimary();
    state.term = status.term;
    state.configVersion = static_cast<int64_t>(std::max<LogIndex>(status.configurationIndex, 1));
    state.appliedIndex = _replica.appliedIndex();  // exact; the status is a few ms old
    if (status.leader) state.primary = status.leader->address;
    const bool leads = status.role == Role::kLeader;
    bool selfVoter = false;
    for (const Member& m : status.members) {
        SetMember member;
        member.id = static_cast<int64_t>(m.id);
        member.host = m.address;
        member.voter = m.role == MemberRole::kVoter;
        member.self = m.id == _self;
        if (member.self) selfVoter = member.voter;
        const bool isLeader = status.leader && status.leader->id == m.id;
        const bool unreachable = std::find(status.unreachable.begin(), status.unreachable.end(),
                                           m.id) != status.unreachable.end();
        if (member.self) {
            // A voter that follows, or stands in an election, is a SECONDARY, as in MongoDB: it
            // keeps serving reads that allow a secondary while the set has no primary.
            member.state = isLeader ? MemberState::kPrimary
                           : member.voter && status.role != Role::kUnavailable
                               ? MemberState::kSecondary
                               : MemberState::kStartup;
            member.appliedIndex = state.appliedIndex;
        } else if (isLeader) {
            member.state = MemberState::kPrimary;
        } else if (leads) {
            member.state = unreachable    ? MemberState::kDown
                           : member.voter ? MemberState::kSecondary
                                          : MemberState::kStartup;
            for (const auto& [id, match] : status.matchIndexes) {
                if (id == m.id) member.appliedIndex = match;
            }
        } else {
            member.state = MemberState::kUnknown;  // only the primary hears from everyone
        }
        state.members.push_back(std::move(member));
    }
    state.secondary =
        selfVoter && (status.role == Role::kFollower || status.role == Role::kCandidate);
    state.initialSync = _initialSync.progress();
    if (state.initialSync) {
        state.secondary = false;
        for (SetMember& m : state.members) {
            if (m.self) m.state = MemberState::kStartup2;
        }
    }
    return state;
}

Status ReplicaSet::confirmLeadership(std::chrono::steady_clock::time_point deadline) {
    if (!isWritablePrimary()) return Status(ErrorCodes::NotWritablePrimary, "not primary");
    return waitDone([this](Group::Done done) { _group->barrier(std::move(done)); }, deadline);
}

Status ReplicaSet::checkSatisfiable(size_t w) const {
    GroupStatus status = _group->status();
    const size_t voters =
        std::count_if(status.members.begin(), status.members.end(),
                      [](const Member& m) { return m.role == MemberRole::kVoter; });
    if (w <= std::max<size_t>(voters, 1)) return Status::OK();
    return Status(ErrorCodes::UnsatisfiableWriteConcern,
                  "Not enough data-bearing nodes: w: " + std::to_string(w) +
                      " asks for more members than the set's " + std::to_string(voters));
}

Status ReplicaSet::awaitReplication(size_t w,
                                    std::optional<std::chrono::steady_clock::time_point> deadline) {
    if (w <= 1) return Status::OK();
    TRY_STATUS(checkSatisfiable(w));
    // Everything applied here, this caller's writes included (the status is refreshed every few
    // milliseconds, and would be too old for them).
    const LogIndex target = _replica.appliedIndex();
    // The leader's view of its members is refreshed every few milliseconds (group.h): polled.
    while (true) {
        GroupStatus status = _group->status();
        if (status.role != Role::kLeader) {
            return Status(ErrorCodes::PrimarySteppedDown,
                          "primary stepped down while waiting for replication");
        }
        size_t have = std::count_if(status.matchIndexes.begin(), status.matchIndexes.end(),
                                    [&](const auto& m) { return m.second >= target; });
        if (have >= w) return Status::OK();
        if (deadline && std::chrono::steady_clock::now() >= *deadline) {
            return Status(ErrorCodes::WriteConcernFailed, "waiting for replication timed out");
        }
        std::this_thread::sleep_for(kReplicationPoll);
    }
}

void ReplicaSet::acceptStream(int fd, std::string body) {
    _group->acceptStream(fd, std::move(body));
}

Status ReplicaSet::stepDown(std::chrono::seconds frozenFor) {
    if (_group->status().role != Role::kLeader) {
        return Status(ErrorCodes::NotWritablePrimary, "not primary so can't step down");
    }
    // Frozen first: losing the leadership may restart the process (a shard's member) before the
    // transfer's answer comes back.
    const int64_t before = _frozenUntilMillis.load();
    freezeUntil(wallClockMillis() +
                std::chrono::duration_cast<std::chrono::milliseconds>(frozenFor).count());
    Status handed = handOver();
    if (!handed.isOK()) freezeUntil(before);  // still primary: as frozen as before
    return handed;
}

// The leadership to a voter that holds every entry, picked at random: a member elected while
// frozen hands it on again, and libraft's own pick (the first caught-up voter) could bounce it
// between two frozen members forever.
Status ReplicaSet::handOver() {
    const GroupStatus status = _group->status();
    std::vector<MemberId> caughtUp;
    for (const auto& [member, match] : status.matchIndexes) {
        const MemberId id = member;  // a lambda cannot capture a structured binding (C++20)
        const bool voter = std::any_of(
            status.members.begin(), status.members.end(),
            [id](const Member& m) { return m.id == id && m.role == MemberRole::kVoter; });
        if (id != _self && voter && match >= status.lastIndex) caughtUp.push_back(id);
    }
    MemberId target = 0;  // none known caught up: libraft picks when one is
    if (!caughtUp.empty()) {
        static thread_local std::mt19937 random{std::random_device{}()};
        target = caughtUp[std::uniform_int_distribution<size_t>(0, caughtUp.size() - 1)(random)];
    }
    // The transfer completes (or gives up) within an election timeout; the deadline only guards
    // against a group that stopped answering.
    return waitDone(
        [this, target](Group::Done done) { _group->transferLeadership(target, std::move(done)); },
        std::chrono::steady_clock::now() + 10 * _options.electionTimeout + std::chrono::seconds(1));
}

Status ReplicaSet::freeze(std::chrono::seconds secs) {
    if (isWritablePrimary()) {
        return Status(ErrorCodes::IllegalOperation,
                      "cannot freeze node when primary: step it down (rs.stepDown) instead");
    }
    freezeUntil(secs.count() == 0
                    ? 0
                    : wallClockMillis() +
                          std::chrono::duration_cast<std::chrono::milliseconds>(secs).count());
    return Status::OK();
}

bool ReplicaSet::frozen() const { return wallClockMillis() < _frozenUntilMillis.load(); }

void ReplicaSet::freezeUntil(int64_t wallMillis) {
    _frozenUntilMillis.store(wallMillis);
    std::ofstream out(_options.dir / kFrozenUntilFile, std::ios::trunc);
    out << wallMillis << "\n";
    out.flush();
    if (!out) {
        log::warning(kComponent, 4300121, "Cannot keep this member's freeze across a restart",
                     "{\"dir\":\"" + log::jsonEscape(_options.dir.string()) + "\"}");
    }
    log::info(kComponent, 4300120, "Frozen: this member may not become primary until then",
              "{\"untilMillis\":" + std::to_string(wallMillis) + "}");
}

void ReplicaSet::handOverWhileFrozen(Term term) {
    log::info(kComponent, 4300122, "Elected while frozen: handing the primary role on",
              "{\"term\":" + std::to_string(term) + "}");
    Status handed = handOver();
    if (!handed.isOK()) {
        log::info(kComponent, 4300123, "No member took the primary role from a frozen member yet",
                  "{\"term\":" + std::to_string(term) + ",\"error\":\"" +
                      log::jsonEscape(handed.toString()) + "\"}");
    }
}

Status ReplicaSet::addMember(const std::string& host,
                             std::chrono::steady_clock::time_point deadline) {
    MemberId id = memberIdOf(host);
    for (const Member& m : _group->status().members) {
        if (m.id == id) {
            return Status(
                ErrorCodes::NewReplicaSetConfigurationIncompatible,
                "member " + host + " is already in the replica set (as " + m.address + ")");
        }
    }
    return waitDone(
        [&](Group::Done done) {
            _group->addMember(Member{id, host, MemberRole::kVoter}, std::move(done));
        },
        deadline);
}

Status ReplicaSet::removeMember(const std::string& host,
                                std::chrono::steady_clock::time_point deadline) {
    MemberId id = memberIdOf(host);
    return waitDone([&](Group::Done done) { _group->removeMember(id, std::move(done)); }, deadline);
}

}  // namespace tessera::repl
