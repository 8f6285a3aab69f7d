#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/status.h"
#include "bson/bson_builder.h"
#include "bson/bson_obj.h"

namespace tessera::command {

struct CommandRequest;

// What one statement of a retryable insert/update/delete did, as its retry is answered: the
// statement's share of the reply's n and nModified, and the _id it upserted ({_id: v}) if any.
struct StatementResult {
    int64_t n = 0;
    int64_t nModified = 0;
    bson::BsonObj upsertedId;  // {_id: <value>} or empty

    bson::BsonObj toBson() const;
    static StatementResult fromBson(bson::BsonView doc);
};

// The at-most-once state of the retryable write an operation runs, per statement (MongoDB's
// stmtIds): set in OperationContext::statements by the role's hooks when a command with lsid +
// txnNumber starts (a shard), null otherwise. insert, update and delete consult it for each
// statement: one already executed by an earlier attempt of the same txnNumber is not run again —
// its recorded result goes into the reply and its id into `retriedStmtIds` — and one that runs
// is announced first, so that its document write records its result in the same atomic batch.
class RetryableStatements {
  public:
    enum class Kind { kInsert, kUpdate, kDelete };
    virtual ~RetryableStatements() = default;

    // The result of statement `stmtId` from an earlier attempt, or nullopt: execute it.
    virtual std::optional<StatementResult> executed(int32_t stmtId) const = 0;
    // The document writes from now on belong to statement `stmtId` of a `kind` command.
    // `recordable`: it writes at most one document (insert; update and delete with multi:
    // false / limit: 1) — a multi-document statement is not retryable (MongoDB's rule) and is
    // never recorded: its retry runs it again.
    virtual void beginStatement(int32_t stmtId, Kind kind, bool recordable) = 0;
    // The statement announced last has ended with `outcome`: its write committed (OK) or it
    // wrote nothing (an error: nothing is recorded, so its retry executes it).
    virtual void endStatement(const Status& outcome) = 0;
};

// The statement ids of a write command's `count` statements: its `stmtIds` (a router's
// sub-command: the client's indexes) or 0..count-1. InvalidLength (16) when `stmtIds` does not
// have one int per statement.
StatusWith<std::vector<int32_t>> statementIds(const CommandRequest& request, size_t count);

// Appends `retriedStmtIds` (MongoDB's reply field: the statements answered from their record)
// when there are any.
void appendRetriedStatementIds(bson::BsonBuilder& reply, const std::vector<int32_t>& ids);

}  // namespace tessera::command
