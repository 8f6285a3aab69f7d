// The first two phases of a request (entry_point_phases.h): parse — what is asked, checked
// before anything runs — and admit — the cluster time, a snapshot read's time, the test
// failpoints.

#include <limits>
#include <thread>

#include "base/failpoint.h"
#include "command/entry_point_phases.h"
#include "command/fail_command.h"
#include "command/member_state_gate.h"
#include "command/service_entry_point.h"
#include "repl/replica_set.h"
#include "storage/engine.h"

namespace tessera::command {

// MongoDB's `onPrimaryTransactionalWrite` (test commands only): a retryable write (txnNumber, not
// in a transaction) that evaluates it closes its connection without a reply — after it applied
// and recorded the write, or, with `failBeforeCommitExceptionCode`, before anything ran (then
// with that error when `closeConnection: false`). The driver's retry must get the first
// attempt's result, or apply the write once.
TESSERA_FAIL_POINT_DEFINE(onPrimaryTransactionalWrite);

namespace {

// Where a process runs no multi-document transactions (the config server, a standalone without
// --replSet), a command that would start, continue, commit or abort one is refused before it is
// looked up, checked or run, so no statement of a would-be transaction is ever applied on its own
// (a router once dropped `startTransaction` and applied the writes). The standalone keeps
// mongod's answer for session fields (20); the others answer OperationNotSupportedInTransaction
// (263): the Node driver rewrites every IllegalOperation (20) of a write into its "add
// retryWrites=false" hint, which would hide what to do; 263 reaches the user as written and
// carries no TransientTransactionError label, so withTransaction does not retry it.
Status refuseTransaction(const CommandRequest& request, const RolePolicy& policy) {
    bool txnCommand = txn::isTransactionEndCommand(request.commandName);
    bool txnFields =
        request.body.hasField("startTransaction") || request.body.hasField("autocommit");
    if (!policy.acceptsSessions && (txnFields || request.body.hasField("txnNumber"))) {
        return Status(ErrorCodes::IllegalOperation,
                      "Transaction numbers are only allowed on a replica set member or mongos");
    }
    if ((!txnCommand && !txnFields) || policy.transactions()) return Status::OK();
    return Status(ErrorCodes::OperationNotSupportedInTransaction,
                  "Transactions are not supported by this Tessera version: '" +
                      std::string(request.commandName) +
                      (txnCommand ? "' commits or aborts a multi-document transaction"
                                  : "' carries startTransaction/autocommit") +
                      ". Nothing was applied; run the operations without a transaction.");
}

Status lookUp(Invocation& inv) {
    inv.command = inv.service.registry->find(inv.request.commandName);
    if (!inv.command || (inv.command->testOnly() && !inv.service.enableTestCommands)) {
        return Status(ErrorCodes::CommandNotFound,
                      "no such command: '" + std::string(inv.request.commandName) + "'");
    }
    if (inv.command->adminOnly() && inv.request.db != "admin") {
        return Status(ErrorCodes::Unauthorized, std::string(inv.command->name()) +
                                                    " may only be run against the admin database.");
    }
    return Status::OK();
}

// lsid, txnNumber and the transaction fields.
Status parseSession(Invocation& inv) {
    if (!inv.policy.acceptsSessions) return Status::OK();
    TRY_STATUS(applySessionArgs(inv.request.body, inv.opCtx));
    if (inv.policy.transactions()) {
        ASSIGN_OR_RETURN(inv.txnArgs,
                         txn::parseTransactionArgs(inv.request.body, inv.request.commandName,
                                                   inv.opCtx.lsid.has_value()));
    }
    if (inv.opCtx.txnNumber && !inv.txnArgs.statement && !inv.command->supportsRetryableWrite()) {
        return Status(ErrorCodes::NotARetryableWriteCommand,
                      "txnNumber may only be provided for multi-document transactions and "
                      "retryable write commands. autocommit:false was not provided, and " +
                          std::string(inv.command->name()) + " is not a retryable write command.");
    }
    return Status::OK();
}

// A read has no write to run before it reports a write concern it cannot meet: it is refused
// before it runs, as it always was (a write runs, then reports it: reply()).
Status refuseUnsatisfiableWriteConcernOnRead(const Invocation& inv) {
    if (!isRestartableRead(inv.request)) return Status::OK();
    if (inv.service.replicaSet) {
        bson::BsonElement wc = inv.request.body["writeConcern"];
        bson::BsonElement w = wc.isObject() ? wc.objValue()["w"] : bson::BsonElement();
        if (!w.isNumber() || w.numberLong() <= 1) return Status::OK();
        return inv.service.replicaSet->checkSatisfiable(static_cast<size_t>(w.numberLong()));
    }
    std::optional<bson::BsonObj> error = unsatisfiableWriteConcernError(inv.request.body);
    if (!error) return Status::OK();
    return Status(ErrorCodes::UnsatisfiableWriteConcern,
                  std::string((*error)["errmsg"].stringValue()));
}

// A readConcern.afterClusterTime waits until every commit up to it is visible (a snapshot there
// waits for them and makes later commits get greater timestamps).
void waitForClusterTime(bson::BsonView body, storage::Engine& engine) {
    observeClusterTime(body);
    bson::BsonElement rc = body["readConcern"];
    if (!rc.isObject()) return;
    bson::BsonElement after = rc.objValue()["afterClusterTime"];
    if (after.type() != bson::BsonType::Timestamp) return;
    Timestamp at{after.timestampValue()};
    if (at > engine.lastCommitTimestamp()) HybridLogicalClock::global().advanceTo(at);
    engine.snapshot(at);  // returns once `at` is readable
}

// readConcern {level: "snapshot"} outside a transaction: one time for the whole read.
Status chooseSnapshotTime(Invocation& inv) {
    bson::BsonElement asked = inv.request.body["readConcern"].objValue()["atClusterTime"];
    std::optional<Timestamp> at;
    if (asked.type() == bson::BsonType::Timestamp) at = Timestamp{asked.timestampValue()};
    if (inv.policy.clusterTime == RolePolicy::ClusterTime::kRouter) {
        // One cluster time for every shard the read reaches: the client's, else this router's
        // clock, which has seen every commit it acknowledged (and the client's $clusterTime).
        // The shards get it as their atClusterTime and wait until it is readable there.
        // (next(), not current(): a router that has not seen a shard yet has no time.)
        inv.routerSnapshotTime = !at;
        inv.readSnapshotAt(at.value_or(HybridLogicalClock::global().next()));
        return Status::OK();
    }
    // One timestamp for the whole read and its cursor: the client's, else the latest commit
    // (after the afterClusterTime wait, so at or after it). A time beyond this process's clock
    // becomes readable once the clock passes it.
    Timestamp ts = at.value_or(inv.service.engine->lastCommitTimestamp());
    HybridLogicalClock::global().advanceTo(ts);
    TRY_STATUS(inv.service.engine->openSnapshot(ts).getStatus());
    inv.opCtx.readAtClusterTime = ts;
    return Status::OK();
}

// A router's read that reaches several shards: every shard reads at the one cluster time the
// router chose (kReadAtClusterTimeField), waiting until it is readable here as a snapshot read's
// atClusterTime does; the read concern's level keeps its meaning (majority still reads only
// what is journaled: run() syncs first). The cursor keeps the time for its getMores.
Status readAtRouterTime(Invocation& inv) {
    bson::BsonElement at = inv.request.body[kReadAtClusterTimeField];
    if (at.eoo()) return Status::OK();
    if (at.type() != bson::BsonType::Timestamp || at.timestampValue() == 0) {
        return Status(ErrorCodes::InvalidOptions,
                      std::string(kReadAtClusterTimeField) + " must be a non-zero Timestamp");
    }
    if (!isRestartableRead(inv.request) || inv.txnArgs.statement ||
        inv.readConcern == ReadConcernLevel::kSnapshot ||
        inv.readConcern == ReadConcernLevel::kLinearizable) {
        return Status(ErrorCodes::InvalidOptions,
                      std::string(kReadAtClusterTimeField) +
                          " is taken by find, count, distinct and aggregate outside a "
                          "transaction, at readConcern local, available or majority");
    }
    Timestamp ts{at.timestampValue()};
    HybridLogicalClock::global().advanceTo(ts);
    TRY_STATUS(inv.service.engine->openSnapshot(ts).getStatus());
    inv.opCtx.readAtClusterTime = ts;
    return Status::OK();
}

// failCommand (test commands only): blocks, closes the connection, fails the command, or gives
// its successful reply a writeConcernError.
void applyFailCommand(Invocation& inv) {
    std::optional<FailCommandAction> action =
        evaluateFailCommand(inv.request.commandName, inv.client.appName);
    if (!action) return;
    inv.failCommandActed = true;
    if (action->blockTimeMS > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(action->blockTimeMS));
    }
    if (action->closeConnection) return inv.endClosingConnection();
    if (action->errorLabels) {
        inv.failCommandLabels = std::move(*action->errorLabels);
        inv.labels.retryableWrite = false;  // exactly the labels failCommand names
    }
    if (action->errorCode) {
        bson::BsonBuilder extra;
        if (inv.failCommandLabels) extra.appendArray("errorLabels", *inv.failCommandLabels);
        return inv.endWithError(
            Status(*action->errorCode, "Failing command via 'failCommand' failpoint"), extra.obj());
    }
    inv.failCommandWriteConcernError = action->writeConcernError;
}

void applyOnPrimaryTransactionalWrite(Invocation& inv) {
    if (!inv.opCtx.txnNumber || inv.txnArgs.statement || !inv.command->supportsRetryableWrite()) {
        return;
    }
    std::optional<std::string> data = onPrimaryTransactionalWrite.shouldFail();
    if (!data) return;
    bson::BsonView spec = data->size() >= 5
                              ? bson::BsonView(reinterpret_cast<const uint8_t*>(data->data()))
                              : bson::BsonView();
    bool close =
        spec.isEmpty() || !spec.hasField("closeConnection") || spec["closeConnection"].trueValue();
    bson::BsonElement code =
        spec.isEmpty() ? bson::BsonElement() : spec["failBeforeCommitExceptionCode"];
    if (!code.isNumber()) {
        inv.closeAfterWrite = close;
        return;
    }
    if (close) return inv.endClosingConnection();
    inv.endWithError(Status(static_cast<ErrorCodes>(code.numberInt()),
                            "Failing write for test due to failBeforeCommitExceptionCode"));
}

}  // namespace

