#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "command/command.h"
#include "storage/collection_writer.h"

namespace tessera::command::exec {

// One update statement (an `updates` entry of the update command, or findAndModify's).
struct UpdateStatement {
    bson::BsonObj query;
    bson::BsonObj update;        // `u`: replacement or operator document
    bson::BsonObj arrayFilters;  // BSON array, or empty
    bson::BsonObj hint;          // see parseHint
    bson::BsonObj sort;          // findAndModify only
    bool upsert = false;
    bool multi = false;
    bool wantPreImage = false;   // findAndModify: keep the document before the update
    bool wantPostImage = false;  // findAndModify: keep the document after the update
};

struct UpdateOutcome {
    int64_t nMatched = 0;
    int64_t nModified = 0;
    std::optional<bson::BsonObj> upsertedId;  // {"": _id} when the statement inserted
    std::optional<bson::BsonObj> preImage;
    std::optional<bson::BsonObj> postImage;
    // Extra fields for a write error (keyPattern/keyValue of DuplicateKey).
    bson::BsonObj errorInfo;
};

// Runs one update statement under `writer` (the collection's write lock):
//  1. finds the matching record keys first (all for multi, else the first in `sort` order) on a
//     snapshot of the latest state, so a multi-update never revisits a document it already
//     moved (Halloween problem);
//  2. applies the update to each (positional `$` from the filter's match details) and writes the
//     documents that changed;
//  3. inserts an upsert document (query equalities + update) when nothing matched.
// `outcome` holds what was done even when an error stops the statement midway. Errors:
// FailedToParse (9) for multi with a replacement, the matcher's/driver's parse errors, BadValue
// for a positional update without a matching array, ImmutableField (66), DuplicateKey (11000,
// outcome->errorInfo carries keyPattern/keyValue).
Status executeUpdate(const OperationContext& opCtx, storage::CollectionWriter& writer,
                     const UpdateStatement& stmt, const storage::WriteOptions& wopts,
                     UpdateOutcome* outcome);

struct DeleteStatement {
    bson::BsonObj query;
    bson::BsonObj hint;
    bson::BsonObj sort;  // findAndModify only
    bool multi = false;  // limit: 0
    bool wantPreImage = false;
};

// Deletes the matching documents (record keys collected first). *nDeleted counts what was
// removed even on error.
Status executeDelete(const OperationContext& opCtx, storage::CollectionWriter& writer,
                     const DeleteStatement& stmt, const storage::WriteOptions& wopts,
                     int64_t* nDeleted, std::optional<bson::BsonObj>* preImage = nullptr);

// The upsert document for `query` + `update` (without writing it).
StatusWith<bson::BsonObj> buildUpsertDocument(bson::BsonView query, bson::BsonView update,
                                              bson::BsonView arrayFilters);

}  // namespace tessera::command::exec
