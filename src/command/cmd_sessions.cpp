// Logical session commands and the end of a transaction (commitTransaction, abortTransaction,
// a shard's prepareTransaction): ending or killing a session aborts its unfinished transaction.

#include <cstring>
#include <random>

#include "base/mutex.h"
#include "command/registry.h"
#include "command/reply_util.h"
#include "command/router_transaction_hooks.h"
#include "command/server_info.h"
#include "storage/engine.h"
#include "txn/logical_sessions.h"
#include "txn/session_transactions.h"

namespace tessera::command {
namespace {

// Aborts the unfinished transactions of the sessions in `ids` ([{id: UUID}, ...]).
void endTransactionsOf(OperationContext& opCtx, bson::BsonElement ids) {
    if (!opCtx.service || !ids.isArray()) return;
    txn::SessionTransactions* node = opCtx.service->transactions;
    RouterTransactionHooks* router = opCtx.service->routerTransactions;
    if (!node && !router) return;
    for (bson::BsonElement e : ids.objValue()) {
        if (!e.isObject()) continue;
        bson::BsonElement id = e.objValue()["id"];
        if (id.type() != bson::BsonType::BinData) continue;
        std::string lsid(id.binaryValue().data);
        if (node) node->endSession(lsid);
        if (router) router->endSession(lsid);
    }
}

// commitTransaction / abortTransaction: the entry point checked the session out and verified
// the transaction (transactions.h); these act on it. On a shard, commitTransaction of a prepared
// transaction carries its coordinator's `commitTimestamp` (two-phase commit).
class EndTransactionCommand : public Command {
  public:
    explicit EndTransactionCommand(bool commit) : _commit(commit) {}
    std::string_view name() const override {
        return _commit ? "commitTransaction" : "abortTransaction";
    }
    bool adminOnly() const override { return true; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        if (RouterTransactionHooks* router = opCtx.service->routerTransactions) {
            return _commit ? router->commit(opCtx, request.body, reply)
                           : router->abort(opCtx, reply);
        }
        if (!opCtx.transactionSession) {
            return Status(ErrorCodes::NoSuchTransaction, "no transaction is in progress");
        }
        if (!_commit) return txn::SessionTransactions::abort(*opCtx.transactionSession);
        std::optional<Timestamp> commitTs;
        if (bson::BsonElement ts = request.body["commitTimestamp"]; !ts.eoo()) {
            if (!opCtx.service->transactions->participantMode()) {
                return Status(ErrorCodes::InvalidOptions,
                              "commitTimestamp is only accepted from a transaction's coordinator "
                              "on a shard");
            }
            if (ts.type() != bson::BsonType::Timestamp || ts.timestampValue() == 0) {
                return Status(ErrorCodes::TypeMismatch, "commitTimestamp must be a Timestamp");
            }
            commitTs = Timestamp{ts.timestampValue()};
        }
        TRY_STATUS(
            opCtx.service->transactions->commit(*opCtx.transactionSession, commitTs).getStatus());
        if (!commitTs) return Status::OK();
        // A prepared transaction's commit is acknowledged before it is journaled: until it is,
        // the prepared part is durable and the decision is durable at the coordinator, which
        // keeps it for 30 minutes after every participant acknowledged (a participant restarted
        // prepared asks for it). Journaled by the next sync of this process, at the latest
        // within kSyncCommitsWithin (takeUnsyncedCommits).
        opCtx.service->transactions->noteUnsyncedCommit();
        return Status::OK();
    }

