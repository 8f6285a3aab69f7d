#include "net/server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/test_gate.h"
#include "bson/bson_builder.h"
#include "net/asio_config.h"
#include "wire/crc32c.h"
#include "wire/op_msg.h"
#include "wire/op_query.h"

namespace tessera::net {
namespace {

using namespace std::chrono_literals;
using bson::fromJson;

// Echoes the request: {ok: 1, echo: <body>, legacy, exhaustAllowed, connectionId,
// sequences: {<identifier>: <count>}}. `{sleep: ms}` sleeps first; `{block: 1}` waits at the
// gate; `{throw: 1}` throws.
class EchoHandler : public RequestHandler {
  public:
    bson::BsonObj handleRequest(const Request& request, ClientContext& client) override {
        const wire::OpMsgRequest& msg = *request.msg;
        calls.fetch_add(1);
        if (msg.commandName() == "sleep") {
            inSleep.store(true);
            std::this_thread::sleep_for(
                std::chrono::milliseconds(msg.body.firstElement().numberLong()));
        }
        if (msg.commandName() == "block") gate.wait();
        if (msg.commandName() == "throw") throw std::runtime_error("boom");
        bson::BsonBuilder b;
        b.append("ok", 1.0);
        b.append("echo", msg.body);
        b.append("legacy", request.isLegacyOpQuery);
        b.append("exhaustAllowed", request.exhaustAllowed);
        b.append("connectionId", client.connectionId);
        b.startObject("sequences");
        for (const auto& seq : msg.sequences) {
            b.append(seq.identifier, static_cast<int32_t>(seq.documents.size()));
        }
        b.end();
        return b.obj();
    }
    void onDisconnect(ClientContext&) override { disconnects.fetch_add(1); }
    // {inline: 1} is answered inline (on the io thread); {inlineThenPool: 1} declines after
    // looking (it would have waited) and runs on the pool.
    std::optional<bson::BsonObj> runInline(const Request& request, ClientContext&) override {
        std::string_view name = request.msg->commandName();
        if (name == "inlineThenPool") declined.fetch_add(1);
        if (name != "inline") return std::nullopt;
        inlineCalls.fetch_add(1);
        MutexLock lk(threadsMutex);
        inlineThreads.insert(std::this_thread::get_id());
        bson::BsonBuilder b;
        b.append("ok", 1.0);
        b.append("inline", true);
        return b.obj();
    }

