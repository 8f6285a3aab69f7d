#pragma once

#include <memory>
#include <string>
#include <vector>

#include "command/command.h"
#include "placement/routing_table.h"

namespace tessera::shard {

class TrackedRanges;

// The documents of a sharded collection one shard owns in one routing table: a document is
// owned iff its shard key (hashed fields hashed) falls in a chunk of `shard`. A document whose
// shard key cannot be extracted (an array on the key path) is not owned: it cannot have been
// inserted through the router, so it is an orphan of some kind.
class ChunkOwnershipFilter final : public command::OwnershipFilter {
  public:
    ChunkOwnershipFilter(std::shared_ptr<const placement::RoutingTable> table,
                         placement::ShardId shard);

    bool owns(bson::BsonView doc) const override;
    bson::BsonView shardKeyPattern() const override { return _table->shardKeyPattern().toBson(); }
    const std::vector<std::string_view>& shardKeyPaths() const override { return _paths; }
    bool sameShardKey(bson::BsonView a, bson::BsonView b) const override;
    std::string describeKey(bson::BsonView doc) const override;
    bool isUniqueIndexCompatible(bson::BsonView indexKey) const override {
        return _table->shardKeyPattern().isUniqueIndexCompatible(indexKey);
    }
    // The same decision for an already extracted shard key.
    bool ownsKey(bson::BsonView shardKey) const;
    // How much of [encodedMin, encodedMax) the shard owns.
    enum class RangeOwnership { kNone, kAll, kPartial };
    RangeOwnership ownershipOf(const std::string& encodedMin, const std::string& encodedMax) const;
    // Owned totals from the shard's tracked ranges (tracked_ranges.h), when set.
    void setTrackedRanges(std::shared_ptr<const class TrackedRanges> tracked) {
        _tracked = std::move(tracked);
    }
    std::optional<Totals> ownedTotals(storage::Engine& engine,
                                      const storage::CollectionInfo& coll) const override;
    // Whether the shard owns any chunk at all.
    bool ownsNothing() const { return _ranges.empty(); }

    const placement::RoutingTable& table() const { return *_table; }

  private:
    std::shared_ptr<const placement::RoutingTable> _table;
    placement::ShardId _shard;
    // Owned encoded ranges [min, max), merged and sorted; `_ownsGlobalMax` when the last chunk
    // (which also holds the global max key) is owned.
    std::vector<std::pair<std::string, std::string>> _ranges;
    bool _ownsGlobalMax = false;
    std::vector<std::string_view> _paths;  // views of the table's pattern
    std::shared_ptr<const TrackedRanges> _tracked;
};

}  // namespace tessera::shard
