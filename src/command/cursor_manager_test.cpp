#include "command/cursor_manager.h"

#include <gtest/gtest.h>

#include <set>

#include "bson/bson_builder.h"
#include "command/command.h"
#include "command/exec/scan_stages.h"

namespace tessera::command {
namespace {

std::unique_ptr<exec::PlanExecutor> executorOf(int n, size_t padBytes = 0) {
    std::vector<bson::BsonObj> docs;
    std::string pad(padBytes, 'x');
    for (int i = 0; i < n; ++i) {
        bson::BsonBuilder b;
        b.appendInt32("_id", i);
        if (padBytes) b.append("pad", pad);
        docs.push_back(b.obj());
    }
    return std::make_unique<exec::PlanExecutor>(
        nullptr, nullptr, std::make_unique<exec::VectorSourceStage>(std::move(docs)), "db.c");
}

TEST(CursorManagerTest, IdsAreUniqueAndNonZero) {
    CursorManager m;
    std::set<int64_t> ids;
    for (int i = 0; i < 1000; ++i) {
        int64_t id = m.registerCursor("db.c", executorOf(1));
        EXPECT_GT(id, 0);
        EXPECT_TRUE(ids.insert(id).second);
    }
    EXPECT_EQ(m.numOpenCursors(), 1000u);
}

TEST(CursorManagerTest, PinErrors) {
    CursorManager m;
    int64_t id = m.registerCursor("db.c", executorOf(3));
    auto missing = m.pin(id + 1, "db.c");
    EXPECT_EQ(missing.getStatus().code(), 43);
    EXPECT_EQ(missing.getStatus().reason(), "cursor id " + std::to_string(id + 1) + " not found");
    EXPECT_EQ(m.pin(id, "db.other").getStatus().code(), 13);
    {
        auto pinned = m.pin(id, "db.c");
        ASSERT_TRUE(pinned.isOK());
        auto again = m.pin(id, "db.c");
        EXPECT_EQ(again.getStatus().code(), 143);  // CursorInUse
        EXPECT_EQ(again.getStatus().codeName(), "CursorInUse");
    }
    // Released: usable again.
    EXPECT_TRUE(m.pin(id, "db.c").isOK());
}

TEST(CursorManagerTest, ExhaustedCursorIsDeletedOnRelease) {
    CursorManager m;
    int64_t id = m.registerCursor("db.c", executorOf(3));
    {
        auto pinned = m.pin(id, "db.c");
        ASSERT_TRUE(pinned.isOK());
        pinned.getValue().markExhausted();
    }
    EXPECT_EQ(m.numOpenCursors(), 0u);
    EXPECT_EQ(m.pin(id, "db.c").getStatus().code(), 43);
}

TEST(CursorManagerTest, KillIdleAndPinned) {
    CursorManager m;
    int64_t a = m.registerCursor("db.c", executorOf(3));
    int64_t b = m.registerCursor("db.c", executorOf(3));
    EXPECT_EQ(m.kill(a, "db.other"), CursorManager::KillResult::kNotFound);
    EXPECT_EQ(m.kill(a, "db.c"), CursorManager::KillResult::kKilled);
    EXPECT_EQ(m.kill(a, "db.c"), CursorManager::KillResult::kNotFound);
    {
        auto pinned = m.pin(b, "db.c");
        ASSERT_TRUE(pinned.isOK());
        EXPECT_EQ(m.kill(b, "db.c"), CursorManager::KillResult::kKilled);
        EXPECT_EQ(m.numOpenCursors(), 0u);
        // The pinned user still holds a valid cursor until it releases it.
        EXPECT_EQ(pinned.getValue()->ns, "db.c");
    }
    EXPECT_EQ(m.pin(b, "db.c").getStatus().code(), 43);
}

TEST(CursorManagerTest, ReapsIdleCursors) {
    CursorManager m(std::chrono::minutes(10));
    int64_t idle = m.registerCursor("db.c", executorOf(1));
    int64_t keep = m.registerCursor("db.c", executorOf(1), /*noCursorTimeout=*/true);
    int64_t busy = m.registerCursor("db.c", executorOf(1));
    auto now = CursorManager::Clock::now();
    EXPECT_EQ(m.reapIdleCursors(now + std::chrono::minutes(5)), 0u);
    auto pinned = m.pin(busy, "db.c");
    ASSERT_TRUE(pinned.isOK());
    EXPECT_EQ(m.reapIdleCursors(now + std::chrono::minutes(11)), 1u);
    EXPECT_EQ(m.pin(idle, "db.c").getStatus().code(), 43);
    EXPECT_TRUE(m.pin(keep, "db.c").isOK());
    m.setIdleTimeout(std::chrono::milliseconds(1));
    EXPECT_EQ(m.idleTimeout(), std::chrono::milliseconds(1));
}

TEST(FillBatchTest, CountLimitAndLookahead) {
    OperationContext opCtx;
    auto exec = executorOf(5);
    bson::BsonArrayBuilder batch;
    bool exhausted = false;
    ASSERT_TRUE(fillBatch(opCtx, *exec, 5, batch, &exhausted).isOK());
    EXPECT_EQ(batch.count(), 5u);
    EXPECT_TRUE(exhausted);  // looked ahead: nothing left

    auto exec2 = executorOf(6);
    bson::BsonArrayBuilder b2;
    ASSERT_TRUE(fillBatch(opCtx, *exec2, 5, b2, &exhausted).isOK());
    EXPECT_FALSE(exhausted);
    bson::BsonArrayBuilder b3;
    ASSERT_TRUE(fillBatch(opCtx, *exec2, std::nullopt, b3, &exhausted).isOK());
    EXPECT_EQ(b3.count(), 1u);  // the stashed look-ahead document is not lost
    EXPECT_TRUE(exhausted);

    auto exec3 = executorOf(3);
    bson::BsonArrayBuilder b4;
    ASSERT_TRUE(fillBatch(opCtx, *exec3, 0, b4, &exhausted).isOK());
    EXPECT_EQ(b4.count(), 0u);
    EXPECT_FALSE(exhausted);
}

TEST(FillBatchTest, StopsBefore16MiB) {
    OperationContext opCtx;
    auto exec = executorOf(20, 1024 * 1024);  // 20 documents of ~1 MiB
    bson::BsonArrayBuilder batch;
    bool exhausted = false;
    ASSERT_TRUE(fillBatch(opCtx, *exec, std::nullopt, batch, &exhausted).isOK());
    EXPECT_EQ(batch.count(), 15u);
    EXPECT_LE(batch.len(), kMaxBatchBytes + 16 * 1024);
    EXPECT_FALSE(exhausted);
    bson::BsonArrayBuilder rest;
    ASSERT_TRUE(fillBatch(opCtx, *exec, std::nullopt, rest, &exhausted).isOK());
    EXPECT_EQ(rest.count(), 5u);
    EXPECT_TRUE(exhausted);
}

}  // namespace
}  // namespace tessera::command
