#pragma once

#include <memory>
#include <string>
#include <vector>

#include "command/command.h"
#include "router/cluster_write_batch.h"
#include "router/router.h"

// Internal to the router's write commands (cluster_write_*.cpp).
namespace tessera::router {

// A shard's reply as this command's reply: fields of an `ok: 1` reply appended (metadata such as
// $clusterTime dropped); an `ok: 0` reply returned as its Status with the extra fields in
// opCtx.errorExtraInfo. Network errors are returned as they are.
Status relayShardReply(command::OperationContext& opCtx, const ShardResponse& response,
                       bson::BsonBuilder& reply);

// Sends `cmd` (no $db, no versions) to the primary of ns's database (created if missing) with
// runRouted. When the collection is sharded: StaleConfig with isBecameSharded() true.
StatusWith<ShardResponse> runOnPrimary(command::OperationContext& opCtx, Router& router,
                                       const std::string& ns, const bson::BsonObj& cmd);
bool isBecameSharded(const Status& s);

// Runs the statements of an insert/update/delete on a sharded collection (see cluster_write_
// batch.h): rounds of per-shard sub-batches, two-phase single-document writes, stale statements
// retried alone (at most 10 times each). `body` supplies the command name, collection and
// generic fields. Appends {n, nModified?, upserted?, writeErrors?, writeConcernError?}.
Status runShardedWriteBatch(command::OperationContext& opCtx, Router& router, std::string_view db,
                            const std::string& ns, bson::BsonView body, WriteKind kind,
                            const std::vector<bson::BsonView>& stmts, bool ordered,
                            CollectionRoutingInfo info, bson::BsonBuilder& reply);

// An insert/update/delete of `stmts` on ns: forwarded to the primary when unsharded, else
// runShardedWriteBatch. The reply is the write command's ({n, ...} or the primary's).
Status runWriteCommand(command::OperationContext& opCtx, Router& router, std::string_view db,
                       const std::string& ns, bson::BsonView body, WriteKind kind,
                       const std::vector<bson::BsonView>& stmts, bool ordered,
                       bson::BsonBuilder& reply);

std::unique_ptr<command::Command> makeClusterFindAndModifyCommand();
std::unique_ptr<command::Command> makeClusterBulkWriteCommand();

}  // namespace tessera::router
