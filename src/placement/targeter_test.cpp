#include "placement/targeter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <random>
#include <set>

#include "bson/compare.h"
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

// --- The exact-key fast path gives what the planner-based analysis gives. ---

// A value of a type the fast path accepts, chosen around numeric equality across types (1, 1.0,
// NumberLong(1), NumberDecimal("1.0")), signed zeros, NaN, infinities, the edges of int32/int64
// and of exact doubles, plus each other plain type.
void appendPlainValue(BsonBuilder& b, std::string_view name, std::mt19937& rng) {
    static const int64_t kLongs[] = {0,
                                     1,
                                     -1,
                                     10,
                                     int64_t{1} << 53,
                                     (int64_t{1} << 53) + 1,
                                     std::numeric_limits<int64_t>::max(),
                                     std::numeric_limits<int64_t>::min()};
    static const double kDoubles[] = {1.0,
                                      0.0,
                                      -0.0,
                                      1.5,
                                      -7.25,
                                      9007199254740992.0,
                                      9223372036854775808.0,
                                      1e300,
                                      -1e300,
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity(),
                                      std::numeric_limits<double>::quiet_NaN()};
    static const char* kDecimals[] = {"1", "1.0", "-0", "0.1", "1E+400", "-Infinity", "NaN"};
    static const char* kStrings[] = {"", "a", "m", "zz", "abc", "\xc3\xa9t\xc3\xa9"};
    switch (rng() % 14) {
        case 0:
        case 1:
            b.appendInt32(name, static_cast<int32_t>(rng() % 30) - 10);
            break;
        case 2:
            b.appendInt32(name, rng() % 2 ? std::numeric_limits<int32_t>::max()
                                          : std::numeric_limits<int32_t>::min());
            break;
        case 3:
            b.appendInt64(name, kLongs[rng() % std::size(kLongs)]);
            break;
        case 4:
            b.appendDouble(name, kDoubles[rng() % std::size(kDoubles)]);
            break;
        case 5:
            b.appendDouble(name, static_cast<double>(static_cast<int>(rng() % 30) - 10));
            break;
        case 6:
            b.appendDecimal(name, bson::Decimal128::fromString(kDecimals[rng() % 7]));
            break;
        case 7:
        case 8:
            b.appendString(name, kStrings[rng() % std::size(kStrings)]);
            break;
        case 9: {
            bson::ObjectId oid;
            oid.bytes[rng() % 12] = static_cast<uint8_t>(rng());
            b.appendOid(name, oid);
            break;
        }
        case 10:
            b.appendBool(name, rng() % 2 == 0);
            break;
        case 11:
            b.appendDate(name, static_cast<int64_t>(rng() % 5) * 86'400'000 - 86'400'000);
            break;
        case 12:
            b.appendTimestamp(name, (uint64_t{rng() % 4} << 32) | (rng() % 3));
            break;
        default:
            b.appendBinary(name, static_cast<uint8_t>(rng() % 2 ? 0 : 4),
                           std::string(rng() % 3, static_cast<char>('a' + rng() % 3)));
            break;
    }
}

// A table split at the shard keys of random plain values, on "s0".."s3".
std::shared_ptr<const RoutingTable> randomPlainTable(const ShardKeyPattern& p, std::mt19937& rng) {
    std::vector<BsonObj> points;
    std::set<std::string> seen = {p.encodeKey(p.globalMin())};
    int n = 2 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
        BsonBuilder doc;
        for (size_t f = 0; f < p.numFields(); ++f) {
            // Dotted paths as embedded documents, as a document would hold them.
            const std::string& path = p.fieldPath(f);
            size_t dot = path.find('.');
            if (dot == std::string::npos) {
                appendPlainValue(doc, path, rng);
            } else {
                doc.startObject(path.substr(0, dot));
                appendPlainValue(doc, path.substr(dot + 1), rng);
                doc.end();
            }
        }
        BsonObj key = p.extractShardKeyFromDoc(doc.obj()).getValue();
        if (seen.insert(p.encodeKey(key)).second) points.push_back(key);
    }
    auto t = RoutingTable::make("db.c", p, gen(), test::chunksAt(p, points, 4, rng));
    EXPECT_TRUE(t.isOK()) << t.getStatus().toString();
    return t.getValue();
}

