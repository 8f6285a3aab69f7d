#include "net/async_remote_client.h"

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "base/test_gate.h"
#include "bson/bson_builder.h"
#include "net/running_server.h"
#include "net/server.h"
#include "wire/message.h"
#include "wire/op_msg.h"

namespace tessera::net {
namespace {

using namespace std::chrono_literals;

// Answers {ok: 1, cmd: <command name>, db: <$db>, server: <generation>, id: <the request's id>}.
// `{sleep: ms}` sleeps first; `{fail: 1}` answers {ok: 0, code: 13388, errmsg: "stale"}.
class EchoHandler : public RequestHandler {
  public:
    explicit EchoHandler(int generation) : _generation(generation) {}
    bson::BsonObj handleRequest(const Request& request, ClientContext&) override {
        const wire::OpMsgRequest& msg = *request.msg;
        bson::BsonBuilder b;
        if (msg.commandName() == "fail") {
            b.append("ok", 0.0).append("errmsg", "stale").appendInt32("code", 13388);
            return b.obj();
        }
        if (msg.commandName() == "sleep") {
            std::this_thread::sleep_for(
                std::chrono::milliseconds(msg.body.firstElement().numberLong()));
        }
        if (msg.commandName() == "block") gate.wait();
        b.append("ok", 1.0);
        b.append("cmd", msg.commandName());
        b.append("db", msg.database());
        b.append("server", _generation);
        if (!msg.body["id"].eoo()) b.append("id", msg.body["id"].numberInt());
        return b.obj();
    }

    tessera::test::Gate gate;  // `{block: 1}` waits here

  private:
    int _generation;
};

// An EchoHandler server on a loopback port (0: any free one).
class TestServer {
  public:
    TestServer(int generation, int port) : _handler(generation), _server(_handler, options(port)) {}
    int port() const { return _server.port(); }
    std::string host() const { return _server.host(); }
    tessera::test::Gate& gate() { return _handler.gate; }

  private:
    static ServerOptions options(int port) {
        ServerOptions o = test::RunningServer::anyPort();
        o.port = port;
        o.workerThreads = 8;
        return o;
    }
    EchoHandler _handler;
    test::RunningServer _server;
};

bson::BsonObj command(std::string_view name, int id = -1) {
    bson::BsonBuilder b;
    b.append(name, 1);
    if (id >= 0) b.append("id", id);
    return b.obj();
}

// co_spawn's future needs a default-constructible result.
using Exchange = AsyncRemoteClient::Exchange;

asio::awaitable<std::optional<StatusWith<bson::BsonObj>>> call(AsyncRemoteClient& client,
                                                               std::string host, std::string db,
                                                               bson::BsonObj cmd, Exchange kind) {
    co_return co_await client.runCommand(std::move(host), std::move(db), std::move(cmd), kind);
}

// The client's io_context, run on its own thread; the client is destroyed before the context.
class AsyncRemoteClientTest : public ::testing::Test {
  protected:
    virtual RemoteClientOptions options() const { return {}; }
    void SetUp() override {
        _client.emplace(_ioc, options());
        _thread = std::thread([this] { _ioc.run(); });
    }
    void TearDown() override {
        _guard.reset();
        if (_thread.joinable()) _thread.join();
        _client.reset();
    }

    std::future<std::optional<StatusWith<bson::BsonObj>>> spawn(std::string host, std::string db,
                                                                bson::BsonObj cmd,
                                                                Exchange kind = Exchange::kOnce) {
        return asio::co_spawn(_ioc,
                              call(*_client, std::move(host), std::move(db), std::move(cmd), kind),
                              asio::use_future);
    }
    StatusWith<bson::BsonObj> run(const std::string& host, const std::string& db, bson::BsonObj cmd,
                                  Exchange kind = Exchange::kOnce) {
        auto future = spawn(host, db, std::move(cmd), kind);
        if (future.wait_for(20s) != std::future_status::ready) {
            ADD_FAILURE() << "runCommand did not complete";
            std::abort();  // the coroutine still references this fixture
        }
        return *future.get();
    }

