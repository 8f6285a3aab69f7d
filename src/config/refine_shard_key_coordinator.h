#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/catalog_docs.h"
#include "config/coordinator.h"
#include "placement/shard_key_pattern.h"

namespace tessera::config {

// refineCollectionShardKey's commit (README.md "Refining a shard key"): its document
// {_id: "refineCollectionShardKey-<ns>", type, ns, oldUuid, newUuid, suffix} names both
// placements; the new chunks are written under newUuid (invisible), then the one
// config.collections document switches readers to them, then the old chunks and the zones
// follow. Resumed, it finishes when config.collections names newUuid and is undone otherwise.
// Nothing is held on the shards: what they needed (the index, the layout) was done before the
// document was written.
class RefineShardKeyCoordinator final : public Coordinator {
  public:
    static constexpr std::string_view kType = "refineCollectionShardKey";

    // What a live refine writes; a resumed one has only its document.
    struct Live {
        std::vector<ChunkRecord> oldChunks;
        CollectionRecord next;  // the collection entry under the new key, uuid and generation
        placement::ShardKeyPattern newPattern;
    };
    RefineShardKeyCoordinator(ConfigServerImpl& config, bson::BsonObj doc,
                              std::optional<Live> live = std::nullopt);

    const std::string& id() const override { return _id; }
    std::string_view type() const override { return kType; }
    CoordinatorTarget target() const override { return {_ns, false}; }

    Status run() override;
    StatusWith<CoordinatorOutcome> recover() override;
    void abandon(const BestEffort& step) override;

  private:
    // After the switch: the old chunks removed, the zones' bounds extended, the document
    // removed (kFinished); before it: the new chunks removed (kAborted).
    StatusWith<CoordinatorOutcome> finish();

    bson::BsonObj _doc;
    std::string _id;
    std::string _ns;
    std::optional<Live> _live;
};

}  // namespace tessera::config
