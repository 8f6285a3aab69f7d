#pragma once

// The router's forwarding fast path (Command::planForward): a find answered by one shard in one
// batch, and an insert/update/delete of one statement targeted at one shard, are sent by the
// network layer without a thread waiting for the shard (the common point read and single write
// of an application). Planning uses the cached placement only; everything the fast path cannot
// decide without blocking, and every reply it cannot settle (a stale version, an open cursor, a
// read's error), goes through the commands' run() — the one place with the retry logic — so the
// client sees exactly what run() alone would answer. See README.md "Forwarding".

#include <optional>
#include <vector>

#include "command/command.h"
#include "router/cluster_write_batch.h"

namespace tessera::router {

std::optional<command::ForwardPlan> planFindForward(command::OperationContext& opCtx,
                                                    const command::CommandRequest& request);
std::optional<Status> completeFindForward(command::OperationContext& opCtx,
                                          command::ForwardPlan& plan,
                                          const std::vector<StatusWith<bson::BsonObj>>& remotes,
                                          bson::BsonBuilder& reply);

std::optional<command::ForwardPlan> planWriteForward(command::OperationContext& opCtx,
                                                     const command::CommandRequest& request,
                                                     WriteKind kind);
std::optional<Status> completeWriteForward(command::OperationContext& opCtx,
                                           command::ForwardPlan& plan,
                                           const std::vector<StatusWith<bson::BsonObj>>& remotes,
                                           bson::BsonBuilder& reply);

}  // namespace tessera::router
