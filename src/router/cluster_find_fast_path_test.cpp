// relayExhaustedShardCursor: when a single-shard find's reply is passed through as it is, and
// when the general path (a router cursor) must answer instead.
#include <gtest/gtest.h>

#include "bson/bson_builder.h"
#include "router/cluster_find.h"

namespace tessera::router::reads {
namespace {

using bson::BsonBuilder;
using bson::BsonObj;

ShardResponse shardReply(const std::string& json) {
    ShardResponse r;
    r.shard = "s0";
    r.host = "127.0.0.1:1";
    r.reply = bson::fromJson(json);
    return r;
}

BsonObj relayed(const ShardResponse& r, std::optional<int64_t> batchSize, bool* took) {
    BsonBuilder reply;
    *took = relayExhaustedShardCursor(r, "db.c", batchSize, reply);
    return reply.obj();
}

TEST(RelayExhaustedShardCursor, PassesAnExhaustedBatchThroughWithTheRoutersNamespace) {
    auto r = shardReply(
        R"({"cursor": {"firstBatch": [{"_id": 1}, {"_id": 2}], "id": 0, "ns": "db.c"}, "ok": 1})");
    bool took = false;
    BsonObj out = relayed(r, std::nullopt, &took);
    EXPECT_TRUE(took);
    BsonBuilder expected;
    expected.startObject("cursor");
    expected.appendArray("firstBatch", bson::fromJson(R"({"0": {"_id": 1}, "1": {"_id": 2}})"));
    expected.appendInt64("id", 0);
    expected.append("ns", "db.c");
    expected.end();
    EXPECT_EQ(out.toJson(), expected.obj().toJson());
}

TEST(RelayExhaustedShardCursor, EmptyExhaustedBatch) {
    auto r = shardReply(R"({"cursor": {"firstBatch": [], "id": 0, "ns": "db.c"}, "ok": 1})");
    bool took = false;
    relayed(r, std::nullopt, &took);
    EXPECT_TRUE(took);
}

TEST(RelayExhaustedShardCursor, BatchExactlyTheBatchSizeIsRelayed) {
    auto r = shardReply(
        R"({"cursor": {"firstBatch": [{"_id": 1}, {"_id": 2}], "id": 0, "ns": "db.c"}, "ok": 1})");
    bool took = false;
    relayed(r, 2, &took);
    EXPECT_TRUE(took);
}

TEST(RelayExhaustedShardCursor, GeneralPathCases) {
    bool took = true;
    // The shard's cursor is still open: the router must keep a cursor over it.
    BsonBuilder open;
    open.startObject("cursor")
        .appendArray("firstBatch", bson::fromJson(R"({"0": {"_id": 1}})"))
        .appendInt64("id", 42)
        .append("ns", "db.c")
        .end();
    open.appendInt32("ok", 1);
    ShardResponse openCursor;
    openCursor.reply = open.obj();
    EXPECT_TRUE(relayed(openCursor, std::nullopt, &took).isEmpty());
    EXPECT_FALSE(took);

    // More documents than the router's first batch.
    auto big = shardReply(
        R"({"cursor": {"firstBatch": [{"_id": 1}, {"_id": 2}], "id": 0, "ns": "db.c"}, "ok": 1})");
    EXPECT_TRUE(relayed(big, 1, &took).isEmpty());
    EXPECT_FALSE(took);
    // batchSize 0: the router answers an empty batch and opens a cursor.
    relayed(big, 0, &took);
    EXPECT_FALSE(took);

    // An error reply, a network error, a reply without a cursor.
    relayed(shardReply(R"({"ok": 0, "code": 13388, "errmsg": "stale"})"), std::nullopt, &took);
    EXPECT_FALSE(took);
    ShardResponse down = big;
    down.status = Status(ErrorCodes::HostUnreachable, "down");
    relayed(down, std::nullopt, &took);
    EXPECT_FALSE(took);
    relayed(shardReply(R"({"n": 1, "ok": 1})"), std::nullopt, &took);
    EXPECT_FALSE(took);
}

}  // namespace
}  // namespace tessera::router::reads
