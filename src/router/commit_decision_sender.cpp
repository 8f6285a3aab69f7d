#include "router/commit_decision_sender.h"

#include <chrono>

#include "base/failpoint.h"
#include "base/log.h"
#include "base/mutex.h"

namespace tessera::router {

// Hold every decision a router would send after acknowledging a staged commit (tests: the
// router killed between its client's acknowledgement and the coordinator hearing the decision).
TESSERA_FAIL_POINT_DEFINE(hangBeforeSendingCommitDecision);

namespace {
// A decision is one round trip and a WAL write on the coordinator: two threads keep up with
// many concurrent commits on two cores.
constexpr int kSenderThreads = 2;
}  // namespace

bool CommitDecisionSender::decisionsHeld() { return hangBeforeSendingCommitDecision.active(); }

CommitDecisionSender::CommitDecisionSender(net::RemoteClient& client) : _client(client) {
    for (int i = 0; i < kSenderThreads; ++i) _threads.emplace_back([this] { run(); });
}

CommitDecisionSender::~CommitDecisionSender() {
    {
        MutexLock lk(_mutex);
        _stopping = true;
    }
    _queued.notify_all();
    for (std::thread& t : _threads) t.join();
}

void CommitDecisionSender::send(net::RemoteCommand cmd) {
    {
        MutexLock lk(_mutex);
        _queue.push_back({std::move(cmd), std::chrono::steady_clock::now()});
    }
    _queued.notify_one();
}

void CommitDecisionSender::run() {
    UniqueLock lk(_mutex);
    for (;;) {
        _queued.wait(lk, [&]() REQUIRES(_mutex) { return _stopping || !_queue.empty(); });
        if (_queue.empty()) return;  // stopping, and every queued decision sent
        Queued queued = std::move(_queue.front());
        _queue.pop_front();
        lk.unlock();
        net::RemoteCommand& cmd = queued.cmd;
        if (std::chrono::steady_clock::now() - queued.at > kStaleAfter) {
            log::warning("TXN", 22242,
                         "Dropped a staged commit's decision queued too long; its coordinator "
                         "resolves the commit itself",
                         "{\"host\":\"" + log::jsonEscape(cmd.host) + "\"}");
            lk.lock();
            continue;
        }
        pauseWhileActive(hangBeforeSendingCommitDecision, "TXN", 22240);
        Status st = Status::OK();
        try {
            auto reply = _client.runCommand(cmd.host, cmd.db, cmd.cmd);
            st = reply.isOK() ? net::replyStatus(reply.getValue()) : reply.getStatus();
        } catch (...) {
            st = statusFromCurrentException("sending a commit decision");
        }
        if (!st.isOK()) {
            log::warning("TXN", 22241,
                         "A staged commit's coordinator did not take its decision; it resolves "
                         "the commit itself",
                         "{\"host\":\"" + log::jsonEscape(cmd.host) + "\",\"error\":\"" +
                             log::jsonEscape(st.toString()) + "\"}");
        }
        lk.lock();
    }
}

}  // namespace tessera::router
