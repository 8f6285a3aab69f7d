#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "command/command.h"
#include "command/exec/query_executor.h"

namespace tessera::command::exec {

// A parsed `find` command (MongoDB's FindCommandRequest).
struct FindRequest {
    std::string coll;
    QuerySpec query;
    std::optional<int64_t> batchSize;
    bool singleBatch = false;
    bool noCursorTimeout = false;
    // {collation: <the argument>} when given (validated), else empty: the command resolves it
    // against the collection's default (resolveCollation) into query.collator.
    bson::BsonObj collationArg;
};

// Parses and validates a find command body. Errors as MongoDB's: TypeMismatch (14) for
// wrongly-typed fields, 51024 for negative skip/limit/batchSize ("BSON field 'skip' value must be
// >= 0, actual value '-1'"), 40415 for unknown fields, the collation's parse errors (see
// query::Collator), NotImplemented (238) for tailable/returnKey/showRecordId/min/max. A negative
// limit means a single batch of |limit| documents (legacy OP_QUERY semantics).
StatusWith<FindRequest> parseFindRequest(const CommandRequest& request, bson::BsonView body);

// Appends `cursor: {<batchField>: batch, id, ns}` (MongoDB's field order: firstBatch/nextBatch,
// id, ns), and `atClusterTime` when the read was a snapshot read at that time.
void appendCursor(bson::BsonBuilder& reply, std::string_view batchField,
                  bson::BsonArrayBuilder& batch, int64_t id, std::string_view ns,
                  std::optional<Timestamp> atClusterTime = std::nullopt);

// The non-negative integer argument `field` (51024 when negative).
StatusWith<std::optional<int64_t>> nonNegativeArgument(bson::BsonView body, std::string_view field,
                                                       std::string_view command,
                                                       bool allowNegative = false);

}  // namespace tessera::command::exec
