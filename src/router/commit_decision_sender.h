#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "net/remote_client.h"

namespace tessera::router {

// Sends the decisions of staged commits (docs/protocols/two-phase-commit.md "Staged commit") after
// their clients were answered: the commit is decided once every writer's prepare is durable, so the
// decision only lets the coordinator commit its records and deliver — a lost one is found by the
// coordinator's recovery thread, which resolves the staged record (TransactionCoordinator::
// kResolveStagedAfter). Commands are sent in arrival order by a few threads; replies and
// errors are logged, never retried here; a decision queued longer than kStaleAfter (its
// coordinator unreachable, the threads stuck behind it) is dropped, as its coordinator resolves
// it by then. Stopping sends what is queued first.
class CommitDecisionSender {
  public:
    explicit CommitDecisionSender(net::RemoteClient& client);
    ~CommitDecisionSender();
    CommitDecisionSender(const CommitDecisionSender&) = delete;
    CommitDecisionSender& operator=(const CommitDecisionSender&) = delete;

    void send(net::RemoteCommand cmd);
    // Whether the test failpoint hangBeforeSendingCommitDecision holds every decision: while
    // it does, a router's staged commits all take the path with a decision to hold.
    static bool decisionsHeld();

    static constexpr std::chrono::seconds kStaleAfter{3};

  private:
    void run();

    net::RemoteClient& _client;
    Mutex _mutex;
    CondVar _queued;
    struct Queued {
        net::RemoteCommand cmd;
        std::chrono::steady_clock::time_point at;
    };
    std::deque<Queued> _queue GUARDED_BY(_mutex);
    bool _stopping GUARDED_BY(_mutex) = false;
    std::vector<std::thread> _threads;
};

}  // namespace tessera::router
