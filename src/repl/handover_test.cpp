// Members that reach each other at their main ports: each member's wire-protocol server hands
// the connections that start with kHandOverOpCode to its group (GroupOptions::handOver), and
// answers everything else as usual.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "bson/bson_builder.h"
#include "net/server.h"
#include "repl/group.h"
#include "repl/handover_transport.h"
#include "repl/recording_machine_for_test.h"
#include "repl/repl_test_util.h"
#include "storage/storage_test_util.h"

namespace tessera::repl {
namespace {

using namespace std::chrono_literals;
using testing::RecordingMachine;
using testing::waitFor;

// Answers every command with {ok: 1, handled: true}: the member's ordinary clients.
class PlainHandler : public net::RequestHandler {
  public:
    bson::BsonObj handleRequest(const net::Request&, net::ClientContext&) override {
        bson::BsonBuilder b;
        b.append("ok", 1.0);
        b.append("handled", true);
        return b.obj();
    }
};

struct Node {
    PlainHandler handler;
    std::unique_ptr<net::Server> server;
    std::thread serving;
    std::atomic<Group*> group{nullptr};
    std::atomic<int> handedOver{0};
    RecordingMachine machine;
    std::unique_ptr<Group> owned;

    int start() {
        net::ServerOptions options;
        options.port = 0;
        options.handOverOpCode = kHandOverOpCode;
        options.handOver = [this](int fd, std::string body) {
            handedOver.fetch_add(1);
            Group* g = group.load();
            if (g == nullptr) {
                ::close(fd);
                return;
            }
            g->acceptStream(fd, std::move(body));
        };
        server = std::make_unique<net::Server>(options, handler);
        EXPECT_TRUE(server->start().isOK());
        serving = std::thread([this] { server->run(); });
        return server->port();
    }
    void stopGroup() {
        if (!owned) return;
        group.store(nullptr);
        owned->stop();
        owned.reset();
    }
    void stop() {
        stopGroup();
        if (server) {
            server->shutdown();
            serving.join();
            server.reset();
        }
    }
};

class HandOverTest : public ::testing::Test {
  protected:
    void TearDown() override {
        for (auto& [id, n] : _nodes) n->stop();
    }

    void startAll(int count) {
        for (int i = 1; i <= count; ++i) {
            auto node = std::make_unique<Node>();
            int port = node->start();
            _members.push_back({static_cast<MemberId>(i), "127.0.0.1:" + std::to_string(port),
                                MemberRole::kVoter});
            _nodes[static_cast<MemberId>(i)] = std::move(node);
        }
        for (int i = 1; i <= count; ++i) startGroup(static_cast<MemberId>(i), _members);
    }

    void startGroup(MemberId id, std::vector<Member> bootstrap) {
        Node& n = *_nodes[id];
        GroupOptions options;
        options.dir = _dir.path() + "/m" + std::to_string(id);
        options.self = id;
        options.selfAddress = _members[id - 1].address;
        options.bootstrap = std::move(bootstrap);
        options.electionTimeout = 300ms;
        options.heartbeatInterval = 30ms;
        options.handOver = true;
        auto started = Group::start(std::move(options), n.machine);
        ASSERT_TRUE(started.isOK()) << started.getStatus().toString();
        n.owned = std::move(started.getValue());
        n.group.store(n.owned.get());
    }

    MemberId waitForLeader() {
        MemberId leader = 0;
        EXPECT_TRUE(waitFor([&] {
            for (auto& [id, n] : _nodes) {
                if (n->owned && n->owned->status().role == Role::kLeader) {
                    leader = id;
                    return true;
                }
            }
            return false;
        }));
        return leader;
    }

    StatusWith<LogIndex> propose(MemberId id, std::string entry) {
        std::mutex m;
        std::condition_variable cv;
        std::optional<StatusWith<LogIndex>> result;
        _nodes[id]->owned->propose(std::move(entry), [&](StatusWith<LogIndex> r) {
            std::lock_guard lk(m);
            result = r;
            cv.notify_one();
        });
        std::unique_lock lk(m);
        EXPECT_TRUE(cv.wait_for(lk, 20s, [&] { return result.has_value(); }));
        return result.value_or(Status(ErrorCodes::ExceededTimeLimit, "no answer"));
    }

