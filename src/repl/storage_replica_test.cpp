// Storage engines replicated through real groups (libraft over loopback) in one process: the
// leader's writes reach every member as the same catalog, counts and documents; a follower's
// engine refuses writes; after the leader stops, another member leads and the stopped one comes
// back from its own files and catches up.
#include "repl/storage_replica.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "base/error_codes.h"
#include "repl/group.h"
#include "repl/repl_test_util.h"
#include "storage/replication.h"
#include "storage/storage_test_util.h"
#include "storage/synced_copy.h"
#include "storage/transaction.h"

namespace tessera::repl {
namespace {

using namespace std::chrono_literals;
using storage::test::J;
using storage::test::TempDir;
using testing::unusedPort;
using testing::waitFor;

class StorageReplicaTest : public ::testing::Test {
  protected:
    struct Member {
        std::unique_ptr<storage::Engine> engine;
        std::unique_ptr<StorageReplica> replica;
        std::unique_ptr<Group> group;
    };

    void TearDown() override {
        for (auto& [id, m] : _members) stopMember(id);
    }

    std::vector<repl::Member> addresses(std::initializer_list<MemberId> ids) {
        std::vector<repl::Member> out;
        for (MemberId id : ids) {
            if (!_ports.count(id)) _ports[id] = unusedPort();
            out.push_back({id, "127.0.0.1:" + std::to_string(_ports[id]), MemberRole::kVoter});
        }
        return out;
    }

    std::string rootOf(MemberId id) const { return _dir.path() + "/m" + std::to_string(id); }
    std::filesystem::path dbpathOf(MemberId id) const { return rootOf(id) + "/db"; }

    // `snapshotEvery`: GroupOptions::snapshotThreshold and snapshotTrailing (0: the defaults);
    // `catchUp`: StorageReplica::setCatchUp.
    void startMember(MemberId id, std::vector<repl::Member> bootstrap, unsigned snapshotEvery = 0,
                     StorageReplica::CatchUp catchUp = {}) {
        Member& m = _members[id];
        std::string root = rootOf(id);
        storage::EngineOptions engineOptions;
        engineOptions.dbpath = dbpathOf(id).string();
        engineOptions.clock = &_clocks[id];
        engineOptions.blockCacheBytes = 16 << 20;
        std::filesystem::create_directories(engineOptions.dbpath);
        auto engine = storage::Engine::open(engineOptions);
        ASSERT_TRUE(engine.isOK()) << engine.getStatus().toString();
        m.engine = std::move(engine.getValue());
        m.replica = std::make_unique<StorageReplica>(*m.engine, id, addresses({id})[0].address);
        if (catchUp) m.replica->setCatchUp(std::move(catchUp));
        GroupOptions options;
        options.dir = root + "/log";
        options.self = id;
        options.selfAddress = addresses({id})[0].address;
        options.bootstrap = std::move(bootstrap);
        options.electionTimeout = 300ms;
        options.heartbeatInterval = 30ms;
        if (snapshotEvery > 0) {
            options.snapshotThreshold = snapshotEvery;
            options.snapshotTrailing = snapshotEvery;
        }
        auto group = Group::start(std::move(options), *m.replica);
        ASSERT_TRUE(group.isOK()) << group.getStatus().toString();
        m.group = std::move(group.getValue());
        m.replica->attach(m.group.get());
        storage::setCommitLog(*m.engine, m.replica.get());
    }

    void stopMember(MemberId id) {
        Member& m = _members[id];
        if (!m.group) return;
        m.group->stop();
        m.replica->attach(nullptr);
        storage::setCommitLog(*m.engine, nullptr);
        m.group.reset();
        m.replica.reset();
        m.engine.reset();
    }

    MemberId waitForLeader() {
        MemberId leader = 0;
        EXPECT_TRUE(waitFor([&] {
            for (auto& [id, m] : _members) {
                if (m.group && m.group->status().role == Role::kLeader) {
                    leader = id;
                    return true;
                }
            }
            return false;
        }));
        return leader;
    }

