#include "command/retryable_write_hooks.h"

#include <chrono>

#include "base/log.h"
#include "command/retryable_write_record.h"
#include "command/service_entry_point.h"
#include "storage/engine.h"
#include "txn/session_records.h"
#include "txn/session_transactions.h"

namespace tessera::command {
namespace {

bool isRetryableWrite(const OperationContext& opCtx, const Command& command) {
    return opCtx.lsid && opCtx.txnNumber && txn::isRetryableWriteCommand(command.name());
}

}  // namespace

RetryableWriteHooks::RetryableWriteHooks(ServiceContext& service, RunLocal runLocal)
    : _service(service),
      _runLocal(std::move(runLocal)),
      _reaper(_table, *service.engine, _runLocal) {}

void RetryableWriteHooks::startup() {
    restoreRecords();
    _reaper.start();
}

void RetryableWriteHooks::restoreRecords() {
    size_t n = txn::restoreStatementRecords(*_service.engine, _table) +
               txn::restoreTransactionRecords(*_service.engine, _table);
    if (n > 0) {
        log::info("SHARDING", 22101, "Restored retryable write records",
                  "{\"count\":" + std::to_string(n) + "}");
    }
    if (txn::SessionTransactions* transactions = _service.transactions) {
        for (const auto& [lsid, txnNumber] : _table.newestTxnNumbers()) {
            transactions->restoreRetryableWrite(lsid, txnNumber);
        }
    }
}

std::optional<bson::BsonObj> RetryableWriteHooks::replayedReply(OperationContext& opCtx,
                                                                const CommandRequest& request,
                                                                const Command& command) {
    if (!isRetryableWrite(opCtx, command)) return std::nullopt;
    auto deadline =
        opCtx.deadline.value_or(std::chrono::steady_clock::now() + std::chrono::seconds(60));
    // The session's transactions and retryable writes share one order of txnNumbers.
    if (txn::SessionTransactions* transactions = _service.transactions) {
        Status ordered = transactions->beginRetryableWrite(*opCtx.lsid, *opCtx.txnNumber,
                                                           !opCtx.inlineExecution);
        if (!ordered.isOK()) return errorReply(ordered);
    }
    auto started = _table.begin(*opCtx.lsid, *opCtx.txnNumber, deadline, !opCtx.inlineExecution);
    // A reply returned here ends the command (afterCommand is not called): the replay ends its
    // attempt at once.
    if (!started.isOK()) return errorReply(started.getStatus());
    txn::ExecutedView executed = std::move(started).getValue();
    auto attempt = std::make_unique<Attempt>();
    std::string_view name = command.name();
    if (name == "insert" || name == "update" || name == "delete" || name == "bulkWrite") {
        // Statement by statement, each recorded in its own write's batch; the command skips
        // what an earlier attempt ran (command/retryable_statements.h).
        attempt->statements =
            std::make_unique<StatementRecorder>(*opCtx.lsid, *opCtx.txnNumber, std::move(executed));
        opCtx.statements = attempt->statements.get();
        opCtx.writeUnit.addObserver(attempt->statements.get());
    } else if (auto done = executed.find(txn::kWholeCommand)) {
        _table.finish(*opCtx.lsid, *opCtx.txnNumber, {});
        return replayedWholeReply(*done);  // executed: replay
    } else if (name == "findAndModify") {
        attempt->findAndModify = findAndModifyRecorder(request, *opCtx.lsid, *opCtx.txnNumber);
        if (attempt->findAndModify) opCtx.writeUnit.addObserver(attempt->findAndModify.get());
    }
    opCtx.admission = std::move(attempt);
    return std::nullopt;  // execute; afterCommand ends the attempt
}

void RetryableWriteHooks::afterCommand(OperationContext& opCtx, const CommandRequest&,
                                       const Command& command, const Status& status,
                                       const bson::BsonObj& reply) {
    if (!isRetryableWrite(opCtx, command)) return;
    auto* attempt = dynamic_cast<Attempt*>(opCtx.admission.get());
    if (!attempt) return;  // replayed, or refused before it began
    if (attempt->statements) opCtx.writeUnit.removeObserver(attempt->statements.get());
    if (attempt->findAndModify) opCtx.writeUnit.removeObserver(attempt->findAndModify.get());
    opCtx.statements = nullptr;
    txn::ExecutedStatements executed;
    if (attempt->statements) {
        // Each statement that wrote is durable already, with its write — also when the command
        // failed later on.
        executed = attempt->statements->newlyExecuted();
    } else if (status.isOK()) {
        // findAndModify: its reply went into its write's batch (FindAndModifyRecorder). A
        // command-level error wrote nothing: nothing is recorded, so a retry executes.
        executed[txn::kWholeCommand] = reply;
    }
    _table.finish(*opCtx.lsid, *opCtx.txnNumber, executed);
    opCtx.admission.reset();
}

}  // namespace tessera::command
