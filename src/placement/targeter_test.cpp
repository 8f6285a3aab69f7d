#include "placement/targeter.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "placement/hasher.h"
#include "placement/split_policy.h"
#include "placement/test_util.h"
#include "query/matcher.h"

namespace tessera::placement {
namespace {

using bson::BsonBuilder;
using bson::BsonObj;
using test::gen;
using test::obj;
using test::pattern;

Chunk chunk(BsonObj min, BsonObj max, const char* shard, uint32_t minor) {
    return Chunk{std::move(min), std::move(max), shard, ChunkVersion(gen(), 1, minor)};
}

// {a: 1}: [MinKey, 0) s0, [0, 10) s1, [10, "m") s2, ["m", MaxKey] s0.
std::shared_ptr<const RoutingTable> rangedTable() {
    ShardKeyPattern p = pattern(R"({"a": 1})");
    auto t = RoutingTable::make("db.c", p, gen(),
                                {chunk(p.globalMin(), obj(R"({"a": 0})"), "s0", 0),
                                 chunk(obj(R"({"a": 0})"), obj(R"({"a": 10})"), "s1", 1),
                                 chunk(obj(R"({"a": 10})"), obj(R"({"a": "m"})"), "s2", 2),
                                 chunk(obj(R"({"a": "m"})"), p.globalMax(), "s0", 3)});
    EXPECT_TRUE(t.isOK());
    return t.getValue();
}

TargetingResult target(const RoutingTable& t, const char* filter) {
    auto r = targetQuery(t, obj(filter));
    EXPECT_TRUE(r.isOK()) << filter << ": " << r.getStatus().toString();
    return r.getValue();
}

using Shards = std::vector<ShardId>;

TEST(Targeter, EqualityOnTheKeyTargetsOneShard) {
    auto t = rangedTable();
    TargetingResult r = target(*t, R"({"a": 5, "z": 1})");
    EXPECT_EQ(r.kind, TargetingKind::kExactKey);
    EXPECT_EQ(r.shards, Shards{"s1"});
    EXPECT_EQ(r.numChunks, 1u);
    EXPECT_EQ(*r.shardKey, obj(R"({"a": 5})"));
    EXPECT_EQ(target(*t, R"({"a": {"$eq": 10}})").shards, Shards{"s2"});
    EXPECT_EQ(target(*t, R"({"a": "zz"})").shards, Shards{"s0"});
    EXPECT_EQ(target(*t, R"({"$and": [{"a": 0}]})").shards, Shards{"s1"});
    BsonObj explain = r.toBson();
    EXPECT_EQ(explain["kind"].stringValue(), "exactKey");
    EXPECT_EQ(explain["numChunks"].numberLong(), 1);
}

TEST(Targeter, RangesTargetOverlappingChunks) {
    auto t = rangedTable();
    TargetingResult r = target(*t, R"({"a": {"$gte": 3, "$lt": 12}})");
    EXPECT_EQ(r.kind, TargetingKind::kRanges);
    EXPECT_EQ(r.shards, (Shards{"s1", "s2"}));
    EXPECT_EQ(r.numChunks, 2u);
    // $lt 10 stops before the chunk that starts at 10.
    EXPECT_EQ(target(*t, R"({"a": {"$gt": 1, "$lt": 10}})").shards, Shards{"s1"});
    EXPECT_EQ(target(*t, R"({"a": {"$gt": 1, "$lte": 10}})").shards, (Shards{"s1", "s2"}));
    // Numbers are type-bracketed: $gt 3 excludes the string chunk.
    EXPECT_EQ(target(*t, R"({"a": {"$gt": 30}})").shards, Shards{"s2"});
    EXPECT_EQ(target(*t, R"({"a": {"$in": [-5, 5]}})").shards, (Shards{"s0", "s1"}));
    EXPECT_EQ(target(*t, R"({"a": {"$regex": "^q"}})").shards, Shards{"s0"});
}

TEST(Targeter, NoKeyPredicateIsAScatter) {
    auto t = rangedTable();
    for (const char* f : {"{}", R"({"b": 1})", R"({"$or": [{"a": 1}, {"a": 2}]})",
                          R"({"a": {"$ne": 1}})", R"({"a": {"$exists": true}})"}) {
        TargetingResult r = target(*t, f);
        EXPECT_EQ(r.kind, TargetingKind::kScatter) << f;
        EXPECT_EQ(r.shards, (Shards{"s0", "s1", "s2"})) << f;
        EXPECT_EQ(r.numChunks, 4u) << f;
    }
}

TEST(Targeter, ContradictionsStillContactOneShard) {
    auto t = rangedTable();
    TargetingResult r = target(*t, R"({"a": {"$gt": 5, "$lt": 2}})");
    EXPECT_EQ(r.kind, TargetingKind::kNoMatch);
    EXPECT_EQ(r.shards, Shards{"s0"});
    EXPECT_EQ(r.numChunks, 0u);
}

TEST(Targeter, NullMatchesMissingFields) {
    auto t = rangedTable();
    // Documents without `a` have shard key null, in the MinKey chunk.
    EXPECT_EQ(targetInsert(*t, obj(R"({"b": 1})")).getValue().shards, Shards{"s0"});
    EXPECT_EQ(target(*t, R"({"a": null})").shards, Shards{"s0"});
}

TEST(Targeter, InsertsGoToTheChunkOfTheirKey) {
    auto t = rangedTable();
    auto r = targetInsert(*t, obj(R"({"_id": 1, "a": 10})"));
    ASSERT_TRUE(r.isOK());
    EXPECT_EQ(r.getValue().shards, Shards{"s2"});
    EXPECT_EQ(*r.getValue().shardKey, obj(R"({"a": 10})"));
    auto bad = targetInsert(*t, obj(R"({"a": [1]})"));
    EXPECT_EQ(bad.getStatus().code(), 61);
    EXPECT_EQ(targetWrite(*t, obj(R"({"a": {"$lt": 0}})")).getValue().shards, Shards{"s0"});
    EXPECT_EQ(targetQuery(*t, obj(R"({"a": {"$bad": 1}})")).getStatus().code(), 2);
}

TEST(Targeter, HashedKeysTargetEqualitiesByHash) {
    ShardKeyPattern p = pattern(R"({"h": "hashed"})");
    auto chunks = initialChunksForHashedKey(p, gen(), {"s0", "s1", "s2", "s3"});
    ASSERT_TRUE(chunks.isOK());
    auto t = RoutingTable::make("db.h", p, gen(), chunks.getValue()).getValue();
    ASSERT_EQ(t->numChunks(), 8u);
    for (const char* v : {"1", "2.0", R"("abc")", R"({"$oid": "5b2be413c06d924ab26ff9ca"})"}) {
        std::string doc = std::string(R"({"h": )") + v + "}";
        TargetingResult q = target(*t, doc.c_str());
        EXPECT_EQ(q.kind, TargetingKind::kExactKey) << doc;
        ASSERT_EQ(q.shards.size(), 1u);
        EXPECT_EQ(q.shards, targetInsert(*t, obj(doc.c_str())).getValue().shards) << doc;
        EXPECT_EQ((*q.shardKey)["h"].int64Value(), hashElement(obj(doc.c_str())["h"]));
    }
    // 1 and NumberLong(1) and 1.5 hash equally.
    EXPECT_EQ(target(*t, R"({"h": 1})").shards, target(*t, R"({"h": 1.5})").shards);
    // A range on a hashed field cannot narrow.
    EXPECT_EQ(target(*t, R"({"h": {"$gt": 5}})").kind, TargetingKind::kScatter);
    TargetingResult in = target(*t, R"({"h": {"$in": [1, 2, 3]}})");
    EXPECT_EQ(in.kind, TargetingKind::kRanges);
    EXPECT_LE(in.numChunks, 3u);
}

TEST(Targeter, CompoundKeysUseTheLeadingFields) {
    ShardKeyPattern p = pattern(R"({"a": 1, "b": 1})");
    auto t =
        RoutingTable::make(
            "db.c", p, gen(),
            {chunk(p.globalMin(), obj(R"({"a": 1, "b": 5})"), "s0", 0),
             chunk(obj(R"({"a": 1, "b": 5})"), obj(R"({"a": 2, "b": {"$minKey": 1}})"), "s1", 1),
             chunk(obj(R"({"a": 2, "b": {"$minKey": 1}})"), p.globalMax(), "s2", 2)})
            .getValue();
    EXPECT_EQ(target(*t, R"({"a": 1})").shards, (Shards{"s0", "s1"}));
    EXPECT_EQ(target(*t, R"({"a": 1, "b": {"$gte": 6}})").shards, Shards{"s1"});
    EXPECT_EQ(target(*t, R"({"a": 1, "b": 4})").kind, TargetingKind::kExactKey);
    EXPECT_EQ(target(*t, R"({"a": 1, "b": 4})").shards, Shards{"s0"});
    EXPECT_EQ(target(*t, R"({"a": 2})").shards, Shards{"s2"});
    // Only a trailing field: scatter.
    EXPECT_EQ(target(*t, R"({"b": 4})").kind, TargetingKind::kScatter);
}

// --- Property: targeting never misses a shard that owns a matching document. ---

BsonObj randomDoc(std::mt19937& rng, const std::vector<std::string>& fields) {
    BsonBuilder b;
    b.appendInt32("_id", static_cast<int32_t>(rng()));
    for (const std::string& f : fields) {
        if (rng() % 6 == 0) continue;  // missing
        test::appendRandomValue(b, f, rng);
    }
    return b.obj();
}

void appendRandomPredicate(BsonBuilder& b, const std::string& field, std::mt19937& rng) {
    static const char* kOps[] = {"$gt", "$gte", "$lt", "$lte"};
    switch (rng() % 6) {
        case 0:
        case 1:
            test::appendRandomValue(b, field, rng);  // equality
            break;
        case 2: {
            b.startObject(field);
            test::appendRandomValue(b, kOps[rng() % 4], rng);
            b.end();
            break;
        }
        case 3: {
            b.startObject(field);
            test::appendRandomValue(b, kOps[rng() % 2], rng);
            test::appendRandomValue(b, kOps[2 + rng() % 2], rng);
            b.end();
            break;
        }
        case 4: {
            b.startObject(field).startArray("$in");
            int n = 1 + static_cast<int>(rng() % 3);
            for (int i = 0; i < n; ++i) test::appendRandomValue(b, std::to_string(i), rng);
            b.end().end();
            break;
        }
        default:
            b.startObject(field).appendBool("$exists", rng() % 2 == 0).end();
            break;
    }
}

BsonObj randomFilter(std::mt19937& rng, const std::vector<std::string>& fields) {
    BsonBuilder b;
    for (const std::string& f : fields) {
        if (rng() % 3 == 0) continue;
        appendRandomPredicate(b, f, rng);
    }
    if (rng() % 4 == 0) {
        b.startArray("$and").startObject("0");
        appendRandomPredicate(b, fields[rng() % fields.size()], rng);
        b.end().end();
    }
    return b.obj();
}

void checkNeverMisses(const char* patternJson, std::mt19937& rng) {
    ShardKeyPattern p = pattern(patternJson);
    std::vector<std::string> fields;
    for (size_t i = 0; i < p.numFields(); ++i) fields.push_back(p.fieldPath(i));
    fields.push_back("other");
    for (int round = 0; round < 30; ++round) {
        std::vector<Chunk> chunks;
        if (p.isHashed() && p.hasHashedPrefix()) {
            std::vector<ShardId> shards = {"s0", "s1", "s2", "s3"};
            chunks = initialChunksForHashedKey(p, gen(), shards, 1 + rng() % 12).getValue();
        } else {
            std::vector<BsonObj> points;
            std::set<std::string> seen;
            int n = static_cast<int>(rng() % 10);
            for (int i = 0; i < n; ++i) {
                auto key = p.extractShardKeyFromDoc(randomDoc(rng, fields));
                if (key.isOK() && seen.insert(p.encodeKey(key.getValue())).second &&
                    p.encodeKey(key.getValue()) != p.encodeKey(p.globalMin())) {
                    points.push_back(key.getValue());
                }
            }
            chunks = test::chunksAt(p, points, 4, rng);
        }
        auto table = RoutingTable::make("db.c", p, gen(), chunks);
        ASSERT_TRUE(table.isOK()) << table.getStatus().toString();
        const RoutingTable& t = *table.getValue();
        std::vector<BsonObj> docs;
        for (int i = 0; i < 60; ++i) docs.push_back(randomDoc(rng, fields));
        for (int f = 0; f < 40; ++f) {
            BsonObj filter = randomFilter(rng, fields);
            auto matcher = query::Matcher::parse(filter);
            ASSERT_TRUE(matcher.isOK()) << filter.toJson();
            auto targeted = targetQuery(t, filter);
            ASSERT_TRUE(targeted.isOK()) << filter.toJson();
            const auto& shards = targeted.getValue().shards;
            ASSERT_FALSE(shards.empty());
            for (const BsonObj& doc : docs) {
                if (!matcher.getValue()->matches(doc)) continue;
                ShardId owner = targetInsert(t, doc).getValue().shards[0];
                ASSERT_TRUE(std::find(shards.begin(), shards.end(), owner) != shards.end())
                    << patternJson << " filter " << filter.toJson() << " misses " << doc.toJson()
                    << " on " << owner << "; targeted " << targeted.getValue().toBson().toJson();
                if (targeted.getValue().kind == TargetingKind::kExactKey) {
                    ASSERT_EQ(shards.size(), 1u);
                }
            }
        }
    }
}

TEST(Targeter, PropertyNeverMissesAnOwningShard) {
    std::mt19937 rng(7);
    checkNeverMisses(R"({"a": 1})", rng);
    checkNeverMisses(R"({"a": 1, "b": 1})", rng);
    checkNeverMisses(R"({"a": "hashed"})", rng);
    checkNeverMisses(R"({"a": 1, "b": "hashed"})", rng);
}

}  // namespace
}  // namespace tessera::placement
