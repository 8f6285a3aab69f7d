// An engine writing through a commit log, and a second engine applying the same committed
// batches from elsewhere: the follower ends byte-for-byte equal, with the same catalog, counts
// and documents in memory, and keeps them across a restart.
#include "storage/replication.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <mutex>

#include "storage/rocks_engine.h"
#include "storage/storage_test_util.h"
#include "storage/transaction.h"

namespace tessera::storage {
namespace {

using test::EngineTest;
using test::idKey;
using test::J;
using test::removeCurrent;
using test::TempDir;
using test::updateCurrent;

// The group reduced to its contract: a log index per batch, applied by the leader (whose writer
// waits) and then by the follower (from elsewhere), in log order.
class TwoMemberLog final : public CommitLog {
  public:
    TwoMemberLog(Engine& leader, Engine& follower) : _leader(leader), _follower(follower) {}

    Status commit(std::string_view batch) override {
        std::lock_guard lk(_m);
        ++_index;
        Status here = applyCommitted(_leader, batch, _index, /*fromElsewhere=*/false);
        if (!here.isOK()) return here;
        return applyCommitted(_follower, batch, _index, /*fromElsewhere=*/true);
    }
    uint64_t index() {
        std::lock_guard lk(_m);
        return _index;
    }

  private:
    std::mutex _m;
    Engine& _leader;
    Engine& _follower;
    uint64_t _index = 0;
};

IndexSpec spec(std::string name, std::string_view keyPattern, bool unique = false) {
    IndexSpec s;
    s.name = std::move(name);
    s.keyPattern = J(keyPattern);
    s.unique = unique;
    return s;
}

class ReplicationTest : public EngineTest {
  protected:
    void SetUp() override {
        EngineTest::SetUp();
        openFollower();
        _log = std::make_unique<TwoMemberLog>(*engine, *follower);
        setCommitLog(*engine, _log.get());
    }
    void TearDown() override {
        setCommitLog(*engine, nullptr);
        follower.reset();
        EngineTest::TearDown();
    }
    void openFollower() {
        _followerClock.setWallClockForTest(&test::fakeWallClock);
        EngineOptions options;
        options.dbpath = _followerDir.path();
        options.clock = &_followerClock;
        options.blockCacheBytes = 16 << 20;
        auto sw = Engine::open(options);
        ASSERT_TRUE(sw.isOK()) << sw.getStatus().toString();
        follower = std::move(sw.getValue());
    }

    // Every key and value of every column family, except where the two may differ: nothing.
    static std::vector<std::pair<std::string, std::string>> contents(Engine& e) {
        auto& r = static_cast<RocksEngine&>(e);
        std::vector<std::pair<std::string, std::string>> out;
        for (auto* cf : {r.catalogCf(), r.recordsCf(), r.indexesCf()}) {
            rocksdb::ReadOptions ro;
            ro.total_order_seek = true;
            std::unique_ptr<rocksdb::Iterator> it(r.db()->NewIterator(ro, cf));
            for (it->SeekToFirst(); it->Valid(); it->Next()) {
                out.emplace_back(std::to_string(cf->GetID()) + "|" + it->key().ToString(),
                                 it->value().ToString());
            }
            EXPECT_TRUE(it->status().ok());
        }
        return out;
    }

    void expectFollowerEqual() {
        EXPECT_EQ(contents(*follower), contents(*engine));
        EXPECT_EQ(test::engineView(*follower), test::engineView(*engine));
        auto leaderIndex = committedLogIndex(*engine);
        auto followerIndex = committedLogIndex(*follower);
        ASSERT_TRUE(leaderIndex.isOK() && followerIndex.isOK());
        EXPECT_EQ(leaderIndex.getValue(), _log->index());
        EXPECT_EQ(followerIndex.getValue(), _log->index());
    }

