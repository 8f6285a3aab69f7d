// _shardsvrCoordinateCommitTransaction: a router hands the commit of a transaction with several
// participants to one of them (txn/transaction_coordinator.h). _shardsvrRecordRetryableWrite:
// a router records, in the transaction by which it carried out a client's retryable write, that
// write's result for the client's retries.

#include "command/command.h"
#include "command/registry.h"
#include "shard/command_util.h"
#include "shard/sharding_state.h"
#include "txn/session_records.h"
#include "txn/session_transactions.h"

namespace tessera::shard {
namespace {

// {_shardsvrCoordinateCommitTransaction: 1, lsid, txnNum, participants: [{shard, host}]}
// → {commitTimestamp} once the decision is commit; NoSuchTransaction once it is abort. With
// `participants: []` a router that does not know the transaction (its client retried the commit
// with a recoveryToken naming this shard) asks for the decision
// (TransactionCoordinator::recoverDecision); `commitTimestamp` is then absent when the
// transaction had this shard as its one participant. With `stage: true` (the router's staged
// commit) → {prepareTimestamp, readOnly}: the record written and this shard's part prepared, the
// router preparing the others meanwhile; or {decided: true, commitTimestamp} / an error when the
// record existed (a retried commit). With `decision` (after a stage) → {commitTimestamp} once
// that decision (or the one a resolution reached first) is written. With `durablePrepare:
// {shard, prepareTimestamp}` (no participants) a participant that answered the router's
// prepare before syncing it says it is durable now (TransactionCoordinator::
// participantDurable) → {}. The
// transaction's number is `txnNum`: a txnNumber would make this a statement of the transaction,
// which would check the session out on this shard — where it is also a participant.
// {commit: true, commitTimestamp, writers: [shard]} or {commit: false, code, reason}.
StatusWith<txn::TransactionCoordinator::RouterDecision> parseDecision(bson::BsonElement d) {
    txn::TransactionCoordinator::RouterDecision decision;
    if (!d.isObject()) return Status(ErrorCodes::TypeMismatch, "decision must be an object");
    bson::BsonView doc = d.objValue();
    decision.commit = doc["commit"].trueValue();
    if (decision.commit) {
        if (doc["commitTimestamp"].type() != bson::BsonType::Timestamp ||
            !doc["writers"].isArray()) {
            return Status(ErrorCodes::TypeMismatch,
                          "a commit decision is {commit: true, commitTimestamp: <timestamp>, "
                          "writers: [<shard>]}");
        }
        decision.commitTs = Timestamp{doc["commitTimestamp"].timestampValue()};
        for (bson::BsonElement e : doc["writers"].objValue()) {
            if (e.type() != bson::BsonType::String) {
                return Status(ErrorCodes::TypeMismatch, "writers must be shard names");
            }
            decision.writers.emplace_back(e.stringValue());
        }
        return decision;
    }
    if (doc["code"].isNumber()) decision.abortCode = doc["code"].numberInt();
    if (doc["reason"].type() == bson::BsonType::String) {
        decision.reason = std::string(doc["reason"].stringValue());
    }
    return decision;
}

class CoordinateCommitCommand final : public ShardCommand {
  public:
    std::string_view name() const override { return "_shardsvrCoordinateCommitTransaction"; }
    Status run(command::OperationContext& opCtx, const command::CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(ShardingState * state, shardingStateOf(opCtx));
        bson::BsonView body = request.body;
        if (!opCtx.lsid)
            return Status(ErrorCodes::InvalidOptions, std::string(name()) + " needs lsid");
        bson::BsonElement number = body["txnNum"];
        if (!number.isNumber() || number.numberLong() < 0) {
            return Status(ErrorCodes::TypeMismatch, "txnNum must be a non-negative number");
        }
        bson::BsonElement list = body["participants"];
        if (!list.isArray()) {
            return Status(ErrorCodes::TypeMismatch, "participants must be an array");
        }
        std::vector<txn::TransactionCoordinator::Participant> participants;
        for (bson::BsonElement e : list.objValue()) {
            if (!e.isObject() || e.objValue()["shard"].type() != bson::BsonType::String ||
                e.objValue()["host"].type() != bson::BsonType::String) {
                return Status(ErrorCodes::TypeMismatch,
                              "each participant is {shard: <string>, host: <string>}");
            }
            participants.push_back({std::string(e.objValue()["shard"].stringValue()),
                                    std::string(e.objValue()["host"].stringValue())});
        }
        Timestamp commitTs;
        // A stage names the participants it prepares around; a decision follows a stage and
        // names none, as does a participant's notice: nothing of either is silently ignored.
        const bool stage = body["stage"].trueValue();
        const bool decided = !body["decision"].eoo();
        const bool notice = !body["durablePrepare"].eoo();
        if (int(stage) + int(decided) + int(notice) > 1) {
            return Status(ErrorCodes::InvalidOptions,
                          "stage, decision and durablePrepare are exclusive");
        }
        if (notice) {
            // {durablePrepare: {shard, prepareTimestamp}}: that participant's part, prepared
            // unsynced for a staged commit, is durable now.
            bson::BsonElement d = body["durablePrepare"];
            bson::BsonView doc = d.isObject() ? d.objValue() : bson::BsonView();
            if (!d.isObject() || doc["shard"].type() != bson::BsonType::String ||
                doc["prepareTimestamp"].type() != bson::BsonType::Timestamp ||
                !participants.empty()) {
                return Status(ErrorCodes::TypeMismatch,
                              "durablePrepare is {shard: <string>, prepareTimestamp: "
                              "<timestamp>}, with no participants");
            }
            state->coordinator().participantDurable(
                *opCtx.lsid, number.numberLong(), std::string(doc["shard"].stringValue()),
                Timestamp{doc["prepareTimestamp"].timestampValue()});
            return Status::OK();
        }
        if (stage && participants.size() < 2) {
            return Status(ErrorCodes::InvalidOptions, "a stage needs at least two participants");
        }
        if (decided && !participants.empty()) {
            return Status(ErrorCodes::InvalidOptions, "a decision names no participants");
        }
        if (stage) {
            // The router prepares the others itself (docs/protocols/two-phase-commit.md "Staged
            // commit").
            txn::TransactionCoordinator::Staged staged =
                state->coordinator().stage(*opCtx.lsid, number.numberLong(), participants);
            if (!staged.decided) {
                reply.appendTimestamp("prepareTimestamp", staged.prepareTs.value);
                reply.appendBool("readOnly", staged.readOnly);
                return Status::OK();
            }
            TRY_STATUS(staged.outcome);
            reply.appendBool("decided", true);
            if (staged.commitTs != Timestamp()) {
                reply.appendTimestamp("commitTimestamp", staged.commitTs.value);
            }
            return Status::OK();
        }
        if (bson::BsonElement d = body["decision"]; !d.eoo()) {
            ASSIGN_OR_RETURN(txn::TransactionCoordinator::RouterDecision decision,
                             parseDecision(d));
            TRY_STATUS(state->coordinator().decideStaged(*opCtx.lsid, number.numberLong(), decision,
                                                         &commitTs));
            reply.appendTimestamp("commitTimestamp", commitTs.value);
            return Status::OK();
        }
        if (participants.empty()) {
            txn::SessionTransactions* transactions = opCtx.service->transactions;
            if (!transactions) {
                return Status(ErrorCodes::IllegalOperation, "this shard runs no transactions");
            }
            const std::string& lsid = *opCtx.lsid;
            int64_t txnNumber = number.numberLong();
            TRY_STATUS(state->coordinator().recoverDecision(
                lsid, txnNumber, [&] { return transactions->committedElseAbort(lsid, txnNumber); },
                &commitTs));
        } else {
            TRY_STATUS(state->coordinator().coordinate(*opCtx.lsid, number.numberLong(),
                                                       participants, &commitTs));
        }
        if (commitTs != Timestamp()) reply.appendTimestamp("commitTimestamp", commitTs.value);
        return Status::OK();
    }
};

// {_shardsvrRecordRetryableWrite: 1, of: {lsid: {id: UUID}, txnNumber, stmtId}, result}, a
// statement of a transaction of the router's own: records that the client's retryable write
// (its session `of.lsid`, its txnNumber, its statement `stmtId`: -1 for a findAndModify) was
// carried out, with `result` as what a retry gets ({n, nModified, upserted?} of an
// update's statement; a findAndModify's whole reply). The record is a side record of this
// transaction (storage::Transaction::addSideRecord): durable with its commit, gone with its
// abort, in this shard's TransactionTable from its commit on. A router sends it to the shard
// that answered the write with WouldChangeOwningShard, in the transaction that moves the
// document (src/router/cluster_write_move.h), as the transaction's first command there: a
// retry reaches that shard again, or asks it ($retryableWriteStatus on a find), and is answered
// from the record instead of running again — also while the move is in flight: the statement
// is claimed for this transaction (txn::TransactionTable::claimMove), its retries wait for the
// commit, or for the abort and then run it. WriteConflict when the statement has a record
// already or another transaction claimed it: this move loses, its router runs the write again.
class RecordRetryableWriteCommand final : public ShardCommand {
  public:
    std::string_view name() const override { return "_shardsvrRecordRetryableWrite"; }
    bool adminOnly() const override { return false; }
    Status run(command::OperationContext& opCtx, const command::CommandRequest& request,
               bson::BsonBuilder& reply) override {
        if (!opCtx.transaction || !opCtx.lsid) {
            return Status(ErrorCodes::InvalidOptions,
                          std::string(name()) + " runs only in a multi-document transaction");
        }
        bson::BsonElement of = request.body["of"];
        bson::BsonElement result = request.body["result"];
        if (!of.isObject() || !result.isObject()) {
            return Status(
                ErrorCodes::TypeMismatch,
                std::string(name()) +
                    " needs of: {lsid: {id: <UUID>}, txnNumber, stmtId} and result: {...}");
        }
        bson::BsonView ofDoc = of.objValue();
        for (bson::BsonElement e : ofDoc) {
            if (e.fieldName() != "lsid" && e.fieldName() != "txnNumber" &&
                e.fieldName() != "stmtId") {
                return Status(
                    ErrorCodes::InvalidOptions,
                    std::string(name()) + ": unknown field of." + std::string(e.fieldName()));
            }
        }
        bson::BsonElement lsid = ofDoc["lsid"];
        bson::BsonElement id = lsid.isObject() ? lsid.objValue()["id"] : bson::BsonElement();
        bson::BsonElement txnNumber = ofDoc["txnNumber"];
        bson::BsonElement stmtId = ofDoc["stmtId"];
        if (id.type() != bson::BsonType::BinData || txnNumber.type() != bson::BsonType::Int64 ||
            stmtId.type() != bson::BsonType::Int32 || stmtId.numberInt() < txn::kWholeCommand) {
            return Status(ErrorCodes::TypeMismatch,
                          std::string(name()) +
                              ": of.lsid.id must be a UUID, of.txnNumber a long, of.stmtId an "
                              "int >= -1");
        }
        std::string clientLsid(id.binaryValue().data);
        if (clientLsid == *opCtx.lsid) {
            return Status(ErrorCodes::InvalidOptions,
                          std::string(name()) +
                              " records another session's write, not the transaction's own");
        }
        bson::BsonView r = result.objValue();
        if (stmtId.numberInt() != txn::kWholeCommand &&
            (!r["n"].isNumber() || !r["nModified"].isNumber())) {
            return Status(
                ErrorCodes::TypeMismatch,
                std::string(name()) + ": a statement's result is {n, nModified, upserted?}");
        }
        const int64_t number = txnNumber.numberLong();
        const txn::StmtId statement = stmtId.numberInt();
        TRY_STATUS(opCtx.transaction->addSideRecord(
            txn::statementRecordKey(clientLsid, statement),
            txn::statementRecordValue(clientLsid, number, statement, r)));
        // The statement is moving (this shard answered it with WouldChangeOwningShard): claimed
        // for this transaction, so that its retries wait for the record, until the transaction
        // aborts. Another move's claim, or a record already there, makes this move lose (the
        // failed statement aborts the transaction, the side record with it).
        ASSIGN_OR_RETURN(ShardingState * state, shardingStateOf(opCtx));
        ASSIGN_OR_RETURN(uint64_t claim,
                         state->transactions().claimMove(clientLsid, number, statement));
        txn::releaseMoveOnAbort(*opCtx.transaction, state->transactionsHandle(), clientLsid, number,
                                statement, claim);
        return Status::OK();
    }
};

}  // namespace

void registerShardTransactionCommands(command::CommandRegistry& registry) {
    registry.add(std::make_unique<CoordinateCommitCommand>());
    registry.add(std::make_unique<RecordRetryableWriteCommand>());
}

}  // namespace tessera::shard
