#pragma once

#include <functional>
#include <optional>
#include <string>

#include "command/command.h"
#include "txn/retryable_write_record.h"
#include "txn/session_record_reaper.h"
#include "txn/transaction_table.h"

namespace tessera::txn {

// Retryable writes for a node whose data has no placement (the config server, `serve
// --replSet`): a write command with lsid + txnNumber runs at most once per (lsid, txnNumber)
// — a retry gets the stored result without executing again (TransactionTable) — as on a shard
// (src/shard/README.md), with the same recorders (retryable_write_record.h): each statement of
// an insert, update, delete or bulkWrite, and a findAndModify's reply, is recorded in the batch
// of the document write it makes, so a crash cannot separate a write from its record; restored
// at startup (with the config.transactions documents earlier versions wrote for bulkWrite).
class RetryableWriteHooks : public command::CommandHooks {
  public:
    // `runLocal(db, cmd)` runs a command on this node (it persists records).
    using RunLocal = std::function<Status(std::string_view db, const bson::BsonObj& cmd)>;
    RetryableWriteHooks(command::ServiceContext& service, RunLocal runLocal);

    // Loads the records (statements' and config.transactions'), then expires them with their
    // sessions (SessionRecordReaper).
    void startup();

    Status beforeCommand(command::OperationContext&, const command::CommandRequest&,
                         const command::Command&) override {
        return Status::OK();
    }
    StatusWith<std::shared_ptr<const command::OwnershipFilter>> ownershipFilter(
        command::OperationContext&, std::string_view) override {
        return std::shared_ptr<const command::OwnershipFilter>();
    }
    std::optional<bson::BsonObj> replayedReply(command::OperationContext& opCtx,
                                               const command::CommandRequest& request,
                                               const command::Command& command) override;
    void afterCommand(command::OperationContext& opCtx, const command::CommandRequest& request,
                      const command::Command& command, const Status& status,
                      const bson::BsonObj& reply) override;

    TransactionTable& table() { return _table; }

  private:
    // One executing attempt (the operation's admission): the recorder observing its writes.
    struct Attempt final : command::OperationAdmission {
        std::unique_ptr<StatementRecorder> statements;
        std::unique_ptr<FindAndModifyRecorder> findAndModify;
    };

    command::ServiceContext& _service;
    RunLocal _runLocal;
    TransactionTable _table;
    SessionRecordReaper _reaper;  // after _table and _runLocal: stopped before they go
};

}  // namespace tessera::txn
