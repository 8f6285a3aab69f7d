#pragma once

#include <functional>
#include <optional>
#include <string>

#include "command/command.h"
#include "txn/transaction_table.h"

namespace tessera::txn {

// Retryable writes for a node whose data has no placement (the config server): a write command
// with lsid + txnNumber runs at most once per (lsid, txnNumber) — a retry gets the stored reply
// without executing again (TransactionTable) — and the reply is recorded durably in
// config.transactions after the write (session_records.h), restored at startup.
//
// The record is written after the command, not in its write batch (the shard's single-statement
// writes are; src/shard/README.md): a crash between the write and its record lets a retry apply
// the write again. Until the write unit carries the record (issue 11), this is MongoDB's
// pre-4.0-style at-least-once window, confined to the config server's catalog writes.
class RetryableWriteHooks : public command::CommandHooks {
  public:
    // `runLocal(db, cmd)` runs a command on this node (it persists records).
    using RunLocal = std::function<Status(std::string_view db, const bson::BsonObj& cmd)>;
    RetryableWriteHooks(command::ServiceContext& service, RunLocal runLocal);

    // Loads the records of config.transactions.
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
    command::ServiceContext& _service;
    RunLocal _runLocal;
    TransactionTable _table;
};

}  // namespace tessera::txn
