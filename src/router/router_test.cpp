#include "router/router.h"

#include <gtest/gtest.h>

#include "bson/bson_builder.h"
#include "router/router_util.h"

namespace tessera::router {
namespace {

using bson::BsonBuilder;
using bson::BsonObj;
using placement::ChunkVersion;

placement::CollectionGeneration gen() {
    placement::CollectionGeneration g;
    g.epoch.bytes[11] = 7;
    g.timestamp = Timestamp::fromParts(100, 1);
    return g;
}

// {a: 1} split at 0: [MinKey, 0) on s0 at 1|0, [0, MaxKey) on s1 at 2|0.
CollectionRoutingInfo shardedInfo() {
    auto pattern = placement::ShardKeyPattern::parse(bson::fromJson(R"({"a": 1})")).getValue();
    std::vector<placement::Chunk> chunks(2);
    chunks[0].min = pattern.globalMin();
    chunks[0].max = bson::fromJson(R"({"a": 0})");
    chunks[0].shard = "s0";
    chunks[0].version = ChunkVersion(gen(), 1, 0);
    chunks[1].min = chunks[0].max;
    chunks[1].max = pattern.globalMax();
    chunks[1].shard = "s1";
    chunks[1].version = ChunkVersion(gen(), 2, 0);
    CollectionRoutingInfo info;
    info.db.name = "db";
    info.db.primary = "s0";
    info.db.version = placement::DatabaseVersion({1, 2, 3}, Timestamp::fromParts(50, 1), 4);
    info.table = placement::RoutingTable::make("db.c", pattern, gen(), chunks).getValue();
    return info;
}

TEST(AttachVersion, ShardedGetsTheTargetShardsVersion) {
    auto info = shardedInfo();
    BsonObj cmd = bson::fromJson(R"({"find": "c", "filter": {"a": 5}})");
    BsonObj s1 = attachVersion(cmd, info, "s1");
    EXPECT_EQ(s1.firstElement().fieldName(), "find");
    auto v1 = ChunkVersion::parse(s1["shardVersion"]);
    ASSERT_TRUE(v1.isOK()) << s1.toJson();
    EXPECT_EQ(v1.getValue(), ChunkVersion(gen(), 2, 0));
    EXPECT_FALSE(s1.hasField("databaseVersion"));

    BsonObj s0 = attachVersion(cmd, info, "s0");
    EXPECT_EQ(ChunkVersion::parse(s0["shardVersion"]).getValue(), ChunkVersion(gen(), 1, 0));
    // A shard that owns nothing gets 0|0 of the generation.
    BsonObj s2 = attachVersion(cmd, info, "s2");
    EXPECT_EQ(ChunkVersion::parse(s2["shardVersion"]).getValue(), ChunkVersion(gen(), 0, 0));
}

TEST(AttachVersion, UnshardedGetsUnshardedAndDatabaseVersion) {
    auto info = shardedInfo();
    info.table = nullptr;
    // Existing version fields are replaced, not duplicated.
    BsonObj cmd = bson::fromJson(
        R"({"insert": "c", "shardVersion": {"x": 1}, "databaseVersion": {"y": 1}, "ordered": true})");
    BsonObj out = attachVersion(cmd, info, "s0");
    EXPECT_EQ(ChunkVersion::parse(out["shardVersion"]).getValue(), ChunkVersion::unsharded());
    auto dbv = placement::DatabaseVersion::parse(out["databaseVersion"].objValue());
    ASSERT_TRUE(dbv.isOK());
    EXPECT_EQ(dbv.getValue(), info.db.version);
    size_t versions = 0;
    for (auto e : out) {
        versions += e.fieldName() == "shardVersion" || e.fieldName() == "databaseVersion";
    }
    EXPECT_EQ(versions, 2u);
    EXPECT_TRUE(out["ordered"].trueValue());
}

TEST(AttachVersion, ConfigAndAdminGetNoVersion) {
    for (const char* db : {"config", "admin"}) {
        CollectionRoutingInfo info;
        info.db.name = db;
        info.db.primary = "config";
        BsonObj out = attachVersion(bson::fromJson(R"({"find": "x", "shardVersion": {"x": 1}})"),
                                    info, "config");
        EXPECT_FALSE(out.hasField("shardVersion")) << db;
        EXPECT_FALSE(out.hasField("databaseVersion")) << db;
        EXPECT_EQ(out["find"].stringValue(), "x");
    }
}

TEST(RouterUtil, ForwardableBodyFoldsSequencesAndDropsGossip) {
    BsonObj body = bson::fromJson(
        R"({"insert": "c", "ordered": false, "$db": "config", "$clusterTime": {"t": 1},
            "lsid": {"id": 1}})");
    BsonObj d1 = bson::fromJson(R"({"_id": 1})");
    BsonObj d2 = bson::fromJson(R"({"_id": 2})");
    command::CommandRequest request;
    request.db = "config";
    request.commandName = "insert";
    request.body = body;
    request.sequences.push_back({"documents", {d1, d2}});
    BsonObj out = forwardableBody(request);
    EXPECT_FALSE(out.hasField("$db"));
    EXPECT_FALSE(out.hasField("$clusterTime"));
    EXPECT_TRUE(out.hasField("lsid"));
    ASSERT_TRUE(out["documents"].isArray());
    EXPECT_EQ(out["documents"].objValue().nFields(), 2u);
    EXPECT_EQ(out["documents"].objValue()["1"].objValue()["_id"].numberInt(), 2);

