// The forwarding path of net::Server (ServerOptions::forwardRequests, RequestHandler::tryForward
// and completeForward): server A forwards to a "remote" server B over AsyncRemoteClient.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/test_gate.h"
#include "bson/bson_builder.h"
#include "net/remote_client.h"
#include "net/running_server.h"
#include "net/server.h"
#include "wire/op_msg.h"

namespace tessera::net {
namespace {

using namespace std::chrono_literals;

// The remote: {ok: 1, from: "B", cmd: <name>, db: <$db>, echo: <body>}. `{sleep: ms}` sleeps;
// `{block: 1}`, or any command with a `block` field, waits at the gate.
class RemoteHandler : public RequestHandler {
  public:
    bson::BsonObj handleRequest(const Request& request, ClientContext&) override {
        const wire::OpMsgRequest& msg = *request.msg;
        calls.fetch_add(1);
        if (msg.commandName() == "sleep") {
            std::this_thread::sleep_for(
                std::chrono::milliseconds(msg.body.firstElement().numberLong()));
        }
        if (msg.commandName() == "block" || msg.body.hasField("block")) gate.wait();
        bson::BsonBuilder b;
        b.append("ok", 1.0).append("from", "B");
        b.append("cmd", msg.commandName()).append("db", msg.database()).append("echo", msg.body);
        return b.obj();
    }
    std::atomic<int> calls{0};
    tessera::test::Gate gate;  // `{block: 1}` waits here
};

// A forwarded request's exchanges so far (ForwardRequest::state).
struct ExchangeCount final : HandlerState {
    int n = 0;
};

// Server A's handler. tryForward forwards `fwd*` commands (and `sleep`) to `remoteHost`;
// `throwTry` makes tryForward throw. completeForward per command:
//   fwd, sleep      -> {ok: 1, forwarded: true, remote: <B's reply>}
//   fwdTwice        -> a second exchange ({second: 1}) then {ok: 1, exchanges: 2, remote}
//   fwdFallback     -> neither: handleRequest runs
//   fwdDown         -> {ok: 1, remoteCode: <the exchange's failure code>}
//   fwdThrow        -> throws
// handleRequest answers {ok: 1, handled: <name>, connectionId}.
class ForwardingHandler : public RequestHandler {
  public:
    std::optional<ForwardRequest> tryForward(const Request& request, ClientContext&) override {
        tryCalls.fetch_add(1);
        recordThread(ioThreads);
        std::string_view name = request.msg->commandName();
        if (name == "throwTry") throw std::runtime_error("tryForward boom");
        if (name.substr(0, 3) != "fwd" && name != "sleep" && name != "block") return std::nullopt;
        ForwardExchange exchange;
        exchange.host = name == "fwdDown" ? downHost : remoteHost;
        exchange.db = "remoteDb";
        bson::BsonBuilder cmd;
        for (const auto& e : request.msg->body) {
            if (e.fieldName() != "$db") cmd.appendElement(e);
        }
        exchange.cmd = cmd.obj();
        ForwardRequest forward;
        forward.exchanges.push_back(exchange);
        if (name == "fwdRound") {  // the same to the remote again, and to nowhere
            forward.exchanges.push_back(exchange);
            exchange.host = downHost;
            forward.exchanges.push_back(exchange);
        }
        forward.state = std::make_shared<ExchangeCount>();
        return forward;
    }