    // Every running member has applied what the leader has and reads the same.
    void expectConverged(MemberId leader) {
        storage::Engine& reference = *_members[leader].engine;
        auto leaderIndex = storage::committedLogIndex(reference);
        ASSERT_TRUE(leaderIndex.isOK());
        for (auto& [id, m] : _members) {
            if (!m.group) continue;
            storage::Engine* engine = m.engine.get();
            EXPECT_TRUE(waitFor([&] {
                auto index = storage::committedLogIndex(*engine);
                return index.isOK() && index.getValue() >= leaderIndex.getValue();
            })) << "member "
                << id;
            EXPECT_EQ(storage::test::engineView(*m.engine), storage::test::engineView(reference))
                << "member " << id;
        }
    }

    void insertMany(storage::Engine& e, std::string_view ns, int from, int to) {
        auto w = e.writer(e.getCollection(ns), nullptr);
        ASSERT_TRUE(w.isOK()) << w.getStatus().toString();
        for (int i = from; i < to; ++i) {
            auto r = w.getValue()->insert(
                J(R"({"_id": )" + std::to_string(i) + R"(, "x": )" + std::to_string(i % 5) + "}"),
                {});
            ASSERT_TRUE(r.isOK()) << r.getStatus().toString();
        }
    }

    TempDir _dir;
    std::map<MemberId, int> _ports;
    std::map<MemberId, HybridLogicalClock> _clocks;
    std::map<MemberId, Member> _members;
};

TEST_F(StorageReplicaTest, TheLeadersWritesReachEveryMemberAsTheSameCatalogCountsAndDocuments) {
    auto all = addresses({1, 2, 3});
    for (MemberId id : {1, 2, 3}) startMember(id, all);
    MemberId leader = waitForLeader();
    ASSERT_NE(leader, 0u);
    storage::Engine& e = *_members[leader].engine;
    ASSERT_TRUE(e.createCollection("db.c", bson::BsonObj()).isOK());
    std::vector<std::thread> writers;
    for (int t = 0; t < 4; ++t) {
        writers.emplace_back([&, t] { insertMany(e, "db.c", t * 100, t * 100 + 25); });
    }
    for (auto& t : writers) t.join();
    storage::IndexSpec x;
    x.name = "x_1";
    x.keyPattern = J(R"({"x": 1})");
    ASSERT_TRUE(e.createIndexes("db.c", {x}).isOK());
    ASSERT_TRUE(e.createCollection("db.tmp", bson::BsonObj()).isOK());
    ASSERT_TRUE(e.renameCollection("db.tmp", "db.renamed", false).isOK());
    expectConverged(leader);
    for (auto& [id, m] : _members) {
        EXPECT_EQ(m.engine->stats(*m.engine->getCollection("db.c")).count, 100) << id;
        EXPECT_NE(m.engine->getCollection("db.renamed"), nullptr) << id;
    }
}

TEST_F(StorageReplicaTest, AFollowersEngineRefusesWritesAndChangesNothing) {
    auto all = addresses({1, 2, 3});
    for (MemberId id : {1, 2, 3}) startMember(id, all);
    MemberId leader = waitForLeader();
    ASSERT_TRUE(_members[leader].engine->createCollection("db.c", bson::BsonObj()).isOK());
    expectConverged(leader);
    MemberId follower = leader == 1 ? 2 : 1;
    storage::Engine& f = *_members[follower].engine;
    auto w = f.writer(f.getCollection("db.c"), nullptr);
    ASSERT_TRUE(w.isOK());
    auto r = w.getValue()->insert(J(R"({"_id": "nope"})"), {});
    ASSERT_FALSE(r.isOK());
    EXPECT_EQ(r.getStatus().code(), static_cast<int>(ErrorCodes::NotWritablePrimary))
        << r.getStatus().toString();
    // DDL too, with the same code.
    EXPECT_EQ(f.createCollection("db.other", bson::BsonObj()).getStatus().code(),
              static_cast<int>(ErrorCodes::NotWritablePrimary));
    EXPECT_EQ(f.getCollection("db.other"), nullptr);
    // And a transaction's commit.
    auto txn = f.beginTransaction(std::nullopt, nullptr);
    ASSERT_TRUE(txn.isOK()) << txn.getStatus().toString();
    auto tw = txn.getValue()->writer(f.getCollection("db.c"));
    ASSERT_TRUE(tw.isOK());
    ASSERT_TRUE(tw.getValue()->insert(J(R"({"_id": "in a transaction"})"), {}).isOK());
    EXPECT_EQ(txn.getValue()->commit({}, storage::WriteOptions{}).getStatus().code(),
              static_cast<int>(ErrorCodes::NotWritablePrimary));
    EXPECT_EQ(f.stats(*f.getCollection("db.c")).count, 0);
    expectConverged(leader);
}

TEST_F(StorageReplicaTest,
       AfterTheLeaderStopsAnotherLeadsAndTheStoppedMemberCatchesUpFromItsFiles) {
    auto all = addresses({1, 2, 3});
    for (MemberId id : {1, 2, 3}) startMember(id, all);
    MemberId first = waitForLeader();
    ASSERT_TRUE(_members[first].engine->createCollection("db.c", bson::BsonObj()).isOK());
    insertMany(*_members[first].engine, "db.c", 0, 30);
    expectConverged(first);

    stopMember(first);
    MemberId second = waitForLeader();
    ASSERT_NE(second, 0u);
    ASSERT_NE(second, first);
    insertMany(*_members[second].engine, "db.c", 30, 60);
    ASSERT_TRUE(_members[second].engine->dropCollection("db.c").isOK());
    ASSERT_TRUE(_members[second].engine->createCollection("db.d", bson::BsonObj()).isOK());
    insertMany(*_members[second].engine, "db.d", 0, 10);

    startMember(first, {});
    expectConverged(second);
    EXPECT_EQ(_members[first].engine->getCollection("db.c"), nullptr);
    EXPECT_EQ(_members[first].engine->stats(*_members[first].engine->getCollection("db.d")).count,
              10);
}

// A member restarts from its own snapshot: libraft loads the newest one at start and hands it to
// restore(), whose data this member's engine already holds (snapshot() made it durable). The
// fault suite found every member failing to start once it had taken a snapshot (8192 entries).
TEST_F(StorageReplicaTest, AMemberRestartsFromItsOwnSnapshots) {
    auto one = addresses({1});
    startMember(1, one, /*snapshotEvery=*/16);
    ASSERT_EQ(waitForLeader(), 1u);
    ASSERT_TRUE(_members[1].engine->createCollection("db.c", bson::BsonObj()).isOK());
    insertMany(*_members[1].engine, "db.c", 0, 100);  // several snapshots, the log truncated
    stopMember(1);
    startMember(1, {}, 16);
    ASSERT_TRUE(_members[1].group) << "the member did not start again";
    ASSERT_EQ(waitForLeader(), 1u);
    EXPECT_EQ(_members[1].engine->stats(*_members[1].engine->getCollection("db.c")).count, 100);
    insertMany(*_members[1].engine, "db.c", 100, 110);
    EXPECT_EQ(_members[1].engine->stats(*_members[1].engine->getCollection("db.c")).count, 110);
}

// A member away while the others compacted their logs past what it has is sent a snapshot: it
// catches up from a copy of the data of the member that took it (in a server, repl::InitialSync
// copies it over the network and the process starts again; here the test does both), installed
// before its engine opens again; from the copy's log index on it follows the log.
TEST_F(StorageReplicaTest, AMemberTooFarBehindTheLogCatchesUpFromACopyOfAnotherMembersData) {
    auto all = addresses({1, 2, 3});
    for (MemberId id : {1, 2, 3}) startMember(id, all, /*snapshotEvery=*/16);
    const MemberId leader = waitForLeader();
    ASSERT_NE(leader, 0u);
    storage::Engine& data = *_members.at(leader).engine;
    ASSERT_TRUE(data.createCollection("db.c", bson::BsonObj()).isOK());
    insertMany(data, "db.c", 0, 20);
    expectConverged(leader);
    const MemberId lagging = leader == 1 ? 2 : 1;
    stopMember(lagging);
    insertMany(data, "db.c", 20, 200);  // several snapshots: the logs no longer reach back

    std::atomic<int> calls{0};
    std::atomic<bool> copied{false};
    const std::string leaderAddress = addresses({leader})[0].address;
    const std::filesystem::path laggingDb = dbpathOf(lagging);
    const std::filesystem::path checkpointDir = rootOf(lagging) + "-checkpoint";
    auto catchUp = [&](LogIndex index, std::string_view source) -> Status {
        if (calls.fetch_add(1) > 0) return Status(ErrorCodes::InternalError, "copied already");
        EXPECT_EQ(source, leaderAddress) << "the snapshot names the member that took it";
        auto made = storage::createCheckpoint(data, checkpointDir);
        EXPECT_TRUE(made.isOK()) << made.getStatus().toString();
        if (!made.isOK()) return made.getStatus();
        EXPECT_GE(made.getValue().logIndex, index);
        std::filesystem::create_directories(laggingDb / storage::kSyncedCopyDir);
        for (const storage::CheckpointFile& f : made.getValue().files) {
            std::filesystem::copy_file(checkpointDir / f.name,
                                       laggingDb / storage::kSyncedCopyDir / f.name);
        }
        EXPECT_TRUE(storage::markSyncedCopyComplete(laggingDb).isOK());
        copied.store(true);
        return Status(ErrorCodes::InterruptedAtShutdown, "the test starts the member again");
    };
    startMember(lagging, {}, 16, catchUp);
    ASSERT_TRUE(waitFor([&] { return copied.load(); })) << "no snapshot reached the member";
    stopMember(lagging);

    auto installed = storage::installSyncedCopy(laggingDb, {});
    ASSERT_TRUE(installed.isOK()) << installed.getStatus().toString();
    EXPECT_TRUE(installed.getValue());
    startMember(lagging, {}, 16);
    ASSERT_TRUE(_members[lagging].group) << "the member did not start from its copy";
    insertMany(data, "db.c", 200, 210);
    expectConverged(leader);
    EXPECT_EQ(
        _members[lagging].engine->stats(*_members[lagging].engine->getCollection("db.c")).count,
        210);
}

// A group that only records what is proposed: the test applies entries itself, in the order it
// chooses.
class CapturingGroup final : public Group {
  public:
    void propose(std::string entry, Applied applied) override {
        std::lock_guard lk(_m);
        _entries.push_back(std::move(entry));
        _cv.notify_all();
    }
    void addMember(Member, Done done) override { done(Status::OK()); }
    void removeMember(MemberId, Done done) override { done(Status::OK()); }
    void transferLeadership(MemberId, Done done) override { done(Status::OK()); }
    void barrier(Done done) override { done(Status::OK()); }
    GroupStatus status() const override { return {}; }
    void acceptStream(int fd, std::string) override { ::close(fd); }
    void stop() override {}