    std::atomic<int> inlineCalls{0};
    std::atomic<int> declined{0};
    Mutex threadsMutex;
    std::set<std::thread::id> inlineThreads;
    std::atomic<int> calls{0};
    std::atomic<int> disconnects{0};
    std::atomic<bool> inSleep{false};
    tessera::test::Gate gate;
};

// A blocking test client over asio with timeouts on every read.
class Client {
  public:
    explicit Client(int port) : _socket(_ioc) {
        _socket.connect({asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
    }

    void send(std::string_view bytes) {
        asio::error_code ec;
        asio::write(_socket, asio::buffer(bytes.data(), bytes.size()), ec);
    }
    void send(const wire::Message& m) { send(m.bytes()); }
    void shutdownSend() {
        asio::error_code ec;
        _socket.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
    }

    // One whole message, or nullopt when the server closed the connection or nothing came in time.
    std::optional<wire::Message> read(std::chrono::milliseconds timeout = 5000ms) {
        std::array<uint8_t, 16> header;
        if (!readExactly(header.data(), header.size(), timeout)) return std::nullopt;
        int32_t len = wire::readInt32LE(header.data());
        if (len < 16 || len > wire::kMaxMessageSizeBytes) return std::nullopt;
        wire::Message m = wire::Message::allocate(static_cast<size_t>(len));
        std::copy(header.begin(), header.end(), m.mutableData());
        if (!readExactly(m.mutableData() + 16, m.size() - 16, timeout)) return std::nullopt;
        return m;
    }

    // True when the server closes the connection within `timeout` (any bytes are discarded).
    bool waitClosed(std::chrono::milliseconds timeout = 5000ms) {
        auto deadline = std::chrono::steady_clock::now() + timeout;
        uint8_t buf[256];
        while (std::chrono::steady_clock::now() < deadline) {
            asio::error_code ec;
            bool done = false;
            _socket.async_read_some(asio::buffer(buf), [&](asio::error_code e, size_t) {
                ec = e;
                done = true;
            });
            runUntil(done, deadline);
            if (!done) return false;
            if (ec) return true;  // eof or reset
        }
        return false;
    }

    bson::BsonObj command(const bson::BsonObj& body, uint32_t flags = 0,
                          const std::vector<wire::DocumentSequence>& seqs = {}) {
        const int32_t id = _nextId++;
        send(wire::buildOpMsg(id, 0, flags, body, seqs));
        auto reply = read();
        if (!reply) return {};
        auto parsed = wire::parseOpMsg(*reply);
        EXPECT_TRUE(parsed.isOK()) << parsed.getStatus().toString();
        if (!parsed.isOK()) return {};
        EXPECT_EQ(parsed.getValue().requestId, reply->header().requestId);
        EXPECT_EQ(reply->header().responseTo, id);
        return parsed.getValue().body.copy();
    }

    bool pingWorks() {
        bson::BsonObj r = command(fromJson(R"({"ping": 1, "$db": "admin"})"));
        return !r.isEmpty() && r.getField("ok").numberDouble() == 1.0;
    }

  private:
    bool readExactly(uint8_t* out, size_t n, std::chrono::milliseconds timeout) {
        auto deadline = std::chrono::steady_clock::now() + timeout;
        asio::error_code ec;
        bool done = false;
        asio::async_read(_socket, asio::buffer(out, n), [&](asio::error_code e, size_t) {
            ec = e;
            done = true;
        });
        runUntil(done, deadline);
        return done && !ec;
    }
    void runUntil(bool& done, std::chrono::steady_clock::time_point deadline) {
        _ioc.restart();
        while (!done && std::chrono::steady_clock::now() < deadline) {
            _ioc.run_one_until(deadline);
        }
        if (!done) {
            asio::error_code ignored;
            _socket.cancel(ignored);
            _ioc.restart();
            while (!done) _ioc.run_one();
            done = false;
        }
    }

    asio::io_context _ioc;
    asio::ip::tcp::socket _socket;
    int32_t _nextId = 1;
};

class ServerTest : public ::testing::Test {
  protected:
    void SetUp() override { startServer(ServerOptions{}); }
    void TearDown() override { stopServer(); }

    void startServer(ServerOptions options) {
        options.port = 0;
        _server = std::make_unique<Server>(options, handler);
        Status s = _server->start();
        ASSERT_TRUE(s.isOK()) << s.toString();
        ASSERT_GT(_server->port(), 0);
        _thread = std::thread([this] { _server->run(); });
    }
    void stopServer() {
        if (!_server) return;
        _server->shutdown();
        if (_thread.joinable()) _thread.join();
        _server.reset();
    }
    int port() const { return _server->port(); }

    // Waits for the server's current connection count to reach `n`.
    bool waitForCurrent(int64_t n) {
        for (int i = 0; i < 500; ++i) {
            if (_server->connectionStats().current == n) return true;
            std::this_thread::sleep_for(10ms);
        }
        return false;
    }

    EchoHandler handler;
    std::unique_ptr<Server> _server;
    std::thread _thread;
};

wire::Message rawMessage(int32_t opCode, std::string_view payload, int32_t lengthOverride = 0) {
    std::string bytes(16, '\0');
    bytes += payload;
    wire::writeHeader(
        {lengthOverride ? lengthOverride : static_cast<int32_t>(bytes.size()), 1, 0, opCode},
        reinterpret_cast<uint8_t*>(bytes.data()));
    return wire::Message::fromBytes(bytes);
}

TEST_F(ServerTest, OpMsgRoundTrip) {
    Client c(port());
    bson::BsonObj body = fromJson(R"({"ping": 1, "$db": "admin"})");
    bson::BsonObj reply = c.command(body);
    ASSERT_FALSE(reply.isEmpty());
    EXPECT_EQ(reply.getField("ok").numberDouble(), 1.0);
    EXPECT_EQ(reply.getField("echo").objValue(), body.view());
    EXPECT_FALSE(reply.getField("legacy").boolValue());
    EXPECT_GT(reply.getField("connectionId").numberLong(), 0);
    // Several requests on one connection.
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(c.pingWorks());
    EXPECT_EQ(handler.calls.load(), 6);
}

TEST_F(ServerTest, OpQueryHandshakeGetsOpReply) {
    Client c(port());
    bson::BsonObj q =
        fromJson(R"({"isMaster": 1, "helloOk": true, "client": {"driver": {"name": "t"}}})");
    std::string payload;
    int32_t zero = 0, minusOne = -1;
    payload.append(reinterpret_cast<const char*>(&zero), 4);
    payload.append("admin.$cmd", 11);
    payload.append(reinterpret_cast<const char*>(&zero), 4);
    payload.append(reinterpret_cast<const char*>(&minusOne), 4);
    payload.append(q.bytes());
    wire::Message m = rawMessage(2004, payload);
    c.send(m);
    auto reply = c.read();
    ASSERT_TRUE(reply.has_value());
    ASSERT_EQ(reply->opCode(), wire::OpCode::kReply);
    EXPECT_EQ(reply->header().responseTo, 1);
    auto parsed = wire::parseOpReply(*reply);
    ASSERT_TRUE(parsed.isOK()) << parsed.getStatus().toString();
    ASSERT_EQ(parsed.getValue().documents.size(), 1u);
    bson::BsonView doc = parsed.getValue().documents[0];
    EXPECT_EQ(doc.getField("ok").numberDouble(), 1.0);
    EXPECT_TRUE(doc.getField("legacy").boolValue());
    bson::BsonView echo = doc.getField("echo").objValue();
    EXPECT_EQ(echo.firstElement().fieldName(), "isMaster");
    EXPECT_EQ(echo.getField("$db").stringValue(), "admin");

    // A non-handshake OP_QUERY gets an error OP_REPLY and the connection stays usable.
    bson::BsonObj find = fromJson(R"({"find": "c"})");
    std::string payload2;
    payload2.append(reinterpret_cast<const char*>(&zero), 4);
    payload2.append("test.$cmd", 10);
    payload2.append(reinterpret_cast<const char*>(&zero), 4);
    payload2.append(reinterpret_cast<const char*>(&minusOne), 4);
    payload2.append(find.bytes());
    c.send(rawMessage(2004, payload2));
    auto errReply = c.read();
    ASSERT_TRUE(errReply.has_value());
    auto errParsed = wire::parseOpReply(*errReply);
    ASSERT_TRUE(errParsed.isOK());
    bson::BsonView err = errParsed.getValue().documents[0];
    EXPECT_EQ(err.getField("ok").numberDouble(), 0.0);
    EXPECT_EQ(err.getField("code").numberInt(), 352);
    EXPECT_EQ(err.getField("codeName").stringValue(), "UnsupportedOpQueryCommand");
    EXPECT_TRUE(c.pingWorks());
    EXPECT_EQ(handler.calls.load(), 2);
}

TEST_F(ServerTest, MoreToComeGetsNoReply) {
    Client c(port());
    bson::BsonObj insert = fromJson(R"({"insert": "c", "$db": "test"})");
    c.send(wire::buildOpMsg(100, 0, wire::kMoreToCome, insert,
                            {{"documents", {fromJson(R"({"_id": 1})")}}}));
    // Nothing arrives for the fire-and-forget request...
    EXPECT_FALSE(c.read(300ms).has_value());
    EXPECT_EQ(handler.calls.load(), 1);
    // ... and the next request's reply is the first thing on the wire.
    Client c2(port());
    c2.send(wire::buildOpMsg(100, 0, wire::kMoreToCome, insert));
    c2.send(wire::buildOpMsg(101, 0, 0, fromJson(R"({"ping": 1, "$db": "admin"})")));
    auto reply = c2.read();
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->header().responseTo, 101);
    // A moreToCome request with a command-level error is not answered either.
    c2.send(wire::buildOpMsg(102, 0, wire::kMoreToCome, fromJson(R"({"insert": "c"})")));
    c2.send(wire::buildOpMsg(103, 0, 0, fromJson(R"({"ping": 1, "$db": "admin"})")));
    reply = c2.read();
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->header().responseTo, 103);
}

TEST_F(ServerTest, DocumentSequencesReachTheHandler) {
    Client c(port());
    bson::BsonObj reply = c.command(
        fromJson(R"({"insert": "c", "$db": "test"})"), wire::kExhaustAllowed,
        {{"documents", {fromJson(R"({"_id": 1})"), fromJson(R"({"_id": 2})"), fromJson("{}")}},
         {"other", {}}});
    ASSERT_FALSE(reply.isEmpty());
    bson::BsonView seqs = reply.getField("sequences").objValue();
    EXPECT_EQ(seqs.getField("documents").numberInt(), 3);
    EXPECT_EQ(seqs.getField("other").numberInt(), 0);
    EXPECT_TRUE(reply.getField("exhaustAllowed").boolValue());
}

TEST_F(ServerTest, ChecksumAcceptedAndMirrored) {
    Client c(port());
    const int32_t id = 9;
    c.send(wire::buildOpMsg(id, 0, wire::kChecksumPresent,
                            fromJson(R"({"ping": 1, "$db": "admin"})")));
    auto reply = c.read();
    ASSERT_TRUE(reply.has_value());
    auto parsed = wire::parseOpMsg(*reply);  // verifies the reply's checksum
    ASSERT_TRUE(parsed.isOK()) << parsed.getStatus().toString();
    EXPECT_TRUE(parsed.getValue().checksumPresent());
    EXPECT_EQ(parsed.getValue().body.getField("ok").numberDouble(), 1.0);
}

TEST_F(ServerTest, CommandLevelErrorsKeepTheConnection) {
    Client c(port());
    bson::BsonObj reply = c.command(fromJson(R"({"ping": 1})"));
    ASSERT_FALSE(reply.isEmpty());
    EXPECT_EQ(reply.getField("ok").numberDouble(), 0.0);
    EXPECT_EQ(reply.getField("code").numberInt(), 40571);
    EXPECT_EQ(reply.getField("codeName").stringValue(), "Location40571");
    // Duplicate between body and sequence.
    reply = c.command(fromJson(R"({"insert": "c", "documents": [], "$db": "test"})"), 0,
                      {{"documents", {fromJson("{}")}}});
    EXPECT_EQ(reply.getField("code").numberInt(), 40433);
    // A handler that throws still produces an error reply.
    reply = c.command(fromJson(R"({"throw": 1, "$db": "admin"})"));
    EXPECT_EQ(reply.getField("code").numberInt(), static_cast<int>(ErrorCodes::InternalError));
    EXPECT_TRUE(c.pingWorks());
    EXPECT_EQ(handler.calls.load(), 2);  // throw + ping: the invalid ones never reached it
}

TEST_F(ServerTest, PipelinedRequestsAreAnsweredInOrder) {
    Client c(port());
    c.send(wire::buildOpMsg(1, 0, 0, fromJson(R"({"sleep": 100, "$db": "admin"})")));
    c.send(wire::buildOpMsg(2, 0, 0, fromJson(R"({"ping": 1, "$db": "admin"})")));
    c.send(wire::buildOpMsg(3, 0, 0, fromJson(R"({"ping": 2, "$db": "admin"})")));
    for (int32_t id : {1, 2, 3}) {
        auto reply = c.read();
        ASSERT_TRUE(reply.has_value());
        EXPECT_EQ(reply->header().responseTo, id);
    }
}

// The connection reads ahead into a buffer: several messages in one packet, a message split at
// any byte, and one larger than the buffer must all come out whole and in order.
TEST_F(ServerTest, MessagesAreFramedWhateverTheReadBoundaries) {
    Client c(port());
    std::string batch;
    for (int32_t id : {1, 2, 3}) {
        batch += wire::buildOpMsg(id, 0, 0, fromJson(R"({"ping": 1, "$db": "admin"})")).bytes();
    }
    c.send(batch);
    for (int32_t id : {1, 2, 3}) {
        auto reply = c.read();
        ASSERT_TRUE(reply.has_value());
        EXPECT_EQ(reply->header().responseTo, id);
    }
    std::string split(
        wire::buildOpMsg(4, 0, 0, fromJson(R"({"ping": 1, "$db": "admin"})")).bytes());
    for (size_t i = 0; i < split.size(); i += 7) {
        c.send(std::string_view(split).substr(i, 7));
        std::this_thread::sleep_for(1ms);  // separate segments, to exercise partial reads
    }
    auto reply = c.read();
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->header().responseTo, 4);
    bson::BsonBuilder big;
    big.append("ping", 1).append("pad", std::string(100 * 1024, 'x')).append("$db", "admin");
    std::string large(wire::buildOpMsg(5, 0, 0, big.obj()).bytes());
    large += wire::buildOpMsg(6, 0, 0, fromJson(R"({"ping": 2, "$db": "admin"})")).bytes();
    c.send(large);
    for (int32_t id : {5, 6}) {
        auto r = c.read();
        ASSERT_TRUE(r.has_value());
        EXPECT_EQ(r->header().responseTo, id);
    }
    auto echoed = c.read(200ms);
    EXPECT_FALSE(echoed.has_value());  // nothing more
}

// Each malformed message closes its connection; another connection keeps working throughout.
TEST_F(ServerTest, FramingErrorsCloseOnlyTheirConnection) {
    Client bystander(port());
    ASSERT_TRUE(bystander.pingWorks());

    bson::BsonObj ping = fromJson(R"({"ping": 1, "$db": "admin"})");
    std::string okBody("\0\0\0\0\0", 5);  // flags 0, kind 0
    okBody += ping.bytes();

    std::vector<std::pair<std::string, wire::Message>> cases;
    cases.emplace_back("negative length", rawMessage(2013, okBody, -20));
    cases.emplace_back("length below header", rawMessage(2013, "", 15));
    cases.emplace_back("oversized length",
                       rawMessage(2013, okBody, wire::kMaxMessageSizeBytes + 1));
    cases.emplace_back("wrong opcode", rawMessage(2002, okBody));
    cases.emplace_back("OP_REPLY opcode", rawMessage(1, okBody));
    cases.emplace_back("OP_COMPRESSED", rawMessage(2012, okBody));
    cases.emplace_back("illegal flag", rawMessage(2013, std::string("\x04\0\0\0\0", 5) +
                                                            std::string(ping.bytes())));
    cases.emplace_back("unknown section kind", rawMessage(2013, std::string("\0\0\0\0\x07", 5) +
                                                                    std::string(ping.bytes())));
    {
        wire::Message m = wire::buildOpMsg(5, 0, wire::kChecksumPresent, ping);
        std::string bytes(m.bytes());
        bytes[bytes.size() - 1] ^= 0x55;
        cases.emplace_back("bad checksum", wire::Message::fromBytes(bytes));
    }
    cases.emplace_back("document overruns message",
                       rawMessage(2013, okBody.substr(0, okBody.size() - 2)));

    for (auto& [name, message] : cases) {
        Client c(port());
        ASSERT_TRUE(c.pingWorks()) << name;
        c.send(message);
        EXPECT_TRUE(c.waitClosed()) << name;
        EXPECT_TRUE(bystander.pingWorks()) << name;
    }
    EXPECT_TRUE(waitForCurrent(1));
}

// Invalid BSON inside an intact frame is a command error, as in MongoDB: the reply carries the
// code and the connection stays usable.
TEST_F(ServerTest, InvalidDocumentInIntactFrameGetsErrorReply) {
    bson::BsonObj ping = fromJson(R"({"ping": 1, "$db": "admin"})");
    std::string badBson("\0\0\0\0\0", 5);  // flags 0, kind 0
    badBson += ping.bytes();
    badBson[5 + 4] = 0x7A;  // unknown type byte
    Client c(port());
    c.send(rawMessage(2013, badBson));
    auto reply = c.read();
    ASSERT_TRUE(reply.has_value());
    auto parsed = wire::parseOpMsg(std::move(*reply));
    ASSERT_TRUE(parsed.isOK());
    EXPECT_EQ(parsed.getValue().body.getField("ok").numberDouble(), 0.0);
    EXPECT_EQ(parsed.getValue().body.getField("code").numberInt(), 22);
    EXPECT_TRUE(c.pingWorks());
    EXPECT_EQ(handler.calls.load(), 1);  // the bad request never reached the handler
}

TEST_F(ServerTest, TruncatedMessageThenEofCloses) {
    Client bystander(port());
    Client c(port());
    wire::Message m = wire::buildOpMsg(1, 0, 0, fromJson(R"({"ping": 1, "$db": "admin"})"));
    c.send(m.bytes().substr(0, m.size() - 5));
    // The server waits for the rest without blocking anyone else.
    EXPECT_TRUE(bystander.pingWorks());
    EXPECT_FALSE(c.read(200ms).has_value());
    EXPECT_EQ(handler.calls.load(), 1);
    // EOF in the middle of the message: the server closes its side.
    c.shutdownSend();
    EXPECT_TRUE(c.waitClosed());
    EXPECT_TRUE(waitForCurrent(1));
    EXPECT_TRUE(bystander.pingWorks());
}

TEST_F(ServerTest, StalledPeerDoesNotBlockOthers) {
    Client staller(port());
    // A header announcing 1000 bytes, then nothing.
    staller.send(rawMessage(2013, "", 1000).bytes().substr(0, 16));
    Client other(port());
    for (int i = 0; i < 10; ++i) EXPECT_TRUE(other.pingWorks());
    // A command that does not end on one connection does not stall another either: the other
    // is answered while it is still in flight.
    Client slow(port());
    slow.send(wire::buildOpMsg(1, 0, 0, fromJson(R"({"block": 1, "$db": "admin"})")));
    ASSERT_TRUE(handler.gate.awaitWaiters(1));
    EXPECT_TRUE(other.pingWorks());
    handler.gate.open();
    EXPECT_TRUE(slow.read().has_value());
}

TEST_F(ServerTest, HundredConcurrentConnections) {
    std::vector<std::unique_ptr<Client>> clients;
    for (int i = 0; i < 100; ++i) clients.push_back(std::make_unique<Client>(port()));
    // Send on every connection before reading any reply.
    for (auto& c : clients)
        c->send(wire::buildOpMsg(1, 0, 0, fromJson(R"({"ping": 1, "$db": "admin"})")));
    for (auto& c : clients) {
        auto reply = c->read();
        ASSERT_TRUE(reply.has_value());
        EXPECT_EQ(reply->header().responseTo, 1);
    }
    EXPECT_TRUE(waitForCurrent(100));
    ConnectionStats stats = _server->connectionStats();
    EXPECT_EQ(stats.totalCreated, 100);
    EXPECT_EQ(stats.available, ServerOptions{}.maxConnections - 100);
    // Distinct, monotonic connection ids.
    std::set<int64_t> ids;
    for (auto& c : clients) {
        bson::BsonObj r = c->command(fromJson(R"({"ping": 1, "$db": "admin"})"));
        ids.insert(r.getField("connectionId").numberLong());
    }
    EXPECT_EQ(ids.size(), 100u);
    clients.clear();
    EXPECT_TRUE(waitForCurrent(0));
    for (int i = 0; i < 500 && handler.disconnects.load() < 100; ++i)
        std::this_thread::sleep_for(10ms);
    EXPECT_EQ(handler.disconnects.load(), 100);
}

TEST_F(ServerTest, GracefulShutdownFinishesInFlightRequest) {
    Client idle(port());
    ASSERT_TRUE(idle.pingWorks());
    Client busy(port());
    busy.send(wire::buildOpMsg(1, 0, 0, fromJson(R"({"block": 1, "$db": "admin"})")));
    ASSERT_TRUE(handler.gate.awaitWaiters(1));

    _server->shutdown();
    // The idle connection is closed while the in-flight request has not ended: shutting down
    // does not wait for it to close idle connections; new connections are refused.
    EXPECT_TRUE(idle.waitClosed());
    handler.gate.open();
    // The in-flight request still gets its reply, then the connection closes.
    auto reply = busy.read();
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->header().responseTo, 1);
    EXPECT_TRUE(busy.waitClosed());
    _thread.join();  // run() returned
    EXPECT_EQ(handler.disconnects.load(), 2);
    asio::io_context ioc;
    asio::ip::tcp::socket s(ioc);
    asio::error_code ec;
    s.connect({asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port())}, ec);
    EXPECT_TRUE(ec);
    _server.reset();
}

