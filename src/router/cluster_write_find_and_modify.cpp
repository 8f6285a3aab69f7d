// findAndModify / findandmodify on a router (MongoDB's cluster_find_and_modify_cmd):
// unsharded → the database primary; sharded with a filter that pins one shard → that shard;
// otherwise the two-phase write without shard key (cluster_write_without_shard_key.h).
#include "base/error_codes.h"
#include "command/error_labels.h"
#include "command/reply_util.h"
#include "placement/targeter.h"
#include "router/cluster_write_batch.h"
#include "router/cluster_write_commands.h"
#include "router/cluster_write_move.h"
#include "router/cluster_write_without_shard_key.h"
#include "router/transaction_router.h"

namespace tessera::router {
namespace {

using bson::BsonType;
using command::CommandRequest;
using command::OperationContext;

bson::BsonObj withoutDb(bson::BsonView body) {
    bson::BsonBuilder b;
    for (bson::BsonElement e : body) {
        if (e.fieldName() == "$db" || e.fieldName() == "$clusterTime" ||
            e.fieldName() == "shardVersion" || e.fieldName() == "databaseVersion") {
            continue;
        }
        b.appendElement(e);
    }
    return b.obj();
}

// `cmd` with its `query` replaced.
bson::BsonObj withQuery(bson::BsonView cmd, bson::BsonView query) {
    bson::BsonBuilder b;
    bool placed = false;
    for (bson::BsonElement e : cmd) {
        if (e.fieldName() == "query") {
            b.append("query", query);
            placed = true;
        } else {
            b.appendElement(e);
        }
    }
    if (!placed) b.append("query", query);
    return b.obj();
}

// A shard's WouldChangeOwningShard answer to a findAndModify (its update would move the
// document): the router moves it (cluster_write_move.h) and answers as the shard would have,
// the stored or the new version as `new` asks. Transient errors: the caller runs it again.
std::optional<Status> moveIfAsked(OperationContext& opCtx, Router& router, std::string_view db,
                                  const std::string& ns, bson::BsonView cmd, const ShardResponse& r,
                                  bson::BsonBuilder& reply) {
    if (!r.status.isOK() || r.reply["ok"].trueValue() ||
        r.reply["code"].numberInt() != static_cast<int>(ErrorCodes::WouldChangeOwningShard) ||
        !r.reply["documents"].isArray()) {
        return std::nullopt;
    }
    bson::BsonView documents = r.reply["documents"].objValue();
    bson::BsonView doc = documents.firstElement().objValue();
    auto replyOf = [&](int64_t moved, const bson::BsonObj& upsertedId) {
        bson::BsonBuilder b;
        b.startObject("lastErrorObject");
        b.appendNumber("n", int64_t{1});
        b.appendBool("updatedExisting", moved > 0);
        if (!upsertedId.isEmpty()) b.appendElementAs(upsertedId.firstElement(), "upserted");
        b.end();
        if (cmd["new"].trueValue()) {
            b.append("value", doc["post"].objValue());
        } else if (doc["pre"].isObject()) {
            b.append("value", doc["pre"].objValue());
        } else {
            b.appendNull("value");
        }
        return b.obj();
    };
    // A retryable findAndModify is recorded whole on the shard that answered.
    MovedWriteRecord record{r.shard, -1, replyOf};
    int64_t moved = 0;
    bson::BsonObj upsertedId;
    TRY_STATUS(moveDocuments(opCtx, router, db, ns, documents, &record, &moved, &upsertedId));
    for (bson::BsonElement e : replyOf(moved, upsertedId)) reply.appendElement(e);
    return Status::OK();
}

bool isSimpleCollation(bson::BsonElement c) {
    if (!c.isObject() || c.objValue().isEmpty()) return true;
    bson::BsonElement locale = c.objValue()["locale"];
    return locale.type() == BsonType::String && locale.stringValue() == "simple";
}

class ClusterFindAndModifyCommand final : public command::Command {
  public:
    std::string_view name() const override { return "findAndModify"; }
    bool supportsRetryableWrite() const override { return true; }
    std::vector<std::string_view> aliases() const override { return {"findandmodify"}; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        Router& router = Router::get(opCtx);
        ASSIGN_OR_RETURN(std::string coll,
                         command::collectionName(request.firstElement(), "findAndModify"));
        std::string ns = request.db + "." + coll;
        bson::BsonObj cmd = withoutDb(request.body);
        bson::BsonView body = cmd;
        bson::BsonElement q = body["query"];
        if (q && !q.isNull() && !q.isObject()) {
            return Status(ErrorCodes::TypeMismatch,
                          "BSON field 'findAndModify.query' is the wrong type '" +
                              std::string(bson::typeName(q.type())) + "', expected type 'object'");
        }
        bson::BsonObj query = q.isObject() ? q.objValue().copy() : bson::BsonObj();
        bool upsert = body["upsert"].trueValue();
        bool remove = body["remove"].trueValue();
        bson::BsonElement update = body["update"];
        bson::BsonView arrayFilters =
            body["arrayFilters"].isArray() ? body["arrayFilters"].objValue() : bson::BsonView();

        for (int attempt = 0;; ++attempt) {
            ASSIGN_OR_RETURN(CollectionRoutingInfo info,
                             router.catalog().getCollectionRoutingInfo(ns, true));
            if (!info.isSharded()) {
                auto resp = runOnPrimary(opCtx, router, ns, cmd);
                if (resp.isOK()) return relayShardReply(opCtx, resp.getValue(), reply);
                if (!isBecameSharded(resp.getStatus())) return resp.getStatus();
                continue;
            }
            const placement::RoutingTable& table = *info.table;
            ASSIGN_OR_RETURN(placement::TargetingResult t, placement::targetWrite(table, query));
            bool simple = isSimpleCollation(body["collation"]);
            bool keyChange =
                !remove && update && updateMayChangeShardKey(table.shardKeyPattern(), update);
            bool exact = simple && t.kind == placement::TargetingKind::kExactKey;
            bool direct = simple && t.isSingleShard() && (exact || !upsert) && !keyChange;
            bool retry = attempt < 10;
            if (direct) {
                const ShardId& shard = t.shards.front();
                auto rs = sendToShards(opCtx, router, request.db,
                                       {{shard, attachVersion(cmd, info, shard)}});
                const ShardResponse& r = rs.front();
                if (retry && r.status.isOK() && !r.reply["ok"].trueValue() &&
                    isStaleCode(r.reply["code"].numberInt())) {
                    noteStaleError(router, r.reply);
                    continue;
                }
                return relayShardReply(opCtx, r, reply);
            }

            // A document the update moves to another shard is moved here; a transient failure
            // of that move (it changed meanwhile) runs the command again.
            auto relayOrMove = [&](const ShardResponse& r) -> std::optional<Status> {
                bson::BsonBuilder moved;
                std::optional<Status> st =
                    moveIfAsked(opCtx, router, request.db, ns, cmd, r, moved);
                if (!st) return relayShardReply(opCtx, r, reply);
                if (st->isOK()) {
                    for (bson::BsonElement e : moved.obj()) reply.appendElement(e);
                    return Status::OK();
                }
                if (retry && !inTransactionStatement(opCtx) &&
                    command::isTransientTransactionErrorCode(st->code())) {
                    return std::nullopt;
                }
                return *st;
            };

            TwoPhaseWrite write;
            write.coll = coll;
            write.filter = query;
            if (body["sort"].isObject()) write.sort = body["sort"].objValue().copy();
            write.collation = objectFieldOf(body, "collation");
            write.let = objectFieldOf(body, "let");
            write.shards = simple ? t.shards : table.shards();
            if (keyChange) {
                write.update = update;
                write.arrayFilters = arrayFilters.copy();
                write.callerMovesDocuments = true;
            }
            write.makeWriteCommand = [&](bson::BsonView filter, const ShardId&) {
                return withQuery(cmd, filter);
            };
            write.session = sessionFields(cmd);
            write.matched = [](bson::BsonView r) {
                bson::BsonElement leo = r["lastErrorObject"];
                return leo.isObject() ? leo.objValue()["n"].numberLong() : 0;
            };
            ASSIGN_OR_RETURN(TwoPhaseOutcome outcome,
                             runTwoPhaseWrite(opCtx, router, info, request.db, write));
            if (outcome.stale) {
                if (retry) continue;
                return Status(ErrorCodes::StaleConfig, "routing information kept changing");
            }
            if (outcome.found) {
                if (std::optional<Status> st = relayOrMove(outcome.response)) return *st;
                continue;
            }
            if (upsert && update) {
                ASSIGN_OR_RETURN(UpsertTarget target,
                                 targetUpsertInsert(table, query, update, arrayFilters));
                bson::BsonObj up = withQuery(cmd, target.filter);
                auto rs = sendToShards(opCtx, router, request.db,
                                       {{target.shard, attachVersion(up, info, target.shard)}});
                const ShardResponse& r = rs.front();
                if (retry && r.status.isOK() && !r.reply["ok"].trueValue() &&
                    isStaleCode(r.reply["code"].numberInt())) {
                    noteStaleError(router, r.reply);
                    continue;
                }
                if (std::optional<Status> st = relayOrMove(r)) return *st;
                continue;
            }
            // Nothing matched on any shard.
            reply.startObject("lastErrorObject");
            reply.appendNumber("n", int64_t{0});
            if (!remove) reply.append("updatedExisting", false);
            reply.end();
            reply.appendNull("value");
            return Status::OK();
        }
    }
};

}  // namespace

std::unique_ptr<command::Command> makeClusterFindAndModifyCommand() {
    return std::make_unique<ClusterFindAndModifyCommand>();
}

}  // namespace tessera::router