Status applyMaxTimeMS(bson::BsonView body, OperationContext& opCtx) {
    bson::BsonElement e = body["maxTimeMS"];
    if (e.eoo() || e.isNull()) return Status::OK();
    if (!e.isNumber() || !e.isIntegral() || e.numberLong() < 0 ||
        e.numberLong() > std::numeric_limits<int32_t>::max()) {
        return Status(
            ErrorCodes::BadValue,
            "maxTimeMS must be a non-negative integer less than 2^31, got " + e.toString(false));
    }
    if (e.numberLong() > 0) {
        opCtx.deadline =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(e.numberLong());
    }
    return Status::OK();
}

Status applySessionArgs(bson::BsonView body, OperationContext& opCtx) {
    if (bson::BsonElement lsid = body["lsid"]; lsid.isObject()) {
        bson::BsonElement id = lsid.objValue()["id"];
        if (id.type() == bson::BsonType::BinData) opCtx.lsid = std::string(id.binaryValue().data);
    }
    bson::BsonElement txn = body["txnNumber"];
    if (txn.eoo()) return Status::OK();
    if (!txn.isNumber() || !txn.isIntegral() || txn.numberLong() < 0) {
        return Status(ErrorCodes::TypeMismatch,
                      "txnNumber must be a non-negative integer, got " + txn.toString(false));
    }
    if (!opCtx.lsid) {
        return Status(ErrorCodes::InvalidOptions,
                      "Transaction number requires a session ID to also be specified");
    }
    opCtx.txnNumber = txn.numberLong();
    return Status::OK();
}

