#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "command/command.h"
#include "shard/sharding_state.h"

namespace tessera::shard {

// The base of the shard's internal commands (_shardsvr*, _migration*): run on admin only.
class ShardCommand : public command::Command {
  public:
    bool adminOnly() const override { return true; }
};

// The ShardingState of this process (service.roleState on a shard); IllegalOperation elsewhere.
StatusWith<ShardingState*> shardingStateOf(command::OperationContext& opCtx);
// Its metadata; ShardingStateNotInitialized (193) while the shard has no identity.
StatusWith<std::shared_ptr<ShardMetadata>> shardMetadataOf(command::OperationContext& opCtx);

// A required string argument (TypeMismatch / NoSuchKey with the command's name).
StatusWith<std::string> stringArg(bson::BsonView body, std::string_view field,
                                  std::string_view command);
// A required object argument.
StatusWith<bson::BsonView> objectArg(bson::BsonView body, std::string_view field,
                                     std::string_view command);
// The first batch of a cursor reply ({cursor: {firstBatch: [...]}}), as owned documents.
std::vector<bson::BsonObj> cursorBatch(bson::BsonView reply, std::string_view batchField,
                                       int64_t* cursorId = nullptr);

// Creates db.coll locally like the donor's (its create options and indexes, read with
// listCollections/listIndexes from `donorHost`) if it does not exist, and creates the donor's
// indexes. Defined in migration_commands.cpp.
Status createCollectionLike(command::ServiceContext& service, net::RemoteClient& client,
                            const std::string& donorHost, const std::string& db,
                            const std::string& coll);

}  // namespace tessera::shard