    TempDir _followerDir;
    HybridLogicalClock _followerClock;
    std::unique_ptr<Engine> follower;
    std::unique_ptr<TwoMemberLog> _log;
};

TEST_F(ReplicationTest, AFollowerApplyingTheCommittedBatchesIsEqualInBytesCatalogAndCounts) {
    create("db.c");
    for (int i = 0; i < 50; ++i) {
        insert("db.c", R"({"_id": )" + std::to_string(i) + R"(, "x": )" + std::to_string(i % 7) +
                           R"(, "pad": "some bytes"})");
    }
    ASSERT_TRUE(engine->createIndexes("db.c", {spec("x_1", R"({"x": 1})")}).isOK());
    {
        auto w = writerFor("db.c");
        for (int i = 0; i < 10; ++i) {
            ASSERT_TRUE(updateCurrent(*w, idKey(std::to_string(i)),
                                      J(R"({"_id": )" + std::to_string(i) + R"(, "x": [1, 2]})"))
                            .isOK());
        }
        for (int i = 40; i < 50; ++i)
            ASSERT_TRUE(removeCurrent(*w, idKey(std::to_string(i))).isOK());
    }
    create("db.gone");
    insert("db.gone", R"({"_id": 1})");
    ASSERT_TRUE(engine->dropCollection("db.gone").isOK());
    create("db.old");
    insert("db.old", R"({"_id": "renamed"})");
    ASSERT_TRUE(engine->renameCollection("db.old", "other.new", false).isOK());

    // A transaction: its commit is one batch as well.
    {
        auto txn = engine->beginTransaction(std::nullopt, nullptr);
        ASSERT_TRUE(txn.isOK()) << txn.getStatus().toString();
        auto w = txn.getValue()->writer(engine->getCollection("db.c"));
        ASSERT_TRUE(w.isOK());
        ASSERT_TRUE(w.getValue()->insert(J(R"({"_id": 100, "x": 3})"), {}).isOK());
        ASSERT_TRUE(w.getValue()->insert(J(R"({"_id": 101, "x": 4})"), {}).isOK());
        ASSERT_TRUE(txn.getValue()->commit({}, WriteOptions{}).isOK());
    }
    ASSERT_GT(_log->index(), 60u);
    expectFollowerEqual();
    EXPECT_EQ(follower->getCollection("db.gone"), nullptr);
    EXPECT_EQ(follower->getCollection("db.old"), nullptr);
    ASSERT_NE(follower->getCollection("other.new"), nullptr);
    EXPECT_EQ(follower->stats(*follower->getCollection("db.c")).count, 42);
    // The follower's clock moved past every applied commit: it could lead next.
    EXPECT_GE(_followerClock.current(), engine->lastCommitTimestamp());

    // Restarted, the follower reads the same state from its own files.
    std::string before = test::engineView(*follower);
    follower.reset();
    _log.reset();
    setCommitLog(*engine, nullptr);
    openFollower();
    EXPECT_EQ(test::engineView(*follower), before);
    auto index = committedLogIndex(*follower);
    ASSERT_TRUE(index.isOK());
    EXPECT_GT(index.getValue(), 60u);
}

TEST_F(ReplicationTest, ConcurrentWritersReachTheFollowerInLogOrder) {
    create("db.c");
    std::vector<std::thread> writers;
    for (int t = 0; t < 4; ++t) {
        writers.emplace_back([&, t] {
            auto w = writerFor("db.c");
            for (int i = 0; i < 50; ++i) {
                int id = t * 1000 + i;
                auto r = w->insert(J(R"({"_id": )" + std::to_string(id) + "}"), {});
                EXPECT_TRUE(r.isOK()) << r.getStatus().toString();
            }
        });
    }
    for (auto& t : writers) t.join();
    expectFollowerEqual();
    EXPECT_EQ(follower->stats(*follower->getCollection("db.c")).count, 200);
}

// A commit log that refuses every batch, as a member that does not lead does.
class RefusingLog final : public CommitLog {
  public:
    Status commit(std::string_view) override {
        return Status(ErrorCodes::NotWritablePrimary, "propose: server is not the leader");
    }
};

// Whatever writes — documents, side records (statement records, prepared transactions'
// records), an index build — a refused batch fails with the log's code, not InternalError:
// a client must see the error drivers retry on (the fault suite found side records reporting
// InternalError after a step-down).
TEST_F(ReplicationTest, EveryWritePathKeepsTheLogsRefusal) {
    create("db.c");
    RefusingLog refusing;
    setCommitLog(*engine, &refusing);
    const int notPrimary = static_cast<int>(ErrorCodes::NotWritablePrimary);
    {
        auto w = writerFor("db.c");
        Status inserted = w->insert(J(R"({"_id": 1})"), WriteOptions()).getStatus();
        EXPECT_EQ(inserted.code(), notPrimary) << inserted.toString();
    }
    Status side = engine->writeSideRecords({{"k", "v"}}, false);
    EXPECT_EQ(side.code(), notPrimary) << side.toString();
    Status index = engine->createIndexes("db.c", {spec("x_1", R"({"x": 1})")}).getStatus();
    EXPECT_EQ(index.code(), notPrimary) << index.toString();
    setCommitLog(*engine, _log.get());
    EXPECT_EQ(engine->stats(*engine->getCollection("db.c")).count, 0);
}

}  // namespace
}  // namespace tessera::storage
