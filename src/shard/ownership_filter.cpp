#include "shard/ownership_filter.h"

#include <algorithm>

#include "shard/tracked_ranges.h"

namespace tessera::shard {

ChunkOwnershipFilter::ChunkOwnershipFilter(std::shared_ptr<const placement::RoutingTable> table,
                                           placement::ShardId shard)
    : _table(std::move(table)), _shard(std::move(shard)) {
    const placement::ShardKeyPattern& pattern = _table->shardKeyPattern();
    for (size_t i = 0; i < pattern.numFields(); ++i) _paths.push_back(pattern.fieldPath(i));
    const placement::ChunkMap& map = _table->chunkMap();
    for (size_t i = 0; i < map.size(); ++i) {
        if (map.chunk(i).shard != _shard) continue;
        if (!_ranges.empty() && _ranges.back().second == map.encodedMin(i)) {
            _ranges.back().second = map.encodedMax(i);  // adjacent: merge
        } else {
            _ranges.emplace_back(map.encodedMin(i), map.encodedMax(i));
        }
        if (i + 1 == map.size()) _ownsGlobalMax = true;
    }
}

bool ChunkOwnershipFilter::owns(bson::BsonView doc) const {
    if (_ranges.empty()) return false;
    StatusWith<bson::BsonObj> key = _table->shardKeyPattern().extractShardKeyFromDoc(doc);
    if (!key.isOK()) return false;
    return ownsKey(key.getValue());
}

bool ChunkOwnershipFilter::ownsKey(bson::BsonView shardKey) const {
    if (_ranges.empty()) return false;
    std::string encoded = _table->shardKeyPattern().encodeKey(shardKey);
    // The last range whose min <= encoded.
    auto it =
        std::upper_bound(_ranges.begin(), _ranges.end(), encoded,
                         [](const std::string& k, const std::pair<std::string, std::string>& r) {
                             return k < r.first;
                         });
    if (it == _ranges.begin()) return false;
    --it;
    if (encoded < it->second) return true;
    // The global max key itself belongs to the last chunk.
    return _ownsGlobalMax && &*it == &_ranges.back() && encoded == it->second;
}

ChunkOwnershipFilter::RangeOwnership ChunkOwnershipFilter::ownershipOf(
    const std::string& encodedMin, const std::string& encodedMax) const {
    bool any = false;
    for (const auto& [lo, hi] : _ranges) {
        if (lo <= encodedMin && encodedMax <= hi) return RangeOwnership::kAll;
        if (lo < encodedMax && encodedMin < hi) any = true;
    }
    return any ? RangeOwnership::kPartial : RangeOwnership::kNone;
}

std::optional<command::OwnershipFilter::Totals> ChunkOwnershipFilter::ownedTotals(
    storage::Engine&, const storage::CollectionInfo& coll) const {
    if (!_tracked) return std::nullopt;
    return _tracked->ownedTotals(coll, *this);
}

bool ChunkOwnershipFilter::sameShardKey(bson::BsonView a, bson::BsonView b) const {
    const placement::ShardKeyPattern& pattern = _table->shardKeyPattern();
    auto ka = pattern.extractShardKeyFromDoc(a);
    auto kb = pattern.extractShardKeyFromDoc(b);
    if (!ka.isOK() || !kb.isOK()) return false;
    return pattern.encodeKey(ka.getValue()) == pattern.encodeKey(kb.getValue());
}

std::string ChunkOwnershipFilter::describeKey(bson::BsonView doc) const {
    auto key = _table->shardKeyPattern().extractShardKeyFromDoc(doc);
    if (!key.isOK())
        return "a shard key that cannot be extracted (" + key.getStatus().reason() + ")";
    return "shard key " + key.getValue().toJson() + " (owned by shard '" +
           _table->findChunk(key.getValue()).shard + "')";
}

}  // namespace tessera::shard
