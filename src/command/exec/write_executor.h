#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "command/command.h"
#include "query/update_driver.h"
#include "storage/collection_writer.h"

namespace tessera::command {
class DocumentValidator;
}
namespace tessera::query {
class Variables;
}

namespace tessera::command::exec {

// One update statement (an `updates` entry of the update command, or findAndModify's).
struct UpdateStatement {
    bson::BsonObj query;
    // `u`: a replacement or operator document, or (updateIsPipeline) the array of stages of a
    // pipeline-style update.
    bson::BsonObj update;
    bool updateIsPipeline = false;
    // The command's `let` variables ($$name in $expr and pipeline expressions); may be null.
    std::shared_ptr<const query::Variables> let;
    bson::BsonObj arrayFilters;  // BSON array, or empty
    bson::BsonObj hint;          // see parseHint
    bson::BsonObj sort;          // the first matching document in this order (multi: false)
    // Checks every document the statement writes (nullptr: no validation). A failure stops the
    // statement with DocumentValidationFailure, outcome->errorInfo = {errInfo: {...}}.
    const DocumentValidator* validator = nullptr;
    bool upsert = false;
    bool multi = false;
    bool wantPreImage = false;   // findAndModify: keep the document before the update
    bool wantPostImage = false;  // findAndModify: keep the document after the update
    // {collation: <argument>} when the statement has one, else empty (the collection's default
    // collation applies).
    bson::BsonObj collationArg;
    // On a shard, for a sharded collection: the documents the shard owns (else null). An update
    // that changes a document's shard key is then held to MongoDB's rules — a single-document
    // one only in a retryable write or a transaction (IllegalOperation 20) — and to ownership: a
    // document never ends up under a key another shard owns, an upserted one included. Such a
    // statement writes nothing: sent by a router (`routerMovesDocuments`), it fails with
    // WouldChangeOwningShard (283) and `documents: [{pre, post}]` in the error (every document
    // it matched and changes, `post` alone for an upsert's new document; a multi-update checks
    // every target before it writes any, at most kMaxMovedDocuments), which the router writes
    // as deletes and inserts in one transaction (update and findAndModify); sent to the shard
    // directly, InvalidOptions 72.
    const OwnershipFilter* ownership = nullptr;
    bool retryableWrite = false;  // the command carried a txnNumber
    bool inTransaction = false;   // a statement of a multi-document transaction
    // InlineWouldBlock instead of waiting out a WriteConflict (a transaction holds the document):
    // an inline command's statement (OperationContext::inlineExecution) that is its first, so
    // that the pool runs the command again.
    bool deferConflicts = false;
    bool routerMovesDocuments = false;
};

// The most documents one update statement may move between shards (its router writes them in
// one transaction).
inline constexpr size_t kMaxMovedDocuments = 1000;

struct UpdateOutcome {
    int64_t nMatched = 0;
    int64_t nModified = 0;
    std::optional<bson::BsonObj> upsertedId;  // {"": _id} when the statement inserted
    std::optional<bson::BsonObj> preImage;
    std::optional<bson::BsonObj> postImage;
    // Extra fields for a write error (keyPattern/keyValue of DuplicateKey).
    bson::BsonObj errorInfo;
};

// Runs one update statement through `writer`:
//  1. finds the matching record keys first (all for multi, else the first in `sort` order) on the
//     latest state, so a multi-update never revisits a document it already moved (Halloween
//     problem);
//  2. applies the update to each (positional `$` from the filter's match details) and writes the
//     documents that changed. First writer wins: when a concurrent write changed a target after
//     the scan (WriteConflict from the writer), its latest version is matched again and updated
//     if it still matches; a single-document statement whose target went away looks again;
//  3. inserts an upsert document (query equalities + update) when nothing matched; losing that
//     insert to a concurrent upsert of the same unique key updates the winner's document.
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
    bson::BsonObj collationArg;                   // as UpdateStatement::collationArg
    std::shared_ptr<const query::Variables> let;  // as UpdateStatement::let
    bool deferConflicts = false;                  // as UpdateStatement::deferConflicts
};

// Deletes the matching documents (record keys collected first; a target changed by a concurrent
// write is deleted if it still matches, as updates). *nDeleted counts what was removed even on
// error.
Status executeDelete(const OperationContext& opCtx, storage::CollectionWriter& writer,
                     const DeleteStatement& stmt, const storage::WriteOptions& wopts,
                     int64_t* nDeleted, std::optional<bson::BsonObj>* preImage = nullptr);

// Parses the statement's update (document or pipeline, with its `let` variables).
StatusWith<query::UpdateDriver> parseUpdate(const UpdateStatement& stmt);

// The upsert document for the statement (its query's equalities + its update), not written.
StatusWith<bson::BsonObj> buildUpsertDocument(const UpdateStatement& stmt);

}  // namespace tessera::command::exec
