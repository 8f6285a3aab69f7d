#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson_builder.h"
#include "bson/bson_obj.h"
#include "command/command.h"
#include "command/server_info.h"
#include "storage/catalog_types.h"
#include "storage/collection_writer.h"

namespace tessera::storage {
class Engine;
}

namespace tessera::query {
class Variables;
}

namespace tessera::command {

// The statements of a write command: the body array `field` (e.g. `documents`) or the kind-1
// document sequence of that name. Errors: both given (BadValue), not an array (TypeMismatch),
// no statements or more than kMaxWriteBatchSize (InvalidLength 16, MongoDB's message "Write
// batch sizes must be between 1 and 100000. Got 0 operations."), a non-document element
// (TypeMismatch).
StatusWith<std::vector<bson::BsonView>> writeStatements(const CommandRequest& request,
                                                        std::string_view field);

// The first stage of `pipeline` that writes ("$out" or "$merge"), if any.
std::optional<std::string_view> pipelineWriteStage(bson::BsonView pipeline);

// $out and $merge write, and a linearizable read cannot be combined with a write (MongoDB's
// document_source_out/merge check): InvalidOptions, before anything runs. Shared by the node's
// and the router's aggregate.
Status checkAggregateReadConcern(bson::BsonView body, bson::BsonView pipeline);

// `ordered` (default true).
StatusWith<bool> parseOrdered(bson::BsonView body, std::string_view command);

// The command's `let` document evaluated into variables (constants computed once, $$NOW fixed),
// or null when the command has none. TypeMismatch (14) when `let` is not a document.
StatusWith<std::shared_ptr<const query::Variables>> parseLet(bson::BsonView body,
                                                             std::string_view command);

// For Command::runsInline: whether `filter` pins its document by `_id` — `{_id: v}` or
// `{_id: {$eq: v}}` with v a scalar (not a document, array or regex), other fields allowed — so
// its plan is one lookup in the unique `_id` index.
bool filterPinsId(bson::BsonElement filter);
// Whether db.<coll> (`coll` the command's first element) exists and is not a view: an inline
// write must not create it (createCollection journals its catalog entry) and a view's pipeline
// has no bounded cost.
bool isExistingCollection(const ServiceContext& service, std::string_view db,
                          bson::BsonElement coll);
// At most this many statements in a write that runs inline: one. A statement that meets a
// document or unique value a transaction holds must wait for the transaction's commit, which may
// arrive on a connection of the same io thread: only a first statement, which has changed
// nothing yet, can leave that wait to the pool (InlineWouldBlock) instead of holding the thread.
inline constexpr size_t kMaxInlineStatements = 1;
// Whether the command has 1..kMaxInlineStatements statements in `field` (body array or kind-1
// sequence) and `pinned(statement)` holds for each.
template <typename Pred>
bool everyStatementPinsId(const CommandRequest& request, std::string_view field, Pred pinned) {
    size_t n = 0;
    auto check = [&](bson::BsonView s) { return ++n <= kMaxInlineStatements && pinned(s); };
    if (const DocumentSequence* seq = request.sequence(field)) {
        for (bson::BsonView s : seq->documents) {
            if (!check(s)) return false;
        }
        return n > 0;
    }
    bson::BsonElement arr = request.body[field];
    if (!arr.isArray()) return false;
    for (bson::BsonElement e : arr.objValue()) {
        if (!e.isObject() || !check(e.objValue())) return false;
    }
    return n > 0;
}

// The collection `ns`, created with default options when it does not exist (implicit creation
// by the first write). Errors from createCollection (e.g. InvalidNamespace) are returned.
// With an operation: as it sees it (transaction_ddl.h), created in its transaction if it has one.
StatusWith<storage::CollectionPtr> getOrCreateCollection(storage::Engine& engine,
                                                         const std::string& ns);
StatusWith<storage::CollectionPtr> getOrCreateCollection(OperationContext& opCtx,
                                                         const std::string& ns);

// The collection `ns` for a write that does not create it: null when it does not exist,
// CommandNotSupportedOnView (166) when `ns` is a view (views have no documents or indexes).
// With an operation: as it sees it (a collection its transaction created included).
StatusWith<storage::CollectionPtr> getWritableCollection(const storage::Engine& engine,
                                                         const std::string& ns);
StatusWith<storage::CollectionPtr> getWritableCollection(const OperationContext& opCtx,
                                                         const std::string& ns);

// `doc` with `_id` as its first field: an existing `_id` is moved to the front, a missing one is
// generated (ObjectId). Returns `doc` itself (copied) when it already starts with `_id`.
bson::BsonObj ensureIdFirst(bson::BsonView doc);

// One failed statement of a write command.
struct WriteError {
    int64_t index = 0;
    Status status;
    bson::BsonObj extraInfo;  // fields appended next to `code` (keyPattern/keyValue, errInfo)
};

// Appends `writeErrors: [{index, code, <extraInfo>, errmsg}]` (nothing when empty).
void appendWriteErrors(bson::BsonBuilder& reply, const std::vector<WriteError>& errors);

// A WriteError for a failed storage write: DuplicateKey carries keyPattern/keyValue.
WriteError makeWriteError(int64_t index, const Status& status,
                          const storage::CollectionWriter* writer);

// `collation`: only the simple collation is supported ({locale: "simple"}); anything else is
// BadValue (2). Missing/empty is fine.
Status checkCollation(const bson::BsonElement& collation);

// The documents of `{<field>: [...]}` arrays as views (elements must be objects).
StatusWith<std::vector<bson::BsonView>> objectArray(const bson::BsonElement& arr,
                                                    std::string_view command);

// Optional document argument: missing → empty document; not an object → TypeMismatch (14)
// "BSON field '<command>.<field>' is the wrong type ..." .
StatusWith<bson::BsonView> optionalObject(bson::BsonView body, std::string_view field,
                                          std::string_view command);

// An optional integral argument (any numeric type with an integral value).
StatusWith<std::optional<int64_t>> optionalInteger(bson::BsonView body, std::string_view field,
                                                   std::string_view command);

}  // namespace tessera::command
