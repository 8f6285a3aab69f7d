// Replication groups of real members (libraft's libuv backend: log files, TCP on loopback) in
// one process: elections, replication in order, failover, restart, membership and snapshots.
#include "repl/group.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "base/error_codes.h"
#include "repl/recording_machine_for_test.h"
#include "repl/repl_test_util.h"

namespace tessera::repl {
namespace {

using testing::kDeadline;
using testing::RecordingMachine;
using testing::unusedPort;
using testing::waitFor;
using namespace std::chrono_literals;

// Waits for a callback's result.
template <typename T>
class Outcome {
  public:
    void set(T value) {
        std::lock_guard lk(_m);
        _value = std::move(value);
        _cv.notify_all();
    }
    T get() {
        std::unique_lock lk(_m);
        EXPECT_TRUE(_cv.wait_for(lk, kDeadline, [&] { return _value.has_value(); }))
            << "no completion within the deadline";
        return _value.value_or(T(Status(ErrorCodes::ExceededTimeLimit, "no completion")));
    }

  private:
    std::mutex _m;
    std::condition_variable _cv;
    std::optional<T> _value;
};

class GroupTest : public ::testing::Test {
  protected:
    void SetUp() override {
        _root = std::filesystem::temp_directory_path() /
                ("tessera_repl_" + std::to_string(::getpid()) + "_" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::remove_all(_root);
    }
    void TearDown() override {
        for (auto& [id, g] : _groups) {
            if (g) g->stop();
        }
        _groups.clear();
        std::filesystem::remove_all(_root);
    }

    Member member(MemberId id) {
        if (!_ports.count(id)) _ports[id] = unusedPort();
        return Member{id, "127.0.0.1:" + std::to_string(_ports[id]), MemberRole::kVoter};
    }

    std::vector<Member> members(std::initializer_list<MemberId> ids) {
        std::vector<Member> out;
        for (MemberId id : ids) out.push_back(member(id));
        return out;
    }

    // Starts member `id` over its directory (kept across restarts), with a fresh machine
    // unless `keepMachine`.
    Group& startMember(MemberId id, std::vector<Member> bootstrap,
                       unsigned snapshotThreshold = 8192, unsigned snapshotTrailing = 8192) {
        _machines[id] = std::make_unique<RecordingMachine>();
        GroupOptions options;
        options.dir = _root / ("m" + std::to_string(id));
        options.self = id;
        options.selfAddress = member(id).address;
        options.bootstrap = std::move(bootstrap);
        options.electionTimeout = 300ms;
        options.heartbeatInterval = 30ms;
        options.snapshotThreshold = snapshotThreshold;
        options.snapshotTrailing = snapshotTrailing;
        auto started = Group::start(std::move(options), *_machines[id]);
        EXPECT_TRUE(started.isOK()) << started.getStatus().toString();
        _groups[id] = std::move(started.getValue());
        return *_groups[id];
    }

    void stopMember(MemberId id) {
        _groups[id]->stop();
        _groups[id].reset();
    }

    // The id of the one member that leads, as every running member agrees, or 0.
    MemberId agreedLeader() {
        MemberId leader = 0;
        for (auto& [id, g] : _groups) {
            if (!g) continue;
            GroupStatus s = g->status();
            if (s.role == Role::kLeader) {
                if (leader != 0) return 0;
                leader = id;
            }
        }
        if (leader == 0) return 0;
        for (auto& [id, g] : _groups) {
            if (!g) continue;
            GroupStatus s = g->status();
            if (!s.leader || s.leader->id != leader) return 0;
        }
        return leader;
    }

    MemberId waitForLeader() {
        MemberId leader = 0;
        EXPECT_TRUE(waitFor([&] { return (leader = agreedLeader()) != 0; })) << "no leader";
        return leader;
    }

    StatusWith<LogIndex> proposeAndWait(MemberId id, std::string entry) {
        Outcome<StatusWith<LogIndex>> outcome;
        _groups[id]->propose(std::move(entry), [&](StatusWith<LogIndex> r) { outcome.set(r); });
        return outcome.get();
    }

    Status changeAndWait(const std::function<void(Group::Done)>& change) {
        Outcome<Status> outcome;
        change([&](Status s) { outcome.set(s); });
        return outcome.get();
    }

    bool allHold(const std::vector<std::string>& expected) {
        return waitFor([&] {
            for (auto& [id, g] : _groups) {
                if (g && _machines[id]->entries() != expected) return false;
            }
            return true;
        });
    }

    std::filesystem::path _root;
    std::map<MemberId, int> _ports;
    std::map<MemberId, std::unique_ptr<RecordingMachine>> _machines;
    std::map<MemberId, std::unique_ptr<Group>> _groups;
};

TEST_F(GroupTest, OneMemberGroupLeadsAndAppliesInOrder) {
    startMember(1, members({1}));
    ASSERT_EQ(waitForLeader(), 1u);
    std::vector<std::string> expected;
    LogIndex last = 0;
    for (int i = 0; i < 50; ++i) {
        expected.push_back("e" + std::to_string(i));
        auto index = proposeAndWait(1, expected.back());
        ASSERT_TRUE(index.isOK()) << index.getStatus().toString();
        EXPECT_GT(index.getValue(), last);
        last = index.getValue();
    }
    EXPECT_EQ(_machines[1]->entries(), expected);
    EXPECT_EQ(_machines[1]->appliedIndex(), last);
    EXPECT_EQ(_machines[1]->outOfOrder(), 0);
    // status() is refreshed by the group's thread a little after it changes.
    EXPECT_TRUE(waitFor([&] { return _groups[1]->status().commitIndex >= last; }));
    GroupStatus s = _groups[1]->status();
    EXPECT_EQ(s.members.size(), 1u);
    EXPECT_EQ(s.appliedIndex, last);
}

TEST_F(GroupTest, ThreeMembersApplyTheSameEntriesInTheSameOrderUnderConcurrentProposals) {
    auto all = members({1, 2, 3});
    for (MemberId id : {1, 2, 3}) startMember(id, all);
    MemberId leader = waitForLeader();
    ASSERT_NE(leader, 0u);

    constexpr int kClients = 4;
    constexpr int kPerClient = 50;
    std::atomic<int> acknowledged{0};
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c) {
        clients.emplace_back([&, c] {
            for (int i = 0; i < kPerClient; ++i) {
                auto r = proposeAndWait(leader, "c" + std::to_string(c) + "-" + std::to_string(i));
                if (r.isOK()) acknowledged.fetch_add(1);
            }
        });
    }
    for (auto& t : clients) t.join();
    EXPECT_EQ(acknowledged.load(), kClients * kPerClient);