    asio::io_context _ioc;
    asio::executor_work_guard<asio::io_context::executor_type> _guard{_ioc.get_executor()};
    std::optional<AsyncRemoteClient> _client;
    std::thread _thread;
};

TEST_F(AsyncRemoteClientTest, ReturnsTheReplyBodyAsSentWithTheDb) {
    TestServer server(1, 0);
    auto reply = run(server.host(), "config", command("ping"));
    ASSERT_TRUE(reply.isOK()) << reply.getStatus().toString();
    EXPECT_TRUE(replyStatus(reply.getValue()).isOK());
    EXPECT_EQ(reply.getValue()["cmd"].stringValue(), "ping");
    EXPECT_EQ(reply.getValue()["db"].stringValue(), "config");

    // A `$db` in the command is replaced by the db argument.
    bson::BsonBuilder withDb;
    withDb.append("ping", 1).append("$db", "other");
    reply = run(server.host(), "admin", withDb.obj());
    ASSERT_TRUE(reply.isOK()) << reply.getStatus().toString();
    EXPECT_EQ(reply.getValue()["db"].stringValue(), "admin");

    // A command error is a reply, not a failed exchange.
    reply = run(server.host(), "admin", command("fail"));
    ASSERT_TRUE(reply.isOK()) << reply.getStatus().toString();
    EXPECT_EQ(reply.getValue()["ok"].numberDouble(), 0.0);
    EXPECT_EQ(reply.getValue()["errmsg"].stringValue(), "stale");
    Status s = replyStatus(reply.getValue());
    EXPECT_EQ(s.code(), 13388);

    // The connection is still usable after the error reply.
    reply = run(server.host(), "admin", command("ping"));
    ASSERT_TRUE(reply.isOK()) << reply.getStatus().toString();
}

TEST_F(AsyncRemoteClientTest, UnreachableHostAndBadHostString) {
    int closedPort = 0;
    {
        TestServer server(1, 0);
        closedPort = server.port();
    }
    auto reply = run("127.0.0.1:" + std::to_string(closedPort), "admin", command("ping"));
    EXPECT_EQ(reply.getStatus().code(), static_cast<int>(ErrorCodes::HostUnreachable))
        << reply.getStatus().toString();

    reply = run("no-port-here", "admin", command("ping"));
    EXPECT_FALSE(reply.isOK());
}

class AsyncRemoteClientTimeoutTest : public AsyncRemoteClientTest {
  protected:
    RemoteClientOptions options() const override {
        RemoteClientOptions o;
        o.requestTimeout = 200ms;
        return o;
    }
};

TEST_F(AsyncRemoteClientTimeoutTest, SlowRemoteTimesOutAndTheNextCallWorks) {
    TestServer server(1, 0);
    ASSERT_TRUE(run(server.host(), "admin", command("ping")).isOK());  // pools a connection
    // The remote holds the command until after the call returned: only the client's own
    // timeout can end the call.
    auto reply = run(server.host(), "admin", command("block"));
    EXPECT_EQ(reply.getStatus().code(), static_cast<int>(ErrorCodes::NetworkTimeout))
        << reply.getStatus().toString();
    server.gate().open();

    // The timed-out connection was discarded: the next exchange gets its own reply, not the
    // late reply of the slow command.
    reply = run(server.host(), "admin", command("ping", 7));
    ASSERT_TRUE(reply.isOK()) << reply.getStatus().toString();
    EXPECT_EQ(reply.getValue()["cmd"].stringValue(), "ping");
    EXPECT_EQ(reply.getValue()["id"].numberInt(), 7);
}

TEST_F(AsyncRemoteClientTest, PooledConnectionToARestartedPeerIsNotReused) {
    int port = 0;
    {
        TestServer first(1, 0);
        port = first.port();
        auto reply = run(first.host(), "admin", command("ping"));
        ASSERT_TRUE(reply.isOK()) << reply.getStatus().toString();
        EXPECT_EQ(reply.getValue()["server"].numberInt(), 1);
    }  // the peer goes away; the pooled connection to it is now closed by the remote
    TestServer second(2, port);
    auto reply = run(second.host(), "admin", command("ping"));
    ASSERT_TRUE(reply.isOK()) << reply.getStatus().toString();
    EXPECT_EQ(reply.getValue()["server"].numberInt(), 2);
}

TEST_F(AsyncRemoteClientTest, IdempotentExchangeResendsOnANewConnectionWhenThePooledOneIsDead) {
    int port = 0;
    {
        TestServer first(1, 0);
        port = first.port();
        auto reply = run(first.host(), "admin", command("find"), Exchange::kIdempotent);
        ASSERT_TRUE(reply.isOK()) << reply.getStatus().toString();
        EXPECT_EQ(reply.getValue()["server"].numberInt(), 1);
    }  // the pooled connection is now closed by the remote, and taken unchecked next time
    TestServer second(2, port);
    for (int i = 0; i < 3; ++i) {  // the dead one once, then the new pooled one
        auto reply = run(second.host(), "admin", command("find", i), Exchange::kIdempotent);
        ASSERT_TRUE(reply.isOK()) << reply.getStatus().toString();
        EXPECT_EQ(reply.getValue()["server"].numberInt(), 2);
        EXPECT_EQ(reply.getValue()["id"].numberInt(), i);
    }
}

TEST_F(AsyncRemoteClientTest, ConcurrentCoroutinesGetTheirOwnReplies) {
    TestServer server(1, 0);
    constexpr int kCalls = 50;
    for (int round = 0; round < 2; ++round) {  // the second round reuses pooled connections
        std::vector<std::future<std::optional<StatusWith<bson::BsonObj>>>> futures;
        for (int i = 0; i < kCalls; ++i) {
            bson::BsonBuilder b;
            b.append("sleep", 10 + i % 5).append("id", i);
            futures.push_back(spawn(server.host(), "db" + std::to_string(i), b.obj()));
        }
        for (int i = 0; i < kCalls; ++i) {
            ASSERT_EQ(futures[i].wait_for(20s), std::future_status::ready);
            auto reply = *futures[i].get();
            ASSERT_TRUE(reply.isOK()) << reply.getStatus().toString();
            EXPECT_EQ(reply.getValue()["id"].numberInt(), i);
            EXPECT_EQ(reply.getValue()["db"].stringValue(), "db" + std::to_string(i));
        }
    }
}

// A peer that answers each request on one connection with `reply(requestId)` bytes (empty: close
// without answering).
class RawPeer {
  public:
    explicit RawPeer(std::function<std::string(int32_t)> reply)
        : _acceptor(_ioc, {asio::ip::make_address("127.0.0.1"), 0}), _reply(std::move(reply)) {
        _thread = std::thread([this] { serve(); });
    }
    ~RawPeer() {
        asio::error_code ignored;
        _acceptor.close(ignored);
        _thread.join();
    }
    std::string host() const {
        return "127.0.0.1:" + std::to_string(_acceptor.local_endpoint().port());
    }