    BsonObj trimmed = withoutFields(body, {"ordered"});
    EXPECT_FALSE(trimmed.hasField("ordered"));
    EXPECT_FALSE(trimmed.hasField("$db"));
    EXPECT_TRUE(trimmed.hasField("insert"));
}

TEST(RouterUtil, RelayRemoteReply) {
    command::OperationContext opCtx;
    BsonBuilder ok;
    Status s = relayRemoteReply(
        opCtx, bson::fromJson(R"({"n": 3, "ok": 1, "$clusterTime": {}, "operationTime": 1})"), ok);
    ASSERT_TRUE(s.isOK());
    BsonObj okObj = ok.obj();
    EXPECT_EQ(okObj["n"].numberInt(), 3);
    EXPECT_FALSE(okObj.hasField("ok"));
    EXPECT_FALSE(okObj.hasField("$clusterTime"));

    BsonBuilder err;
    s = relayRemoteReply(opCtx,
                         bson::fromJson(R"({"ok": 0, "code": 13388, "codeName": "StaleConfig",
                                            "errmsg": "stale", "ns": "db.c"})"),
                         err);
    EXPECT_EQ(s.code(), 13388);
    EXPECT_EQ(s.reason(), "stale");
    EXPECT_EQ(opCtx.errorExtraInfo["ns"].stringValue(), "db.c");
    EXPECT_FALSE(opCtx.errorExtraInfo.hasField("code"));
}

}  // namespace
}  // namespace tessera::router

namespace tessera::router {
namespace {

TEST(NoteStaleError, RecognizesStaleRepliesAndWriteErrors) {
    Router router("127.0.0.1:1", "127.0.0.1:2");  // never contacted: nothing is cached
    EXPECT_FALSE(noteStaleError(router, bson::fromJson(R"({"ok": 1, "n": 1})")));
    EXPECT_FALSE(
        noteStaleError(router, bson::fromJson(R"({"ok": 0, "code": 11000, "errmsg": "dup"})")));
    EXPECT_TRUE(
        noteStaleError(router, bson::fromJson(R"({"ok": 0, "code": 13388, "codeName": "StaleConfig",
                                   "errmsg": "stale", "ns": "db.c", "shardId": "s0"})")));
    EXPECT_TRUE(noteStaleError(
        router, bson::fromJson(R"({"ok": 0, "code": 249, "errmsg": "stale db", "db": "db"})")));
    EXPECT_TRUE(noteStaleError(router, bson::fromJson(R"({"ok": 1, "n": 0, "writeErrors": [
            {"index": 0, "code": 13388, "errmsg": "stale", "ns": "db.c"}]})")));
    EXPECT_FALSE(noteStaleError(router, bson::fromJson(R"({"ok": 1, "n": 0, "writeErrors": [
            {"index": 0, "code": 11000, "errmsg": "dup"}]})")));
}

}  // namespace
}  // namespace tessera::router
