#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "bson/bson_builder.h"
#include "bson/bson_obj.h"

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

// Moves the documents of statement 0's WouldChangeOwningShard error in `reply` (a batch of one
// statement) and writes the update's reply into `out`: {n, nModified, upserted?}. A stored
// version that changed meanwhile is WriteConflict (the caller runs the update again); other
// errors are the statement's.
Status moveChangedDocuments(command::OperationContext& opCtx, Router& router, std::string_view db,
                            const std::string& ns, bson::BsonView reply, bson::BsonBuilder& out);

// Moves `documents` (a WouldChangeOwningShard error's array) as moveChangedDocuments does:
// deletes then inserts, in the client's transaction or in one of the router's own. Sets
// *moved to how many stored versions moved and *upsertedId to an upsert's new _id (eoo else).
Status moveDocuments(command::OperationContext& opCtx, Router& router, std::string_view db,
                     const std::string& ns, bson::BsonView documents, int64_t* moved,
                     bson::BsonObj* upsertedId);

// A reply of several statements in which one would move a document: that statement's error
// becomes InvalidOptions (72), as MongoDB's "must be sent with write batch of size 1".
bson::BsonObj refuseMoveInBatch(bson::BsonView reply);

}  // namespace tessera::router
