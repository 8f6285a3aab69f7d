#include "cluster/catalog_cache.h"

#include <gtest/gtest.h>

#include "bson/bson_builder.h"
#include "cluster/catalog_refresh.h"

namespace tessera::cluster {
namespace {

using bson::BsonBuilder;
using bson::BsonObj;
using placement::ChunkVersion;
using placement::CollectionGeneration;

CollectionGeneration gen(uint8_t epochByte, uint32_t secs) {
    CollectionGeneration g;
    g.epoch.bytes[11] = epochByte;
    g.timestamp = Timestamp::fromParts(secs, 1);
    return g;
}

const placement::Uuid kUuid = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

BsonObj collDoc(const CollectionGeneration& g, const char* ns = "db.c") {
    BsonBuilder b;
    b.append("_id", ns)
        .append("lastmodEpoch", g.epoch)
        .appendDate("lastmod", 1000)
        .appendTimestamp("timestamp", g.timestamp.value)
        .appendBinary("uuid", 4, std::string_view(reinterpret_cast<const char*>(kUuid.data()), 16));
    b.startObject("key").appendInt32("a", 1).end();
    b.appendBool("unique", false).appendBool("noBalance", false);
    return b.obj();
}

// A chunk of {a: 1} over [min, max) (nullopt bound = MinKey/MaxKey).
BsonObj chunkDoc(std::optional<int> min, std::optional<int> max, const char* shard, uint32_t major,
                 uint32_t minor) {
    BsonBuilder b;
    b.append("_id", bson::ObjectId::generate())
        .appendBinary("uuid", 4, std::string_view(reinterpret_cast<const char*>(kUuid.data()), 16));
    b.startObject("min");
    if (min) {
        b.appendInt32("a", *min);
    } else {
        b.appendMinKey("a");
    }
    b.end().startObject("max");
    if (max) {
        b.appendInt32("a", *max);
    } else {
        b.appendMaxKey("a");
    }
    b.end();
    b.append("shard", shard).appendTimestamp("lastmod", Timestamp::fromParts(major, minor).value);
    return b.obj();
}

TEST(CatalogParsers, ShardDoc) {
    auto info = parseShardDoc(bson::fromJson(
        R"({"_id": "shard0", "host": "127.0.0.1:27018", "state": 1, "draining": true})"));
    ASSERT_TRUE(info.isOK()) << info.getStatus().toString();
    EXPECT_EQ(info.getValue().id, "shard0");
    EXPECT_EQ(info.getValue().host, "127.0.0.1:27018");
    EXPECT_TRUE(info.getValue().draining);

    auto rs = parseShardDoc(bson::fromJson(R"({"_id": "s1", "host": "rs1/h1:1,h2:2"})"));
    ASSERT_TRUE(rs.isOK());
    EXPECT_EQ(rs.getValue().host, "rs1/h1:1,h2:2");  // reached at its primary (RemoteClient)
    EXPECT_FALSE(rs.getValue().draining);

    auto bad = parseShardDoc(bson::fromJson(R"({"_id": "s1"})"));
    EXPECT_EQ(bad.getStatus().code(), static_cast<int>(ErrorCodes::FailedToParse));
}

TEST(CatalogParsers, DatabaseDoc) {
    placement::DatabaseVersion v(kUuid, Timestamp::fromParts(5, 1), 3);
    BsonBuilder b;
    b.append("_id", "test").append("primary", "shard1");
    v.appendToBson(b, "version");
    auto info = parseDatabaseDoc(b.obj());
    ASSERT_TRUE(info.isOK()) << info.getStatus().toString();
    EXPECT_EQ(info.getValue().name, "test");
    EXPECT_EQ(info.getValue().primary, "shard1");
    EXPECT_EQ(info.getValue().version, v);

    EXPECT_FALSE(parseDatabaseDoc(bson::fromJson(R"({"_id": "t", "primary": "s"})")).isOK());
}

TEST(CatalogParsers, ChunkDoc) {
    auto g = gen(1, 100);
    auto chunk = parseChunkDoc(chunkDoc(std::nullopt, 10, "s0", 2, 3), g);
    ASSERT_TRUE(chunk.isOK()) << chunk.getStatus().toString();
    EXPECT_EQ(chunk.getValue().shard, "s0");
    EXPECT_EQ(chunk.getValue().version, ChunkVersion(g, 2, 3));
    EXPECT_EQ(chunk.getValue().max.toJson(), bson::fromJson(R"({"a": 10})").toJson());
    EXPECT_FALSE(parseChunkDoc(bson::fromJson(R"({"min": {}, "max": {}})"), g).isOK());
}

TEST(CatalogParsers, CollectionDoc) {
    auto g = gen(7, 200);
    auto info = parseCollectionDoc(collDoc(g));
    ASSERT_TRUE(info.isOK()) << info.getStatus().toString();
    EXPECT_EQ(info.getValue().ns, "db.c");
    EXPECT_EQ(info.getValue().gen, g);
    EXPECT_EQ(info.getValue().uuid, kUuid);
    EXPECT_FALSE(info.getValue().unique);
    EXPECT_FALSE(parseCollectionDoc(bson::fromJson(R"({"_id": "db.c"})")).isOK());
}

// Builds a table the way the cache does on a full refresh.
std::shared_ptr<const placement::RoutingTable> fullTable(const CollectionGeneration& g,
                                                         const std::vector<BsonObj>& chunks) {
    auto plan = planCollectionRefresh(nullptr, collDoc(g), false);
    EXPECT_TRUE(plan.isOK());
    EXPECT_EQ(plan.getValue().kind, RefreshKind::kFull);
    auto table = applyRefresh(nullptr, plan.getValue(), chunks);
    EXPECT_TRUE(table.isOK()) << table.getStatus().toString();
    return table.getValue();
}

TEST(CatalogRefresh, NoCollectionEntryMeansUnsharded) {
    auto g = gen(1, 100);
    auto table = fullTable(g, {chunkDoc(std::nullopt, std::nullopt, "s0", 1, 0)});
    auto plan = planCollectionRefresh(table.get(), std::nullopt, false);
    ASSERT_TRUE(plan.isOK());
    EXPECT_EQ(plan.getValue().kind, RefreshKind::kUnsharded);
    auto applied = applyRefresh(table, plan.getValue(), {});
    ASSERT_TRUE(applied.isOK());
    EXPECT_EQ(applied.getValue(), nullptr);
}

TEST(CatalogRefresh, FullThenIncrementalAfterMigration) {
    auto g = gen(1, 100);
    auto table = fullTable(
        g, {chunkDoc(std::nullopt, 0, "s0", 1, 0), chunkDoc(0, std::nullopt, "s0", 1, 1)});
    EXPECT_EQ(table->collectionVersion(), ChunkVersion(g, 1, 1));
    EXPECT_EQ(table->shards(), std::vector<std::string>{"s0"});

    auto plan = planCollectionRefresh(table.get(), collDoc(g), false);
    ASSERT_TRUE(plan.isOK());
    ASSERT_EQ(plan.getValue().kind, RefreshKind::kIncremental);
    EXPECT_EQ(plan.getValue().since, ChunkVersion(g, 1, 1));
    // The filter asks for chunks of the uuid with lastmod > 1|1.
    BsonObj filter = chunksFilter(plan.getValue());
    EXPECT_TRUE(filter["uuid"]);
    EXPECT_EQ(filter["lastmod"].objValue()["$gt"].timestampValue(),
              Timestamp::fromParts(1, 1).value);

    // Migration commit: [0, max) → s1 at 2|0, control chunk on s0 at 2|1.
    auto updated = applyRefresh(
        table, plan.getValue(),
        {chunkDoc(0, std::nullopt, "s1", 2, 0), chunkDoc(std::nullopt, 0, "s0", 2, 1)});
    ASSERT_TRUE(updated.isOK()) << updated.getStatus().toString();
    EXPECT_EQ(updated.getValue()->collectionVersion(), ChunkVersion(g, 2, 1));
    EXPECT_EQ(updated.getValue()->shardVersion("s1"), ChunkVersion(g, 2, 0));
    EXPECT_EQ(updated.getValue()->shards(), (std::vector<std::string>{"s0", "s1"}));
    // The cached table is untouched.
    EXPECT_EQ(table->collectionVersion(), ChunkVersion(g, 1, 1));

    // Nothing changed: the same table.
    auto same = applyRefresh(table, plan.getValue(), {});
    ASSERT_TRUE(same.isOK());
    EXPECT_EQ(same.getValue(), table);
}

TEST(CatalogRefresh, NewGenerationOrForcedIsFull) {
    auto g1 = gen(1, 100);
    auto table = fullTable(g1, {chunkDoc(std::nullopt, std::nullopt, "s0", 1, 0)});
    auto g2 = gen(2, 200);
    auto plan = planCollectionRefresh(table.get(), collDoc(g2), false);
    ASSERT_TRUE(plan.isOK());
    EXPECT_EQ(plan.getValue().kind, RefreshKind::kFull);
    EXPECT_FALSE(chunksFilter(plan.getValue())["lastmod"]);
    auto rebuilt =
        applyRefresh(table, plan.getValue(), {chunkDoc(std::nullopt, std::nullopt, "s1", 1, 0)});
    ASSERT_TRUE(rebuilt.isOK());
    EXPECT_EQ(rebuilt.getValue()->generation(), g2);

    auto forced = planCollectionRefresh(table.get(), collDoc(g1), true);
    ASSERT_TRUE(forced.isOK());
    EXPECT_EQ(forced.getValue().kind, RefreshKind::kFull);
}

TEST(CatalogRefresh, ConflictsAreReported) {
    auto g = gen(1, 100);
    auto table = fullTable(
        g, {chunkDoc(std::nullopt, 0, "s0", 1, 0), chunkDoc(0, std::nullopt, "s0", 1, 1)});
    auto plan = planCollectionRefresh(table.get(), collDoc(g), false).getValue();
    // A changed chunk of another generation: reload in full.
    RefreshPlan otherGen = plan;
    otherGen.coll->gen = gen(9, 900);
    auto conflict = applyRefresh(table, otherGen, {chunkDoc(0, std::nullopt, "s1", 2, 0)});
    EXPECT_EQ(conflict.getStatus().code(),
              static_cast<int>(ErrorCodes::ConflictingOperationInProgress));

    // A full read with a gap (chunks changed between reads).
    auto full = planCollectionRefresh(nullptr, collDoc(g), false).getValue();
    auto gap = applyRefresh(
        nullptr, full,
        {chunkDoc(std::nullopt, 0, "s0", 1, 0), chunkDoc(5, std::nullopt, "s0", 1, 1)});
    EXPECT_EQ(gap.getStatus().code(), static_cast<int>(ErrorCodes::ConflictingOperationInProgress));
    // No chunks yet (shardCollection half-written): read again.
    auto none = applyRefresh(nullptr, full, {});
    EXPECT_EQ(none.getStatus().code(),
              static_cast<int>(ErrorCodes::ConflictingOperationInProgress));
}

TEST(CatalogRefresh, StaleShardVersionDecision) {
    auto g = gen(1, 100);
    auto table = fullTable(
        g, {chunkDoc(std::nullopt, 0, "s0", 1, 0), chunkDoc(0, std::nullopt, "s1", 2, 0)});
    // Unknown wanted: refresh.
    EXPECT_TRUE(needsShardVersionRefresh(table.get(), std::nullopt));
    // Nothing cached: refresh.
    EXPECT_TRUE(needsShardVersionRefresh(nullptr, ChunkVersion(g, 1, 0)));
    // Already known (a concurrent refresh): skip.
    EXPECT_FALSE(needsShardVersionRefresh(table.get(), ChunkVersion(g, 1, 0)));
    EXPECT_FALSE(needsShardVersionRefresh(table.get(), ChunkVersion(g, 2, 0)));
    // Newer: refresh.
    EXPECT_TRUE(needsShardVersionRefresh(table.get(), ChunkVersion(g, 3, 0)));
    // The shard donated its last chunk (0|0): our table may not show it.
    EXPECT_TRUE(needsShardVersionRefresh(table.get(), ChunkVersion(g, 0, 0)));
    // Another generation: refresh.
    EXPECT_TRUE(needsShardVersionRefresh(table.get(), ChunkVersion(gen(2, 50), 1, 0)));
    // The shard thinks it is unsharded while we think sharded.
    EXPECT_TRUE(needsShardVersionRefresh(table.get(), ChunkVersion::unsharded()));
}

TEST(CatalogRefresh, StaleDatabaseVersionDecision) {
    placement::DatabaseVersion v(kUuid, Timestamp::fromParts(5, 1), 3);
    EXPECT_TRUE(needsDatabaseVersionRefresh(std::nullopt, v));
    EXPECT_TRUE(needsDatabaseVersionRefresh(v, std::nullopt));
    EXPECT_FALSE(needsDatabaseVersionRefresh(v, v));
    EXPECT_FALSE(needsDatabaseVersionRefresh(v.makeUpdated(), v));
    EXPECT_TRUE(needsDatabaseVersionRefresh(v, v.makeUpdated()));
    placement::DatabaseVersion other({}, Timestamp::fromParts(9, 1), 1);
    EXPECT_TRUE(needsDatabaseVersionRefresh(v, other));
}

}  // namespace
}  // namespace tessera::cluster