    ForwardOutcome completeForward(const Request& request, ClientContext&, ForwardRequest& forward,
                                   const std::vector<StatusWith<bson::BsonObj>>& remotes) override {
        completeCalls.fetch_add(1);
        recordThread(ioThreads);
        std::string_view name = request.msg->commandName();
        int& exchanges = static_cast<ExchangeCount&>(*forward.state).n;
        ++exchanges;
        if (name == "fwdThrow") throw std::runtime_error("completeForward boom");
        if (remotes.size() != forward.exchanges.size()) {
            bson::BsonBuilder b;
            b.append("ok", 0.0).append("errmsg", "not one result per exchange");
            return {b.obj(), std::nullopt};
        }
        const StatusWith<bson::BsonObj>& remote = remotes.front();
        if (name == "fwdDown") {
            bson::BsonBuilder b;
            b.append("ok", 1.0).append("remoteCode", remote.getStatus().code());
            return {b.obj(), std::nullopt};
        }
        if (name == "fwdRound") {
            bson::BsonBuilder b;
            b.append("ok", 1.0);
            b.startArray("results");
            for (size_t i = 0; i < remotes.size(); ++i) {
                if (remotes[i].isOK()) {
                    b.append(std::to_string(i), remotes[i].getValue());
                } else {
                    b.startObject(std::to_string(i))
                        .append("code", static_cast<int>(remotes[i].getStatus().code()))
                        .end();
                }
            }
            b.end();
            return {b.obj(), std::nullopt};
        }
        if (name == "fwdFallback") return {};
        if (!remote.isOK()) return {};
        if (name == "fwdTwice" && exchanges == 1) {
            ForwardRequest next = forward;
            bson::BsonBuilder cmd;
            cmd.append("second", 1);
            next.exchanges.front().cmd = cmd.obj();
            return {std::nullopt, std::move(next)};
        }
        bson::BsonBuilder b;
        b.append("ok", 1.0).append("forwarded", true).append("exchanges", exchanges);
        b.append("remote", remote.getValue());
        return {b.obj(), std::nullopt};
    }

    bson::BsonObj handleRequest(const Request& request, ClientContext& client) override {
        handleCalls.fetch_add(1);
        recordThread(workerThreads);
        bson::BsonBuilder b;
        b.append("ok", 1.0).append("handled", request.msg->commandName());
        b.append("connectionId", client.connectionId);
        return b.obj();
    }

    void recordThread(std::vector<std::thread::id>& into) {
        MutexLock lock(mutex);
        into.push_back(std::this_thread::get_id());
    }

    std::string remoteHost;
    std::string downHost;
    std::atomic<int> tryCalls{0};
    std::atomic<int> completeCalls{0};
    std::atomic<int> handleCalls{0};
    Mutex mutex;
    std::vector<std::thread::id> ioThreads;
    std::vector<std::thread::id> workerThreads;
};

using test::RunningServer;

bson::BsonObj command(std::string_view name, int value = 1) {
    bson::BsonBuilder b;
    b.append(name, value);
    return b.obj();
}

class ForwardTest : public ::testing::Test {
  protected:
    void SetUp() override {
        ServerOptions remoteOptions = RunningServer::anyPort();
        remoteOptions.workerThreads = 16;
        _remote = std::make_unique<RunningServer>(remoteHandler, remoteOptions);
        handler.remoteHost = _remote->host();
        {
            RunningServer down(remoteHandler);
            handler.downHost = down.host();
        }  // nothing listens on downHost now
        startA(true);
    }
    void startA(bool forward) {
        _a.reset();
        ServerOptions options = RunningServer::anyPort();
        options.forwardRequests = forward;
        options.workerThreads = 1;
        _a = std::make_unique<RunningServer>(handler, options);
    }
    bson::BsonObj run(const bson::BsonObj& cmd) {
        auto reply = client.runCommand(_a->host(), "test", cmd);
        EXPECT_TRUE(reply.isOK()) << reply.getStatus().toString();
        return reply.isOK() ? reply.getValue() : bson::BsonObj();
    }

