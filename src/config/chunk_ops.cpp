#include "config/chunk_ops.h"

#include <algorithm>

#include "bson/compare.h"

namespace tessera::config {

using placement::ShardKeyPattern;

MajorMinor maxVersion(const std::vector<ChunkRecord>& chunks,
                      const std::optional<std::string>& shard) {
    MajorMinor best;
    for (const ChunkRecord& c : chunks) {
        if (shard && c.shard != *shard) continue;
        if (c.major > best.major || (c.major == best.major && c.minor > best.minor)) {
            best = {c.major, c.minor};
        }
    }
    return best;
}

void sortChunks(const ShardKeyPattern& pattern, std::vector<ChunkRecord>& chunks) {
    std::vector<std::pair<std::string, ChunkRecord>> keyed;
    keyed.reserve(chunks.size());
    for (ChunkRecord& c : chunks) keyed.emplace_back(pattern.encodeKey(c.min), std::move(c));
    std::sort(keyed.begin(), keyed.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    chunks.clear();
    for (auto& [k, c] : keyed) chunks.push_back(std::move(c));
}

std::optional<size_t> findChunkContaining(const ShardKeyPattern& pattern,
                                          const std::vector<ChunkRecord>& chunks,
                                          bson::BsonView key) {
    std::string k = pattern.encodeKey(key);
    for (size_t i = 0; i < chunks.size(); ++i) {
        std::string lo = pattern.encodeKey(chunks[i].min);
        std::string hi = pattern.encodeKey(chunks[i].max);
        bool last = i + 1 == chunks.size();
        if (lo <= k && (k < hi || (last && k == hi))) return i;
    }
    return std::nullopt;
}

std::optional<size_t> findChunkWithBounds(const std::vector<ChunkRecord>& chunks,
                                          bson::BsonView min, bson::BsonView max) {
    for (size_t i = 0; i < chunks.size(); ++i) {
        if (bson::compareObjects(chunks[i].min, min) == 0 &&
            bson::compareObjects(chunks[i].max, max) == 0) {
            return i;
        }
    }
    return std::nullopt;
}

StatusWith<SplitResult> computeSplit(const ShardKeyPattern& pattern,
                                     const std::vector<ChunkRecord>& chunks, size_t index,
                                     std::vector<bson::BsonObj> splitPoints) {
    invariant(index < chunks.size());
    const ChunkRecord& chunk = chunks[index];
    if (splitPoints.empty()) {
        return Status(ErrorCodes::InvalidOptions, "no split points given");
    }
    std::string lo = pattern.encodeKey(chunk.min);
    std::string hi = pattern.encodeKey(chunk.max);
    std::vector<std::pair<std::string, bson::BsonObj>> points;
    for (bson::BsonObj& p : splitPoints) {
        TRY_STATUS(pattern.validateKey(p));
        std::string e = pattern.encodeKey(p);
        if (e <= lo || e >= hi) {
            return Status(ErrorCodes::InvalidOptions,
                          "split point " + p.toJson() + " is not strictly inside the chunk [" +
                              chunk.min.toJson() + ", " + chunk.max.toJson() + ")");
        }
        points.emplace_back(std::move(e), std::move(p));
    }
    std::sort(points.begin(), points.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    points.erase(std::unique(points.begin(), points.end(),
                             [](const auto& a, const auto& b) { return a.first == b.first; }),
                 points.end());

    MajorMinor coll = maxVersion(chunks);
    MajorMinor shard = maxVersion(chunks, chunk.shard);
    MajorMinor next = coll;
    if (shard == coll) next = {coll.major + 1, 0};

    SplitResult result;
    std::vector<bson::BsonObj> bounds;
    bounds.push_back(chunk.min);
    for (auto& [e, p] : points) bounds.push_back(p);
    bounds.push_back(chunk.max);
    for (size_t i = 0; i + 1 < bounds.size(); ++i) {
        ChunkRecord c = chunk;
        if (i > 0) c.id = bson::ObjectId::generate();
        c.min = bounds[i];
        c.max = bounds[i + 1];
        next.minor += 1;
        c.major = next.major;
        c.minor = next.minor;
        if (i == 0) {
            result.updated = std::move(c);
        } else {
            result.inserted.push_back(std::move(c));
        }
    }
    return result;
}

StatusWith<MergeResult> computeMerge(const ShardKeyPattern& pattern,
                                     const std::vector<ChunkRecord>& chunks, bson::BsonView min,
                                     bson::BsonView max, Timestamp now) {
    TRY_STATUS(pattern.validateKey(min));
    TRY_STATUS(pattern.validateKey(max));
    std::string lo = pattern.encodeKey(min);
    std::string hi = pattern.encodeKey(max);
    if (lo >= hi) return Status(ErrorCodes::BadValue, "merge bounds must have min < max");
    std::vector<ChunkRecord> sorted = chunks;
    sortChunks(pattern, sorted);
    std::vector<size_t> inRange;
    for (size_t i = 0; i < sorted.size(); ++i) {
        std::string cmin = pattern.encodeKey(sorted[i].min);
        std::string cmax = pattern.encodeKey(sorted[i].max);
        if (cmin >= lo && cmax <= hi) {
            inRange.push_back(i);
        } else if (cmin < hi && cmax > lo) {
            return Status(ErrorCodes::IllegalOperation, "could not merge chunks: the range [" +
                                                            bson::BsonView(min).toJson() + ", " +
                                                            bson::BsonView(max).toJson() +
                                                            ") does not fall on chunk boundaries");
        }
    }
    if (inRange.empty() || pattern.encodeKey(sorted[inRange.front()].min) != lo ||
        pattern.encodeKey(sorted[inRange.back()].max) != hi) {
        return Status(ErrorCodes::IllegalOperation,
                      "could not merge chunks: no chunks exactly cover the range");
    }
    if (inRange.size() < 2) {
        return Status(ErrorCodes::IllegalOperation,
                      "could not merge chunks: the range holds only one chunk");
    }
    const std::string& shard = sorted[inRange.front()].shard;
    for (size_t i : inRange) {
        if (sorted[i].shard != shard) {
            return Status(ErrorCodes::IllegalOperation,
                          "could not merge chunks: the chunks are not all on shard " + shard);
        }
    }
    MajorMinor coll = maxVersion(chunks);
    MergeResult result;
    result.merged = sorted[inRange.front()];
    result.merged.max = sorted[inRange.back()].max;
    result.merged.major = coll.major + 1;
    result.merged.minor = 0;
    result.merged.history = {{now, shard}};
    for (size_t k = 1; k < inRange.size(); ++k) result.removed.push_back(sorted[inRange[k]].id);
    return result;
}

MoveResult computeMoveCommit(const std::vector<ChunkRecord>& chunks, size_t index,
                             const std::string& toShard, Timestamp now) {
    invariant(index < chunks.size());
    MajorMinor coll = maxVersion(chunks);
    const std::string donor = chunks[index].shard;
    MoveResult result;
    result.moved = chunks[index];
    result.moved.shard = toShard;
    result.moved.major = coll.major + 1;
    result.moved.minor = 0;
    result.moved.onCurrentShardSince = now;
    result.moved.history.insert(result.moved.history.begin(), {now, toShard});

    // Control chunk: the donor's remaining chunk with the lowest min (any would do; lowest is
    // deterministic). `chunks` may be unsorted, so compare bounds.
    std::optional<size_t> control;
    for (size_t i = 0; i < chunks.size(); ++i) {
        if (i == index || chunks[i].shard != donor) continue;
        if (!control || bson::compareObjects(chunks[i].min, chunks[*control].min) < 0) {
            control = i;
        }
    }
    if (control) {
        ChunkRecord c = chunks[*control];
        c.major = coll.major + 1;
        c.minor = 1;
        result.control = std::move(c);
    }
    return result;
}

}  // namespace tessera::config
