#include "placement/chunk_map.h"

#include <algorithm>

namespace tessera::placement {
namespace {

Status conflict(std::string msg) {
    return Status(ErrorCodes::ConflictingOperationInProgress, std::move(msg));
}

std::string rangeString(const Chunk& c) {
    return "[" + c.min.toJson() + ", " + c.max.toJson() + ")";
}

}  // namespace

StatusWith<ChunkMap> ChunkMap::make(const ShardKeyPattern& pattern, CollectionGeneration gen,
                                    std::vector<Chunk> chunks) {
    if (chunks.empty()) return Status(ErrorCodes::BadValue, "a sharded collection has no chunks");
    ChunkMap map;
    map._gen = gen;
    map._entries.reserve(chunks.size());
    for (Chunk& c : chunks) {
        TRY_STATUS(pattern.validateKey(c.min).withContext("chunk min: "));
        TRY_STATUS(pattern.validateKey(c.max).withContext("chunk max: "));
        Entry e{std::move(c), {}, {}};
        e.min = pattern.encodeKey(e.chunk.min);
        e.max = pattern.encodeKey(e.chunk.max);
        if (!(e.min < e.max)) {
            return Status(ErrorCodes::BadValue,
                          "chunk " + rangeString(e.chunk) + " has min not less than max");
        }
        if (e.chunk.shard.empty()) {
            return Status(ErrorCodes::BadValue, "chunk " + rangeString(e.chunk) + " has no shard");
        }
        if (!(e.chunk.version.generation() == gen)) {
            return conflict("chunk " + rangeString(e.chunk) + " has version " +
                            e.chunk.version.toString() + " of another collection generation");
        }
        if (e.chunk.version.majorVersion() == 0) {
            return Status(ErrorCodes::BadValue, "chunk " + rangeString(e.chunk) +
                                                    " has unset version " +
                                                    e.chunk.version.toString());
        }
        map._entries.push_back(std::move(e));
    }
    std::sort(map._entries.begin(), map._entries.end(),
              [](const Entry& a, const Entry& b) { return a.min < b.min; });

    if (map._entries.front().min != pattern.encodeKey(pattern.globalMin())) {
        return conflict("gap in the chunk map: the first chunk " +
                        rangeString(map._entries.front().chunk) + " does not start at MinKey");
    }
    if (map._entries.back().max != pattern.encodeKey(pattern.globalMax())) {
        return conflict("gap in the chunk map: the last chunk " +
                        rangeString(map._entries.back().chunk) + " does not end at MaxKey");
    }
    for (size_t i = 1; i < map._entries.size(); ++i) {
        const Entry& prev = map._entries[i - 1];
        const Entry& next = map._entries[i];
        if (prev.max < next.min) {
            return conflict("gap in the chunk map between " + rangeString(prev.chunk) + " and " +
                            rangeString(next.chunk));
        }
        if (prev.max > next.min) {
            return conflict("overlap in the chunk map between " + rangeString(prev.chunk) +
                            " and " + rangeString(next.chunk));
        }
    }
    return map;
}

StatusWith<ChunkMap> ChunkMap::makeUpdated(const ShardKeyPattern& pattern,
                                           std::vector<Chunk> changed) const {
    if (changed.empty()) return *this;
    std::vector<bool> replaced(_entries.size(), false);
    for (const Chunk& c : changed) {
        if (!(c.version.generation() == _gen)) {
            return conflict("changed chunk " + rangeString(c) + " has version " +
                            c.version.toString() + " of another collection generation");
        }
        TRY_STATUS(pattern.validateKey(c.min).withContext("chunk min: "));
        TRY_STATUS(pattern.validateKey(c.max).withContext("chunk max: "));
        KeyRange r{pattern.encodeKey(c.min), pattern.encodeKey(c.max)};
        if (!(r.low < r.high)) {
            return Status(ErrorCodes::BadValue,
                          "chunk " + rangeString(c) + " has min not less than max");
        }
        auto [first, last] = overlappingRange(r);
        for (size_t i = first; i < last; ++i) replaced[i] = true;
    }
    std::vector<Chunk> all;
    all.reserve(_entries.size() + changed.size());
    for (size_t i = 0; i < _entries.size(); ++i) {
        if (!replaced[i]) all.push_back(_entries[i].chunk);
    }
    for (Chunk& c : changed) all.push_back(std::move(c));
    return make(pattern, _gen, std::move(all));
}

size_t ChunkMap::findChunkIndex(std::string_view encodedKey) const {
    invariant(!_entries.empty());
    // The first chunk whose max is above the key; the global max key itself belongs to the last.
    auto it = std::upper_bound(
        _entries.begin(), _entries.end(), encodedKey,
        [](std::string_view key, const Entry& e) { return key < std::string_view(e.max); });
    if (it == _entries.end()) return _entries.size() - 1;
    return static_cast<size_t>(it - _entries.begin());
}

std::pair<size_t, size_t> ChunkMap::overlappingRange(const KeyRange& range) const {
    if (!range.high.empty() && !(range.low < range.high)) return {0, 0};
    // First chunk that ends after `low` (the last chunk also holds the global max itself).
    auto first =
        std::upper_bound(_entries.begin(), _entries.end(), range.low,
                         [](const std::string& key, const Entry& e) { return key < e.max; });
    if (first == _entries.end() && !_entries.empty() && range.low == _entries.back().max) {
        first = _entries.end() - 1;
    }
    // First chunk that starts at or after `high`.
    auto last =
        range.high.empty()
            ? _entries.end()
            : std::lower_bound(_entries.begin(), _entries.end(), range.high,
                               [](const Entry& e, const std::string& key) { return e.min < key; });
    if (last <= first) return {0, 0};
    return {static_cast<size_t>(first - _entries.begin()),
            static_cast<size_t>(last - _entries.begin())};
}

ChunkVersion ChunkMap::maxVersion() const {
    ChunkVersion best;
    for (const Entry& e : _entries) {
        if (best.isUnsharded() || best.isOlderThan(e.chunk.version)) best = e.chunk.version;
    }
    return best;
}

}  // namespace tessera::placement
