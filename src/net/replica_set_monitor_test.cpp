#include "net/replica_set_monitor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "bson/bson_builder.h"
#include "net/async_remote_client.h"
#include "net/remote_client.h"
#include "net/running_server.h"
#include "net/server.h"
#include "wire/op_msg.h"

namespace tessera::net {
namespace {

using namespace std::chrono_literals;

// A replica set member as clients see it: hello says whether it is the writable primary of
// `setName` and which member it takes for the primary; any other command is served by the
// primary ({ok: 1, servedBy: id}), refused by a secondary (NotWritablePrimary) unless its
// `$readPreference` allows a secondary (then served), or interrupted
// (InterruptedDueToReplStateChange) when told to.
class MemberHandler : public RequestHandler {
  public:
    enum class Mode { kPrimary, kSecondary, kInterrupt };
    MemberHandler(std::string setName, int id) : _setName(std::move(setName)), _id(id) {}

    void become(Mode mode, std::string primary) {
        MutexLock lock(_mutex);
        _mode = mode;
        _primary = std::move(primary);
    }
    int commandsServed() const { return _served.load(); }
    int commandsSeen() const { return _seen.load(); }

    bson::BsonObj handleRequest(const Request& request, ClientContext&) override {
        MutexLock lock(_mutex);
        bson::BsonBuilder b;
        if (request.msg->commandName() == "hello") {
            b.append("isWritablePrimary", _mode == Mode::kPrimary);
            b.append("secondary", _mode != Mode::kPrimary);
            b.append("setName", _setName);
            if (!_primary.empty()) b.append("primary", _primary);
            b.append("ok", 1.0);
            return b.obj();
        }
        ++_seen;
        const bool secondaryOk = request.msg->body["$readPreference"].isObject();
        if (_mode == Mode::kSecondary && !secondaryOk) {
            b.append("ok", 0.0).append("errmsg", "not primary").appendInt32("code", 10107);
        } else if (_mode == Mode::kInterrupt) {
            b.append("ok", 0.0).append("errmsg", "interrupted").appendInt32("code", 11602);
        } else {
            ++_served;
            b.append("ok", 1.0).append("servedBy", _id);
        }
        return b.obj();
    }

  private:
    const std::string _setName;
    const int _id;
    Mutex _mutex;
    Mode _mode GUARDED_BY(_mutex) = Mode::kSecondary;
    std::string _primary GUARDED_BY(_mutex);
    std::atomic<int> _served{0};
    std::atomic<int> _seen{0};
};

// Three members of `setName` on loopback ports; `target` is their connection string.
class ThreeMembers {
  public:
    explicit ThreeMembers(const std::string& setName) {
        for (int i = 0; i < 3; ++i) {
            handlers.push_back(std::make_unique<MemberHandler>(setName, i));
            servers.push_back(std::make_unique<test::RunningServer>(*handlers.back()));
        }
        target = setName + "/" + host(0) + "," + host(1) + "," + host(2);
    }
    std::string host(int i) const { return servers[i]->host(); }
    // Member `primary` leads (-1: none); the others name it.
    void lead(int primary) {
        for (int i = 0; i < 3; ++i) {
            handlers[i]->become(
                i == primary ? MemberHandler::Mode::kPrimary : MemberHandler::Mode::kSecondary,
                primary < 0 ? std::string() : host(primary));
        }
    }

