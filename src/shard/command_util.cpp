#include "shard/command_util.h"

namespace tessera::shard {

StatusWith<ShardingState*> shardingStateOf(command::OperationContext& opCtx) {
    ShardingState* state = opCtx.service && opCtx.service->role == command::ClusterRole::kShard
                               ? opCtx.service->roleStateAs<ShardingState>()
                               : nullptr;
    if (!state) {
        return Status(ErrorCodes::IllegalOperation, "this command is only valid on a shard server");
    }
    return state;
}

StatusWith<std::shared_ptr<ShardMetadata>> shardMetadataOf(command::OperationContext& opCtx) {
    ASSIGN_OR_RETURN(ShardingState * state, shardingStateOf(opCtx));
    auto md = state->metadata();
    if (!md) {
        return Status(ErrorCodes::ShardingStateNotInitialized,
                      "this shard has not been added to a cluster yet (no shard identity)");
    }
    return md;
}

StatusWith<std::string> stringArg(bson::BsonView body, std::string_view field,
                                  std::string_view command) {
    bson::BsonElement e = body[field];
    if (e.eoo()) {
        return Status(ErrorCodes::NoSuchKey, "BSON field '" + std::string(command) + "." +
                                                 std::string(field) + "' is missing");
    }
    if (e.type() != bson::BsonType::String || e.stringValue().empty()) {
        return Status(ErrorCodes::TypeMismatch, "BSON field '" + std::string(command) + "." +
                                                    std::string(field) +
                                                    "' must be a non-empty string");
    }
    return std::string(e.stringValue());
}

StatusWith<bson::BsonView> objectArg(bson::BsonView body, std::string_view field,
                                     std::string_view command) {
    bson::BsonElement e = body[field];
    if (!e.isObject()) {
        return Status(ErrorCodes::TypeMismatch, "BSON field '" + std::string(command) + "." +
                                                    std::string(field) + "' must be an object");
    }
    return e.objValue();
}

std::vector<bson::BsonObj> cursorBatch(bson::BsonView reply, std::string_view batchField,
                                       int64_t* cursorId) {
    std::vector<bson::BsonObj> out;
    bson::BsonElement cursor = reply["cursor"];
    if (!cursor.isObject()) return out;
    if (cursorId) *cursorId = cursor.objValue()["id"].numberLong();
    bson::BsonElement batch = cursor.objValue()[batchField];
    if (batch.type() != bson::BsonType::Array) return out;
    for (bson::BsonElement d : batch.objValue()) {
        if (d.isObject()) out.push_back(d.objValue().copy());
    }
    return out;
}

}  // namespace tessera::shard
