// _shardsvrCoordinateCommitTransaction: a router hands the commit of a transaction with several
// participants to one of them (txn/transaction_coordinator.h).

#include "command/command.h"
#include "command/registry.h"
#include "command/transactions.h"
#include "shard/command_util.h"
#include "shard/sharding_state.h"

namespace tessera::shard {
namespace {

// {_shardsvrCoordinateCommitTransaction: 1, lsid, txnNum, participants: [{shard, host}]}
// → {commitTimestamp} once the decision is commit; NoSuchTransaction once it is abort. With
// `participants: []` a router that does not know the transaction (its client retried the commit
// with a recoveryToken naming this shard) asks for the decision
// (TransactionCoordinator::recoverDecision); `commitTimestamp` is then absent when the
// transaction had this shard as its one participant. The
// transaction's number is `txnNum`: a txnNumber would make this a statement of the transaction,
// which would check the session out on this shard — where it is also a participant.
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
        if (participants.empty()) {
            command::SessionTransactions* transactions = opCtx.service->transactions;
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

}  // namespace

void registerShardTransactionCommands(command::CommandRegistry& registry) {
    registry.add(std::make_unique<CoordinateCommitCommand>());
}

}  // namespace tessera::shard