void expectSameTargeting(const RoutingTable& t, const BsonObj& fast, const BsonObj& slow) {
    auto f = targetQuery(t, fast);
    auto s = targetQuery(t, slow);
    ASSERT_TRUE(f.isOK()) << fast.toJson() << ": " << f.getStatus().toString();
    ASSERT_TRUE(s.isOK()) << slow.toJson() << ": " << s.getStatus().toString();
    const TargetingResult& fr = f.getValue();
    const TargetingResult& sr = s.getValue();
    std::string context = fast.toJson() + " vs " + slow.toJson() + " on " +
                          t.shardKeyPattern().toString() + ": " + fr.toBson().toJson() + " vs " +
                          sr.toBson().toJson();
    EXPECT_EQ(fr.kind, sr.kind) << context;
    EXPECT_EQ(fr.shards, sr.shards) << context;
    EXPECT_EQ(fr.numChunks, sr.numChunks) << context;
    ASSERT_EQ(fr.shardKey.has_value(), sr.shardKey.has_value()) << context;
    if (fr.shardKey) {
        EXPECT_EQ(bson::compareObjects(*fr.shardKey, *sr.shardKey), 0) << context;
        EXPECT_EQ(fr.shardKey->bytes(), sr.shardKey->bytes()) << context;  // same types too
    }
    EXPECT_EQ(fr.toBson().bytes(), sr.toBson().bytes()) << context;
}

TEST(TargeterExactKey, PropertyFastPathAgreesWithThePlanner) {
    std::mt19937 rng(20261129);
    for (const char* json : {R"({"_id": 1})", R"({"a": 1})", R"({"a": 1, "b": 1})", R"({"a.b": 1})",
                             R"({"a": "hashed"})", R"({"a": "hashed", "b": 1})",
                             R"({"a": 1, "b": "hashed"})", R"({"a": 1, "b.c": 1, "d": 1})"}) {
        ShardKeyPattern p = pattern(json);
        for (int round = 0; round < 15; ++round) {
            auto t = randomPlainTable(p, rng);
            for (int q = 0; q < 80; ++q) {
                std::vector<size_t> order(p.numFields());
                for (size_t i = 0; i < order.size(); ++i) order[i] = i;
                std::shuffle(order.begin(), order.end(), rng);  // any field order
                BsonBuilder values;
                for (size_t i : order) appendPlainValue(values, p.fieldPath(i), rng);
                BsonObj fast = values.obj();
                BsonBuilder eq;
                for (const bson::BsonElement& e : fast) {
                    eq.startObject(e.fieldName()).appendElementAs(e, "$eq").end();
                }
                BsonObj slow = eq.obj();
                ASSERT_TRUE(detail::targetExactKeyForTest(*t, fast).has_value()) << fast.toJson();
                ASSERT_FALSE(detail::targetExactKeyForTest(*t, slow).has_value()) << slow.toJson();
                expectSameTargeting(*t, fast, slow);
                if (HasFailure()) return;
            }
        }
    }
}

TEST(TargeterExactKey, NumbersEqualByValueTargetTheSameChunk) {
    ShardKeyPattern p = pattern(R"({"_id": 1})");
    auto t = RoutingTable::make("db.c", p, gen(),
                                {chunk(p.globalMin(), obj(R"({"_id": 1})"), "s0", 0),
                                 chunk(obj(R"({"_id": 1})"), obj(R"({"_id": 2})"), "s1", 1),
                                 chunk(obj(R"({"_id": 2})"), p.globalMax(), "s2", 2)})
                 .getValue();
    for (const char* f : {R"({"_id": 1})", R"({"_id": 1.0})", R"({"_id": {"$numberLong": "1"}})",
                          R"({"_id": {"$numberDecimal": "1.00"}})", R"({"_id": 1.5})"}) {
        TargetingResult r = target(*t, f);
        EXPECT_EQ(r.kind, TargetingKind::kExactKey) << f;
        EXPECT_EQ(r.shards, Shards{"s1"}) << f;
        EXPECT_EQ(r.shardKey->firstElement().type(), obj(f).firstElement().type()) << f;
    }
    EXPECT_EQ(target(*t, R"({"_id": 0.999})").shards, Shards{"s0"});
    EXPECT_EQ(target(*t, R"({"_id": -0.0})").shards, Shards{"s0"});
    EXPECT_EQ(target(*t, R"({"_id": 2})").shards, Shards{"s2"});
    EXPECT_EQ(target(*t, R"({"_id": "1"})").shards, Shards{"s2"});  // strings sort after numbers
    // NaN equals only NaN and sorts below every number: the MinKey chunk, on both paths.
    BsonBuilder values;
    values.appendDouble("0", std::numeric_limits<double>::quiet_NaN())
        .appendDecimal("1", bson::Decimal128::fromString("NaN"))
        .appendDouble("2", -0.0)
        .appendDouble("3", 1e300);
    BsonObj all = values.obj();
    for (const bson::BsonElement& v : all) {
        BsonBuilder fast, slow;
        fast.appendElementAs(v, "_id");
        slow.startObject("_id").appendElementAs(v, "$eq").end();
        BsonObj f = fast.obj();
        ASSERT_TRUE(detail::targetExactKeyForTest(*t, f).has_value());
        expectSameTargeting(*t, f, slow.obj());
    }
    BsonBuilder nan;
    nan.appendDouble("_id", std::numeric_limits<double>::quiet_NaN());
    EXPECT_EQ(targetQuery(*t, nan.obj()).getValue().shards, Shards{"s0"});
}

