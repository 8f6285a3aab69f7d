#pragma once

#include <gtest/gtest.h>

#include "bson/bson_obj.h"
#include "placement/chunk_version.h"
#include "placement/shard_key_pattern.h"

namespace tessera::placement::test {

inline bson::BsonObj obj(const char* json) { return bson::fromJson(json); }

inline ShardKeyPattern pattern(const char* json) {
    auto p = ShardKeyPattern::parse(obj(json));
    EXPECT_TRUE(p.isOK()) << json << ": " << p.getStatus().toString();
    return std::move(p).getValue();
}

inline CollectionGeneration gen(uint8_t epochByte = 1, uint32_t secs = 100) {
    CollectionGeneration g;
    g.epoch.bytes[11] = epochByte;
    g.timestamp = Timestamp::fromParts(secs, 1);
    return g;
}

}  // namespace tessera::placement::test

#include <algorithm>
#include <random>
#include <vector>

#include "bson/bson_builder.h"
#include "placement/chunk_map.h"

namespace tessera::placement::test {

// Chunks split at `splitPoints` (valid keys, any order, distinct), on random shards "s0".."sN-1",
// with distinct versions 1|0, 1|1, ...
inline std::vector<Chunk> chunksAt(const ShardKeyPattern& p, std::vector<bson::BsonObj> points,
                                   int numShards, std::mt19937& rng,
                                   CollectionGeneration g = gen()) {
    std::sort(points.begin(), points.end(), [&](const bson::BsonObj& a, const bson::BsonObj& b) {
        return p.encodeKey(a) < p.encodeKey(b);
    });
    std::vector<Chunk> out;
    ChunkVersion v(g, 1, 0);
    for (size_t i = 0; i <= points.size(); ++i) {
        Chunk c;
        c.min = i == 0 ? p.globalMin() : points[i - 1];
        c.max = i < points.size() ? points[i] : p.globalMax();
        c.shard = "s" + std::to_string(rng() % numShards);
        c.version = v;
        v = v.incMinor();
        out.push_back(std::move(c));
    }
    return out;
}

// A random value from a small domain that exercises the type order: null, numbers (int, long,
// double), strings, bools, a document.
inline void appendRandomValue(bson::BsonBuilder& b, std::string_view name, std::mt19937& rng) {
    switch (rng() % 8) {
        case 0:
            b.appendNull(name);
            break;
        case 1:
            b.appendInt32(name, static_cast<int32_t>(rng() % 20) - 5);
            break;
        case 2:
            b.appendInt64(name, static_cast<int64_t>(rng() % 20) - 5);
            break;
        case 3:
            b.appendDouble(name, static_cast<double>(static_cast<int>(rng() % 40) - 10) / 2);
            break;
        case 4:
        case 5:
            b.appendString(name, std::string(1, static_cast<char>('a' + rng() % 6)));
            break;
        case 6:
            b.appendBool(name, rng() % 2 == 0);
            break;
        default:
            b.startObject(name).appendInt32("x", static_cast<int32_t>(rng() % 3)).end();
            break;
    }
}

}  // namespace tessera::placement::test
