// shardCollection, dropCollection and dropDatabase: what is checked and locked before their
// coordinators run (placement_ddl_coordinator.h, docs/protocols/ddl-coordinators.md "Placement
// DDL").
#include "bson/bson_builder.h"
#include "config/config_server_impl.h"
#include "config/placement_ddl_coordinator.h"
#include "config/shard_requests.h"

namespace tessera::config {

using bson::BsonBuilder;
using bson::BsonView;

Status ConfigServerImpl::shardCollection(const std::string& ns, BsonView key, bool unique,
                                         int numInitialChunks, bool simpleCollationGiven,
                                         bool implicitlyCreateIndex) {
    auto [db, collName] = splitNs(ns);
    if (db.empty() || collName.empty()) {
        return Status(ErrorCodes::InvalidNamespace, "Invalid namespace: '" + ns + "'");
    }
    if (db == "admin" || db == "config" || db == "local") {
        return Status(ErrorCodes::IllegalOperation, "can't shard " + ns);
    }
    ASSIGN_OR_RETURN(placement::ShardKeyPattern pattern, placement::ShardKeyPattern::parse(key));
    if (unique && pattern.isHashed()) {
        return Status(ErrorCodes::InvalidOptions,
                      "hashed shard keys cannot be declared unique. It's possible to ensure "
                      "uniqueness on the hashed field by declaring an additional (non-hashed) "
                      "unique index on the field.");
    }
    if (numInitialChunks < 0) {
        return Status(ErrorCodes::InvalidOptions, "numInitialChunks cannot be negative");
    }
    // The database first (its own exclusive lock), then this collection's lock; a concurrent
    // dropDatabase in between is seen below and retried.
    for (int attempt = 0;; ++attempt) {
        TRY_STATUS(createDatabase(db, std::nullopt).getStatus());
        ASSIGN_OR_RETURN(DdlLockManager::Guard lock,
                         _ddlLocks.lockCollection(ns, "shardCollection " + ns));
        ASSIGN_OR_RETURN(auto dbDoc, _local.findOne("databases", oneField("_id", db)));
        if (!dbDoc) {
            if (attempt < 3) continue;
            return Status(ErrorCodes::ConflictingOperationInProgress,
                          "database " + db + " keeps being dropped; try again");
        }
        ShardCollectionCoordinator coordinator(
            *this, ShardCollectionRequest{ns, pattern, unique, numInitialChunks,
                                          simpleCollationGiven, implicitlyCreateIndex,
                                          std::string((*dbDoc)["primary"].stringValue())});
        return runCoordinator(coordinator, lock);
    }
}

Status ConfigServerImpl::dropCollection(const std::string& ns, BsonBuilder& reply) {
    ASSIGN_OR_RETURN(DdlLockManager::Guard lock, _ddlLocks.lockCollection(ns, "drop " + ns));
    DropCollectionCoordinator coordinator(*this, ns);
    TRY_STATUS(runCoordinator(coordinator, lock));
    if (coordinator.dropped()) reply.appendString("ns", ns);
    return Status::OK();
}

Status ConfigServerImpl::dropDatabase(const std::string& db, BsonBuilder& reply) {
    if (db == "admin" || db == "config" || db == "local") {
        return Status(ErrorCodes::IllegalOperation, "Cannot drop the '" + db + "' database");
    }
    ASSIGN_OR_RETURN(DdlLockManager::Guard lock, _ddlLocks.lockDatabase(db, "dropDatabase " + db));
    ASSIGN_OR_RETURN(auto dbDoc, _local.findOne("databases", oneField("_id", db)));
    if (!dbDoc) return Status::OK();
    ASSIGN_OR_RETURN(std::vector<std::string> shards, allShardIds());
    DropDatabaseCoordinator coordinator(*this, db, std::move(shards));
    TRY_STATUS(runCoordinator(coordinator, lock));
    logChange("dropDatabase", db, BsonView());
    reply.appendString("dropped", db);
    return Status::OK();
}

}  // namespace tessera::config
