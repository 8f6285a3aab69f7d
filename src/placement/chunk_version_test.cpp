#include "placement/chunk_version.h"

#include <gtest/gtest.h>

#include "placement/database_version.h"
#include "placement/stale_info.h"
#include "placement/test_util.h"

namespace tessera::placement {
namespace {

using test::gen;
using test::obj;

TEST(ChunkVersion, ComparesWithinAGenerationOnly) {
    ChunkVersion v10(gen(1), 1, 0), v11(gen(1), 1, 1), v20(gen(1), 2, 0);
    EXPECT_TRUE(v10.isOlderThan(v11));
    EXPECT_TRUE(v11.isOlderThan(v20));
    EXPECT_FALSE(v20.isOlderThan(v11));
    EXPECT_FALSE(v11.isOlderThan(v11));
    EXPECT_TRUE(v11.isOlderOrEqualThan(v11));

    ChunkVersion other(gen(2, 200), 5, 0);
    EXPECT_FALSE(v10.isSameGeneration(other));
    EXPECT_FALSE(v10.isOlderThan(other));
    EXPECT_FALSE(other.isOlderThan(v10));
    // A router orders routing info across generations by the generation timestamp.
    EXPECT_TRUE(v20.isOlderRoutingInfoThan(other));
    EXPECT_FALSE(other.isOlderRoutingInfoThan(v20));
}

TEST(ChunkVersion, MigrationBumpsMajorSplitBumpsMinor) {
    ChunkVersion v(gen(), 3, 7);
    EXPECT_EQ(v.incMajor(), ChunkVersion(gen(), 4, 0));
    EXPECT_EQ(v.incMinor(), ChunkVersion(gen(), 3, 8));
    // A shard accepts a request whose version differs only in the minor.
    EXPECT_TRUE(v.isWriteCompatibleWith(v.incMinor()));
    EXPECT_FALSE(v.isWriteCompatibleWith(v.incMajor()));
    EXPECT_FALSE(v.isWriteCompatibleWith(ChunkVersion(gen(9), 3, 7)));
}

TEST(ChunkVersion, WireFormatRoundTrips) {
    CollectionGeneration g = gen(7, 1234);
    ChunkVersion v(g, 5, 9);
    bson::BsonObj wire = v.toBson();
    EXPECT_EQ(wire.firstElement().fieldName(), "e");
    EXPECT_EQ(wire["e"].type(), bson::BsonType::ObjectId);
    EXPECT_EQ(wire["t"].timestampValue(), Timestamp::fromParts(1234, 1).value);
    EXPECT_EQ(wire["v"].type(), bson::BsonType::Timestamp);
    EXPECT_EQ(wire["v"].timestampValue(), (uint64_t{5} << 32) | 9);  // major high, minor low
    auto parsed = ChunkVersion::parse(wire);
    ASSERT_TRUE(parsed.isOK());
    EXPECT_EQ(parsed.getValue(), v);

    bson::BsonBuilder b;
    v.appendToBson(b, "shardVersion");
    bson::BsonObj cmd = b.obj();
    EXPECT_EQ(ChunkVersion::parse(cmd["shardVersion"]).getValue(), v);

    // The legacy positional form [Timestamp(major, minor), epoch, timestamp].
    bson::BsonArrayBuilder legacy;
    bson::BsonBuilder tmp;
    tmp.appendTimestamp("v", v.placement().value).appendOid("e", g.epoch);
    tmp.appendTimestamp("t", g.timestamp.value);
    bson::BsonObj parts = tmp.obj();
    legacy.appendElement(parts["v"]).appendElement(parts["e"]).appendElement(parts["t"]);
    bson::BsonBuilder arr;
    arr.appendArray("sv", legacy.arr());
    EXPECT_EQ(ChunkVersion::parse(arr.obj()["sv"]).getValue(), v);

    EXPECT_FALSE(ChunkVersion::parse(obj(R"({"e": 1, "t": 2, "v": 3})")).isOK());
    EXPECT_FALSE(ChunkVersion::parse(obj(R"({"x": 1})")).isOK());
}

TEST(ChunkVersion, UnshardedAndIgnored) {
    EXPECT_TRUE(ChunkVersion().isUnsharded());
    EXPECT_FALSE(ChunkVersion().isSet());
    ChunkVersion ignored = ChunkVersion::ignored();
    EXPECT_TRUE(ignored.isIgnored());
    EXPECT_EQ(ignored.timestamp(), Timestamp::max());
    EXPECT_EQ(ignored.epoch().bytes[0], 0);
    EXPECT_EQ(ignored.epoch().bytes[11], 0xff);
    EXPECT_EQ(ChunkVersion::parse(ignored.toBson()).getValue(), ignored);
    EXPECT_EQ(ChunkVersion(gen(), 2, 3).toString().substr(0, 5), "2|3||");
}

TEST(DatabaseVersion, ComparesLastModWithinAnIncarnation) {
    Uuid u{};
    u[0] = 1;
    DatabaseVersion v(u, Timestamp::fromParts(10, 0), 1);
    DatabaseVersion moved = v.makeUpdated();
    EXPECT_EQ(moved.lastMod(), 2);
    EXPECT_TRUE(v.isOlderThan(moved));
    EXPECT_FALSE(moved.isOlderThan(v));
    Uuid u2{};
    u2[0] = 2;
    DatabaseVersion recreated(u2, Timestamp::fromParts(20, 0), 1);
    EXPECT_FALSE(v.isSameDatabase(recreated));
    EXPECT_TRUE(moved.isOlderThan(recreated));

    bson::BsonObj wire = moved.toBson();
    EXPECT_EQ(wire["uuid"].binaryValue().subtype, 4);
    EXPECT_EQ(wire["lastMod"].type(), bson::BsonType::Int32);
    EXPECT_EQ(DatabaseVersion::parse(wire).getValue(), moved);
    EXPECT_FALSE(DatabaseVersion::parse(obj(R"({"lastMod": 1})")).isOK());
}

TEST(StaleInfo, ShardRejectsStaleMajorsAndOtherGenerations) {
    ChunkVersion mine(gen(), 4, 2);
    EXPECT_FALSE(checkShardVersion("db.c", "s0", ChunkVersion(gen(), 4, 0), mine));
    EXPECT_FALSE(checkShardVersion("db.c", "s0", ChunkVersion::ignored(), mine));
    auto stale = checkShardVersion("db.c", "s0", ChunkVersion(gen(), 3, 9), mine);
    ASSERT_TRUE(stale);
    EXPECT_EQ(stale->toStatus().code(), 13388);
    EXPECT_TRUE(checkShardVersion("db.c", "s0", ChunkVersion(gen(2), 4, 2), mine));
    EXPECT_TRUE(checkShardVersion("db.c", "s0", ChunkVersion::unsharded(), mine));
    EXPECT_TRUE(checkShardVersion("db.c", "s0", mine, std::nullopt));  // metadata unknown

    // The error reply fields: {ns, vReceived, vWanted, shardId}.
    bson::BsonBuilder b;
    b.appendDouble("ok", 0).appendInt32("code", 13388).append("codeName", "StaleConfig");
    stale->appendFields(b);
    bson::BsonObj reply = b.obj();
    EXPECT_EQ(reply["ns"].stringValue(), "db.c");
    EXPECT_EQ(reply["shardId"].stringValue(), "s0");
    EXPECT_EQ(reply["vReceived"].objValue()["v"].type(), bson::BsonType::Timestamp);
    auto parsed = StaleConfigInfo::parse(reply);
    ASSERT_TRUE(parsed.isOK());
    EXPECT_EQ(parsed.getValue().received, ChunkVersion(gen(), 3, 9));
    EXPECT_EQ(parsed.getValue().wanted, std::optional<ChunkVersion>(mine));
}

TEST(StaleInfo, DatabaseVersionMustMatch) {
    DatabaseVersion v(Uuid{}, Timestamp::fromParts(1, 0), 3);
    EXPECT_FALSE(checkDatabaseVersion("db", v, v));
    auto stale = checkDatabaseVersion("db", v, v.makeUpdated());
    ASSERT_TRUE(stale);
    EXPECT_EQ(stale->toStatus().code(), 249);
    EXPECT_TRUE(checkDatabaseVersion("db", v, std::nullopt));  // not the primary
    bson::BsonBuilder b;
    stale->appendFields(b);
    bson::BsonObj reply = b.obj();
    EXPECT_EQ(reply["db"].stringValue(), "db");
    EXPECT_EQ(reply["vWanted"].objValue()["lastMod"].numberInt(), 4);
    auto parsed = StaleDbVersionInfo::parse(reply);
    ASSERT_TRUE(parsed.isOK());
    EXPECT_EQ(parsed.getValue().received, v);
}

}  // namespace
}  // namespace tessera::placement
