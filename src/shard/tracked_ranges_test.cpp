// TrackedRanges: persisted, non-overlapping, counted by the internal writes' own batches, and the
// owned totals (stored less the unowned tracked ranges) without a scan.

#include "shard/tracked_ranges.h"

#include <gtest/gtest.h>

#include "shard/ownership_filter.h"
#include "shard/shard_test_util.h"
#include "storage/storage_test_util.h"

namespace tessera::shard {
namespace {

using test::J;

class TrackedRangesTest : public storage::test::EngineTest {
  protected:
    void SetUp() override {
        storage::test::EngineTest::SetUp();
        coll = create("db.c");
        pattern = std::make_shared<const placement::ShardKeyPattern>(
            placement::ShardKeyPattern::parse(J(R"({"a": 1})")).getValue());
        // s0 owns [MinKey, 10); s1 owns [10, MaxKey).
        table = test::makeTable("db.c", R"({"a": 1})", {R"({"a": 10})"}, {"s0", "s1"});
    }
    TrackedRange range(int min, int max, TrackedRange::Kind kind) {
        TrackedRange r;
        r.ns = "db.c";
        r.uuid = coll->uuid;
        r.kind = kind;
        r.migrationId = "m1";
        r.pattern = pattern;
        r.range = ShardKeyRange::make(*pattern, J("{\"a\": " + std::to_string(min) + "}"),
                                      J("{\"a\": " + std::to_string(max) + "}"))
                      .getValue();
        return r;
    }
    Status insertVia(TrackedRanges& tracked, const std::vector<int>& as) {
        return tracked.write([&](const storage::WriteUnit& unit) -> Status {
            auto w = engine->writer(engine->getCollection("db.c"), &unit);
            TRY_STATUS(w.getStatus());
            for (int a : as) {
                TRY_STATUS(w.getValue()
                               ->insert(J("{\"_id\": " + std::to_string(a) +
                                          ", \"a\": " + std::to_string(a) + "}"),
                                        {})
                               .getStatus());
            }
            return Status::OK();
        });
    }

    storage::CollectionPtr coll;
    std::shared_ptr<const placement::ShardKeyPattern> pattern;
    std::shared_ptr<const placement::RoutingTable> table;
};

TEST_F(TrackedRangesTest, OwnedTotalsExcludeAnUnownedRangeAndSurviveAReopen) {
    {
        TrackedRanges tracked(*engine);
        ASSERT_TRUE(insertVia(tracked, {1, 2, 3}).isOK());  // owned, untracked
        ASSERT_TRUE(tracked.add(range(20, 30, TrackedRange::Kind::kIncoming)).isOK());
        ASSERT_TRUE(insertVia(tracked, {21, 22}).isOK());  // the clone
        auto list = tracked.list("db.c");
        ASSERT_EQ(list.size(), 1u);
        EXPECT_EQ(list[0].docs, 2);
        ChunkOwnershipFilter s0(table, "s0");
        auto owned = tracked.ownedTotals(*engine->getCollection("db.c"), s0);
        ASSERT_TRUE(owned);
        EXPECT_EQ(owned->count, 3);
        // Once s0 owns [20, 30) (the commit), they count.
        auto after =
            test::makeTable("db.c", R"({"a": 1})", {R"({"a": 10})", R"({"a": 20})", R"({"a": 30})"},
                            {"s0", "s1", "s0", "s1"}, 2);
        ChunkOwnershipFilter committed(after, "s0");
        EXPECT_EQ(tracked.ownedTotals(*engine->getCollection("db.c"), committed)->count, 5);
    }
    reopen();
    TrackedRanges reloaded(*engine);
    ASSERT_TRUE(reloaded.load().isOK());
    auto list = reloaded.list();
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0].docs, 2);
    EXPECT_GT(list[0].bytes, 0);
    ChunkOwnershipFilter s0(table, "s0");
    EXPECT_EQ(reloaded.ownedTotals(*engine->getCollection("db.c"), s0)->count, 3);
    ASSERT_TRUE(reloaded.remove("db.c", list[0].range.encodedMin()).isOK());
    reopen();
    TrackedRanges empty(*engine);
    ASSERT_TRUE(empty.load().isOK());
    EXPECT_TRUE(empty.list().empty());
}

TEST_F(TrackedRangesTest, RangesNeverOverlapAndAPartlyOwnedOneAsksForAScan) {
    TrackedRanges tracked(*engine);
    ASSERT_TRUE(tracked.add(range(10, 30, TrackedRange::Kind::kOutgoing)).isOK());
    EXPECT_EQ(tracked.add(range(20, 40, TrackedRange::Kind::kIncoming)).code(),
              static_cast<int>(ErrorCodes::ConflictingOperationInProgress));
    EXPECT_TRUE(tracked.add(range(30, 40, TrackedRange::Kind::kIncoming)).isOK());
    // [MinKey, 20) owned by s0: [10, 30) is partly owned.
    auto partly = test::makeTable("db.c", R"({"a": 1})", {R"({"a": 20})"}, {"s0", "s1"});
    ChunkOwnershipFilter s0(partly, "s0");
    EXPECT_FALSE(tracked.ownedTotals(*engine->getCollection("db.c"), s0));
}

}  // namespace
}  // namespace tessera::shard
