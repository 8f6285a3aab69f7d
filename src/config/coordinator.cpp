#include "config/coordinator.h"

#include "config/config_server_impl.h"
#include "config/move_primary_coordinator.h"
#include "config/move_range_coordinator.h"
#include "config/placement_ddl_coordinator.h"
#include "config/refine_shard_key_coordinator.h"

namespace tessera::config {

Status Coordinator::save(const bson::BsonObj& doc) {
    _config.coordinatorStep(type());
    return _config.local().update("system.coordinators", idQuery(id()), doc, true).getStatus();
}

Status Coordinator::forget() {
    return _config.local().remove("system.coordinators", idQuery(id()), false).getStatus();
}

StatusWith<std::unique_ptr<Coordinator>> Coordinator::fromDocument(ConfigServerImpl& config,
                                                                   const bson::BsonObj& doc) {
    const std::string_view type = doc["type"].stringValue();
    if (type == "moveRange") {
        ASSIGN_OR_RETURN(MoveRangeState state, MoveRangeState::parse(doc));
        return std::unique_ptr<Coordinator>(
            std::make_unique<MoveRangeCoordinator>(config, std::move(state)));
    }
    if (type == "movePrimary") {
        ASSIGN_OR_RETURN(MovePrimaryState state, MovePrimaryState::parse(doc));
        return std::unique_ptr<Coordinator>(
            std::make_unique<MovePrimaryCoordinator>(config, std::move(state)));
    }
    if (type == RefineShardKeyCoordinator::kType) {
        return std::unique_ptr<Coordinator>(
            std::make_unique<RefineShardKeyCoordinator>(config, doc));
    }
    if (type == "shardCollection" || type == "dropCollection" || type == "dropDatabase") {
        ASSIGN_OR_RETURN(PlacementDdlState state, PlacementDdlState::parse(doc));
        if (type == "shardCollection") {
            return std::unique_ptr<Coordinator>(
                std::make_unique<ShardCollectionCoordinator>(config, std::move(state)));
        }
        if (type == "dropCollection") {
            return std::unique_ptr<Coordinator>(
                std::make_unique<DropCollectionCoordinator>(config, std::move(state)));
        }
        return std::unique_ptr<Coordinator>(
            std::make_unique<DropDatabaseCoordinator>(config, std::move(state)));
    }
    return Status(ErrorCodes::InvalidOptions,
                  "unknown coordinator type '" + std::string(type) + "'");
}

std::optional<CoordinatorTarget> Coordinator::targetOf(bson::BsonView doc) {
    const std::string_view type = doc["type"].stringValue();
    if (type == "moveRange" || type == RefineShardKeyCoordinator::kType) {
        return CoordinatorTarget{std::string(doc["ns"].stringValue()), false};
    }
    if (type == "shardCollection" || type == "dropCollection") {
        return CoordinatorTarget{std::string(doc["target"].stringValue()), false};
    }
    if (type == "movePrimary") return CoordinatorTarget{std::string(doc["db"].stringValue()), true};
    if (type == "dropDatabase") {
        return CoordinatorTarget{std::string(doc["target"].stringValue()), true};
    }
    return std::nullopt;
}

}  // namespace tessera::config