    std::vector<std::unique_ptr<MemberHandler>> handlers;
    std::vector<std::unique_ptr<test::RunningServer>> servers;
    std::string target;
};

bson::BsonObj insertCommand() {
    bson::BsonBuilder b;
    b.append("insert", "c");
    return b.obj();
}

int servedBy(const StatusWith<bson::BsonObj>& reply) {
    EXPECT_TRUE(reply.isOK()) << reply.getStatus().toString();
    if (!reply.isOK()) return -1;
    EXPECT_TRUE(replyStatus(reply.getValue()).isOK()) << reply.getValue().toJson();
    return reply.getValue()["servedBy"].numberInt();
}

TEST(ConnectionString, ParsesOneProcessAndReplicaSets) {
    auto one = ConnectionString::parse("h:1");
    ASSERT_TRUE(one.isOK());
    EXPECT_FALSE(one.getValue().isReplicaSet());
    EXPECT_EQ(one.getValue().toString(), "h:1");

    auto set = ConnectionString::parse("shard0/a:1,b:2,c:3");
    ASSERT_TRUE(set.isOK());
    EXPECT_EQ(set.getValue().setName, "shard0");
    EXPECT_EQ(set.getValue().hosts, (std::vector<std::string>{"a:1", "b:2", "c:3"}));
    EXPECT_EQ(set.getValue().toString(), "shard0/a:1,b:2,c:3");
    EXPECT_TRUE(isReplicaSetTarget("shard0/a:1"));
    EXPECT_FALSE(isReplicaSetTarget("a:1"));

    for (const char* bad : {"/a:1", "rs/", "rs/a", "rs/a:1,,b:2", "rs/a:1,", "a:1,b:2", ""}) {
        EXPECT_EQ(ConnectionString::parse(bad).getStatus().code(),
                  static_cast<int>(ErrorCodes::FailedToParse))
            << bad;
    }
}

TEST(ReplicaSetMonitor, IgnoresAnotherSetsHelloAndAsksTheNamedPrimaryFirst) {
    ReplicaSetMonitor& monitor = ReplicaSetMonitor::get();
    const std::string target = "monitorUnit/a:1,b:2";
    bson::BsonBuilder other;
    other.append("isWritablePrimary", true).append("setName", "elsewhere");
    EXPECT_FALSE(monitor.noteHello(target, "a:1", other.obj()));
    EXPECT_FALSE(monitor.knownPrimary(target));

    bson::BsonBuilder secondary;
    secondary.append("isWritablePrimary", false).append("setName", "monitorUnit");
    secondary.append("primary", "c:3");
    secondary.startArray("hosts").append("0", "a:1").append("1", "b:2").append("2", "c:3").end();
    EXPECT_FALSE(monitor.noteHello(target, "a:1", secondary.obj()));
    auto ask = monitor.membersToAsk(target);
    ASSERT_TRUE(ask.isOK());
    EXPECT_EQ(ask.getValue(), (std::vector<std::string>{"c:3", "a:1", "b:2"}));

    bson::BsonBuilder primary;
    primary.append("isWritablePrimary", true).append("setName", "monitorUnit");
    EXPECT_EQ(monitor.noteHello(target, "c:3", primary.obj()), "c:3");
    EXPECT_EQ(monitor.knownPrimary(target), "c:3");
    monitor.forgetPrimary(target, "a:1");  // not the primary: nothing changes
    EXPECT_EQ(monitor.knownPrimary(target), "c:3");
    monitor.forgetPrimary(target, "c:3");
    EXPECT_FALSE(monitor.knownPrimary(target));
}

TEST(RemoteClientToReplicaSet, FindsThePrimaryAndFollowsAnElection) {
    ThreeMembers set("syncElection");
    set.lead(1);
    RemoteClient client;
    EXPECT_EQ(servedBy(client.runCommand(set.target, "db", insertCommand())), 1);
    EXPECT_EQ(ReplicaSetMonitor::get().knownPrimary(set.target), set.host(1));

    // Member 2 is elected: the cached primary refuses the next command, which is sent on to the
    // new primary within the same call and runs once.
    set.lead(2);
    EXPECT_EQ(servedBy(client.runCommand(set.target, "db", insertCommand())), 2);
    EXPECT_EQ(set.handlers[1]->commandsServed(), 1);
    EXPECT_EQ(set.handlers[2]->commandsServed(), 1);

    // The same for commands sent side by side.
    set.lead(0);
    auto replies = client.runCommands(
        {{set.target, "db", insertCommand()}, {set.host(2), "db", insertCommand()}});
    ASSERT_EQ(replies.size(), 2u);
    EXPECT_EQ(servedBy(replies[0]), 0);
    EXPECT_EQ(replies[1].getValue()["code"].numberInt(), 10107);  // one process: as it answered
}

TEST(RemoteClientToReplicaSet, AnInterruptedCommandIsNotSentAgain) {
    ThreeMembers set("syncInterrupted");
    set.lead(0);
    RemoteClient client;
    EXPECT_EQ(servedBy(client.runCommand(set.target, "db", insertCommand())), 0);
    set.handlers[0]->become(MemberHandler::Mode::kInterrupt, set.host(0));
    auto reply = client.runCommand(set.target, "db", insertCommand());
    ASSERT_TRUE(reply.isOK());
    EXPECT_EQ(replyStatus(reply.getValue()).code(),
              static_cast<int>(ErrorCodes::InterruptedDueToReplStateChange));
    EXPECT_EQ(set.handlers[0]->commandsSeen(), 2);  // its outcome is the caller's to find out
    EXPECT_FALSE(ReplicaSetMonitor::get().knownPrimary(set.target));  // asked again next time
    set.lead(1);
    EXPECT_EQ(servedBy(client.runCommand(set.target, "db", insertCommand())), 1);
}

TEST(RemoteClientToReplicaSet, AnInterruptedRetryableWriteGoesToTheNextPrimary) {
    ThreeMembers set("syncRetryable");
    set.lead(0);
    RemoteClient client;
    bson::BsonBuilder b;
    b.append("insert", "c");
    b.startObject("lsid").append("id", "session").end();
    b.append("txnNumber", int64_t{5});
    bson::BsonObj retryable = b.obj();
    EXPECT_TRUE(safeToSendAgain(retryable));
    bson::BsonBuilder inTransaction;
    inTransaction.appendElements(retryable).append("autocommit", false);
    EXPECT_FALSE(safeToSendAgain(inTransaction.obj()));
    EXPECT_FALSE(safeToSendAgain(insertCommand()));

    EXPECT_EQ(servedBy(client.runCommand(set.target, "db", retryable)), 0);
    // Member 0 is interrupted by an election member 1 won: the statement runs at most once on
    // the set (its record), so it is sent on to member 1 within the same call.
    set.lead(1);
    set.handlers[0]->become(MemberHandler::Mode::kInterrupt, set.host(1));
    EXPECT_EQ(servedBy(client.runCommand(set.target, "db", retryable)), 1);
    EXPECT_EQ(set.handlers[0]->commandsSeen(), 2);
}

TEST(RemoteClientToReplicaSet, AStoppedPrimaryIsReplacedAndNoPrimaryFailsInTime) {
    ThreeMembers set("syncStopped");
    set.lead(2);
    RemoteClient client;
    EXPECT_EQ(servedBy(client.runCommand(set.target, "db", insertCommand())), 2);
    set.servers[2]->stop();  // its connections close: the next command cannot be sent there
    set.lead(0);
    EXPECT_EQ(servedBy(client.runCommand(set.target, "db", insertCommand())), 0);

    set.lead(-1);  // an election that does not end
    auto reply = client.runCommand(set.target, "db", insertCommand(), 300ms);
    EXPECT_EQ(reply.getStatus().code(),
              static_cast<int>(ErrorCodes::FailedToSatisfyReadPreference));
    EXPECT_NE(reply.getStatus().reason().find(set.target), std::string::npos);
}

bson::BsonObj primaryPreferredFind() {
    bson::BsonBuilder b;
    b.append("find", "c");
    b.startObject("$readPreference").append("mode", "primaryPreferred").end();
    return b.obj();
}

// The config-down case: a read preferring the primary goes to it when there is one, and to a
// member that answers when there is none — at once, without waiting for an election; its
// cursor's member is named.
TEST(RemoteClientToReplicaSet, AReadPreferringThePrimaryIsServedBySecondariesWhenNoneLeads) {
    ThreeMembers set("preferredUnit");
    RemoteClient client;
    set.lead(2);
    std::string member;
    EXPECT_EQ(servedBy(client.runCommand(set.target, "db", primaryPreferredFind(), {}, &member)),
              2);
    EXPECT_EQ(member, set.host(2));

    set.lead(-1);
    const std::string gone = set.host(2);
    set.servers[2].reset();  // the old primary is gone too
    ReplicaSetMonitor::get().forgetPrimary(set.target, gone);
    auto reply = client.runCommand(set.target, "db", primaryPreferredFind(), {}, &member);
    const int by = servedBy(reply);
    EXPECT_TRUE(by == 0 || by == 1) << by;
    EXPECT_EQ(member, set.host(by));
    // Side by side: both reads served, by members that answer.
    auto both = client.runCommands(
        {{set.target, "db", primaryPreferredFind()}, {set.target, "db", primaryPreferredFind()}});
    ASSERT_EQ(both.size(), 2u);
    for (const auto& r : both) EXPECT_NE(servedBy(r), 2);
    // A command that needs the primary is still refused by the secondaries.
    EXPECT_EQ(set.handlers[0]->commandsServed() + set.handlers[1]->commandsServed(), 3);
}

TEST(AsyncRemoteClientToReplicaSet, FindsThePrimaryAndFollowsAnElection) {
    ThreeMembers set("asyncElection");
    set.lead(0);
    asio::io_context ioc;
    auto guard = asio::make_work_guard(ioc);
    std::optional<AsyncRemoteClient> client;
    client.emplace(ioc);
    std::thread thread([&ioc] { ioc.run(); });
    auto run = [&]() -> StatusWith<bson::BsonObj> {
        auto future = asio::co_spawn(
            ioc,
            [&]() -> asio::awaitable<std::optional<StatusWith<bson::BsonObj>>> {
                co_return co_await client->runCommand(set.target, "db", insertCommand());
            },
            asio::use_future);
        if (future.wait_for(20s) != std::future_status::ready) {
            ADD_FAILURE() << "runCommand did not complete";
            std::abort();  // the coroutine still references this frame
        }
        return *future.get();
    };
    EXPECT_EQ(servedBy(run()), 0);
    set.lead(1);
    EXPECT_EQ(servedBy(run()), 1);
    EXPECT_EQ(set.handlers[0]->commandsServed(), 1);
    set.servers[1]->stop();
    set.lead(2);
    EXPECT_EQ(servedBy(run()), 2);
    guard.reset();
    thread.join();
    client.reset();
}

}  // namespace
}  // namespace tessera::net
