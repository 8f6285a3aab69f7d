#pragma once

#include "bson/bson_obj.h"

namespace tessera::command {

// MongoDB's error labels that the server decides (reference/mongodb-surface.md §4.2; MongoDB's
// src/mongo/db/error_labels.cpp). Drivers of wire version ≥ 9 trust the server for
// `RetryableWriteError` and never add it to a server's reply themselves, so a retryable write
// that fails with a transient error is retried only if the reply carries the label.

// MongoDB's RetriableError category: the network, shutdown and not-primary codes a retry of the
// same statement (same lsid and txnNumber) may succeed on.
bool isRetriableErrorCode(int code);
// Errors after which the whole transaction may succeed when retried (TransientTransactionError).
bool isTransientTransactionErrorCode(int code);

// What an operation knows about the reply it is about to send.
struct LabelContext {
    bool retryableWrite = false;  // lsid + txnNumber, no autocommit (no transaction)
    bool wroteNothing = false;    // the error came before the command ran (admission, failCommand)
    bool inTransaction = false;   // a statement, commit or abort of a multi-document transaction
    bool commitTransaction = false;  // ... and it is commitTransaction
};

// Returns `reply` with the labels the server owes it: `RetryableWriteError` when the operation is
// a retryable write and the reply's `code` (ok: 0) or `writeConcernError.code` is retriable, plus
// `NoWritesPerformed` when `wroteNothing` and it is an error reply. Labels already present
// (relayed from a shard, or set by failCommand's `errorLabels`) are kept and never duplicated.
// In a transaction: `TransientTransactionError` on an error the whole transaction may succeed
// on when the application retries it (WriteConflict, LockTimeout, NoSuchTransaction, ...; not on
// a commit's write concern error), and on commitTransaction `UnknownTransactionCommitResult` when
// the outcome is unknown to the client (a retriable error, MaxTimeMSExpired, a write concern
// error): withTransaction then retries the commit, which is idempotent.
// Returns `reply` itself when nothing is owed (the common case: no copy).
bson::BsonObj withServerErrorLabels(bson::BsonObj reply, const LabelContext& context);

// A router's reply as its client gets it: a shutdown code it relays from a shard or the config
// service (InterruptedAtShutdown 11600, ShutdownInProgress 91 — a member restarting after a
// step-down, a replication group stopping) would tell drivers that the router itself shuts down,
// and they clear its connection pool, failing every operation in flight on it (the fault suite
// saw a transaction fail so after a moveChunk's error). The router answers
// InterruptedDueToReplStateChange (11602) instead — retriable too, after which drivers only check
// the router again — in the reply and in its writeConcernError. Not applied to a router's own
// failCommand (the tests' way to make the router itself answer a shutdown code). Returns `reply`
// itself when it has none (no copy).
bson::BsonObj withoutShutdownCodes(bson::BsonObj reply);

}  // namespace tessera::command
