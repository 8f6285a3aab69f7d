#pragma once

// What a statement of a multi-document transaction asks for — the `autocommit`,
// `startTransaction` and `readConcern` fields of its command — parsed and checked by MongoDB's
// rules. No storage here: the router, which holds none, reads these too.

#include <optional>
#include <string_view>

#include "base/hlc.h"
#include "base/status.h"
#include "bson/bson_obj.h"

namespace tessera::txn {

// A statement of a multi-document transaction: `autocommit: false` with lsid and txnNumber
// (commitTransaction, abortTransaction and prepareTransaction included). What it asks for.
struct TransactionArgs {
    bool statement = false;  // autocommit: false is present
    bool start = false;
    std::optional<Timestamp> atClusterTime;
    std::optional<Timestamp> afterClusterTime;
    // The first statement's read concern level is local (or none was given): the transaction
    // may create collections (command/transaction_ddl.h).
    bool readConcernLocal = true;
};

// Checks a command's transaction fields (MongoDB's rules: autocommit false only, with lsid and
// txnNumber; readConcern only on the first statement; no writeConcern but on the end commands).
StatusWith<TransactionArgs> parseTransactionArgs(bson::BsonView body, std::string_view commandName,
                                                 bool hasLsid);

// commitTransaction, abortTransaction, prepareTransaction: they end (a phase of) a transaction
// and never start one.
bool isTransactionEndCommand(std::string_view name);

// Whether `commandName` may run inside a multi-document transaction (MongoDB's list, less what
// Tessera refuses: DDL inside a transaction).
bool allowedInTransaction(std::string_view commandName);

// A shard's reply to the first statement of a router's transaction that named no atClusterTime
// (only a lower bound, afterClusterTime) carries the timestamp the shard's snapshot reads at: the
// router reads at it on every later participant (router/transaction_router.h).
inline constexpr std::string_view kTransactionReadTimestampField = "transactionReadTimestamp";

}  // namespace tessera::txn
