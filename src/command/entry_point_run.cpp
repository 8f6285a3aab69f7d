// The middle phases of a request (entry_point_phases.h): checkOut — a transaction statement's
// session —, run — the role's hooks and the command — and endStatement — what the statement's
// outcome does to its transaction.

#include "command/entry_point_phases.h"
#include "command/router_transaction_hooks.h"
#include "command/service_entry_point.h"
#include "command/write_ops_util.h"
#include "repl/replica_set.h"
#include "storage/engine.h"
#include "storage/prepared_transactions.h"

namespace tessera::command {
namespace {

// How long a command without maxTimeMS waits for a prepared transaction's decision before it
// fails with ExceededTimeLimit (the decision normally takes one coordinator round trip).
constexpr std::chrono::seconds kMaxPrepareWait{60};
// How long a linearizable read without maxTimeMS waits to prove its member still leads.
constexpr std::chrono::seconds kLinearizableReadLimit{15};

// How often a read at the latest timestamp runs again because a prepared transaction it met
// committed after its timestamp (storage::PrepareReads); the last run keeps its timestamp.
constexpr int kLatestReadRuns = 4;

// How this request's reads wait for a prepared transaction's decision: not at all on an io
// thread (InlineWouldBlock: the pool runs it), else until maxTimeMS or kMaxPrepareWait.
storage::PrepareReads::Policy prepareReadPolicy(const Invocation& inv) {
    if (inv.inlineExecution) return storage::PrepareReads::Policy::noWait();
    storage::PrepareReads::Policy policy;
    auto bound = std::chrono::steady_clock::now() + kMaxPrepareWait;
    policy.deadlineIsMaxTime = inv.opCtx.deadline && *inv.opCtx.deadline < bound;
    policy.deadline = policy.deadlineIsMaxTime ? *inv.opCtx.deadline : bound;
    return policy;
}

// In a transaction a write error that running the transaction again may avoid (a conflict, a
// transaction a placement change aborted, a read timestamp older than a migrated range: the
// TransientTransactionError codes) ends the statement, and the transaction: the statement fails
// with it (MongoDB's reply shape: a top-level error with TransientTransactionError, not a
// writeErrors entry).
std::optional<Status> transientWriteError(bson::BsonView reply) {
    bson::BsonElement errors = reply["writeErrors"];
    if (!errors.isArray()) return std::nullopt;
    for (bson::BsonElement e : errors.objValue()) {
        if (!e.isObject()) continue;
        int code = e.objValue()["code"].numberInt();
        if (isTransientTransactionErrorCode(code)) {
            return Status(static_cast<ErrorCodes>(code),
                          std::string(e.objValue()["errmsg"].stringValue()));
        }
    }
    return std::nullopt;
}

// A statement whose only error is WouldChangeOwningShard wrote nothing: its router moves the
// document within the same transaction, which goes on.
bool onlyWouldChangeOwningShard(bson::BsonView reply) {
    bson::BsonElement errors = reply["writeErrors"];
    if (!errors.isArray()) return false;
    bool any = false;
    for (bson::BsonElement e : errors.objValue()) {
        if (!e.isObject() || e.objValue()["code"].numberInt() !=
                                 static_cast<int>(ErrorCodes::WouldChangeOwningShard)) {
            return false;
        }
        any = true;
    }
    return any;
}

// The command's fields so far, copied into a fresh builder (to append after them).
bson::BsonBuilder reopened(bson::BsonView fields) {
    bson::BsonBuilder again;
    for (bson::BsonElement e : fields) again.appendElement(e);
    return again;
}

// command->run, once; a conflict its reads met with a prepared transaction is its status.
Status runOnce(Invocation& inv) {
    Status status = inv.command->run(inv.opCtx, inv.request, inv.reply);
    if (Status conflict = inv.opCtx.readConflict(); !conflict.isOK()) return conflict;
    return status;
}

// A read at the engine's latest timestamp runs again (from the start, with a fresh reply) when
// it met a prepared transaction that committed after its timestamp, so that it sees a commit
// acknowledged before it began; the last run keeps its timestamp.
Status runCommand(Invocation& inv) {
    OperationContext& opCtx = inv.opCtx;
    const bool latest = !opCtx.transaction && !opCtx.readAtClusterTime && inv.service.engine &&
                        isRestartableRead(inv.request);
    storage::PrepareReads::Policy policy = prepareReadPolicy(inv);
    for (int run = 1; latest && run < kLatestReadRuns; ++run) {
        storage::PrepareReads::Policy restarting = policy;
        restarting.restartIfCommittedAfterRead = true;
        opCtx.prepareReads->reset(restarting);
        Status status = runOnce(inv);
        if (!status.is(ErrorCodes::ReadMetLaterCommit)) return status;
        inv.reply = bson::BsonBuilder();
    }
    opCtx.prepareReads->reset(policy);
    return runOnce(inv);
}

// The role's hooks before the command: false when they ended the request (a refusal, or a
// retried write answered from its record).
bool beforeCommand(Invocation& inv) {
    CommandHooks& hooks = *inv.service.hooks;
    Status status = hooks.beforeCommand(inv.opCtx, inv.request, *inv.command);
    if (status.is(ErrorCodes::InlineWouldBlock)) {
        inv.endWouldBlock();
        return false;
    }
    if (!status.isOK()) {
        // A statement the shard refuses (a stale version) fails its transaction too.
        if (inv.txnSession && !inv.txnCommand) {
            txn::SessionTransactions::abortAfterFailure(*inv.txnSession, status);
        }
        inv.endWithError(status, inv.opCtx.errorExtraInfo);
        return false;
    }
    std::optional<bson::BsonObj> replayed =
        hooks.replayedReply(inv.opCtx, inv.request, *inv.command);
    if (!replayed) return true;
    if (replayed->getField("code").numberInt() == static_cast<int>(ErrorCodes::InlineWouldBlock)) {
        inv.endWouldBlock();
        return false;
    }
    // The retry waits for its write concern again: its error (failCommand's, an unsatisfiable
    // one) applies to the stored reply too.
    std::optional<bson::BsonObj> concernError = writeConcernErrorFor(inv, *replayed);
    if (concernError && replayed->getField("ok").numberDouble() == 1) {
        bson::BsonBuilder b;
        for (bson::BsonElement e : *replayed) {
            if (e.fieldName() != "ok") b.appendElement(e);
        }
        appendWriteConcernError(inv, b, *concernError);
        b.appendDouble("ok", 1.0);
        inv.end(b.obj());
        return false;
    }
    inv.end(std::move(*replayed));
    return false;
}

}  // namespace

void checkOut(Invocation& inv) {
    OperationContext& opCtx = inv.opCtx;
    opCtx.prepareReads = std::make_shared<storage::PrepareReads>(prepareReadPolicy(inv));
    if (!inv.txnArgs.statement) return;
    if (inv.policy.routerTransactions) {
        // A router's transaction: its shard requests join it (router/transaction_router.h).
        Status begun = inv.service.routerTransactions->beginStatement(opCtx, inv.txnArgs,
                                                                      inv.request.commandName);
        if (!begun.isOK()) return inv.endWithError(begun);
        opCtx.txnNumber.reset();
        inv.routerStatement = true;
        return;
    }
    std::optional<Timestamp> readAt = inv.txnArgs.atClusterTime;
    if (inv.txnArgs.start && !readAt && inv.txnArgs.afterClusterTime &&
        inv.policy.role == ClusterRole::kShard && inv.service.engine) {
        // A router's first shard of a transaction, given a lower bound only: the snapshot is at
        // this shard's latest commit (waited for by admit), named in the reply so that every
        // other participant reads at exactly this time.
        readAt = std::max(inv.service.engine->lastCommitTimestamp(), *inv.txnArgs.afterClusterTime);
        HybridLogicalClock::global().advanceTo(*readAt);
        inv.chosenReadTs = readAt;
    }
    auto checkout = inv.service.transactions->beginStatement(
        *opCtx.lsid, *opCtx.txnNumber, inv.txnArgs.start, readAt, inv.request.commandName);
    if (!checkout.isOK()) return inv.endWithError(checkout.getStatus());
    inv.txnSession = std::move(checkout.getValue());
    if (inv.txnArgs.start) inv.txnSession->readConcernLocal = inv.txnArgs.readConcernLocal;
    opCtx.transaction = inv.txnSession->txn.get();
    opCtx.transactionSession = &*inv.txnSession;
    opCtx.txnNumber.reset();
    opCtx.writeUnit.setMayWait(true);
    // The statement's reads wait for prepared transactions as this request may.
    if (opCtx.transaction) opCtx.transaction->bindPrepareReads(opCtx.prepareReads);
}

void run(Invocation& inv) {
    try {
        if (inv.policy.hooks && !beforeCommand(inv)) return;
        if (inv.service.replicaSet) {
            // Every write a member applied is majority-committed already; a linearizable read
            // first proves this member still leads (a deposed primary cut off from its majority
            // cannot), with every write acknowledged before it applied here.
            if (inv.readConcern == ReadConcernLevel::kLinearizable) {
                inv.status = inv.service.replicaSet->confirmLeadership(inv.opCtx.deadline.value_or(
                    std::chrono::steady_clock::now() + kLinearizableReadLimit));
            }
        } else if ((inv.readConcern == ReadConcernLevel::kMajority ||
                    inv.readConcern == ReadConcernLevel::kLinearizable) &&
                   inv.policy.journals) {
            // A one-member set's majority is this process, journaled: everything committed so
            // far is made durable first, so the read sees nothing a crash could take back.
            inv.status = inv.service.engine->syncWal();
        }
        if (inv.status.isOK()) {
            inv.labels.wroteNothing = false;
            inv.status = runCommand(inv);
        }
        // A snapshot read at a time this router picked, refused by a shard that received a
        // migrated range after it: again at a later time, which the router's clock, having seen
        // that shard's reply, now gives.
        for (int again = 0;
             again < 3 && inv.routerSnapshotTime && inv.status.is(ErrorCodes::SnapshotUnavailable);
             ++again) {
            inv.readSnapshotAt(HybridLogicalClock::global().next());
            inv.reply = bson::BsonBuilder();
            inv.status = inv.command->run(inv.opCtx, inv.request, inv.reply);
        }
    } catch (...) {
        inv.status = statusFromCurrentException("command");
    }
}

void endStatement(Invocation& inv) {
    if (inv.routerStatement) {
        // As on a shard: a failed statement, a write error included, aborts the transaction.
        Status outcome = inv.status;
        if (inv.status.isOK()) {
            bson::BsonObj partial = inv.reply.obj();
            if (std::optional<Status> conflict = transientWriteError(partial)) {
                inv.status = outcome = *conflict;
            } else if (partial["writeErrors"].isArray()) {
                outcome = Status(ErrorCodes::OperationFailed, "a write error");
            }
            inv.reply = reopened(partial);
            if (inv.status.isOK())
                inv.service.routerTransactions->appendToReply(inv.opCtx, inv.reply);
        }
        inv.service.routerTransactions->endStatement(inv.opCtx, outcome);
        return;
    }
    if (!inv.txnArgs.statement || inv.txnCommand) return;
    // A failed statement aborts its transaction, a write error included (MongoDB's rule); a
    // conflict is the statement's error.
    if (inv.status.isOK()) {
        bson::BsonObj partial = inv.reply.obj();
        if (std::optional<Status> conflict = transientWriteError(partial)) {
            inv.status = *conflict;
        } else if (partial["writeErrors"].isArray() && !onlyWouldChangeOwningShard(partial)) {
            txn::SessionTransactions::abortAfterFailure(
                *inv.txnSession, Status(ErrorCodes::OperationFailed, "a write error"));
        }
        inv.reply = reopened(partial);
    }
    // WouldChangeOwningShard wrote nothing: its router moves the document within the
    // transaction, which goes on.
    if (!inv.status.isOK() && !inv.status.is(ErrorCodes::WouldChangeOwningShard)) {
        txn::SessionTransactions::abortAfterFailure(*inv.txnSession, inv.status);
    }
}

}  // namespace tessera::command