    RemoteHandler remoteHandler;
    ForwardingHandler handler;
    RemoteClient client;
    std::unique_ptr<RunningServer> _remote;
    std::unique_ptr<RunningServer> _a;
};

TEST_F(ForwardTest, ForwardedReplyIsBuiltFromTheRemoteReply) {
    bson::BsonBuilder cmd;
    cmd.append("fwd", 1).append("x", 42);
    bson::BsonObj reply = run(cmd.obj());
    EXPECT_EQ(reply["ok"].numberDouble(), 1.0) << reply.toJson();
    EXPECT_TRUE(reply["forwarded"].trueValue()) << reply.toJson();
    EXPECT_EQ(reply["exchanges"].numberInt(), 1);
    ASSERT_TRUE(reply["remote"].isObject()) << reply.toJson();
    bson::BsonView remote = reply["remote"].objValue();
    EXPECT_EQ(remote["from"].stringValue(), "B");
    EXPECT_EQ(remote["db"].stringValue(), "remoteDb");
    EXPECT_EQ(remote["echo"].objValue()["x"].numberInt(), 42);
    EXPECT_EQ(handler.handleCalls.load(), 0);
    EXPECT_EQ(remoteHandler.calls.load(), 1);
}

TEST_F(ForwardTest, CompleteForwardMayAskForASecondExchange) {
    bson::BsonObj reply = run(command("fwdTwice"));
    EXPECT_EQ(reply["exchanges"].numberInt(), 2) << reply.toJson();
    ASSERT_TRUE(reply["remote"].isObject()) << reply.toJson();
    EXPECT_EQ(reply["remote"].objValue()["cmd"].stringValue(), "second");
    EXPECT_EQ(remoteHandler.calls.load(), 2);
    EXPECT_EQ(handler.completeCalls.load(), 2);
    EXPECT_EQ(handler.handleCalls.load(), 0);
}

// A round of three exchanges (two to the remote, one to a host nobody listens on) runs them
// together and hands completeForward every result, in the round's order.
TEST_F(ForwardTest, ARoundHandsEveryResultInOrder) {
    bson::BsonBuilder cmd;
    cmd.append("fwdRound", 1).append("x", 7);
    bson::BsonObj reply = run(cmd.obj());
    ASSERT_TRUE(reply["results"].isArray()) << reply.toJson();
    std::vector<bson::BsonElement> results;
    for (bson::BsonElement e : reply["results"].objValue()) results.push_back(e);
    ASSERT_EQ(results.size(), 3u) << reply.toJson();
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(results[i].objValue()["from"].stringValue(), "B") << reply.toJson();
        EXPECT_EQ(results[i].objValue()["echo"].objValue()["x"].numberInt(), 7);
    }
    EXPECT_EQ(results[2].objValue()["code"].numberInt(),
              static_cast<int>(ErrorCodes::HostUnreachable))
        << reply.toJson();
    EXPECT_EQ(remoteHandler.calls.load(), 2);
    EXPECT_EQ(handler.completeCalls.load(), 1);
    EXPECT_EQ(handler.handleCalls.load(), 0);
}

// Both exchanges of a round wait at the remote's gate at the same time: they are in flight
// together, not one after the other.
TEST_F(ForwardTest, ARoundsExchangesAreInFlightTogether) {
    bson::BsonBuilder cmd;
    cmd.append("fwdRound", 1).append("block", 1);
    const bson::BsonObj body = cmd.obj();
    std::thread client([&] {
        RemoteClient c;
        auto reply = c.runCommand(_a->host(), "test", body);
        EXPECT_TRUE(reply.isOK()) << reply.getStatus().toString();
    });
    const bool together = remoteHandler.gate.awaitWaiters(2);
    remoteHandler.gate.open();
    client.join();
    EXPECT_TRUE(together);
    EXPECT_EQ(remoteHandler.calls.load(), 2);
}

TEST_F(ForwardTest, NeitherReplyNorNextRunsHandleRequestOnAWorker) {
    bson::BsonObj reply = run(command("fwdFallback"));
    EXPECT_EQ(reply["handled"].stringValue(), "fwdFallback") << reply.toJson();
    EXPECT_EQ(remoteHandler.calls.load(), 1);
    EXPECT_EQ(handler.completeCalls.load(), 1);
    ASSERT_EQ(handler.handleCalls.load(), 1);
    MutexLock lock(handler.mutex);
    ASSERT_EQ(handler.workerThreads.size(), 1u);
    ASSERT_FALSE(handler.ioThreads.empty());
    for (const auto& io : handler.ioThreads) EXPECT_NE(io, handler.workerThreads[0]);
}

TEST_F(ForwardTest, ExchangeFailureReachesCompleteForward) {
    bson::BsonObj reply = run(command("fwdDown"));
    EXPECT_EQ(reply["remoteCode"].numberInt(), static_cast<int>(ErrorCodes::HostUnreachable))
        << reply.toJson();
    EXPECT_EQ(handler.handleCalls.load(), 0);

    // The remote going away after a pooled exchange: the next forward fails the same way, or
    // (when completeForward returns neither) falls back to handleRequest.
    EXPECT_TRUE(run(command("fwd"))["forwarded"].trueValue());
    _remote->stop();
    reply = run(command("fwd"));
    EXPECT_EQ(reply["handled"].stringValue(), "fwd") << reply.toJson();
}

TEST_F(ForwardTest, ThrowingTryForwardRunsHandleRequest) {
    bson::BsonObj reply = run(command("throwTry"));
    EXPECT_EQ(reply["handled"].stringValue(), "throwTry") << reply.toJson();
    EXPECT_EQ(handler.completeCalls.load(), 0);
    EXPECT_EQ(remoteHandler.calls.load(), 0);
}

TEST_F(ForwardTest, ThrowingCompleteForwardIsAnInternalErrorAndTheConnectionStays) {
    const int64_t connectionId = run(command("plain"))["connectionId"].numberLong();
    bson::BsonObj reply = run(command("fwdThrow"));
    EXPECT_EQ(reply["ok"].numberDouble(), 0.0) << reply.toJson();
    EXPECT_EQ(reply["code"].numberInt(), static_cast<int>(ErrorCodes::InternalError));
    EXPECT_NE(reply["errmsg"].stringValue().find("completeForward boom"), std::string::npos)
        << reply.toJson();
    EXPECT_EQ(remoteHandler.calls.load(), 1);
    // Same (pooled) connection, still answered.
    EXPECT_EQ(run(command("plain"))["connectionId"].numberLong(), connectionId);
    EXPECT_TRUE(run(command("fwd"))["forwarded"].trueValue());
}

TEST_F(ForwardTest, WithoutForwardRequestsTryForwardIsNeverCalled) {
    startA(false);
    bson::BsonObj reply = run(command("fwd"));
    EXPECT_EQ(reply["handled"].stringValue(), "fwd") << reply.toJson();
    EXPECT_EQ(handler.tryCalls.load(), 0);
    EXPECT_EQ(handler.completeCalls.load(), 0);
    EXPECT_EQ(remoteHandler.calls.load(), 0);
}

// A has one worker thread; forwarded requests do not take it, so many remote exchanges are in
// flight at once: all of them wait at the remote's gate together (on the worker they would be
// one at a time, and the second would never reach the gate while the first waits there).
TEST_F(ForwardTest, ForwardedRequestsDoNotOccupyWorkers) {
    constexpr int kClients = 10;
    std::vector<RemoteCommand> cmds;
    for (int i = 0; i < kClients; ++i) cmds.push_back({_a->host(), "test", command("block")});
    auto running = std::async(std::launch::async, [&] { return client.runCommands(cmds); });
    EXPECT_TRUE(remoteHandler.gate.awaitWaiters(kClients));
    remoteHandler.gate.open();
    auto results = running.get();
    for (const auto& r : results) {
        ASSERT_TRUE(r.isOK()) << r.getStatus().toString();
        EXPECT_TRUE(r.getValue()["forwarded"].trueValue()) << r.getValue().toJson();
    }
    EXPECT_EQ(handler.handleCalls.load(), 0);
    EXPECT_EQ(remoteHandler.calls.load(), kClients);
}

// Shutdown waits for a forwarded request in flight, which gets its reply.
TEST_F(ForwardTest, ShutdownFinishesAnInFlightForward) {
    bson::BsonObj reply;
    std::thread caller([&] { reply = run(command("block")); });
    ASSERT_TRUE(remoteHandler.gate.awaitWaiters(1));
    // stop() returns once every connection ended: it must wait for the exchange at the gate.
    std::atomic<bool> stopping{false};
    std::thread stopper([&] {
        stopping = true;
        _a->stop();
    });
    while (!stopping.load()) std::this_thread::yield();
    remoteHandler.gate.open();
    stopper.join();
    caller.join();
    EXPECT_TRUE(reply["forwarded"].trueValue()) << reply.toJson();
    EXPECT_EQ(handler.handleCalls.load(), 0);
}

}  // namespace
}  // namespace tessera::net
