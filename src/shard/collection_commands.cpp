// _shardsvrClusterCollection (src/cluster/README.md "On shards"): the config server's
// shardCollection coordinator makes every shard holding a sharded collection store its documents
// clustered by the shard key, so that a chunk is a contiguous range of records.

#include "base/log.h"
#include "command/registry.h"
#include "placement/shard_key_pattern.h"
#include "shard/direct_client.h"
#include "storage/engine.h"

namespace tessera::shard {
namespace {

using command::CommandRequest;
using command::OperationContext;

// {_shardsvrClusterCollection: <coll>, key: <shard key pattern>} on the collection's database.
// Creates the collection if it does not exist, then clusters it by the key (idempotent: a
// collection already clustered by it is left alone). Blocks writes to the collection while a
// non-empty collection is rewritten (storage::Engine::clusterCollection).
class ClusterCollectionCommand final : public command::Command {
  public:
    std::string_view name() const override { return "_shardsvrClusterCollection"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        bson::BsonElement target = request.firstElement();
        if (target.type() != bson::BsonType::String || target.stringValue().empty()) {
            return Status(ErrorCodes::TypeMismatch, std::string(name()) + " takes a collection");
        }
        if (request.db == "admin" || request.db == "config" || request.db == "local") {
            return Status(ErrorCodes::IllegalOperation,
                          "cannot cluster collections of the " + request.db + " database");
        }
        bson::BsonElement key = request.body["key"];
        if (!key.isObject()) {
            return Status(ErrorCodes::TypeMismatch,
                          "BSON field '" + std::string(name()) + ".key' must be an object");
        }
        ASSIGN_OR_RETURN(placement::ShardKeyPattern pattern,
                         placement::ShardKeyPattern::parse(key.objValue()));
        std::string coll(target.stringValue());
        std::string ns = request.db + "." + coll;
        storage::Engine& engine = *opCtx.service->engine;
        if (!engine.getCollection(ns)) {
            bson::BsonBuilder create;
            create.append("create", coll);
            auto created = runLocalCommand(*opCtx.service, request.db, create.obj());
            if (!created.isOK() && !created.getStatus().is(ErrorCodes::NamespaceExists)) {
                return created.getStatus();
            }
        }
        TRY_STATUS(engine.clusterCollection(ns, pattern.toBson()));
        log::info(
            "SHARDING", 22110, "Clustered a collection by its shard key",
            "{\"ns\":\"" + log::jsonEscape(ns) + "\",\"key\":" + pattern.toBson().toJson() + "}");
        reply.append("clusterKey", pattern.toBson());
        return Status::OK();
    }
};

}  // namespace

void registerShardCollectionCommands(command::CommandRegistry& registry) {
    registry.add(std::make_unique<ClusterCollectionCommand>());
}

}  // namespace tessera::shard
