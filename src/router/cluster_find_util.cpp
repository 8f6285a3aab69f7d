#include <algorithm>
#include <array>

#include "base/failpoint.h"
#include "base/hlc.h"
#include "command/exec/find_request.h"
#include "command/generic_args.h"
#include "router/cluster_find.h"
#include "router/transaction_router.h"

namespace tessera::router::reads {

using bson::BsonBuilder;
using bson::BsonObj;

bool isRouterOnlyField(std::string_view name) {
    static constexpr std::array kFields = {"$db",
                                           "lsid",
                                           "$clusterTime",
                                           "$readPreference",
                                           "txnNumber",
                                           "autocommit",
                                           "startTransaction",
                                           "shardVersion",
                                           "databaseVersion",
                                           "$audit",
                                           "$client",
                                           "$configServerState",
                                           "$topologyTime",
                                           "$configTime",
                                           "apiVersion",
                                           "apiStrict",
                                           "apiDeprecationErrors",
                                           "$queryOptions"};
    return std::find(kFields.begin(), kFields.end(), name) != kFields.end();
}

BsonObj shardBody(bson::BsonView body, const std::vector<std::string_view>& drop,
                  const std::function<void(BsonBuilder&)>& extra) {
    BsonBuilder b;
    for (bson::BsonElement e : body) {
        std::string_view name = e.fieldName();
        if (isRouterOnlyField(name)) continue;
        if (std::find(drop.begin(), drop.end(), name) != drop.end()) continue;
        b.appendElement(e);
    }
    if (extra) extra(b);
    return b.obj();
}

Status forwardToConfig(command::OperationContext& opCtx, const command::CommandRequest& request,
                       BsonBuilder& reply) {
    Router& router = Router::get(opCtx);
    BsonObj body = shardBody(request.body, {});
    ASSIGN_OR_RETURN(BsonObj r, router.client().runCommand(router.configHost(), request.db, body));
    TRY_STATUS(net::replyStatus(r));
    for (bson::BsonElement e : r) {
        std::string_view name = e.fieldName();
        if (name == "ok" || name == "$clusterTime" || name == "operationTime") continue;
        reply.appendElement(e);
    }
    return Status::OK();
}

StatusWith<query::CollatorPtr> collatorArgument(bson::BsonView body) {
    bson::BsonElement c = body["collation"];
    if (c.eoo()) return query::CollatorPtr();
    return query::Collator::fromArgument(c);
}

// The way reads went before one cluster time (each shard at its own latest time), kept for
// bench/scatter_reads.mjs to measure what the one time costs, in the same run: never for users.
TESSERA_FAIL_POINT_DEFINE(readEachShardAtItsLatestTime);

namespace {

// Whether a read reaching several shards gets one cluster time from this router: not inside a
// transaction (it has its own), not at readConcern snapshot (the entry point chose its time) or
// linearizable, and not a count of everything (estimatedDocumentCount: each shard's maintained
// count, O(1), which exists at its latest time only; a count at a time would scan).
bool readsAtOneRouterTime(const command::OperationContext& opCtx, bson::BsonView body) {
    if (opCtx.routerStatement || opCtx.readAtClusterTime) return false;
    if (readEachShardAtItsLatestTime.shouldFail()) return false;
    if (body.firstElement().fieldName() == "count" && !body.hasField("hint")) {
        bson::BsonElement query = body["query"];
        if (query.eoo() || query.isNull() || (query.isObject() && query.objValue().isEmpty())) {
            return false;
        }
    }
    bson::BsonElement rc = body["readConcern"];
    if (!rc.isObject()) return true;
    bson::BsonElement level = rc.objValue()["level"];
    if (level.eoo()) return true;
    std::string_view name = level.type() == bson::BsonType::String ? level.stringValue() : "";
    return name == "local" || name == "available" || name == "majority";
}

BsonObj withReadTime(bson::BsonView cmd, Timestamp at) {
    BsonBuilder b;
    for (bson::BsonElement e : cmd) {
        if (e.fieldName() != command::kReadAtClusterTimeField) b.appendElement(e);
    }
    b.appendTimestamp(command::kReadAtClusterTimeField, at.value);
    return b.obj();
}

}  // namespace

StatusWith<std::vector<ShardResponse>> runRoutedRead(
    command::OperationContext& opCtx, Router& router, std::string_view ns,
    const std::function<StatusWith<std::vector<ShardRequest>>(const CollectionRoutingInfo&)>&
        makeRequests,
    const RoutedOptions& options) {
    bool oneTime = false;  // of the round runRouted runs now
    auto timed = [&](const CollectionRoutingInfo& info) -> StatusWith<std::vector<ShardRequest>> {
        ASSIGN_OR_RETURN(std::vector<ShardRequest> requests, makeRequests(info));
        oneTime = requests.size() > 1 && readsAtOneRouterTime(opCtx, requests.front().cmd);
        if (oneTime) {
            // After the client's afterClusterTime too (a causally consistent session's last
            // operation, which this router's clock may not have seen).
            bson::BsonElement rc = requests.front().cmd["readConcern"];
            if (rc.isObject()) {
                bson::BsonElement after = rc.objValue()["afterClusterTime"];
                if (after.type() == bson::BsonType::Timestamp) {
                    HybridLogicalClock::global().advanceTo(Timestamp{after.timestampValue()});
                }
            }
            // After every reply seen so far: a shard's refusal of an earlier round's time
            // (SnapshotUnavailable) advanced the clock past the range it received.
            Timestamp at = HybridLogicalClock::global().next();
            for (ShardRequest& r : requests) r.cmd = withReadTime(r.cmd, at);
        }
        return requests;
    };
    RoutedOptions timedOptions = options;
    timedOptions.readTimeChosenByRouter = [&oneTime] { return oneTime; };
    return runRouted(opCtx, router, ns, timed, timedOptions);
}

StatusWith<placement::TargetingResult> targetRead(const placement::RoutingTable& table,
                                                  bson::BsonView filter, bool simpleCollation) {
    if (simpleCollation) return placement::targetQuery(table, filter);
    placement::TargetingResult t;
    t.kind = placement::TargetingKind::kScatter;
    t.shards = table.shards();
    t.numChunks = table.numChunks();
    return t;
}

Status shardResponseStatus(const ShardResponse& r) {
    Status s = r.status.isOK() ? net::replyStatus(r.reply) : r.status;
    if (s.isOK()) return s;
    return Status(s.errorCode(), s.reason());
}

RunCommandsFn runCommandsFn(Router& router) {
    net::RemoteClient* client = &router.client();
    // A cursor's getMore/killCursors inside a transaction joins it (transaction_router.h).
    return [client](const command::OperationContext* opCtx,
                    const std::vector<net::RemoteCommand>& cmds) {
        std::vector<net::RemoteCommand> joined = cmds;
        if (opCtx) {
            for (net::RemoteCommand& c : joined)
                c.cmd = joinTransactionByHost(*opCtx, c.host, c.cmd);
        }
        auto replies = client->runCommands(joined);
        for (const auto& r : replies) {
            if (r.isOK()) observeShardReply(r.getValue());
        }
        return replies;
    };
}

StatusWith<std::vector<RemoteCursor>> cursorsFromResponses(Router& router,
                                                           const std::vector<ShardResponse>& rs) {
    std::vector<RemoteCursor> cursors;
    Status firstError = Status::OK();
    for (const ShardResponse& r : rs) {
        Status s = shardResponseStatus(r);
        if (s.isOK()) {
            auto c = parseRemoteCursor(r.shard, r.host, r.reply);
            if (c.isOK()) {
                cursors.push_back(std::move(c.getValue()));
                continue;
            }
            s = c.getStatus();
        }
        if (firstError.isOK()) firstError = s;
    }
    if (!firstError.isOK()) {
        // Kills the cursors that did open (the stage's destructor does it).
        RemoteMergeStage doomed(std::move(cursors), BsonObj(), nullptr, runCommandsFn(router));
        return firstError;
    }
    return cursors;
}

std::unique_ptr<command::exec::PlanStage> emptySource(Router& router, const std::string& ns) {
    return std::make_unique<RemoteMergeStage>(std::vector<RemoteCursor>{}, BsonObj(), nullptr,
                                              runCommandsFn(router));
}

Status replyWithCursor(command::OperationContext& opCtx, Router& router,
                       std::unique_ptr<command::exec::PlanStage> root, const std::string& ns,
                       std::optional<int64_t> batchSize, bool singleBatch, bool noCursorTimeout,
                       BsonBuilder& reply) {
    auto exec =
        std::make_unique<command::exec::PlanExecutor>(nullptr, nullptr, std::move(root), ns);
    if (!batchSize) batchSize = command::kDefaultFirstBatchSize;
    bson::BsonArrayBuilder batch;
    bool exhausted = false;
    TRY_STATUS(command::fillBatch(opCtx, *exec, batchSize, batch, &exhausted));
    int64_t id = 0;
    if (!exhausted && !singleBatch) {
        id = router.cursors().registerCursor(ns, std::move(exec), noCursorTimeout, opCtx.lsid);
    }
    command::exec::appendCursor(reply, "firstBatch", batch, id, ns);
    return Status::OK();
}

}  // namespace tessera::router::reads