    std::string waitForEntry(size_t i) {
        std::unique_lock lk(_m);
        EXPECT_TRUE(_cv.wait_for(lk, 20s, [&] { return _entries.size() > i; }));
        return _entries.size() > i ? _entries[i] : std::string();
    }

  private:
    std::mutex _m;
    std::condition_variable _cv;
    std::vector<std::string> _entries;
};

TEST(StorageReplicaIncarnation, AnEntryOfThisMembersEarlierRunIsNeverTakenForAWriterOfThisRun) {
    auto openEngine = [](const TempDir& dir, HybridLogicalClock& clock) {
        storage::EngineOptions options;
        options.dbpath = dir.path();
        options.clock = &clock;
        options.blockCacheBytes = 16 << 20;
        auto opened = storage::Engine::open(options);
        EXPECT_TRUE(opened.isOK()) << opened.getStatus().toString();
        std::unique_ptr<storage::Engine> engine = std::move(opened.getValue());
        EXPECT_TRUE(engine->createCollection("db.c", bson::BsonObj()).isOK());
        return engine;
    };
    // The earlier run of member 1, as another process: its first write (sequence 1) proposed,
    // not yet applied.
    TempDir earlierDir;
    HybridLogicalClock earlierClock;
    auto earlierEngine = openEngine(earlierDir, earlierClock);
    CapturingGroup earlierGroup;
    StorageReplica earlier(*earlierEngine, 1);
    earlier.attach(&earlierGroup);
    storage::setCommitLog(*earlierEngine, &earlier);
    std::thread earlierWriter([&] {
        auto w = earlierEngine->writer(earlierEngine->getCollection("db.c"), nullptr);
        ASSERT_TRUE(w.isOK());
        EXPECT_TRUE(w.getValue()->insert(J(R"({"_id": "from the earlier run"})"), {}).isOK());
    });
    std::string earlierEntry = earlierGroup.waitForEntry(0);

    // This run of member 1: its first write is sequence 1 too, and waits.
    TempDir dir;
    HybridLogicalClock clock;
    auto engine = openEngine(dir, clock);
    auto coll = engine->getCollection("db.c");
    CapturingGroup group;
    StorageReplica replica(*engine, 1);
    replica.attach(&group);
    storage::setCommitLog(*engine, &replica);
    std::atomic<bool> written{false};
    std::thread writer([&] {
        auto w = engine->writer(coll, nullptr);
        ASSERT_TRUE(w.isOK());
        auto r = w.getValue()->insert(J(R"({"_id": "from this run"})"), {});
        EXPECT_TRUE(r.isOK()) << r.getStatus().toString();
        written.store(true);
    });
    std::string entry = group.waitForEntry(0);

    // The earlier run's entry commits first: applied from elsewhere (followed in memory); this
    // run's writer is not answered by it.
    replica.apply(1, earlierEntry);
    EXPECT_FALSE(written.load());
    EXPECT_EQ(engine->stats(*coll).count, 1);
    replica.apply(2, entry);
    writer.join();
    EXPECT_TRUE(written.load());
    EXPECT_EQ(engine->stats(*coll).count, 2);
    auto snap = engine->snapshot();
    int seen = 0;
    auto cursor = snap->scan(*coll, true);
    while (cursor->next()) ++seen;
    EXPECT_EQ(seen, 2);
    storage::setCommitLog(*engine, nullptr);

    earlier.apply(1, earlierEntry);  // the earlier run answers its own writer
    earlierWriter.join();
    storage::setCommitLog(*earlierEngine, nullptr);
}

// A group whose proposals all fail with `error`, as libraft fails the writers of a leader that
// lost its leadership.
class RefusingGroup final : public Group {
  public:
    explicit RefusingGroup(Status error) : _error(std::move(error)) {}
    void propose(std::string, Applied applied) override { applied(_error); }
    void addMember(Member, Done done) override { done(Status::OK()); }
    void removeMember(MemberId, Done done) override { done(Status::OK()); }
    void transferLeadership(MemberId, Done done) override { done(Status::OK()); }
    void barrier(Done done) override { done(Status::OK()); }
    GroupStatus status() const override { return {}; }
    void acceptStream(int fd, std::string) override { ::close(fd); }
    void stop() override {}