TEST_F(ServerTest, BindErrorIsAClearStatus) {
    ServerOptions options;
    options.port = port();
    Server second(options, handler);
    Status s = second.start();
    ASSERT_FALSE(s.isOK());
    EXPECT_TRUE(s.is(ErrorCodes::SocketException));
    EXPECT_EQ(s.reason(), "Address already in use: 127.0.0.1:" + std::to_string(port()));

    options.bindIp = "not-an-ip";
    Server third(options, handler);
    EXPECT_TRUE(third.start().is(ErrorCodes::BadValue));
}

TEST_F(ServerTest, MaxConnectionsRefusesExtraConnections) {
    stopServer();
    ServerOptions options;
    options.maxConnections = 2;
    startServer(options);
    Client a(port()), b(port());
    ASSERT_TRUE(a.pingWorks());
    ASSERT_TRUE(b.pingWorks());
    Client c(port());
    EXPECT_TRUE(c.waitClosed());
    ConnectionStats stats = _server->connectionStats();
    EXPECT_EQ(stats.current, 2);
    EXPECT_EQ(stats.available, 0);
    EXPECT_EQ(stats.rejected, 1);
    EXPECT_TRUE(a.pingWorks());
}

TEST_F(ServerTest, MultipleBindAddressesAndIoThreads) {
    stopServer();
    ServerOptions options;
    options.bindIp = "127.0.0.1, localhost";
    options.ioThreads = 2;
    // 127.0.0.1 twice cannot bind the same port: a clear error.
    Server dup(ServerOptions{options.bindIp, 0, 2, 2, false, 10}, handler);
    EXPECT_TRUE(dup.start().is(ErrorCodes::SocketException));

    options.bindIp = "127.0.0.1,::1";
    _server = std::make_unique<Server>(options, handler);
    Status s = _server->start();
    if (!s.isOK()) GTEST_SKIP() << "no IPv6 loopback: " << s.toString();
    ASSERT_EQ(_server->listenAddresses().size(), 2u);
    EXPECT_EQ(_server->listenAddresses()[1], "[::1]:" + std::to_string(_server->port()));
    _thread = std::thread([this] { _server->run(); });
    std::vector<std::unique_ptr<Client>> clients;
    for (int i = 0; i < 8; ++i) clients.push_back(std::make_unique<Client>(port()));
    for (auto& c : clients) EXPECT_TRUE(c->pingWorks());
}

