#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "bson/bson_builder.h"
#include "bson/bson_obj.h"
#include "placement/chunk_map.h"

namespace tessera::command {
struct OperationContext;
}

namespace tessera::router {

class Router;

// Changing a document's shard key so that another shard owns it (MongoDB's
// WouldChangeOwningShard, extended to multi-updates): the shard that holds the document writes
// nothing and answers the statement with WouldChangeOwningShard (283) and the documents it would
// change, `documents: [{pre, post}]` (`post` alone: an upsert's new document) and `matched`;
// the router then deletes each stored version (by `_id` and its shard key: it must still be
// there) and inserts each new one where its key lives, in the client's transaction or in one of
// the router's own, so that a document is on one shard or the other, never both or neither.
//
// The statement of `reply` (an update command's reply, statements `count`) that answered so:
// its index, or -1.
int wouldChangeOwningShardIndex(bson::BsonView reply);

// A client's retryable write (lsid + txnNumber, outside a transaction) that a move carries
// out: the move's transaction also records it, with the result its client gets, on `shard` —
// the one that answered WouldChangeOwningShard, which a retry reaches again (or asks, without a
// shard key: a find's $retryableWriteStatus) — by `_shardsvrRecordRetryableWrite`
// (src/shard/transaction_commands.cpp), the transaction's first command there. The retry is
// answered from that record instead of running again, which would match nothing (n 0) or
// insert an upsert's document a second time; a retry that arrives while the move is in flight
// waits for it there (txn::TransactionTable::claimMove).
struct MovedWriteRecord {
    placement::ShardId shard;
    int32_t stmtId = 0;  // the client's statement id; -1 (a whole command) for findAndModify
    // What a retry gets: an update statement's {n, nModified, upserted?}, or a findAndModify's
    // whole reply, from what the move did (as moveDocuments reports it).
    std::function<bson::BsonObj(int64_t moved, const bson::BsonObj& upsertedId)> result;
};

// Moves the documents of statement 0's WouldChangeOwningShard error in `reply` (a batch of one
// statement) and writes the update's reply into `out`: {n, nModified, upserted?}. A stored
// version that changed meanwhile is WriteConflict (the caller runs the update again); other
// errors are the statement's. `stmtId`: the client's id of a single-document statement (a
// multi-update is not a retryable write: MongoDB's rule), which a retryable write records on
// the shard that answered (MovedWriteRecord); nullopt for a multi-update.
Status moveChangedDocuments(command::OperationContext& opCtx, Router& router, std::string_view db,
                            const std::string& ns, bson::BsonView reply,
                            std::optional<int32_t> stmtId, bson::BsonBuilder& out);

// Moves `documents` (a WouldChangeOwningShard error's array) as moveChangedDocuments does:
// deletes then inserts, in the client's transaction or in one of the router's own, with
// `record` (may be null) when the operation is a retryable write. Sets *moved to how many
// stored versions moved and *upsertedId to an upsert's new _id (eoo else).
Status moveDocuments(command::OperationContext& opCtx, Router& router, std::string_view db,
                     const std::string& ns, bson::BsonView documents,
                     const MovedWriteRecord* record, int64_t* moved, bson::BsonObj* upsertedId);

// A reply of several statements in which one would move a document: that statement's error
// becomes InvalidOptions (72), as MongoDB's "must be sent with write batch of size 1".
bson::BsonObj refuseMoveInBatch(bson::BsonView reply);

}  // namespace tessera::router