TEST(TargeterExactKey, OtherShapesTakeTheFullAnalysis) {
    ShardKeyPattern p = pattern(R"({"a": 1, "b": 1})");
    std::mt19937 rng(11);
    auto t = randomPlainTable(p, rng);
    ASSERT_GT(t->shards().size(), 1u);
    auto owner = [&](const char* doc) { return targetInsert(*t, obj(doc)).getValue().shards; };
    auto fastPathTakes = [&](const char* f) {
        return detail::targetExactKeyForTest(*t, obj(f)).has_value();
    };

    for (const char* f : {
             R"({"a": 1, "b": 2, "c": 3})",             // extra field
             R"({"a": 1})",                             // missing field
             R"({"a": 1, "b": {"x": 1}})",              // embedded document
             R"({"a": 1, "b": {"$gt": 1}})",            // operator
             R"({"a": 1, "b": [1, 2]})",                // array
             R"({"a": 1, "b": null})",                  // null also matches missing
             R"({"a": 1, "b": {"$regex": "^x"}})",      // regex
             R"({"a": 1, "b": {"$minKey": 1}})",        // MinKey
             R"({"a": 1, "b": {"$undefined": true}})",  // undefined
             R"({"$and": [{"a": 1}, {"b": 2}]})",       // operator at the top
             R"({"a": 1, "b": {"$symbol": "x"}})",      // symbol
         }) {
        EXPECT_FALSE(fastPathTakes(f)) << f;
    }
    BsonBuilder dup;
    dup.appendInt32("a", 1).appendInt32("a", 1).appendInt32("b", 2);
    EXPECT_FALSE(detail::targetExactKeyForTest(*t, dup.obj()).has_value());

    // Still targeted right by the full analysis.
    TargetingResult extra = target(*t, R"({"a": 1, "b": 2, "c": 3})");
    EXPECT_EQ(extra.kind, TargetingKind::kExactKey);
    EXPECT_EQ(extra.shards, owner(R"({"a": 1, "b": 2})"));
    EXPECT_EQ(*extra.shardKey, obj(R"({"a": 1, "b": 2})"));
    TargetingResult embedded = target(*t, R"({"a": 1, "b": {"x": 1}})");
    EXPECT_EQ(embedded.kind, TargetingKind::kExactKey);
    EXPECT_EQ(embedded.shards, owner(R"({"a": 1, "b": {"x": 1}})"));
    TargetingResult prefix = target(*t, R"({"a": 1})");
    EXPECT_NE(prefix.kind, TargetingKind::kExactKey);
    EXPECT_EQ(prefix.shards, target(*t, R"({"a": {"$eq": 1}})").shards);
    for (const char* doc : {R"({"a": 1})", R"({"a": 1, "b": 7})", R"({"a": 1, "b": "z"})"}) {
        for (const ShardId& s : owner(doc)) {
            EXPECT_NE(std::find(prefix.shards.begin(), prefix.shards.end(), s), prefix.shards.end())
                << doc;
        }
    }
    TargetingResult nul = target(*t, R"({"a": 1, "b": null})");
    EXPECT_NE(nul.kind, TargetingKind::kExactKey);  // [undefined, null] is not a point
    for (const ShardId& s : owner(R"({"a": 1})")) {
        EXPECT_NE(std::find(nul.shards.begin(), nul.shards.end(), s), nul.shards.end());
    }
    TargetingResult arr = target(*t, R"({"a": 1, "b": [1, 2]})");
    EXPECT_NE(arr.kind, TargetingKind::kExactKey);
    EXPECT_EQ(target(*t, R"({"a": 1, "b": {"$gt": 1}})").kind, TargetingKind::kRanges);
    EXPECT_EQ(targetQuery(*t, obj(R"({"$and": [{"a": 1}, {"b": 2}]})")).getValue().shards,
              owner(R"({"a": 1, "b": 2})"));

    // A dotted path pinned through its enclosing document is exact, by the full analysis.
    ShardKeyPattern dotted = pattern(R"({"a.b": 1})");
    auto td = randomPlainTable(dotted, rng);
    EXPECT_FALSE(detail::targetExactKeyForTest(*td, obj(R"({"a": {"b": 3}})")).has_value());
    EXPECT_TRUE(detail::targetExactKeyForTest(*td, obj(R"({"a.b": 3})")).has_value());
    EXPECT_EQ(target(*td, R"({"a.b": 3})").shards,
              targetInsert(*td, obj(R"({"a": {"b": 3}})")).getValue().shards);
}

}  // namespace
}  // namespace tessera::placement