// ServerOptions::inlineRequests: what the handler settles in runInline is answered from the io
// thread, the rest (also what it declines after looking) from the pool, in request order.
TEST_F(ServerTest, InlineRequestsAreAnsweredWithoutThePool) {
    stopServer();
    ServerOptions options;
    options.ioThreads = 2;
    options.inlineRequests = true;
    startServer(options);
    Client c(port());
    for (int i = 0; i < 3; ++i) {
        bson::BsonObj r = c.command(fromJson(R"({"inline": 1, "$db": "admin"})"));
        EXPECT_TRUE(r.getField("inline").boolValue()) << r.toJson();
        bson::BsonObj p = c.command(fromJson(R"({"inlineThenPool": 1, "$db": "admin"})"));
        EXPECT_EQ(p.getField("echo").objValue().firstElement().fieldName(), "inlineThenPool");
    }
    EXPECT_EQ(handler.inlineCalls.load(), 3);
    EXPECT_EQ(handler.declined.load(), 3);
    EXPECT_EQ(handler.calls.load(), 3);  // only the declined ones reached handleRequest
    // Without the option nothing is asked.
    stopServer();
    startServer(ServerOptions{});
    Client d(port());
    EXPECT_FALSE(d.command(fromJson(R"({"inline": 1, "$db": "admin"})")).hasField("inline"));
    EXPECT_EQ(handler.inlineCalls.load(), 3);
}

TEST(ServerSignals, SigtermShutsDownGracefully) {
    EchoHandler handler;
    ServerOptions options;
    options.port = 0;
    Server server(options, handler);
    ASSERT_TRUE(server.start().isOK());
    server.handleSignals();
    std::thread t([&] { server.run(); });
    Client c(server.port());
    ASSERT_TRUE(c.pingWorks());
    std::raise(SIGTERM);
    EXPECT_TRUE(c.waitClosed());
    t.join();
}

TEST(ServerLifecycle, ShutdownBeforeRunAndDestructorWithoutRun) {
    EchoHandler handler;
    {
        Server server(ServerOptions{"127.0.0.1", 0, 1, 1, false, 10}, handler);
        ASSERT_TRUE(server.start().isOK());
        server.shutdown();
        server.run();  // returns promptly
    }
    {
        Server server(ServerOptions{"127.0.0.1", 0, 1, 1, false, 10}, handler);
        ASSERT_TRUE(server.start().isOK());
    }  // destructor drains
    {
        Server server(ServerOptions{"127.0.0.1", 0, 1, 1, false, 10}, handler);
        server.run();  // not started: returns at once
    }
}

}  // namespace
}  // namespace tessera::net
