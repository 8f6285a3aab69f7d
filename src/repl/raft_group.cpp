// Group over libraft with its libuv backend (segmented log files, TCP transport). libraft and
// libuv are single-threaded: the group runs on the process's replication loop thread
// (loop_thread.h), and every call from other threads is a task posted to that loop.
#include <uv.h>

extern "C" {
#include <raft/uv.h>
}

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <map>
#include <utility>

#include "base/error_codes.h"
#include "base/log.h"
#include "base/mutex.h"
#include "repl/handover_transport.h"
#include "repl/loop_thread.h"
#include "repl/nodelay_transport.h"
#include "repl/raft_fsm.h"
#include "repl/raft_io_guard.h"

namespace tessera::repl {

namespace {

constexpr const char* kComponent = "REPL";
constexpr auto kStatusRefresh = std::chrono::milliseconds(10);
constexpr auto kDrainLimit = std::chrono::milliseconds(2000);

// What a request made after stop() completes with.
Status groupStopped() {
    return Status(ErrorCodes::InterruptedAtShutdown, "replication group stopped");
}

int raftRole(MemberRole role) {
    switch (role) {
        case MemberRole::kVoter:
            return RAFT_VOTER;
        case MemberRole::kStandby:
            return RAFT_STANDBY;
        case MemberRole::kSpare:
            return RAFT_SPARE;
    }
    return RAFT_VOTER;
}

MemberRole memberRole(int role) {
    switch (role) {
        case RAFT_STANDBY:
            return MemberRole::kStandby;
        case RAFT_SPARE:
            return MemberRole::kSpare;
        default:
            return MemberRole::kVoter;
    }
}

Role roleOf(int state) {
    switch (state) {
        case RAFT_FOLLOWER:
            return Role::kFollower;
        case RAFT_CANDIDATE:
            return Role::kCandidate;
        case RAFT_LEADER:
            return Role::kLeader;
        default:
            return Role::kUnavailable;
    }
}

class RaftGroup;

// A request handed to libraft, freed by its callback.
struct ProposeRequest {
    struct raft_apply req {};
    Group::Applied applied;
};
struct ChangeRequest {
    raft_change req{};
    Group::Done done;
    RaftGroup* owner = nullptr;
    Member member;  // addMember: given its role once added
};
struct BarrierRequest {
    struct raft_barrier req {};
    Group::Done done;
};
struct TransferRequest {
    struct raft_transfer req {};
    Group::Done done;
    RaftGroup* owner = nullptr;
};

class RaftGroup final : public Group {
  public:
    RaftGroup(GroupOptions options, StateMachine& machine)
        : _options(std::move(options)), _fsm(machine) {}

    ~RaftGroup() override { stop(); }

    Status open();

    void propose(std::string entry, Applied applied) override;
    void addMember(Member member, Done done) override;
    void removeMember(MemberId id, Done done) override;
    void transferLeadership(MemberId id, Done done) override;
    void barrier(Done done) override;
    GroupStatus status() const override {
        MutexLock lk(_statusMutex);
        return _status;
    }
    void stop() override;
    void acceptStream(int fd, std::string body) override;

  private:
    enum class Stage { kNone, kTimer, kTransport, kIo, kRaft };

    Status initialize();
    void beginClose();
    void markClosed();
    void waitClosed();
    // Runs `task` on the loop thread; after stop(), runs `orElse` on the caller's instead.
    void post(std::function<void()> task, std::function<void()> orElse);
    // Runs `start(done)` on the loop thread; after stop(), `done` gets groupStopped() instead.
    void postWithDone(Done done, std::function<void(Done)> start);
    static void onStatusTimer(uv_timer_t* handle);
    static void onTimerClosed(uv_handle_t* handle);
    static void onDrainTimer(uv_timer_t* handle);
    static void onRaftClosed(raft* instance);
    void refreshStatus();
    void finishChange(ChangeRequest* change, int status);
    void assignRole(ChangeRequest* change);