  private:
    Status _error;
};

// A writer told its entry was interrupted by a leadership change reports it (the replica set
// then refuses writes at once) before it returns its error; a write refused outright (never in
// the log) does not.
TEST(StorageReplicaLeadership, AWriterWhoseLeadershipEndedSaysSoBeforeItReturns) {
    for (ErrorCodes code :
         {ErrorCodes::InterruptedDueToReplStateChange, ErrorCodes::NotWritablePrimary}) {
        TempDir dir;
        storage::EngineOptions options;
        options.dbpath = dir.path();
        options.blockCacheBytes = 16 << 20;
        auto opened = storage::Engine::open(options);
        ASSERT_TRUE(opened.isOK());
        storage::Engine& engine = *opened.getValue();
        ASSERT_TRUE(engine.createCollection("db.c", bson::BsonObj()).isOK());
        RefusingGroup group(Status(code, "refused"));
        StorageReplica replica(engine, 1);
        std::atomic<int> reported{0};
        replica.setOnLeadershipLost([&] { reported.fetch_add(1); });
        replica.attach(&group);
        storage::setCommitLog(engine, &replica);
        auto w = engine.writer(engine.getCollection("db.c"), nullptr);
        ASSERT_TRUE(w.isOK());
        auto r = w.getValue()->insert(J(R"({"_id": 1})"), {});
        EXPECT_EQ(r.getStatus().code(), static_cast<int>(code));
        EXPECT_EQ(reported.load(), code == ErrorCodes::InterruptedDueToReplStateChange ? 1 : 0);
        storage::setCommitLog(engine, nullptr);
    }
}

}  // namespace
}  // namespace tessera::repl
