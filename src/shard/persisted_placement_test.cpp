// The shard's own copy of its placement: what was loaded from the config server is what the shard
// falls back to when the config server cannot be reached (invariant 4), through the real command
// layer and storage; nothing is invented when there is no copy.

#include "shard/persisted_placement.h"

#include <gtest/gtest.h>

#include "command/crud_test_util.h"
#include "shard/shard_test_util.h"

namespace tessera::shard {
namespace {

using command::test::CrudFixture;

class PersistedPlacementTest : public CrudFixture {
  protected:
    void SetUp() override {
        CrudFixture::SetUp();
        auto inner = std::make_unique<test::FakePlacementSource>();
        fake = inner.get();
        source = std::make_unique<PersistedPlacementSource>(std::move(inner), service);
    }
    test::FakePlacementSource* fake = nullptr;
    std::unique_ptr<PersistedPlacementSource> source;
};

TEST_F(PersistedPlacementTest, DocumentsRoundTrip) {
    auto table = test::makeTable("db.c", R"({"a": 1, "b": "hashed"})",
                                 {R"({"a": 0, "b": {"$minKey": 1}})"}, {"s0", "s1"});
    auto parsed = parsePlacementDoc(placementDoc("db.c", table));
    ASSERT_TRUE(parsed.isOK()) << parsed.getStatus().toString();
    const auto& t = *parsed.getValue();
    EXPECT_EQ(t.ns(), "db.c");
    EXPECT_EQ(t.shardKeyPattern().toBson().toJson(), table->shardKeyPattern().toBson().toJson());
    EXPECT_EQ(t.collectionVersion(), table->collectionVersion());
    ASSERT_EQ(t.numChunks(), 2u);
    EXPECT_EQ(t.chunkMap().chunk(1).shard, "s1");
    EXPECT_EQ(t.shardVersion("s0"), table->shardVersion("s0"));
    EXPECT_EQ(parsePlacementDoc(placementDoc("db.u", nullptr)).getValue(), nullptr);

    cluster::DatabaseInfo db{"db", "s1",
                             placement::DatabaseVersion({}, Timestamp::fromParts(3, 1), 2)};
    auto dbParsed = parseDatabaseDoc(databaseDoc("db", db));
    ASSERT_TRUE(dbParsed.isOK());
    ASSERT_TRUE(dbParsed.getValue().has_value());
    EXPECT_EQ(dbParsed.getValue()->primary, "s1");
    EXPECT_EQ(dbParsed.getValue()->version, db.version);
    EXPECT_FALSE(parseDatabaseDoc(databaseDoc("x", std::nullopt)).getValue().has_value());
}

TEST_F(PersistedPlacementTest, FallsBackToTheCopyWhenTheConfigServerIsUnreachable) {
    auto table = test::makeTable("db.c", R"({"a": 1})", {R"({"a": 10})"}, {"s0", "s1"});
    fake->setTable("db.c", table);
    fake->setDb({"db", "s0", placement::DatabaseVersion({}, Timestamp::fromParts(4, 1), 1)});
    ASSERT_TRUE(source->loadCollection("db.c", true).isOK());
    ASSERT_TRUE(source->loadCollection("db.unsharded", true).isOK());
    ASSERT_TRUE(source->loadDatabase("db", true).isOK());

    fake->error = Status(ErrorCodes::HostUnreachable, "config server down");
    auto copy = source->loadCollection("db.c", true);
    ASSERT_TRUE(copy.isOK()) << copy.getStatus().toString();
    ASSERT_NE(copy.getValue(), nullptr);
    EXPECT_EQ(copy.getValue()->collectionVersion(), table->collectionVersion());
    EXPECT_EQ(copy.getValue()->shardVersion("s1"), table->shardVersion("s1"));
    auto unsharded = source->loadCollection("db.unsharded", true);
    ASSERT_TRUE(unsharded.isOK());
    EXPECT_EQ(unsharded.getValue(), nullptr);
    auto db = source->loadDatabase("db", true);
    ASSERT_TRUE(db.isOK());
    EXPECT_EQ(db.getValue()->primary, "s0");
    // Never loaded: no copy, the error stands (the shard then refuses to read unfiltered).
    EXPECT_EQ(source->loadCollection("db.never", true).getStatus().code(),
              static_cast<int>(ErrorCodes::HostUnreachable));

    // Back: the fresh placement wins and replaces the copy.
    fake->error = Status::OK();
    auto moved = test::makeTable("db.c", R"({"a": 1})", {R"({"a": 10})"}, {"s1", "s1"});
    fake->setTable("db.c", moved);
    ASSERT_TRUE(source->loadCollection("db.c", true).isOK());
    fake->error = Status(ErrorCodes::NetworkTimeout, "down again");
    EXPECT_EQ(source->loadCollection("db.c", true).getValue()->shardVersion("s0"),
              moved->shardVersion("s0"));
}

// The copy answers only for an unreachable config server, and only when the caller allows it:
// a reload that must learn a placement change (ShardMetadata holds the table in memory) gets the
// error, and so does any other failure (say a placement read while a split was half-written).
TEST_F(PersistedPlacementTest, TheCopyAnswersOnlyUnreachabilityAndOnlyWhenAllowed) {
    auto table = test::makeTable("db.c", R"({"a": 1})", {R"({"a": 10})"}, {"s0", "s1"});
    fake->setTable("db.c", table);
    fake->setDb({"db", "s0", placement::DatabaseVersion({}, Timestamp::fromParts(4, 1), 1)});
    ASSERT_TRUE(source->loadCollection("db.c", true).isOK());
    ASSERT_TRUE(source->loadDatabase("db", true).isOK());

    fake->error = Status(ErrorCodes::HostUnreachable, "config server down");
    EXPECT_EQ(source->loadCollection("db.c", false).getStatus().code(),
              static_cast<int>(ErrorCodes::HostUnreachable));
    EXPECT_EQ(source->loadDatabase("db", false).getStatus().code(),
              static_cast<int>(ErrorCodes::HostUnreachable));

    fake->error = Status(ErrorCodes::ConflictingOperationInProgress, "chunks overlap");
    EXPECT_EQ(source->loadCollection("db.c", true).getStatus().code(),
              static_cast<int>(ErrorCodes::ConflictingOperationInProgress));
}

}  // namespace
}  // namespace tessera::shard
