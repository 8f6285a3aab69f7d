#include "shard/ownership_filter.h"

#include <gtest/gtest.h>

#include "bson/bson_builder.h"
#include "placement/hasher.h"
#include "shard/shard_test_util.h"

namespace tessera::shard {
namespace {

using test::J;
using test::makeTable;

TEST(ChunkOwnershipFilter, RangedKeyEdges) {
    // (-inf, 0) s0, [0, 10) s1, [10, 20) s0, [20, +inf] s1
    auto table = makeTable("db.c", R"({"a": 1})", {R"({"a": 0})", R"({"a": 10})", R"({"a": 20})"},
                           {"s0", "s1", "s0", "s1"});
    ChunkOwnershipFilter s0(table, "s0"), s1(table, "s1");
    EXPECT_TRUE(s0.owns(J(R"({"_id": 1, "a": -1})")));
    EXPECT_FALSE(s0.owns(J(R"({"_id": 1, "a": 0})")));  // min is inclusive, max exclusive
    EXPECT_TRUE(s1.owns(J(R"({"_id": 1, "a": 0})")));
    EXPECT_TRUE(s1.owns(J(R"({"_id": 1, "a": 9.5})")));
    EXPECT_TRUE(s0.owns(J(R"({"_id": 1, "a": 10})")));
    EXPECT_TRUE(s0.owns(J(R"({"_id": 1, "a": {"$numberLong": "19"}})")));
    EXPECT_FALSE(s0.owns(J(R"({"_id": 1, "a": 20})")));
    EXPECT_TRUE(s1.owns(J(R"({"_id": 1, "a": 20})")));
    // Missing field = null, which sorts before numbers: the first chunk.
    EXPECT_TRUE(s0.owns(J(R"({"_id": 1})")));
    EXPECT_FALSE(s1.owns(J(R"({"_id": 1})")));
    // Strings sort after numbers: last chunk.
    EXPECT_TRUE(s1.owns(J(R"({"_id": 1, "a": "x"})")));
    // MaxKey itself belongs to the last chunk; MinKey to the first.
    EXPECT_TRUE(s1.owns(J(R"({"_id": 1, "a": {"$maxKey": 1}})")));
    EXPECT_FALSE(s0.owns(J(R"({"_id": 1, "a": {"$maxKey": 1}})")));
    EXPECT_TRUE(s0.owns(J(R"({"_id": 1, "a": {"$minKey": 1}})")));
    // Arrays on the key path cannot be a shard key: never owned.
    EXPECT_FALSE(s0.owns(J(R"({"_id": 1, "a": [1, 2]})")));
    EXPECT_FALSE(s1.owns(J(R"({"_id": 1, "a": [1, 2]})")));
    // A shard with no chunk owns nothing.
    ChunkOwnershipFilter s2(table, "s2");
    EXPECT_TRUE(s2.ownsNothing());
    EXPECT_FALSE(s2.owns(J(R"({"_id": 1, "a": 5})")));
}

TEST(ChunkOwnershipFilter, MaxKeyOwnedOnlyByLastChunkOwner) {
    auto table = makeTable("db.c", R"({"a": 1})", {R"({"a": 5})"}, {"s1", "s0"});
    ChunkOwnershipFilter s0(table, "s0"), s1(table, "s1");
    EXPECT_TRUE(s0.owns(J(R"({"a": {"$maxKey": 1}})")));
    EXPECT_FALSE(s1.owns(J(R"({"a": {"$maxKey": 1}})")));
    EXPECT_TRUE(s1.owns(J(R"({"a": {"$minKey": 1}})")));
}

TEST(ChunkOwnershipFilter, HashedKeyUsesTheHash) {
    // Split the hash space at 0: negative hashes on s0, the others on s1.
    auto table =
        makeTable("db.h", R"({"x": "hashed"})", {R"({"x": {"$numberLong": "0"}})"}, {"s0", "s1"});
    ChunkOwnershipFilter s0(table, "s0"), s1(table, "s1");
    int seen[2] = {0, 0};
    for (int i = 0; i < 200; ++i) {
        bson::BsonBuilder b;
        b.appendInt32("_id", i);
        b.appendInt32("x", i);
        bson::BsonObj doc = b.obj();
        int64_t h = placement::hashElement(doc["x"]);
        bool negative = h < 0;
        EXPECT_EQ(s0.owns(doc), negative) << i;
        EXPECT_EQ(s1.owns(doc), !negative) << i;
        ++seen[negative ? 0 : 1];
    }
    EXPECT_GT(seen[0], 0);
    EXPECT_GT(seen[1], 0);
}

TEST(ChunkOwnershipFilter, CompoundKeyAndAdjacentChunksMerge) {
    auto table = makeTable("db.c", R"({"a": 1, "b": 1})",
                           {R"({"a": 1, "b": {"$minKey": 1}})", R"({"a": 1, "b": 5})",
                            R"({"a": 2, "b": {"$minKey": 1}})"},
                           {"s0", "s1", "s1", "s0"});
    ChunkOwnershipFilter s0(table, "s0"), s1(table, "s1");
    EXPECT_TRUE(s0.owns(J(R"({"a": 0, "b": 100})")));
    EXPECT_TRUE(s1.owns(J(R"({"a": 1, "b": 4})")));
    EXPECT_TRUE(s1.owns(J(R"({"a": 1, "b": 6})")));  // merged range [a:1, a:2)
    EXPECT_TRUE(s1.owns(J(R"({"a": 1})")));          // b null > MinKey
    EXPECT_TRUE(s0.owns(J(R"({"a": 2})")));
    EXPECT_TRUE(s0.owns(J(R"({"a": {"$maxKey": 1}, "b": {"$maxKey": 1}})")));
}

}  // namespace
}  // namespace tessera::shard
