#pragma once

#include <functional>
#include <optional>
#include <string>

#include "command/command.h"
#include "command/retryable_write_record.h"
#include "txn/session_record_reaper.h"
#include "txn/transaction_table.h"

namespace tessera::command {

// Retryable writes for a node whose data has no placement (the config server, `serve
// --replSet`): a write command with lsid + txnNumber runs at most once per (lsid, txnNumber)
// — a retry gets the stored result without executing again (TransactionTable) — as on a shard
// (src/shard/README.md), with the same recorders (retryable_write_record.h): each statement of
// an insert, update, delete or bulkWrite, and a findAndModify's reply, is recorded in the batch
// of the document write it makes, so a crash cannot separate a write from its record; restored
// at startup (with the config.transactions documents earlier versions wrote for bulkWrite).
class RetryableWriteHooks : public CommandHooks {
  public:
    // `runLocal(db, cmd)` runs a command on this node (it persists records).
    using RunLocal = std::function<Status(std::string_view db, const bson::BsonObj& cmd)>;
    RetryableWriteHooks(ServiceContext& service, RunLocal runLocal);

    // Loads the records (statements' and config.transactions'), then expires them with their
    // sessions (SessionRecordReaper).
    void startup();
    // Loads the records again: a replica set member that becomes primary learns what the
    // previous primary executed (its records replicated with its writes). Idempotent: a newer
    // txnNumber of a session wins.
    void restoreRecords();

    Status beforeCommand(OperationContext&, const CommandRequest&, const Command&) override {
        return Status::OK();
    }
    StatusWith<std::shared_ptr<const OwnershipFilter>> ownershipFilter(OperationContext&,
                                                                       std::string_view) override {
        return std::shared_ptr<const OwnershipFilter>();
    }
    std::optional<bson::BsonObj> replayedReply(OperationContext& opCtx,
                                               const CommandRequest& request,
                                               const Command& command) override;
    void afterCommand(OperationContext& opCtx, const CommandRequest& request,
                      const Command& command, const Status& status,
                      const bson::BsonObj& reply) override;

    txn::TransactionTable& table() { return _table; }

  private:
    // One executing attempt (the operation's admission): the recorder observing its writes.
    struct Attempt final : OperationAdmission {
        std::unique_ptr<StatementRecorder> statements;
        std::unique_ptr<FindAndModifyRecorder> findAndModify;
    };

    ServiceContext& _service;
    RunLocal _runLocal;
    txn::TransactionTable _table;
    txn::SessionRecordReaper _reaper;  // after _table and _runLocal: stopped before they go
};

}  // namespace tessera::command
