#include "net/remote_client.h"

#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "bson/bson_builder.h"
#include "net/running_server.h"
#include "net/server.h"
#include "wire/op_msg.h"

namespace tessera::net {
namespace {

// Answers {ok: 1, cmd: <command name>, db: <$db>, server: <generation>}.
class NameHandler : public RequestHandler {
  public:
    explicit NameHandler(int generation) : _generation(generation) {}
    bson::BsonObj handleRequest(const Request& request, ClientContext&) override {
        bson::BsonBuilder b;
        b.append("ok", 1.0);
        b.append("cmd", request.msg->commandName());
        b.append("db", request.msg->database());
        b.append("server", _generation);
        return b.obj();
    }

  private:
    int _generation;
};

// A NameHandler server on a loopback port (0: any free one).
class TestServer {
  public:
    TestServer(int generation, int port) : _handler(generation), _server(_handler, options(port)) {}
    int port() const { return _server.port(); }
    std::string host() const { return _server.host(); }

  private:
    static ServerOptions options(int port) {
        ServerOptions o = test::RunningServer::anyPort();
        o.port = port;
        return o;
    }
    NameHandler _handler;
    test::RunningServer _server;
};

bson::BsonObj command(std::string_view name) {
    bson::BsonBuilder b;
    b.append(name, 1);
    return b.obj();
}

TEST(RemoteClient, RunsACommandWithItsDb) {
    TestServer server(1, 0);
    RemoteClient client;
    auto reply = client.runCommand(server.host(), "config", command("ping"));
    ASSERT_TRUE(reply.isOK()) << reply.getStatus().toString();
    EXPECT_TRUE(replyStatus(reply.getValue()).isOK());
    EXPECT_EQ(reply.getValue()["cmd"].stringValue(), "ping");
    EXPECT_EQ(reply.getValue()["db"].stringValue(), "config");
}

TEST(RemoteClient, PooledConnectionToARestartedPeerIsNotReused) {
    RemoteClient client;
    int port = 0;
    {
        TestServer first(1, 0);
        port = first.port();
        auto reply = client.runCommand(first.host(), "admin", command("ping"));
        ASSERT_TRUE(reply.isOK()) << reply.getStatus().toString();
        EXPECT_EQ(reply.getValue()["server"].numberInt(), 1);
    }  // the peer goes away; the client's pooled connection to it is now closed
    TestServer second(2, port);
    // The first command after the restart must reach the new process, not fail on the old
    // connection after having been sent.
    auto reply = client.runCommand(second.host(), "admin", command("ping"));
    ASSERT_TRUE(reply.isOK()) << reply.getStatus().toString();
    EXPECT_EQ(reply.getValue()["server"].numberInt(), 2);
}

TEST(RemoteClient, RunsCommandsConcurrentlyAndReportsEachFailure) {
    TestServer a(1, 0);
    TestServer b(2, 0);
    RemoteClient client(RemoteClientOptions{std::chrono::milliseconds(500)});
    auto results = client.runCommands({{a.host(), "admin", command("one")},
                                       {"127.0.0.1:1", "admin", command("two")},
                                       {b.host(), "admin", command("three")}});
    ASSERT_EQ(results.size(), 3u);
    ASSERT_TRUE(results[0].isOK());
    EXPECT_EQ(results[0].getValue()["server"].numberInt(), 1);
    EXPECT_EQ(results[1].getStatus().code(), static_cast<int>(ErrorCodes::HostUnreachable));
    ASSERT_TRUE(results[2].isOK());
    EXPECT_EQ(results[2].getValue()["cmd"].stringValue(), "three");
}

TEST(RemoteClient, ReplyStatusAndHostParsing) {
    bson::BsonBuilder err;
    err.append("ok", 0.0).append("errmsg", "stale").appendInt32("code", 13388);
    Status s = replyStatus(err.obj());
    EXPECT_EQ(s.code(), 13388);
    EXPECT_EQ(s.reason(), "stale");
    EXPECT_TRUE(replyStatus(command("ok")).isOK());

    auto hp = parseHostAndPort("localhost:27017");
    ASSERT_TRUE(hp.isOK());
    EXPECT_EQ(hp.getValue().first, "localhost");
    EXPECT_EQ(hp.getValue().second, 27017);
    EXPECT_FALSE(parseHostAndPort("localhost").isOK());
    EXPECT_FALSE(parseHostAndPort("h:99999").isOK());
    EXPECT_FALSE(parseHostAndPort(":1").isOK());
}

}  // namespace
}  // namespace tessera::net