  private:
    void serve() {
        asio::error_code ec;
        asio::ip::tcp::socket socket(_ioc);
        _acceptor.accept(socket, ec);
        if (ec) return;
        std::array<uint8_t, wire::kHeaderSize> header;
        asio::read(socket, asio::buffer(header), ec);
        if (ec) return;
        auto h = wire::parseHeader(header.data());
        if (!h.isOK()) return;
        std::string body(static_cast<size_t>(h.getValue().messageLength) - header.size(), '\0');
        asio::read(socket, asio::buffer(body), ec);
        std::string out = _reply(h.getValue().requestId);
        if (!out.empty()) asio::write(socket, asio::buffer(out), ec);
        socket.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    }

    asio::io_context _ioc;
    asio::ip::tcp::acceptor _acceptor;
    std::function<std::string(int32_t)> _reply;
    std::thread _thread;
};

std::string okReply(int32_t responseTo) {
    return std::string(wire::buildOpMsg(999, responseTo, 0, command("ok")).bytes());
}

// An OP_MSG answering `responseTo` whose body is {s: <s>}: its last bytes are the name "s" and
// its NUL, the string's length (4), the characters, their NUL and the body's terminator.
std::string replyWithString(int32_t responseTo, std::string_view s) {
    bson::BsonBuilder b;
    b.append("s", s);
    return std::string(wire::buildOpMsg(999, responseTo, 0, b.obj()).bytes());
}

TEST_F(AsyncRemoteClientTest, MalformedRepliesAreProtocolErrors) {
    {
        RawPeer peer([](int32_t id) { return okReply(id + 1); });  // answers another request
        auto reply = run(peer.host(), "admin", command("ping"));
        EXPECT_EQ(reply.getStatus().code(), static_cast<int>(ErrorCodes::ProtocolError))
            << reply.getStatus().toString();
    }
    {
        RawPeer peer([](int32_t id) {
            std::string bytes = okReply(id);
            wire::writeInt32LE(reinterpret_cast<uint8_t*>(bytes.data()), 4);  // length < header
            return bytes;
        });
        auto reply = run(peer.host(), "admin", command("ping"));
        EXPECT_EQ(reply.getStatus().code(), static_cast<int>(ErrorCodes::ProtocolError))
            << reply.getStatus().toString();
    }
    {
        RawPeer peer([](int32_t) { return std::string(); });  // closes without a reply
        auto reply = run(peer.host(), "admin", command("ping"));
        EXPECT_EQ(reply.getStatus().code(), static_cast<int>(ErrorCodes::HostUnreachable))
            << reply.getStatus().toString();
    }
    {
        // A new connection is never the dead pooled one: an idempotent exchange is not resent.
        RawPeer peer([](int32_t) { return std::string(); });
        auto reply = run(peer.host(), "admin", command("find"), Exchange::kIdempotent);
        EXPECT_EQ(reply.getStatus().code(), static_cast<int>(ErrorCodes::HostUnreachable))
            << reply.getStatus().toString();
    }
    {
        RawPeer peer([](int32_t id) {  // a string whose length overruns the body
            std::string bytes = replyWithString(id, "abc");
            bytes[bytes.size() - 9] = 100;
            return bytes;
        });
        auto reply = run(peer.host(), "admin", command("ping"));
        EXPECT_EQ(reply.getStatus().code(), static_cast<int>(ErrorCodes::InvalidBSON))
            << reply.getStatus().toString();
    }
    {
        RawPeer peer([](int32_t id) { return okReply(id); });
        auto reply = run(peer.host(), "admin", command("ping"));
        ASSERT_TRUE(reply.isOK()) << reply.getStatus().toString();
        EXPECT_EQ(reply.getValue()["ok"].numberInt(), 1);
    }
}

// A peer's reply is checked for structure only: its field names were checked where they
// entered the cluster, and a router relays them without a second UTF-8 pass.
TEST_F(AsyncRemoteClientTest, ReplyIsNotCheckedForUtf8) {
    RawPeer peer([](int32_t id) {
        std::string bytes = replyWithString(id, "abc");
        bytes[bytes.size() - 11] = static_cast<char>(0xff);  // the field name "s"
        return bytes;
    });
    auto reply = run(peer.host(), "admin", command("ping"));
    ASSERT_TRUE(reply.isOK()) << reply.getStatus().toString();
    EXPECT_EQ(reply.getValue()["\xff"].stringValue(), "abc");
}

}  // namespace
}  // namespace tessera::net
