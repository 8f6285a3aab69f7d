// CommitDecisionSender: every decision is sent, in order, by its threads; one that waited in
// the queue longer than kStaleAfter (its coordinator slow or unreachable) is dropped — the
// coordinator resolves that commit itself by then.
#include "router/commit_decision_sender.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "bson/bson_builder.h"
#include "net/running_server.h"
#include "net/server.h"

namespace tessera::router {
namespace {

// Answers ok after `delay`, counting the requests it received.
class SlowCoordinator : public net::RequestHandler {
  public:
    explicit SlowCoordinator(std::chrono::milliseconds delay) : _delay(delay) {}
    bson::BsonObj handleRequest(const net::Request&, net::ClientContext&) override {
        _received.fetch_add(1);
        std::this_thread::sleep_for(_delay);
        bson::BsonBuilder b;
        b.append("ok", 1.0);
        return b.obj();
    }
    int received() const { return _received.load(); }

  private:
    std::chrono::milliseconds _delay;
    std::atomic<int> _received{0};
};

net::RemoteCommand decision(int port) {
    bson::BsonBuilder b;
    b.appendInt32("ping", 1);
    return {"127.0.0.1:" + std::to_string(port), "admin", b.obj()};
}

TEST(CommitDecisionSender, SendsEveryDecision) {
    SlowCoordinator handler(std::chrono::milliseconds(0));
    net::test::RunningServer server(handler);
    net::RemoteClient client;
    {
        CommitDecisionSender sender(client);
        for (int i = 0; i < 20; ++i) sender.send(decision(server.port()));
    }  // stopping sends what is queued
    EXPECT_EQ(handler.received(), 20);
}

TEST(CommitDecisionSender, DropsADecisionQueuedPastItsCoordinatorsResolution) {
    // Each request takes longer than kStaleAfter: the two threads are busy with the first two
    // decisions while the third waits in the queue, then finds it stale.
    SlowCoordinator handler(CommitDecisionSender::kStaleAfter + std::chrono::milliseconds(500));
    net::test::RunningServer server(handler);
    net::RemoteClient client;
    {
        CommitDecisionSender sender(client);
        for (int i = 0; i < 3; ++i) sender.send(decision(server.port()));
    }
    EXPECT_EQ(handler.received(), 2);
}

}  // namespace
}  // namespace tessera::router
