// moveRange / moveChunk: the range to move (a range strictly inside a chunk is split off first),
// then its migration (move_range_coordinator.h).
#include "config/chunk_ops.h"
#include "config/config_server_impl.h"
#include "config/move_range_coordinator.h"

namespace tessera::config {

using bson::BsonObj;

Status ConfigServerImpl::moveRange(const std::string& ns, std::optional<BsonObj> min,
                                   std::optional<BsonObj> max, const std::string& toShard,
                                   bool waitForDelete) {
    if (!min && !max) return Status(ErrorCodes::BadValue, "moveRange needs min or max");
    ASSIGN_OR_RETURN(DdlLockManager::Guard lock, _ddlLocks.lockCollection(ns, "moveRange " + ns));
    ASSIGN_OR_RETURN(ShardedCollection coll, loadCollection(ns));
    TRY_STATUS(shardHost(toShard).getStatus());
    const auto& pattern = coll.pattern;
    if (min) TRY_STATUS(pattern.validateKey(*min));
    if (max) TRY_STATUS(pattern.validateKey(*max));
    if (min && max && pattern.encodeKey(*min) >= pattern.encodeKey(*max)) {
        return Status(ErrorCodes::BadValue, "moveRange: min must be lower than max");
    }

    // Find the chunk to move; a range strictly inside a chunk is first split off.
    size_t index = 0;
    if (min) {
        auto found = findChunkContaining(pattern, coll.chunks, *min);
        if (!found) return Status(ErrorCodes::InternalError, "no chunk holds " + min->toJson());
        index = *found;
        if (pattern.encodeKey(coll.chunks[index].min) != pattern.encodeKey(*min)) {
            TRY_STATUS(splitAt(coll, index, {*min}));
            index = *findChunkContaining(pattern, coll.chunks, *min);
        }
        if (max) {
            std::string chunkMax = pattern.encodeKey(coll.chunks[index].max);
            std::string wanted = pattern.encodeKey(*max);
            if (wanted > chunkMax) {
                return Status(ErrorCodes::InvalidOptions, "moveRange: the range [" + min->toJson() +
                                                              ", " + max->toJson() +
                                                              ") spans more than one chunk");
            }
            if (wanted < chunkMax) TRY_STATUS(splitAt(coll, index, {*max}));
            index = *findChunkContaining(pattern, coll.chunks, *min);
        }
    } else {
        std::string wanted = pattern.encodeKey(*max);
        std::optional<size_t> found;
        for (size_t i = 0; i < coll.chunks.size(); ++i) {
            if (pattern.encodeKey(coll.chunks[i].min) < wanted &&
                wanted <= pattern.encodeKey(coll.chunks[i].max)) {
                found = i;
                break;
            }
        }
        if (!found) return Status(ErrorCodes::InvalidOptions, "no chunk ends at " + max->toJson());
        index = *found;
        if (pattern.encodeKey(coll.chunks[index].max) != wanted) {
            TRY_STATUS(splitAt(coll, index, {*max}));
        }
    }
    const ChunkRecord& chunk = coll.chunks[index];
    if (chunk.shard == toShard) return Status::OK();

    MoveRangeState state;
    state.id = moveRangeCoordinatorId(ns, chunk.min);
    state.ns = ns;
    state.min = chunk.min;
    state.max = chunk.max;
    state.from = chunk.shard;
    state.to = toShard;
    state.waitForDelete = waitForDelete;
    Timestamp attempt = now();
    state.migrationId =
        state.id + "@" + std::to_string(attempt.secs()) + ":" + std::to_string(attempt.inc());
    Status inserted = _local.insert("system.coordinators", state.toBson());
    if (inserted.is(ErrorCodes::DuplicateKey)) {
        return Status(ErrorCodes::ConflictingOperationInProgress,
                      "a migration of this range is already in progress");
    }
    TRY_STATUS(inserted);
    MoveRangeCoordinator coordinator(*this, std::move(state));
    return runCoordinator(coordinator, lock);
}

}  // namespace tessera::config