void parse(Invocation& inv) {
    auto check = [&](const Status& s) {
        if (!s.isOK()) inv.endUnstamped(errorReply(s));
        return s.isOK();
    };
    if (!check(refuseTransaction(inv.request, inv.policy)) || !check(lookUp(inv))) return;
    if (!inv.inlineExecution) countRequest(inv.request);  // runInline counts what it completes
    const bool transactionStatement =
        inv.policy.transactions() && inv.request.body.hasField("autocommit");
    if (!check(checkGenericArguments(inv.request, *inv.command, inv.policy.genericArgs(),
                                     transactionStatement, &inv.readConcern)) ||
        !check(applyMaxTimeMS(inv.request.body, inv.opCtx)) || !check(parseSession(inv)) ||
        !check(refuseUnsatisfiableWriteConcernOnRead(inv))) {
        return;
    }
    inv.labels.retryableWrite = inv.opCtx.txnNumber.has_value() &&
                                inv.command->supportsRetryableWrite() && !inv.txnArgs.statement;
    inv.labels.wroteNothing = true;
    inv.labels.inTransaction = inv.txnArgs.statement;
    inv.labels.commitTransaction = inv.request.commandName == "commitTransaction";
    inv.txnCommand = txn::isTransactionEndCommand(inv.request.commandName);
    // A member that is not the writable primary serves only what a secondary may.
    if (Status s = checkMemberState(inv.service, inv.request, inv.client); !s.isOK()) {
        inv.endWithError(s);
    }
}

void admit(Invocation& inv) {
    if (inv.policy.waitsForClusterTime) waitForClusterTime(inv.request.body, *inv.service.engine);
    if (inv.readConcern == ReadConcernLevel::kSnapshot) {
        if (Status s = chooseSnapshotTime(inv); !s.isOK()) return inv.endWithError(s);
    }
    if (Status s = readAtRouterTime(inv); !s.isOK()) return inv.endWithError(s);
    if (inv.policy.clusterTime == RolePolicy::ClusterTime::kRouter) {
        observeClusterTime(inv.request.body);
    }
    if (!inv.service.enableTestCommands) return;
    applyFailCommand(inv);
    if (!inv.done()) applyOnPrimaryTransactionalWrite(inv);
}

}  // namespace tessera::command