  private:
    bool _commit;
};

// prepareTransaction {coordinator: {shard, host}, notifyCoordinatorWhenDurable?} (internal: a
// shard's part of a router's two-phase commit): the storage transaction stops taking writes and
// is prepared, durably before the reply — or, with notifyCoordinatorWhenDurable, written only
// and synced after the reply, then the coordinator is told (txn::SessionTransactions::
// preparedUnsynced); the reply's prepareTimestamp is what the coordinator takes the maximum of.
// The coordinator is recorded with the prepared transaction: the participant asks it for a
// decision that is late.
class PrepareTransactionCommand : public Command {
  public:
    std::string_view name() const override { return "prepareTransaction"; }
    bool adminOnly() const override { return true; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        if (!opCtx.service->transactions || !opCtx.service->transactions->participantMode()) {
            return Status(ErrorCodes::CommandNotFound,
                          "prepareTransaction is a shard's command (two-phase commit); this "
                          "process is not a shard");
        }
        if (!opCtx.transactionSession) {
            return Status(ErrorCodes::NoSuchTransaction, "no transaction is in progress");
        }
        txn::SessionTransactions::Coordinator coordinator;
        if (bson::BsonElement c = request.body["coordinator"]; !c.eoo()) {
            if (!c.isObject() || c.objValue()["shard"].type() != bson::BsonType::String ||
                c.objValue()["host"].type() != bson::BsonType::String) {
                return Status(ErrorCodes::TypeMismatch,
                              "coordinator must be {shard: <string>, host: <string>}");
            }
            coordinator = {std::string(c.objValue()["shard"].stringValue()),
                           std::string(c.objValue()["host"].stringValue())};
        }
        // A router's staged commit without journal: answered once written, synced after, and
        // the coordinator told then (its decision waits for that: src/txn/README.md "Staged
        // commit").
        const bool notify = request.body["notifyCoordinatorWhenDurable"].trueValue();
        txn::SessionTransactions& transactions = *opCtx.service->transactions;
        if (notify && (coordinator.host.empty() || !transactions.preparedUnsynced())) {
            return Status(ErrorCodes::InvalidOptions,
                          "notifyCoordinatorWhenDurable needs a coordinator and a shard that "
                          "notifies it");
        }
        txn::TransactionSession& session = *opCtx.transactionSession;
        ASSIGN_OR_RETURN(Timestamp ts,
                         txn::SessionTransactions::prepare(session, coordinator, !notify));
        const bool prepared = session.state == txn::TransactionState::kPrepared;
        if (prepared && notify) {
            transactions.preparedUnsynced()(session.lsid, session.txnNumber, coordinator, ts);
        } else if (prepared && !session.prepareSynced) {
            // Prepared unsynced earlier (or recovered after a restart): whoever asks for a
            // synced prepare — a resolution of the staged commit — counts on it being durable.
            TRY_STATUS(opCtx.service->engine->syncWal());
            MutexLock lk(session.stateMutex);
            session.prepareSynced = true;
        }
        reply.appendTimestamp("prepareTimestamp", ts.value);
        // A participant without writes finished at its prepare: the coordinator skips it.
        reply.appendBool("readOnly", session.state == txn::TransactionState::kCommitted);
        return Status::OK();
    }
};

class EndSessionsCommand : public Command {
  public:
    std::string_view name() const override { return "endSessions"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder&) override {
        if (!request.firstElement().isArray()) {
            return Status(ErrorCodes::TypeMismatch, "endSessions takes an array of session ids");
        }
        endTransactionsOf(opCtx, request.firstElement());
        return Status::OK();
    }
};

class KillSessionsCommand : public Command {
  public:
    explicit KillSessionsCommand(std::string_view name) : _name(name) {}
    std::string_view name() const override { return _name; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder&) override {
        if (_name == "killAllSessions") {
            if (opCtx.service && opCtx.service->transactions) {
                opCtx.service->transactions->killAll();
            }
            if (opCtx.service && opCtx.service->routerTransactions) {
                opCtx.service->routerTransactions->killAll();
            }
        } else if (_name == "killSessions") {
            endTransactionsOf(opCtx, request.firstElement());
        }
        return Status::OK();
    }

  private:
    std::string_view _name;
};

class StartSessionCommand : public Command {
  public:
    std::string_view name() const override { return "startSession"; }
    Status run(OperationContext&, const CommandRequest&, bson::BsonBuilder& reply) override {
        thread_local std::mt19937_64 rng{std::random_device{}()};
        std::string uuid(16, '\0');
        for (size_t i = 0; i < 16; i += 8) {
            uint64_t r = rng();
            std::memcpy(&uuid[i], &r, 8);
        }
        uuid[6] = static_cast<char>((uuid[6] & 0x0f) | 0x40);  // version 4
        uuid[8] = static_cast<char>((uuid[8] & 0x3f) | 0x80);  // RFC 4122 variant
        reply.startObject("id");
        appendUuid(reply, "id", uuid);
        reply.end();
        reply.appendInt32("timeoutMinutes", txn::kLogicalSessionTimeoutMinutes);
        return Status::OK();
    }
};

}  // namespace

void registerSessionCommands(CommandRegistry& registry) {
    registry.add(std::make_unique<EndSessionsCommand>());
    registry.add(std::make_unique<KillSessionsCommand>("killSessions"));
    registry.add(std::make_unique<KillSessionsCommand>("killAllSessions"));
    registry.add(std::make_unique<KillSessionsCommand>("refreshSessions"));
    registry.add(std::make_unique<StartSessionCommand>());
    registry.add(std::make_unique<EndTransactionCommand>(true));
    registry.add(std::make_unique<EndTransactionCommand>(false));
    registry.add(std::make_unique<PrepareTransactionCommand>());
}

}  // namespace tessera::command
