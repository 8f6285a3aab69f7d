#pragma once

// Helpers shared by the router's read commands (find, aggregate, count, distinct, explain).

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson_builder.h"
#include "command/command.h"
#include "command/exec/plan_stage.h"
#include "placement/targeter.h"
#include "query/collator.h"
#include "router/router.h"
#include "router/router_cursor_manager.h"

namespace tessera::router::reads {

// Whether a top-level field of a client's read is carried out by this router itself and not
// sent on to a shard ($db; lsid: the router owns the cursors; $readPreference and the API
// parameters: checked here; ...). readConcern, writeConcern, maxTimeMS and comment go on to
// the shards (src/router/README.md "Fields").

bool isRouterOnlyField(std::string_view name);

// The client's body without router-only fields and without `drop`; `extra` appends fields.
bson::BsonObj shardBody(bson::BsonView body, const std::vector<std::string_view>& drop,
                        const std::function<void(bson::BsonBuilder&)>& extra = {});

// Passes the command unchanged to the config server (commands on the `config` database) and
// copies its reply fields (an `ok: 0` reply becomes the returned error).
Status forwardToConfig(command::OperationContext& opCtx, const command::CommandRequest& request,
                       bson::BsonBuilder& reply);

// The command's collator (its `collation` argument; nullptr: simple or none).
StatusWith<query::CollatorPtr> collatorArgument(bson::BsonView body);

// The shards a read of a sharded collection with `filter` must contact: placement::targetQuery,
// or every shard owning chunks when the collation is not simple (string bounds of the shard
// key cannot be derived from a non-simple collation).
StatusWith<placement::TargetingResult> targetRead(const placement::RoutingTable& table,
                                                  bson::BsonView filter, bool simpleCollation);

// runRouted for a read (find, count, distinct, aggregate). When a round reaches more than one
// shard outside a transaction at readConcern local, available, majority or none, every shard
// reads at one cluster time: this router's clock, drawn anew for the round — after every commit
// it acknowledged or heard of, and, the clock ticking with the wall clock's microsecond, after
// every commit acknowledged anywhere before the read began — sent as kReadAtClusterTimeField.
// A shard waits on the transactions prepared at or before it, so the read sees every
// cross-shard transaction whole or not at all. A shard that received a migrated range after the
// time refuses it (SnapshotUnavailable): the cursors the others opened are killed and the read
// runs again at a later time. A read of one shard reads at that shard's latest time, as before.
StatusWith<std::vector<ShardResponse>> runRoutedRead(
    command::OperationContext& opCtx, Router& router, std::string_view ns,
    const std::function<StatusWith<std::vector<ShardRequest>>(const CollectionRoutingInfo&)>&
        makeRequests,
    const RoutedOptions& options = {});

// An error reply of one shard (network failure or ok: 0) as a Status naming the shard.
Status shardResponseStatus(const ShardResponse& r);

// The responses of runRouted as opened shard cursors. On any error, the cursors the other shards
// opened are killed and the first error is returned.
StatusWith<std::vector<RemoteCursor>> cursorsFromResponses(Router& router,
                                                           const std::vector<ShardResponse>& rs);

RunCommandsFn runCommandsFn(Router& router);

// A count over several shards asked without skip/limit: min(max(0, sum - skip), |limit|), limit 0
// meaning none (cluster_count_distinct.cpp).
int64_t applyCountSkipLimit(int64_t sum, int64_t skip, int64_t limit);

// The router side of an aggregation over a sharded collection: `mergePart` built with the
// ordinary pipeline builder over `source` (cluster_aggregate.cpp). An empty mergePart returns
// `source` itself.
StatusWith<std::unique_ptr<command::exec::PlanStage>> buildMergePipeline(
    std::unique_ptr<command::exec::PlanStage> source, const std::vector<bson::BsonObj>& mergePart,
    const std::string& ns, query::CollatorPtr collator, bool allowDiskUse);

// A source with no documents (reads of a database that does not exist).
std::unique_ptr<command::exec::PlanStage> emptySource(Router& router, const std::string& ns);

// Answers a cursor command from `root` (a stage tree whose leaf is a RemoteMergeStage): the first
// batch (batchSize, default 101; singleBatch closes the cursor after it), then registers the
// rest with the router's cursor manager. Appends `cursor: {firstBatch, id, ns}`.
Status replyWithCursor(command::OperationContext& opCtx, Router& router,
                       std::unique_ptr<command::exec::PlanStage> root, const std::string& ns,
                       std::optional<int64_t> batchSize, bool singleBatch, bool noCursorTimeout,
                       bson::BsonBuilder& reply);

// The fast path of a find sent unchanged to one shard (cluster_find.cpp): when the shard's cursor
// is already exhausted and its whole first batch fits the router's first batch (`batchSize`,
// default 101; the count and byte rules of command::fillBatch), appends to `reply` the cursor
// replyWithCursor would build — the shard's batch, id 0, `ns` — without a router cursor, an
// executor or a copy per document. False, with nothing appended, when the general path must
// answer (an error, an open shard cursor, a batch that does not fit, batchSize 0).
bool relayExhaustedShardCursor(const ShardResponse& r, const std::string& ns,
                               std::optional<int64_t> batchSize, bson::BsonBuilder& reply);

// Explain helpers (cluster_explain.cpp).
// {explain: <inner>, verbosity} for one shard, the merged MongoDB sharded explain reply.
struct ExplainTarget {
    std::string ns;
    bson::BsonObj innerForShards;                         // the command each shard explains
    bool sorted = false;                                  // SHARD_MERGE_SORT
    std::optional<placement::TargetingResult> targeting;  // sharded only
    bson::BsonObj splitPipeline;                          // aggregate on several shards
};
Status runClusterExplain(command::OperationContext& opCtx, Router& router,
                         const command::CommandRequest& request, bson::BsonView inner,
                         std::string_view verbosity, bson::BsonBuilder& reply);

// Command factories (one family per file).
std::unique_ptr<command::Command> makeClusterFindCommand();
std::unique_ptr<command::Command> makeClusterGetMoreCommand();
std::unique_ptr<command::Command> makeClusterKillCursorsCommand();
std::unique_ptr<command::Command> makeClusterCountCommand();
std::unique_ptr<command::Command> makeClusterDistinctCommand();
std::unique_ptr<command::Command> makeClusterAggregateCommand();
std::unique_ptr<command::Command> makeClusterExplainCommand();

}  // namespace tessera::router::reads
