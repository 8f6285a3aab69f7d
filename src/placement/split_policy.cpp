#include "placement/split_policy.h"

#include <algorithm>
#include <limits>

#include "bson/bson_builder.h"

namespace tessera::placement {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;

std::vector<BsonObj> calculateHashedSplitPoints(const ShardKeyPattern& pattern,
                                                int numInitialChunks, bson::BsonView prefix) {
    invariant(pattern.isHashed());
    invariant(numInitialChunks > 0);
    size_t hashed = *pattern.hashedFieldIndex();
    auto build = [&](int64_t value) {
        BsonBuilder b;
        size_t i = 0;
        for (const BsonElement& e : prefix) {
            if (i >= hashed) break;
            b.appendElementAs(e, pattern.fieldPath(i++));
        }
        invariant(i == hashed);
        b.appendInt64(pattern.fieldPath(hashed), value);
        for (size_t j = hashed + 1; j < pattern.numFields(); ++j) {
            b.appendMinKey(pattern.fieldPath(j));
        }
        return std::make_pair(value, b.obj());
    };
    std::vector<std::pair<int64_t, BsonObj>> points;
    if (numInitialChunks == 1) return {};
    const int64_t intervalSize = (std::numeric_limits<int64_t>::max() / numInitialChunks) * 2;
    int64_t current = 0;
    if (numInitialChunks % 2 == 0) {
        points.push_back(build(current));
        current += intervalSize;
    } else {
        current += intervalSize / 2;
    }
    for (int i = 0; i < (numInitialChunks - 1) / 2; ++i) {
        points.push_back(build(current));
        points.push_back(build(-current));
        current += intervalSize;
    }
    std::sort(points.begin(), points.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<BsonObj> out;
    for (auto& p : points) out.push_back(std::move(p.second));
    return out;
}

StatusWith<std::vector<Chunk>> makeInitialChunks(const ShardKeyPattern& pattern,
                                                 CollectionGeneration gen,
                                                 std::vector<BsonObj> splitPoints,
                                                 const std::vector<ShardId>& shards) {
    if (shards.empty()) return Status(ErrorCodes::BadValue, "no shards to place chunks on");
    std::vector<std::pair<std::string, BsonObj>> points;
    for (BsonObj& p : splitPoints) {
        TRY_STATUS(pattern.validateKey(p).withContext("split point: "));
        points.emplace_back(pattern.encodeKey(p), std::move(p));
    }
    std::sort(points.begin(), points.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    points.erase(std::unique(points.begin(), points.end(),
                             [](const auto& a, const auto& b) { return a.first == b.first; }),
                 points.end());
    std::string minKey = pattern.encodeKey(pattern.globalMin());
    std::string maxKey = pattern.encodeKey(pattern.globalMax());
    for (const auto& p : points) {
        if (p.first <= minKey || p.first >= maxKey) {
            return Status(ErrorCodes::BadValue,
                          "split point " + p.second.toJson() + " is a global bound");
        }
    }
    std::vector<Chunk> chunks;
    ChunkVersion version(gen, 1, 0);
    for (size_t i = 0; i <= points.size(); ++i) {
        Chunk c;
        c.min = i == 0 ? pattern.globalMin() : points[i - 1].second;
        c.max = i < points.size() ? points[i].second : pattern.globalMax();
        c.shard = shards[i % shards.size()];
        c.version = version;
        version = version.incMinor();
        chunks.push_back(std::move(c));
    }
    return chunks;
}

Status checkNumInitialChunks(int64_t n, size_t numShards) {
    if (n < 0) return Status(ErrorCodes::InvalidOptions, "numInitialChunks cannot be negative");
    const int64_t perShards = kMaxInitialChunksPerShard * static_cast<int64_t>(numShards);
    if (n > kMaxInitialChunksTotal || (numShards > 0 && n > perShards)) {
        return Status(ErrorCodes::InvalidOptions,
                      "numInitialChunks cannot be more than either: " +
                          std::to_string(numShards > 0 ? perShards : kMaxInitialChunksTotal) +
                          ", 8192 * number of shards; or 1000000");
    }
    return Status::OK();
}

StatusWith<std::vector<Chunk>> initialChunksForHashedKey(const ShardKeyPattern& pattern,
                                                         CollectionGeneration gen,
                                                         const std::vector<ShardId>& shards,
                                                         int numInitialChunks) {
    if (!pattern.isHashed()) {
        return Status(ErrorCodes::InvalidOptions,
                      "numInitialChunks is only supported when the collection is empty and has a "
                      "hashed field in the shard key pattern");
    }
    if (!pattern.hasHashedPrefix()) {
        return Status(ErrorCodes::BadValue,
                      "pre-splitting a shard key with a ranged prefix before the hashed field "
                      "needs zones (presplitHashedZones)");
    }
    if (shards.empty()) return Status(ErrorCodes::BadValue, "no shards to place chunks on");
    TRY_STATUS(checkNumInitialChunks(numInitialChunks, shards.size()));
    int n = numInitialChunks == 0 ? kDefaultInitialChunksPerShard * static_cast<int>(shards.size())
                                  : numInitialChunks;
    return makeInitialChunks(pattern, gen, calculateHashedSplitPoints(pattern, n), shards);
}

SplitPointsResult splitPointsFromKeys(const ShardKeyPattern& pattern, std::vector<BsonObj> keys,
                                      int64_t avgDocBytes, int64_t maxChunkBytes) {
    SplitPointsResult result;
    if (keys.empty()) return result;
    int64_t perChunk = std::max<int64_t>(1, maxChunkBytes / std::max<int64_t>(1, avgDocBytes));
    std::vector<std::pair<std::string, BsonObj>> sorted;
    sorted.reserve(keys.size());
    for (BsonObj& k : keys) sorted.emplace_back(pattern.encodeKey(k), std::move(k));
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });

    // Walk runs of equal keys. A run starts a new chunk when the current chunk is full, or when
    // the run alone overflows a chunk (then it gets a chunk of its own: a jumbo range).
    int64_t inChunk = 0;  // documents in the chunk being filled
    for (size_t i = 0; i < sorted.size();) {
        size_t j = i + 1;
        while (j < sorted.size() && sorted[j].first == sorted[i].first) ++j;
        int64_t run = static_cast<int64_t>(j - i);
        bool jumbo = run > perChunk;
        if (jumbo) result.unsplittableKeys.push_back(sorted[i].second);
        if (inChunk > 0 && (inChunk >= perChunk || jumbo)) {
            result.splitPoints.push_back(sorted[i].second);
            inChunk = 0;
        }
        inChunk += run;
        i = j;
    }
    return result;
}

}  // namespace tessera::placement
