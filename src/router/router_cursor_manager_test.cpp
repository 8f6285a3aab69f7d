#include "router/router_cursor_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

#include "base/mutex.h"
#include "command/command.h"
#include "command/exec/plan_executor.h"

namespace tessera::router {
namespace {

using bson::BsonObj;
using bson::fromJson;

// Shell-style JSON ({a: 'x'}) → strict JSON for bson::fromJson.
BsonObj j(std::string_view relaxed) {
    std::string s(relaxed);
    std::replace(s.begin(), s.end(), '\'', '"');
    static const std::regex key(R"(([{,]\s*)([$A-Za-z_][\w$.]*)\s*:)");
    return bson::fromJson(std::regex_replace(s, key, "$1\"$2\":"));
}

// A fake set of shards: per (host, cursor id) the batches still to return; records commands.
struct FakeShards {
    std::map<std::pair<std::string, int64_t>, std::vector<std::vector<BsonObj>>> pending;
    std::vector<std::string> log;
    Mutex mutex;  // the reaper thread calls fn() too

    size_t logSize() {
        MutexLock lk(mutex);
        return log.size();
    }

    RunCommandsFn fn() {
        return
            [this](const command::OperationContext*, const std::vector<net::RemoteCommand>& cmds) {
                MutexLock lk(mutex);
                std::vector<StatusWith<BsonObj>> out;
                for (const auto& c : cmds) {
                    std::string name(c.cmd.firstElement().fieldName());
                    log.push_back(c.host + " " + name);
                    bson::BsonBuilder r;
                    if (name == "getMore") {
                        int64_t id = c.cmd.firstElement().numberLong();
                        auto& batches = pending[{c.host, id}];
                        bson::BsonArrayBuilder batch;
                        if (!batches.empty()) {
                            for (auto& d : batches.front()) batch.append(d.view());
                            batches.erase(batches.begin());
                        }
                        r.startObject("cursor")
                            .appendArray("nextBatch", batch.arr())
                            .appendInt64("id", batches.empty() ? 0 : id)
                            .append("ns", "db.c")
                            .end();
                    }
                    r.appendDouble("ok", 1);
                    out.push_back(r.obj());
                }
                return out;
            };
    }
};

RemoteCursor cursor(std::string host, int64_t id, std::vector<std::string_view> first) {
    RemoteCursor c;
    c.shard = host;
    c.host = host;
    c.ns = "db.c";
    c.id = id;
    for (auto s : first) c.buffer.push_back(j(s));
    return c;
}

std::vector<std::string> drain(command::exec::PlanExecutor& exec) {
    command::OperationContext opCtx;
    std::vector<std::string> out;
    while (true) {
        auto d = exec.nextDoc(opCtx);
        EXPECT_TRUE(d.isOK());
        if (!d.isOK() || !d.getValue()) break;
        out.push_back(std::to_string((*d.getValue())["a"].numberLong()));
    }
    return out;
}

TEST(RemoteMergeStageTest, MergeSortsAcrossShardsAndFetchesMore) {
    FakeShards shards;
    shards.pending[{"h1", 11}] = {{j("{a: 4}"), j("{a: 7}")}};
    shards.pending[{"h2", 22}] = {{j("{a: 5}")}, {j("{a: 9}")}};
    std::vector<RemoteCursor> cs;
    cs.push_back(cursor("h1", 11, {"{a: 1}", "{a: 3}"}));
    cs.push_back(cursor("h2", 22, {"{a: 2}"}));
    auto stage =
        std::make_unique<RemoteMergeStage>(std::move(cs), j("{a: 1}"), nullptr, shards.fn());
    command::exec::PlanExecutor exec(nullptr, nullptr, std::move(stage), "db.c");
    EXPECT_EQ(drain(exec), (std::vector<std::string>{"1", "2", "3", "4", "5", "7", "9"}));
    // Every cursor was read to its end: nothing left to kill.
    for (const auto& l : shards.log) EXPECT_EQ(l.find("killCursors"), std::string::npos);
}

TEST(RemoteMergeStageTest, UnsortedMergeReturnsEverything) {
    FakeShards shards;
    shards.pending[{"h2", 22}] = {{j("{a: 5}")}};
    std::vector<RemoteCursor> cs;
    cs.push_back(cursor("h1", 0, {"{a: 1}"}));
    cs.push_back(cursor("h2", 22, {}));
    command::exec::PlanExecutor exec(
        nullptr, nullptr,
        std::make_unique<RemoteMergeStage>(std::move(cs), BsonObj(), nullptr, shards.fn()), "db.c");
    EXPECT_EQ(drain(exec), (std::vector<std::string>{"1", "5"}));
}

TEST(RemoteMergeStageTest, DestroyingKillsOpenRemoteCursors) {
    FakeShards shards;
    {
        std::vector<RemoteCursor> cs;
        cs.push_back(cursor("h1", 11, {"{a: 1}"}));
        cs.push_back(cursor("h2", 0, {}));
        RemoteMergeStage stage(std::move(cs), BsonObj(), nullptr, shards.fn());
    }
    EXPECT_EQ(shards.log, (std::vector<std::string>{"h1 killCursors"}));
}

TEST(SkipLimitStageTest, SkipsThenLimits) {
    std::vector<RemoteCursor> cs;
    cs.push_back(cursor("h1", 0, {"{a: 1}", "{a: 2}", "{a: 3}", "{a: 4}", "{a: 5}"}));
    auto sl = std::make_unique<SkipLimitStage>(1, 3);
    sl->setChild(std::make_unique<RemoteMergeStage>(std::move(cs), BsonObj(), nullptr, nullptr));
    command::exec::PlanExecutor exec(nullptr, nullptr, std::move(sl), "db.c");
    EXPECT_EQ(drain(exec), (std::vector<std::string>{"2", "3", "4"}));
}

TEST(RouterCursorManagerTest, RegisterPinKillAndReap) {
    FakeShards shards;
    RouterCursorManager mgr(std::chrono::milliseconds(200));
    auto makeExec = [&](int64_t remoteId) {
        std::vector<RemoteCursor> cs;
        cs.push_back(cursor("h1", remoteId, {"{a: 1}"}));
        return std::make_unique<command::exec::PlanExecutor>(
            nullptr, nullptr,
            std::make_unique<RemoteMergeStage>(std::move(cs), BsonObj(), nullptr, shards.fn()),
            "db.c");
    };
    int64_t id1 = mgr.registerCursor("db.c", makeExec(11), false, std::nullopt);
    int64_t id2 = mgr.registerCursor("db.c", makeExec(12), false, std::nullopt);
    EXPECT_NE(id1, 0);
    EXPECT_NE(id1, id2);
    EXPECT_EQ(mgr.numOpenCursors(), 2u);
    EXPECT_FALSE(mgr.cursors().pin(id1, "db.other").isOK());
    {
        auto pinned = mgr.cursors().pin(id1, "db.c");
        ASSERT_TRUE(pinned.isOK());
        EXPECT_TRUE(mgr.cursors().pin(id1, "db.c").getStatus().is(ErrorCodes::CursorInUse));
    }
    EXPECT_EQ(mgr.kill(id1, "db.c"), command::CursorManager::KillResult::kKilled);
    EXPECT_EQ(mgr.kill(id1, "db.c"), command::CursorManager::KillResult::kNotFound);
    EXPECT_EQ(shards.log, (std::vector<std::string>{"h1 killCursors"}));
    // The reaper thread removes the idle cursor and kills its remote cursor.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (shards.logSize() < 2 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(mgr.numOpenCursors(), 0u);
    EXPECT_EQ(shards.logSize(), 2u);
}

TEST(ParseRemoteCursorTest, ReadsIdNsAndBatch) {
    auto c = parseRemoteCursor(
        "s0", "h:1", j("{cursor: {firstBatch: [{a: 1}, {a: 2}], id: 5, ns: 'db.c'}, ok: 1}"));
    ASSERT_TRUE(c.isOK());
    EXPECT_EQ(c.getValue().id, 5);
    EXPECT_EQ(c.getValue().ns, "db.c");
    EXPECT_EQ(c.getValue().buffer.size(), 2u);
    EXPECT_FALSE(parseRemoteCursor("s0", "h:1", j("{ok: 1}")).isOK());
}

}  // namespace
}  // namespace tessera::router
