#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "txn/transaction_table.h"

namespace tessera::storage {
class Engine;
class Transaction;
}  // namespace tessera::storage

namespace tessera::txn {

// The durable record of a session's last retryable write, in MongoDB's shape:
// config.transactions {_id: {id: <lsid UUID>}, txnNum, lastWriteOpTime: {ts, t: -1},
// lastWriteDate, result}; `result` (Tessera's) is the reply a retry gets. Written by earlier
// versions for a bulkWrite command (now recorded per statement, as insert/update/delete):
// still restored, and deleted when its session expires.
inline constexpr std::string_view kTransactionsCollection = "transactions";  // in db "config"

// The delete command (on db "config") of the session's record, when the session expires.
bson::BsonObj transactionRecordDelete(const std::string& lsid);

// Loads every record of config.transactions into `table` as whole-command results (the newest
// txnNumber of a session wins). Returns how many records it read.
size_t restoreTransactionRecords(storage::Engine& engine, TransactionTable& table);

// A shard's record of one executed statement: a storage side record (Engine::sideRecords) that
// the statement's document write carries in its own batch, so the write and the proof that it
// ran are durable together. Key: prefix + lsid bytes + "#" + stmtId (one per statement of a
// session: a newer txnNumber overwrites the same ids); value: {lsid: BinData, txnNum, stmtId,
// result}.
inline constexpr std::string_view kStatementRecordPrefix = "txn:";
std::string statementRecordKey(const std::string& lsid, StmtId stmtId);
std::string statementRecordValue(const std::string& lsid, int64_t txnNumber, StmtId stmtId,
                                 bson::BsonView result);
// Loads every statement record into `table`; records of a session's older txnNumbers are
// ignored. Returns how many records it read.
size_t restoreStatementRecords(storage::Engine& engine, TransactionTable& table);

// A statement record's value, parsed (nullopt: malformed).
struct StatementRecord {
    std::string lsid;
    int64_t txnNumber = 0;
    StmtId stmtId = 0;
    bson::BsonObj result;
};
std::optional<StatementRecord> parseStatementRecord(std::string_view value);
// The same from a record as a document (a migration's donor sends them so).
std::optional<StatementRecord> parseStatementRecord(bson::BsonView record);

// Adopts into `table` the statement records among `records` (side records a transaction
// committed: the records of a retryable write that a router carried out in a transaction of
// its own, txn::SessionTransactions::onSideRecordsCommitted); other keys are skipped.
// Returns how many it adopted.
size_t adoptStatementRecords(const std::vector<std::pair<std::string, std::string>>& records,
                             TransactionTable& table);

// Releases the claim `token` of statement `stmtId` of (`lsid`, `txnNumber`) in `table`
// (TransactionTable::claimMove / holdMove) when `txn` aborts; nothing for token 0.
void releaseMoveOnAbort(storage::Transaction& txn, std::weak_ptr<TransactionTable> table,
                        std::string lsid, int64_t txnNumber, StmtId stmtId, uint64_t token);

// The statement records among `records` (side records of a prepared transaction restored
// after a restart: retryable writes whose document a router was moving) held as moving in
// `table` until the transaction is decided — `table.holdMove` each, released by
// `txn.onAbort` (a commit adopts them, adoptStatementRecords) — so that their retries wait
// for the decision, as they did before the restart. Returns how many it holds.
size_t holdStatementRecords(const std::vector<std::pair<std::string, std::string>>& records,
                            const std::weak_ptr<TransactionTable>& table,
                            storage::Transaction& txn);

// Deletes every statement record of the session (its session expired). Unsynced: a delete lost
// in a crash brings back records that expire again 30 minutes after the restart.
Status forgetStatementRecords(storage::Engine& engine, const std::string& lsid);

// insert, update, delete, findAndModify (both spellings), bulkWrite.
bool isRetryableWriteCommand(std::string_view name);

}  // namespace tessera::txn