    std::vector<std::string> leaderEntries = _machines[leader]->entries();
    ASSERT_EQ(leaderEntries.size(), static_cast<size_t>(kClients * kPerClient));
    EXPECT_TRUE(allHold(leaderEntries));
    // Each client's entries in the order that client proposed them.
    for (int c = 0; c < kClients; ++c) {
        int next = 0;
        for (const std::string& e : leaderEntries) {
            if (e.rfind("c" + std::to_string(c) + "-", 0) == 0) {
                EXPECT_EQ(e, "c" + std::to_string(c) + "-" + std::to_string(next));
                ++next;
            }
        }
        EXPECT_EQ(next, kPerClient);
    }
    GroupStatus s = _groups[leader]->status();
    EXPECT_EQ(s.matchIndexes.size(), 3u);
}

TEST_F(GroupTest, AFollowerRefusesProposalsAsNotWritablePrimary) {
    auto all = members({1, 2, 3});
    for (MemberId id : {1, 2, 3}) startMember(id, all);
    MemberId leader = waitForLeader();
    MemberId follower = leader == 1 ? 2 : 1;
    auto r = proposeAndWait(follower, "x");
    ASSERT_FALSE(r.isOK());
    EXPECT_EQ(r.getStatus().code(), static_cast<int>(ErrorCodes::NotWritablePrimary));
    EXPECT_TRUE(_machines[follower]->entries().empty());
}

TEST_F(GroupTest, ALeaderStoppedIsReplacedAndKeepsEveryAcknowledgedEntryAndComesBackAsFollower) {
    auto all = members({1, 2, 3});
    for (MemberId id : {1, 2, 3}) startMember(id, all);
    MemberId first = waitForLeader();
    std::vector<std::string> expected;
    for (int i = 0; i < 20; ++i) {
        expected.push_back("before-" + std::to_string(i));
        ASSERT_TRUE(proposeAndWait(first, expected.back()).isOK());
    }
    Term firstTerm = _groups[first]->status().term;

    stopMember(first);
    MemberId second = waitForLeader();
    ASSERT_NE(second, 0u);
    EXPECT_NE(second, first);
    EXPECT_GT(_groups[second]->status().term, firstTerm);
    for (int i = 0; i < 20; ++i) {
        expected.push_back("after-" + std::to_string(i));
        ASSERT_TRUE(proposeAndWait(second, expected.back()).isOK());
    }
    EXPECT_TRUE(allHold(expected));

    // Back from its directory, with an empty machine: it replays its log and follows.
    startMember(first, {});
    EXPECT_TRUE(allHold(expected));
    EXPECT_EQ(waitForLeader(), second);
    for (MemberId id : {1, 2, 3}) EXPECT_EQ(_machines[id]->outOfOrder(), 0) << id;
}

TEST_F(GroupTest, ABarrierProvesLeadershipAndALeaderCutOffFromItsMajorityCannotPassOne) {
    auto all = members({1, 2, 3});
    for (MemberId id : {1, 2, 3}) startMember(id, all);
    MemberId leader = waitForLeader();
    ASSERT_TRUE(proposeAndWait(leader, "x").isOK());
    Status passed = changeAndWait([&](Group::Done d) { _groups[leader]->barrier(std::move(d)); });
    EXPECT_TRUE(passed.isOK()) << passed.toString();
    MemberId follower = leader == 1 ? 2 : 1;
    Status onFollower =
        changeAndWait([&](Group::Done d) { _groups[follower]->barrier(std::move(d)); });
    EXPECT_EQ(onFollower.code(), static_cast<int>(ErrorCodes::NotWritablePrimary));

    // Alone, the leader still believes it leads for a while; a barrier asked now must not
    // succeed: it fails once the leader notices it lost its majority and steps down.
    for (MemberId id : {1, 2, 3}) {
        if (id != leader) stopMember(id);
    }
    Status deposed = changeAndWait([&](Group::Done d) { _groups[leader]->barrier(std::move(d)); });
    EXPECT_FALSE(deposed.isOK());
    EXPECT_TRUE(deposed.code() == static_cast<int>(ErrorCodes::InterruptedDueToReplStateChange) ||
                deposed.code() == static_cast<int>(ErrorCodes::NotWritablePrimary))
        << deposed.toString();
    EXPECT_TRUE(waitFor([&] { return _groups[leader]->status().role != Role::kLeader; }));
}

TEST_F(GroupTest, LeadershipTransfersToTheNamedMember) {
    auto all = members({1, 2, 3});
    for (MemberId id : {1, 2, 3}) startMember(id, all);
    MemberId leader = waitForLeader();
    ASSERT_TRUE(proposeAndWait(leader, "a").isOK());
    MemberId target = leader == 3 ? 1 : leader + 1;
    ASSERT_TRUE(changeAndWait([&](Group::Done d) {
                    _groups[leader]->transferLeadership(target, std::move(d));
                }).isOK());
    EXPECT_TRUE(waitFor([&] { return agreedLeader() == target; }));
    ASSERT_TRUE(proposeAndWait(target, "b").isOK());
    EXPECT_TRUE(allHold({"a", "b"}));

    // To a member that is down, leadership cannot move: the transfer says so, and the leader
    // still leads.
    MemberId down = target == 3 ? 1 : target + 1;
    stopMember(down);
    Status refused = changeAndWait(
        [&](Group::Done d) { _groups[target]->transferLeadership(down, std::move(d)); });
    EXPECT_EQ(refused.code(), static_cast<int>(ErrorCodes::ExceededTimeLimit))
        << refused.toString();
    EXPECT_TRUE(proposeAndWait(waitForLeader(), "c").isOK());
}

TEST_F(GroupTest, MembersAddedLaterCatchUpAndVoteAndARemovedMemberStopsReceiving) {
    startMember(1, members({1}));
    ASSERT_EQ(waitForLeader(), 1u);
    std::vector<std::string> expected;
    for (int i = 0; i < 10; ++i) {
        expected.push_back("solo-" + std::to_string(i));
        ASSERT_TRUE(proposeAndWait(1, expected.back()).isOK());
    }
    for (MemberId id : {2, 3}) {
        startMember(id, {});  // no state, no bootstrap: waits to be added
        Status added =
            changeAndWait([&](Group::Done d) { _groups[1]->addMember(member(id), std::move(d)); });
        ASSERT_TRUE(added.isOK()) << added.toString();
    }
    expected.push_back("three");
    ASSERT_TRUE(proposeAndWait(1, expected.back()).isOK());
    EXPECT_TRUE(allHold(expected));
    GroupStatus s = _groups[1]->status();
    ASSERT_EQ(s.members.size(), 3u);
    for (const Member& m : s.members) EXPECT_EQ(m.role, MemberRole::kVoter) << m.id;

    // Now a majority of 3 is needed: with 2 of 3 running, the group still commits.
    stopMember(3);
    expected.push_back("two-of-three");
    ASSERT_TRUE(proposeAndWait(waitForLeader(), expected.back()).isOK());

    MemberId leader = waitForLeader();
    ASSERT_TRUE(changeAndWait([&](Group::Done d) {
                    _groups[leader]->removeMember(3, std::move(d));
                }).isOK());
    EXPECT_EQ(_groups[leader]->status().members.size(), 2u);
    expected.push_back("after-remove");
    ASSERT_TRUE(proposeAndWait(leader, expected.back()).isOK());
    EXPECT_TRUE(allHold(expected));
}

TEST_F(GroupTest, AMemberBehindTheLeadersLogCatchesUpFromASnapshot) {
    auto all = members({1, 2, 3});
    for (MemberId id : {1, 2, 3}) startMember(id, all, /*snapshotThreshold=*/16, /*trailing=*/4);
    MemberId leader = waitForLeader();
    MemberId lagging = leader == 3 ? 1 : leader + 1;
    stopMember(lagging);
    std::vector<std::string> expected;
    for (int i = 0; i < 100; ++i) {
        expected.push_back("v" + std::to_string(i));
        ASSERT_TRUE(proposeAndWait(leader, expected.back()).isOK());
    }
    EXPECT_GT(_machines[leader]->snapshots(), 0);
    startMember(lagging, {}, 16, 4);
    EXPECT_TRUE(allHold(expected));
    EXPECT_GT(_machines[lagging]->restores(), 0) << "caught up from the log alone";
}

TEST_F(GroupTest, AMemberThatCannotStartSaysWhyAndLeavesNothingRunning) {
    startMember(1, members({1}));
    ASSERT_EQ(waitForLeader(), 1u);
    // A second member on the same address: its listener cannot bind.
    RecordingMachine machine;
    GroupOptions options;
    options.dir = _root / "second";
    options.self = 2;
    options.selfAddress = member(1).address;
    options.bootstrap = {Member{2, member(1).address, MemberRole::kVoter}};
    auto started = Group::start(std::move(options), machine);
    ASSERT_FALSE(started.isOK());
    EXPECT_NE(started.getStatus().reason().find("raft_start"), std::string::npos)
        << started.getStatus().toString();
    // The first member is unaffected.
    EXPECT_TRUE(proposeAndWait(1, "still").isOK());
}

TEST_F(GroupTest, StoppingCompletesEveryProposalInFlight) {
    auto all = members({1, 2, 3});
    for (MemberId id : {1, 2, 3}) startMember(id, all);
    MemberId leader = waitForLeader();
    // Without a majority nothing commits: proposals wait until the stop ends them.
    for (MemberId id : {1, 2, 3}) {
        if (id != leader) stopMember(id);
    }
    std::atomic<int> completed{0};
    std::atomic<int> interrupted{0};
    for (int i = 0; i < 10; ++i) {
        _groups[leader]->propose("stuck", [&](StatusWith<LogIndex> r) {
            if (!r.isOK()) interrupted.fetch_add(1);
            completed.fetch_add(1);
        });
    }
    stopMember(leader);
    EXPECT_EQ(completed.load(), 10);
    EXPECT_EQ(interrupted.load(), 10);
    // After stop, a proposal completes at once.
    Outcome<StatusWith<LogIndex>> late;
    Group* stopped = nullptr;
    startMember(leader, {});
    stopped = _groups[leader].get();
    stopped->stop();
    stopped->propose("late", [&](StatusWith<LogIndex> r) { late.set(r); });
    EXPECT_EQ(late.get().getStatus().code(), static_cast<int>(ErrorCodes::InterruptedAtShutdown));
}

}  // namespace
}  // namespace tessera::repl