    storage::test::TempDir _dir;
    std::vector<Member> _members;
    std::map<MemberId, std::unique_ptr<Node>> _nodes;
};

TEST_F(HandOverTest, MembersReplicateThroughTheirMainPortsAndFailOver) {
    startAll(3);
    MemberId leader = waitForLeader();
    ASSERT_NE(leader, 0u);
    std::vector<std::string> expected;
    for (int i = 0; i < 20; ++i) {
        expected.push_back("e" + std::to_string(i));
        ASSERT_TRUE(propose(leader, expected.back()).isOK());
    }
    EXPECT_TRUE(waitFor([&] {
        for (auto& [id, n] : _nodes) {
            if (n->machine.entries() != expected) return false;
        }
        return true;
    }));
    for (auto& [id, n] : _nodes) EXPECT_GT(n->handedOver.load(), 0) << "member " << id;

    // The leader's group stops (its server stays): the others elect one of them.
    _nodes[leader]->stopGroup();
    MemberId second = 0;
    EXPECT_TRUE(waitFor([&] {
        for (auto& [id, n] : _nodes) {
            if (id != leader && n->owned && n->owned->status().role == Role::kLeader) {
                second = id;
                return true;
            }
        }
        return false;
    }));
    ASSERT_NE(second, 0u);
    expected.push_back("after");
    ASSERT_TRUE(propose(second, "after").isOK());

    // Back on the same port, from its directory: it follows and catches up.
    startGroup(leader, {});
    EXPECT_TRUE(waitFor([&] { return _nodes[leader]->machine.entries() == expected; }));
}

TEST_F(HandOverTest, AConnectionThatDoesNotStartWithTheHandOverIsAnOrdinaryClient) {
    startAll(1);
    ASSERT_EQ(waitForLeader(), 1u);
    // A hand-over message sent after an ordinary one is a framing error, not a hand-over.
    int before = _nodes[1]->handedOver.load();
    std::string hello;
    {
        bson::BsonBuilder b;
        b.append("ping", 1);
        b.append("$db", "admin");
        bson::BsonObj body = b.obj();
        // OP_MSG: header, flags, section kind 0, document.
        std::string msg(16, '\0');
        msg.append(4, '\0');
        msg.push_back('\0');
        msg.append(reinterpret_cast<const char*>(body.data()), body.size());
        int32_t len = static_cast<int32_t>(msg.size());
        int32_t op = 2013;
        std::memcpy(msg.data(), &len, 4);
        std::memcpy(msg.data() + 12, &op, 4);
        hello = msg;
    }
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(_nodes[1]->server->port()));
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_EQ(::write(fd, hello.data(), hello.size()), static_cast<ssize_t>(hello.size()));
    char header[16];
    ASSERT_EQ(::recv(fd, header, sizeof(header), MSG_WAITALL), 16);
    int32_t replyLength;
    std::memcpy(&replyLength, header, 4);
    std::string rest(static_cast<size_t>(replyLength) - 16, '\0');
    ASSERT_EQ(::recv(fd, rest.data(), rest.size(), MSG_WAITALL), static_cast<ssize_t>(rest.size()));
    std::string preamble = HandoverTransport::preamble(9, "127.0.0.1:1");
    ASSERT_EQ(::write(fd, preamble.data(), preamble.size()), static_cast<ssize_t>(preamble.size()));
    char byte;
    EXPECT_EQ(::recv(fd, &byte, 1, 0), 0) << "the server closes the connection";
    ::close(fd);
    EXPECT_EQ(_nodes[1]->handedOver.load(), before);
    EXPECT_TRUE(propose(1, "still leads").isOK());
}

}  // namespace
}  // namespace tessera::repl