    GroupOptions _options;
    FsmAdapter _fsm;
    std::shared_ptr<LoopThread> _loopThread;
    uv_timer_t _statusTimer{};
    NodelayTransport _transport;  // libraft's TCP transport with TCP_NODELAY, or…
    HandoverTransport _handOver;  // …the members' main ports (GroupOptions::handOver)
    raft_io _io{};
    RaftIoGuard _guard;  // between libraft and its io: see raft_io_guard.h
    raft _raft{};
    // Loop thread only:
    Stage _stage = Stage::kNone;  // how far initialize() got
    bool _closing = false;
    uint64_t _drainDeadline = 0;  // uv_now() at which stop() closes even with writes pending
    std::map<MemberId, uint64_t> _lastHeard;  // uv_now() at which the leader last heard a member

    Mutex _queueMutex;
    bool _accepting GUARDED_BY(_queueMutex) = false;  // from open() until stop()

    Mutex _closedMutex;
    CondVar _closedCv;
    bool _closed GUARDED_BY(_closedMutex) = false;

    mutable Mutex _statusMutex;
    GroupStatus _status GUARDED_BY(_statusMutex);
    std::atomic<bool> _stopped{false};
};

Status RaftGroup::open() {
    _loopThread = LoopThread::shared();
    Status opened = Status::OK();
    _loopThread->runSync([&] {
        opened = initialize();
        if (!opened.isOK()) beginClose();
    });
    if (!opened.isOK()) {
        waitClosed();
        return opened;
    }
    {
        MutexLock lk(_queueMutex);
        _accepting = true;
    }
    log::info(kComponent, 4300001, "Replication group member started",
              "{\"id\":" + std::to_string(_options.self) + ",\"address\":\"" +
                  log::jsonEscape(_options.selfAddress) + "\",\"dir\":\"" +
                  log::jsonEscape(_options.dir.string()) + "\"}");
    return Status::OK();
}

Status RaftGroup::initialize() {
    std::error_code ec;
    std::filesystem::create_directories(_options.dir, ec);
    if (ec) {
        return Status(ErrorCodes::InternalError,
                      "cannot create " + _options.dir.string() + ": " + ec.message());
    }
    uv_loop_t* loop = _loopThread->loop();
    _statusTimer.data = this;
    uv_timer_init(loop, &_statusTimer);
    _stage = Stage::kTimer;
    raft_uv_transport* transport = nullptr;
    if (_options.handOver) {
        transport = _handOver.transport(loop);
    } else {
        if (int rv = raft_uv_tcp_init(_transport.inner(), loop); rv != 0) {
            return statusFromRaft(rv, "raft_uv_tcp_init");
        }
        transport = _transport.transport();
    }
    _stage = Stage::kTransport;
    if (int rv = raft_uv_init(&_io, loop, _options.dir.c_str(), transport); rv != 0) {
        return statusFromRaft(rv, std::string("raft_uv_init: ") + _io.errmsg);
    }
    _stage = Stage::kIo;
    raft_uv_set_connect_retry_delay(&_io, 100);
    _guard.wrap(&_io);
    if (int rv =
            raft_init(&_raft, _guard.io(), _fsm.fsm(), _options.self, _options.selfAddress.c_str());
        rv != 0) {
        return statusFromRaft(rv, std::string("raft_init: ") + raft_errmsg(&_raft));
    }
    _stage = Stage::kRaft;
    _raft.data = this;
    _fsm.bind(&_raft);
    raft_set_election_timeout(&_raft, static_cast<unsigned>(_options.electionTimeout.count()));
    raft_set_heartbeat_timeout(&_raft, static_cast<unsigned>(_options.heartbeatInterval.count()));
    raft_set_snapshot_threshold(&_raft, _options.snapshotThreshold);
    raft_set_snapshot_trailing(&_raft, _options.snapshotTrailing);
    raft_set_pre_vote(&_raft, true);  // a member back from a partition does not depose a leader

    if (!_options.bootstrap.empty()) {
        raft_configuration conf;
        raft_configuration_init(&conf);
        for (const Member& m : _options.bootstrap) {
            if (int rv = raft_configuration_add(&conf, m.id, m.address.c_str(), raftRole(m.role));
                rv != 0) {
                raft_configuration_close(&conf);
                return statusFromRaft(rv, "initial configuration");
            }
        }
        int rv = raft_bootstrap(&_raft, &conf);
        raft_configuration_close(&conf);
        if (rv != 0 && rv != RAFT_CANTBOOTSTRAP) {  // CANTBOOTSTRAP: state exists already
            return statusFromRaft(rv, std::string("raft_bootstrap: ") + raft_errmsg(&_raft));
        }
    }
    if (int rv = raft_start(&_raft); rv != 0) {
        return statusFromRaft(rv, std::string("raft_start: ") + raft_errmsg(&_raft));
    }
    refreshStatus();  // the configuration raft_start loaded, before start() returns
    uv_timer_start(&_statusTimer, &RaftGroup::onStatusTimer, 0,
                   static_cast<uint64_t>(kStatusRefresh.count()));
    return Status::OK();
}

// On the loop: closes what initialize() opened; waitClosed() returns once it is closed.
void RaftGroup::beginClose() {
    _closing = true;
    if (_stage >= Stage::kRaft) {
        raft_close(&_raft, &RaftGroup::onRaftClosed);  // then the io, transport and timer
        return;
    }
    if (_stage >= Stage::kIo) raft_uv_close(&_io);
    if (_stage >= Stage::kTransport && !_options.handOver) raft_uv_tcp_close(_transport.inner());
    if (_stage >= Stage::kTimer) {
        uv_close(reinterpret_cast<uv_handle_t*>(&_statusTimer), &RaftGroup::onTimerClosed);
    } else {
        markClosed();
    }
}

void RaftGroup::onTimerClosed(uv_handle_t* handle) {
    static_cast<RaftGroup*>(handle->data)->markClosed();
}

void RaftGroup::markClosed() {
    MutexLock lk(_closedMutex);
    _closed = true;
    _closedCv.notify_all();
}

void RaftGroup::waitClosed() {
    UniqueLock lk(_closedMutex);
    _closedCv.wait(lk, [this]() REQUIRES(_closedMutex) { return _closed; });
}

void RaftGroup::post(std::function<void()> task, std::function<void()> orElse) {
    {
        MutexLock lk(_queueMutex);
        if (_accepting) {
            _loopThread->post(std::move(task));
            return;
        }
    }
    orElse();
}

void RaftGroup::postWithDone(Done done, std::function<void(Done)> start) {
    auto shared = std::make_shared<Done>(std::move(done));
    post([shared, start = std::move(start)] { start(std::move(*shared)); },
         [shared] { (*shared)(groupStopped()); });
}

void RaftGroup::onStatusTimer(uv_timer_t* handle) {
    static_cast<RaftGroup*>(handle->data)->refreshStatus();
}

void RaftGroup::refreshStatus() {
    if (_closing) return;
    GroupStatus next;
    const uint64_t now = uv_now(_loopThread->loop());
    next.role = roleOf(raft_state(&_raft));
    next.term = _raft.current_term;
    raft_id leaderId = 0;
    const char* leaderAddress = nullptr;
    raft_leader(&_raft, &leaderId, &leaderAddress);
    next.lastIndex = raft_last_index(&_raft);
    next.commitIndex = _raft.commit_index;
    next.appliedIndex = raft_last_applied(&_raft);
    next.configurationIndex = _raft.configuration_uncommitted_index != 0
                                  ? _raft.configuration_uncommitted_index
                                  : _raft.configuration_index;
    for (unsigned i = 0; i < _raft.configuration.n; ++i) {
        const raft_server& s = _raft.configuration.servers[i];
        Member m{s.id, s.address, memberRole(s.role)};
        if (s.id == leaderId) next.leader = m;
        next.members.push_back(std::move(m));
        if (next.role == Role::kLeader && _raft.leader_state.progress != nullptr) {
            const raft_progress& progress = _raft.leader_state.progress[i];
            next.matchIndexes.emplace_back(
                s.id, s.id == _options.self ? next.lastIndex : progress.match_index);
            // libraft clears recent_recv every election timeout: a member is unreachable once
            // nothing came from it for two.
            auto [heard, fresh] = _lastHeard.try_emplace(s.id, now);
            if (progress.recent_recv || s.id == _options.self || fresh) heard->second = now;
            if (now - heard->second > static_cast<uint64_t>(2 * _options.electionTimeout.count())) {
                next.unreachable.push_back(s.id);
            }
        }
    }
    if (next.role != Role::kLeader) _lastHeard.clear();
    bool changed;
    {
        MutexLock lk(_statusMutex);
        changed = next.role != _status.role || next.term != _status.term ||
                  next.leader != _status.leader ||
                  next.configurationIndex != _status.configurationIndex;
        _status = next;
    }
    if (changed) {
        log::info(kComponent, 4300002, "Replication group member state changed",
                  "{\"id\":" + std::to_string(_options.self) + ",\"role\":\"" +
                      std::string(roleName(next.role)) + "\",\"term\":" +
                      std::to_string(next.term) + ",\"leader\":" + std::to_string(leaderId) + "}");
        if (_options.onStatusChange) _options.onStatusChange(next);
    }
}

void RaftGroup::propose(std::string entry, Applied applied) {
    auto shared = std::make_shared<std::string>(std::move(entry));
    auto done = std::make_shared<Applied>(std::move(applied));
    post(
        [this, shared, done] {
            raft_buffer buf = FsmAdapter::frameEntry(*shared);
            if (buf.base == nullptr) {
                (*done)(Status(ErrorCodes::InternalError, "out of memory for a log entry"));
                return;
            }
            auto* request = new ProposeRequest;
            request->req.data = request;
            request->applied = std::move(*done);
            int rv = raft_apply(&_raft, &request->req, &buf, 1,
                                [](struct raft_apply* req, int status, void*) {
                                    auto* r = static_cast<ProposeRequest*>(req->data);
                                    if (status == 0) {
                                        r->applied(static_cast<LogIndex>(req->index));
                                    } else {
                                        r->applied(statusFromRaft(status, "log entry"));
                                    }
                                    delete r;
                                });
            if (rv != 0) {
                raft_free(buf.base);
                request->applied(statusFromRaft(rv, "propose"));
                delete request;
            }
        },
        [done] { (*done)(groupStopped()); });
}

void RaftGroup::finishChange(ChangeRequest* change, int status) {
    refreshStatus();  // the new configuration, before the caller hears of it
    change->done(status == 0 ? Status::OK() : statusFromRaft(status, "membership change"));
    delete change;
}

void RaftGroup::addMember(Member member, Done done) {
    postWithDone(std::move(done), [this, member](Done d) {
        auto* change = new ChangeRequest;
        change->req.data = change;
        change->done = std::move(d);
        change->member = member;
        change->owner = this;
        int rv = raft_add(&_raft, &change->req, member.id, member.address.c_str(),
                          [](raft_change* req, int status) {
                              auto* c = static_cast<ChangeRequest*>(req->data);
                              if (status != 0 || c->member.role == MemberRole::kSpare) {
                                  c->owner->finishChange(c, status);
                                  return;
                              }
                              c->owner->assignRole(c);
                          });
        if (rv != 0) finishChange(change, rv);
    });
}

// Added as a spare: assigning a voting role first catches the member up (libraft's catch-up
// rounds), then commits the role.
void RaftGroup::assignRole(ChangeRequest* change) {
    int rv = raft_assign(&_raft, &change->req, change->member.id, raftRole(change->member.role),
                         [](raft_change* req, int status) {
                             auto* c = static_cast<ChangeRequest*>(req->data);
                             c->owner->finishChange(c, status);
                         });
    if (rv != 0) finishChange(change, rv);
}

void RaftGroup::removeMember(MemberId id, Done done) {
    postWithDone(std::move(done), [this, id](Done d) {
        auto* change = new ChangeRequest;
        change->req.data = change;
        change->done = std::move(d);
        change->owner = this;
        int rv = raft_remove(&_raft, &change->req, id, [](raft_change* req, int status) {
            auto* c = static_cast<ChangeRequest*>(req->data);
            c->owner->finishChange(c, status);
        });
        if (rv != 0) finishChange(change, rv);
    });
}

void RaftGroup::barrier(Done done) {
    postWithDone(std::move(done), [this](Done d) {
        auto* request = new BarrierRequest;
        request->req.data = request;
        request->done = std::move(d);
        int rv = raft_barrier(&_raft, &request->req, [](struct raft_barrier* req, int status) {
            auto* r = static_cast<BarrierRequest*>(req->data);
            r->done(status == 0 ? Status::OK() : statusFromRaft(status, "barrier"));
            delete r;
        });
        if (rv != 0) {
            request->done(statusFromRaft(rv, "barrier"));
            delete request;
        }
    });
}

void RaftGroup::transferLeadership(MemberId id, Done done) {
    postWithDone(std::move(done), [this, id](Done d) {
        auto* transfer = new TransferRequest;
        transfer->req.data = transfer;
        transfer->done = std::move(d);
        transfer->owner = this;
        int rv = raft_transfer(&_raft, &transfer->req, id, [](struct raft_transfer* req) {
            // Called once the target leads, or after an election timeout without it.
            auto* t = static_cast<TransferRequest*>(req->data);
            raft_id leader = 0;
            const char* address = nullptr;
            raft_leader(&t->owner->_raft, &leader, &address);
            t->owner->refreshStatus();
            if (leader == req->id) {
                t->done(Status::OK());
            } else {
                // MongoDB's replSetStepDown answers this when no secondary took over in time.
                t->done(Status(ErrorCodes::ExceededTimeLimit, "leadership did not move to member " +
                                                                  std::to_string(req->id) +
                                                                  " within the election timeout"));
            }
            delete t;
        });
        if (rv != 0) {
            transfer->done(statusFromRaft(rv, "leadership transfer"));
            delete transfer;
        }
    });
}

// libraft 0.15 cannot close with log writes in flight: each failed write truncates the log
// from its first entry, and the next failed write then releases entries already gone (a crash;
// fixed upstream after 0.15). So the group closes once its writes are on disk, or after
// kDrainLimit (a disk that does not answer).
void RaftGroup::onDrainTimer(uv_timer_t* handle) {
    auto* self = static_cast<RaftGroup*>(handle->data);
    bool drained = self->_raft.last_stored >= raft_last_index(&self->_raft);
    if (!drained && uv_now(self->_loopThread->loop()) < self->_drainDeadline) return;
    uv_timer_stop(&self->_statusTimer);
    raft_close(&self->_raft, &RaftGroup::onRaftClosed);
}

void RaftGroup::acceptStream(int fd, std::string body) {
    auto shared = std::make_shared<std::string>(std::move(body));
    post(
        [this, fd, shared] {
            if (!_options.handOver || _closing) {
                ::close(fd);
                return;
            }
            _handOver.accept(fd, *shared);
        },
        [fd] { ::close(fd); });
}

void RaftGroup::onRaftClosed(raft* instance) {
    auto* self = static_cast<RaftGroup*>(instance->data);
    raft_uv_close(&self->_io);
    if (!self->_options.handOver) raft_uv_tcp_close(self->_transport.inner());
    uv_close(reinterpret_cast<uv_handle_t*>(&self->_statusTimer), &RaftGroup::onTimerClosed);
}

void RaftGroup::stop() {
    if (_stopped.exchange(true)) return;
    {
        MutexLock lk(_queueMutex);
        if (!_accepting) return;  // open() failed and closed already
        _accepting = false;
        // After every task posted before: proposals made before stop() reach libraft first.
        _loopThread->post([this] {
            _closing = true;
            _drainDeadline = uv_now(_loopThread->loop()) + kDrainLimit.count();
            uv_timer_stop(&_statusTimer);
            uv_timer_start(&_statusTimer, &RaftGroup::onDrainTimer, 0, 1);
        });
    }
    waitClosed();
    {
        MutexLock lk(_statusMutex);
        _status.role = Role::kUnavailable;
    }
    log::info(kComponent, 4300003, "Replication group member stopped",
              "{\"id\":" + std::to_string(_options.self) + "}");
}

}  // namespace

std::string_view roleName(Role role) {
    switch (role) {
        case Role::kUnavailable:
            return "unavailable";
        case Role::kFollower:
            return "follower";
        case Role::kCandidate:
            return "candidate";
        case Role::kLeader:
            return "leader";
    }
    return "unknown";
}

StatusWith<std::unique_ptr<Group>> Group::start(GroupOptions options, StateMachine& machine) {
    // libuv writes to sockets with write(2): a peer that went away must be an error on that
    // connection (libraft reconnects), not a SIGPIPE that ends the process.
    static const bool sigpipeIgnored = [] {
        ::signal(SIGPIPE, SIG_IGN);
        return true;
    }();
    (void)sigpipeIgnored;
    auto group = std::make_unique<RaftGroup>(std::move(options), machine);
    Status opened = group->open();
    if (!opened.isOK()) return opened;
    return std::unique_ptr<Group>(std::move(group));
}

}  // namespace tessera::repl
