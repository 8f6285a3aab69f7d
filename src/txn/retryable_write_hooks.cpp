#include "txn/retryable_write_hooks.h"

#include <chrono>

#include "base/log.h"
#include "base/wall_clock.h"
#include "command/service_entry_point.h"
#include "storage/engine.h"
#include "txn/session_records.h"

namespace tessera::txn {
namespace {

bool isRetryableWrite(const command::OperationContext& opCtx, const command::Command& command) {
    return opCtx.lsid && opCtx.txnNumber && isRetryableWriteCommand(command.name());
}

}  // namespace

RetryableWriteHooks::RetryableWriteHooks(command::ServiceContext& service, RunLocal runLocal)
    : _service(service), _runLocal(std::move(runLocal)) {}

void RetryableWriteHooks::startup() {
    size_t n = restoreTransactionRecords(*_service.engine, _table);
    if (n > 0) {
        log::info("SHARDING", 22101, "Restored retryable write records",
                  "{\"count\":" + std::to_string(n) + "}");
    }
}

std::optional<bson::BsonObj> RetryableWriteHooks::replayedReply(command::OperationContext& opCtx,
                                                                const command::CommandRequest&,
                                                                const command::Command& command) {
    if (!isRetryableWrite(opCtx, command)) return std::nullopt;
    auto deadline =
        opCtx.deadline.value_or(std::chrono::steady_clock::now() + std::chrono::seconds(60));
    auto started = _table.begin(*opCtx.lsid, *opCtx.txnNumber, deadline);
    // A reply returned here ends the command (afterCommand is not called): the replay ends its
    // attempt at once.
    if (!started.isOK()) return command::errorReply(started.getStatus());
    auto done = started.getValue().find(kWholeCommand);
    if (done == started.getValue().end()) return std::nullopt;  // execute; afterCommand records
    _table.finish(*opCtx.lsid, *opCtx.txnNumber, {});
    return done->second;
}

void RetryableWriteHooks::afterCommand(command::OperationContext& opCtx,
                                       const command::CommandRequest&,
                                       const command::Command& command, const Status& status,
                                       const bson::BsonObj& reply) {
    if (!isRetryableWrite(opCtx, command)) return;
    // A command-level error wrote nothing: nothing is recorded, so a retry executes.
    ExecutedStatements executed;
    if (status.isOK()) {
        Status persisted =
            _runLocal("config", transactionRecordUpsert(*opCtx.lsid, *opCtx.txnNumber, reply,
                                                        _service.engine->lastCommitTimestamp(),
                                                        wallClockMillis()));
        if (!persisted.isOK()) {
            log::warning("SHARDING", 22010, "Failed to persist a retryable write record",
                         "{\"error\":\"" + log::jsonEscape(persisted.toString()) + "\"}");
        }
        executed[kWholeCommand] = reply;
    }
    _table.finish(*opCtx.lsid, *opCtx.txnNumber, executed);
}

}  // namespace tessera::txn
