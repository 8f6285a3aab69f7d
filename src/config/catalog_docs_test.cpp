#include "config/catalog_docs.h"

#include <gtest/gtest.h>

namespace tessera::config {
namespace {

using bson::BsonType;
using bson::fromJson;

TEST(CatalogDocs, ChunkDocumentRoundTrip) {
    ChunkRecord c;
    c.id = bson::ObjectId::generate();
    c.min = fromJson(R"({"a": {"$minKey": 1}})");
    c.max = fromJson(R"({"a": 5})");
    c.shard = "shard1";
    c.major = 3;
    c.minor = 2;
    c.onCurrentShardSince = Timestamp::fromParts(50, 1);
    c.history = {{Timestamp::fromParts(50, 1), "shard1"}, {Timestamp::fromParts(40, 1), "shard0"}};
    placement::Uuid uuid = generateUuid();
    bson::BsonObj doc = makeChunkDoc(c, uuid);
    EXPECT_EQ(doc["lastmod"].type(), BsonType::Timestamp);
    EXPECT_EQ(Timestamp{doc["lastmod"].timestampValue()}, Timestamp::fromParts(3, 2));
    EXPECT_EQ(doc["uuid"].type(), BsonType::BinData);
    EXPECT_FALSE(doc.hasField("jumbo"));
    auto parsed = parseChunkRecord(doc);
    ASSERT_TRUE(parsed.isOK()) << parsed.getStatus().toString();
    EXPECT_EQ(parsed.getValue().id, c.id);
    EXPECT_EQ(parsed.getValue().major, 3u);
    EXPECT_EQ(parsed.getValue().minor, 2u);
    EXPECT_EQ(parsed.getValue().shard, "shard1");
    EXPECT_EQ(parsed.getValue().history, c.history);
    EXPECT_TRUE(parsed.getValue().min.binaryEqual(c.min));
    EXPECT_EQ(uuidFromElement(doc["uuid"]).getValue(), uuid);
    EXPECT_FALSE(parseChunkRecord(fromJson(R"({"_id": 1})")).isOK());
}

TEST(CatalogDocs, CollectionDocumentRoundTrip) {
    CollectionRecord c;
    c.ns = "db.c";
    c.gen.epoch = bson::ObjectId::generate();
    c.gen.timestamp = Timestamp::fromParts(7, 3);
    c.uuid = generateUuid();
    c.key = fromJson(R"({"a": "hashed"})");
    c.unique = false;
    c.lastmodMillis = 1234;
    bson::BsonObj doc = makeCollectionDoc(c);
    EXPECT_EQ(doc["lastmod"].type(), BsonType::Date);
    EXPECT_EQ(doc["noBalance"].type(), BsonType::Bool);
    auto parsed = parseCollectionRecord(doc);
    ASSERT_TRUE(parsed.isOK()) << parsed.getStatus().toString();
    EXPECT_EQ(parsed.getValue().gen, c.gen);
    EXPECT_EQ(parsed.getValue().uuid, c.uuid);
    EXPECT_TRUE(parsed.getValue().key.binaryEqual(c.key));
    EXPECT_EQ(parsed.getValue().lastmodMillis, 1234);
}

TEST(CatalogDocs, UuidsAreVersion4AndDistinct) {
    placement::Uuid a = generateUuid(), b = generateUuid();
    EXPECT_NE(a, b);
    EXPECT_EQ(a[6] >> 4, 4);
    EXPECT_EQ(a[8] & 0xc0, 0x80);
}

TEST(CatalogDocs, ShardDatabaseAndChangelogShapes) {
    bson::BsonObj shard = makeShardDoc("shard0", "127.0.0.1:1", Timestamp::fromParts(1, 1));
    EXPECT_EQ(shard["state"].int32Value(), 1);
    EXPECT_EQ(shard["topologyTime"].type(), BsonType::Timestamp);
    placement::DatabaseVersion v(generateUuid(), Timestamp::fromParts(2, 1), 1);
    bson::BsonObj db = makeDatabaseDoc("test", "shard0", v);
    EXPECT_EQ(db["primary"].stringValue(), "shard0");
    EXPECT_EQ(placement::DatabaseVersion::parse(db["version"].objValue()).getValue(), v);
    bson::BsonObj log =
        makeChangelogDoc("cfg:1", "moveChunk.from", "db.c", fromJson(R"({"note": "success"})"), 99);
    EXPECT_EQ(log["time"].type(), BsonType::Date);
    EXPECT_EQ(log["time"].dateValue(), 99);
    EXPECT_EQ(log["what"].stringValue(), "moveChunk.from");
    EXPECT_EQ(log["details"].objValue()["note"].stringValue(), "success");
    EXPECT_EQ(log["_id"].type(), BsonType::String);
}

TEST(CatalogDocs, DefaultNames) {
    EXPECT_EQ(defaultShardName({}), "shard0");
    EXPECT_EQ(defaultShardName({"shard0", "shard2"}), "shard1");
    EXPECT_EQ(defaultIndexName(fromJson(R"({"a": 1, "b": "hashed"})")), "a_1_b_hashed");
    EXPECT_EQ(defaultIndexName(fromJson(R"({"x.y": -1})")), "x.y_-1");
}

TEST(CatalogDocs, ShardKeyIndexPrefix) {
    auto key = fromJson(R"({"a": 1, "b": "hashed"})");
    EXPECT_TRUE(isShardKeyIndexPrefix(key, fromJson(R"({"a": 1, "b": "hashed"})")));
    EXPECT_TRUE(isShardKeyIndexPrefix(key, fromJson(R"({"a": 1, "b": "hashed", "c": 1})")));
    EXPECT_FALSE(isShardKeyIndexPrefix(key, fromJson(R"({"a": 1, "b": 1})")));
    EXPECT_FALSE(isShardKeyIndexPrefix(key, fromJson(R"({"a": 1})")));
    EXPECT_FALSE(isShardKeyIndexPrefix(fromJson(R"({"a": 1})"), fromJson(R"({"a": -1})")));
    EXPECT_TRUE(isShardKeyIndexPrefix(fromJson(R"({"_id": 1})"), fromJson(R"({"_id": 1})")));
}

}  // namespace
}  // namespace tessera::config
