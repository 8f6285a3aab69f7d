#include "router/cluster_write_move.h"

#include <optional>
#include <vector>

#include "base/error_codes.h"
#include "base/failpoint.h"
#include "command/command.h"
#include "command/retryable_statements.h"
#include "net/remote_client.h"
#include "router/cluster_write_commands.h"
#include "router/router.h"
#include "router/transaction_router.h"

namespace tessera::router {
namespace {

// Holds a router's own move transaction after its writes, before its commit (at most 5 min):
// tests retry the moved write meanwhile.
TESSERA_FAIL_POINT_DEFINE(hangBeforeCommittingMove);

constexpr int kWouldChange = static_cast<int>(ErrorCodes::WouldChangeOwningShard);

// The value at dotted `path` of `doc` through embedded documents, or eoo.
bson::BsonElement valueAt(bson::BsonView doc, std::string_view path) {
    for (;;) {
        size_t dot = path.find('.');
        bson::BsonElement e = doc[path.substr(0, dot)];
        if (dot == std::string_view::npos || !e.isObject()) {
            return dot == std::string_view::npos ? e : bson::BsonElement();
        }
        doc = e.objValue();
        path = path.substr(dot + 1);
    }
}

// {_id, <each shard key path>: its value in `pre` (null when missing)}: the stored version the
// move deletes, found by the key that routes to it.
bson::BsonObj storedVersionFilter(bson::BsonView pre, const placement::ShardKeyPattern& pattern) {
    bson::BsonBuilder q;
    q.appendElement(pre["_id"]);
    for (size_t i = 0; i < pattern.numFields(); ++i) {
        const std::string& path = pattern.fieldPath(i);
        if (path == "_id") continue;
        bson::BsonElement v = valueAt(pre, path);
        if (v.eoo()) {
            q.appendNull(path);
        } else {
            q.appendElementAs(v, path);
        }
    }
    return q.obj();
}

// The statements' count and first error of a write reply: OK when every statement ran.
Status writeOutcome(bson::BsonView reply, int64_t expected, std::string_view what) {
    bson::BsonElement errors = reply["writeErrors"];
    if (errors.isArray()) {
        for (bson::BsonElement e : errors.objValue()) {
            if (!e.isObject()) continue;
            bson::BsonView err = e.objValue();
            return Status(static_cast<ErrorCodes>(err["code"].numberInt()),
                          std::string(err["errmsg"].stringValue()));
        }
    }
    if (reply["n"].numberLong() != expected) {
        return Status(ErrorCodes::WriteConflict,
                      std::string(what) + " changed while it moved to another shard");
    }
    return Status::OK();
}

}  // namespace

int wouldChangeOwningShardIndex(bson::BsonView reply) {
    bson::BsonElement errors = reply["writeErrors"];
    if (!errors.isArray()) return -1;
    for (bson::BsonElement e : errors.objValue()) {
        if (e.isObject() && e.objValue()["code"].numberInt() == kWouldChange) {
            return e.objValue()["index"].numberInt();
        }
    }
    return -1;
}

bson::BsonObj refuseMoveInBatch(bson::BsonView reply) {
    bson::BsonBuilder out;
    for (bson::BsonElement f : reply) {
        if (f.fieldName() != "writeErrors" || !f.isArray()) {
            out.appendElement(f);
            continue;
        }
        bson::BsonArrayBuilder errors;
        for (bson::BsonElement e : f.objValue()) {
            if (!e.isObject() || e.objValue()["code"].numberInt() != kWouldChange) {
                errors.appendElement(e);
                continue;
            }
            bson::BsonBuilder err;
            err.appendElement(e.objValue()["index"]);
            err.appendInt32("code", static_cast<int>(ErrorCodes::InvalidOptions));
            err.append("codeName", "InvalidOptions");
            err.append("errmsg",
                       "Document shard key value updates that cause the doc to move shards must "
                       "be sent with write batch of size 1");
            errors.append(err.obj());
        }
        out.appendArray("writeErrors", errors.arr());
    }
    return out.obj();
}

Status moveDocuments(command::OperationContext& opCtx, Router& router, std::string_view db,
                     const std::string& ns, bson::BsonView documents,
                     const MovedWriteRecord* record, int64_t* moved, bson::BsonObj* upsertedId) {
    ASSIGN_OR_RETURN(CollectionRoutingInfo info,
                     router.catalog().getCollectionRoutingInfo(ns, false));
    if (!info.isSharded()) {
        return Status(ErrorCodes::WriteConflict, ns + " is no longer sharded");
    }
    const placement::ShardKeyPattern& pattern = info.table->shardKeyPattern();
    std::string coll = ns.substr(db.size() + 1);
    std::vector<bson::BsonObj> deletes;
    std::vector<bson::BsonObj> inserts;
    *upsertedId = bson::BsonObj();
    for (bson::BsonElement e : documents) {
        if (!e.isObject() || !e.objValue()["post"].isObject()) {
            return Status(ErrorCodes::InternalError, "a moved document without its new version");
        }
        bson::BsonView d = e.objValue();
        if (d["pre"].isObject()) {
            bson::BsonBuilder del;
            del.append("q", storedVersionFilter(d["pre"].objValue(), pattern));
            del.appendInt32("limit", 1);
            deletes.push_back(del.obj());
        } else {
            bson::BsonBuilder id;
            id.appendElement(d["post"].objValue()["_id"]);
            *upsertedId = id.obj();
        }
        inserts.push_back(d["post"].objValue().copy());
    }
    // One write command of `stmts` through this router's own write path (it joins the
    // transaction running on this thread); each statement must apply to one document.
    auto runAll = [&](WriteKind kind, const std::vector<bson::BsonObj>& stmts) -> Status {
        bson::BsonBuilder body;
        body.append(kind == WriteKind::kDelete ? "delete" : "insert", coll);
        body.appendBool("ordered", true);
        std::vector<bson::BsonView> views(stmts.begin(), stmts.end());
        bson::BsonBuilder result;
        TRY_STATUS(runWriteCommand(opCtx, router, db, ns, body.obj(), kind, views, true, result));
        return writeOutcome(result.obj(), static_cast<int64_t>(stmts.size()), "a document");
    };
    // A retryable write outside the client's transaction: recorded in the move's (which runs
    // as a session of the router's own: the client's session is taken now).
    const bool recordRetry =
        record && opCtx.lsid && opCtx.txnNumber && !inTransactionStatement(opCtx);
    const std::string clientLsid = recordRetry ? *opCtx.lsid : std::string();
    const int64_t clientTxnNumber = recordRetry ? *opCtx.txnNumber : 0;
    auto recordWrite = [&]() -> Status {
        bson::BsonBuilder cmd;
        cmd.appendInt32("_shardsvrRecordRetryableWrite", 1);
        cmd.startObject("of");
        cmd.startObject("lsid").appendBinary("id", 4, clientLsid).end();
        cmd.appendInt64("txnNumber", clientTxnNumber);
        cmd.appendInt32("stmtId", record->stmtId);
        cmd.end();
        cmd.append("result", record->result(static_cast<int64_t>(deletes.size()), *upsertedId));
        std::vector<ShardResponse> rs =
            sendToShards(opCtx, router, db, {{record->shard, cmd.obj()}});
        const ShardResponse& r = rs.front();
        Status st = r.status.isOK() ? net::replyStatus(r.reply) : r.status;
        return st.withContext("recording the retryable write on " + record->shard);
    };
    // The record first: it claims the statement on its shard, whose retries of it then wait
    // for this transaction instead of running it again while the move is in flight (another
    // claim there makes this move lose: WriteConflict, the caller runs the write again). Then
    // deletes of the stored versions, inserts of the new ones: on one shard a document keeps
    // its _id, which is unique there.
    auto move = [&]() -> Status {
        if (recordRetry) TRY_STATUS(recordWrite());
        if (!deletes.empty()) TRY_STATUS(runAll(WriteKind::kDelete, deletes));
        return runAll(WriteKind::kInsert, inserts);
    };
    if (inTransactionStatement(opCtx)) {
        TRY_STATUS(move());  // the client's transaction: its commit makes the move visible
    } else {
        auto* transactions = dynamic_cast<TransactionRouter*>(opCtx.service->routerTransactions);
        if (!transactions) {
            return Status(ErrorCodes::IllegalOperation, "this router runs no transactions");
        }
        TRY_STATUS(transactions->runInternalTransaction(opCtx, [&]() -> Status {
            TRY_STATUS(move());
            pauseWhileActive(hangBeforeCommittingMove, "SHARDING", 22250);
            return Status::OK();
        }));
    }
    *moved = static_cast<int64_t>(deletes.size());
    return Status::OK();
}

Status moveChangedDocuments(command::OperationContext& opCtx, Router& router, std::string_view db,
                            const std::string& ns, bson::BsonView reply,
                            std::optional<int32_t> stmtId, bson::BsonBuilder& out) {
    bson::BsonView error;
    for (bson::BsonElement e : reply["writeErrors"].objValue()) {
        if (e.isObject() && e.objValue()["code"].numberInt() == kWouldChange) error = e.objValue();
    }
    if (error.isEmpty() || !error["documents"].isArray()) {
        return Status(ErrorCodes::InternalError,
                      "a WouldChangeOwningShard error without documents");
    }
    const bool matchedGiven = error["matched"].isNumber();
    const int64_t matchedByShard = matchedGiven ? error["matched"].numberLong() : 0;
    auto resultOf = [&](int64_t moved, const bson::BsonObj& upsertedId) {
        command::StatementResult r;
        int64_t matched = matchedGiven ? matchedByShard : moved;
        r.n = std::max(matched, moved) + (upsertedId.isEmpty() ? 0 : 1);
        r.nModified = moved;
        r.upsertedId = upsertedId;
        return r;
    };
    std::optional<MovedWriteRecord> record;
    if (stmtId && error["shard"].type() == bson::BsonType::String) {
        record = MovedWriteRecord{std::string(error["shard"].stringValue()), *stmtId,
                                  [&](int64_t moved, const bson::BsonObj& upsertedId) {
                                      return resultOf(moved, upsertedId).toBson();
                                  }};
    }
    int64_t moved = 0;
    bson::BsonObj upsertedId;
    TRY_STATUS(moveDocuments(opCtx, router, db, ns, error["documents"].objValue(),
                             record ? &*record : nullptr, &moved, &upsertedId));
    command::StatementResult result = resultOf(moved, upsertedId);
    out.appendNumber("n", result.n);
    out.appendNumber("nModified", result.nModified);
    if (!upsertedId.isEmpty()) {
        bson::BsonArrayBuilder upserted;
        bson::BsonBuilder u;
        u.appendInt32("index", 0);
        u.appendElementAs(upsertedId.firstElement(), "_id");
        upserted.append(u.obj());
        out.appendArray("upserted", upserted.arr());
    }
    return Status::OK();
}

}  // namespace tessera::router
