#include "txn/local_participant.h"

#include "command/transactions.h"

namespace tessera::txn {

using command::SessionTransactions;

StatusWith<LocalParticipant::Prepared> LocalParticipant::prepare(
    const std::string& lsid, int64_t txnNumber, const std::string& coordinatorShard,
    const std::string& coordinatorHost) {
    ASSIGN_OR_RETURN(
        SessionTransactions::Checkout session,
        _transactions.beginStatement(lsid, txnNumber, false, std::nullopt, "prepareTransaction"));
    ASSIGN_OR_RETURN(Timestamp ts, SessionTransactions::prepare(
                                       *session, {coordinatorShard, coordinatorHost}, false));
    std::lock_guard lk(session->stateMutex);
    return Prepared{ts, session->state == command::TransactionState::kCommitted};
}

Status LocalParticipant::commit(const std::string& lsid, int64_t txnNumber, Timestamp commitTs) {
    ASSIGN_OR_RETURN(
        SessionTransactions::Checkout session,
        _transactions.beginStatement(lsid, txnNumber, false, std::nullopt, "commitTransaction"));
    return SessionTransactions::commit(*session, commitTs).getStatus();
}

Status LocalParticipant::abort(const std::string& lsid, int64_t txnNumber) {
    ASSIGN_OR_RETURN(
        SessionTransactions::Checkout session,
        _transactions.beginStatement(lsid, txnNumber, false, std::nullopt, "abortTransaction"));
    return SessionTransactions::abort(*session);
}

std::vector<LocalParticipant::Waiting> LocalParticipant::preparedLongerThan(
    std::chrono::milliseconds age) {
    std::vector<Waiting> out;
    for (SessionTransactions::PreparedTransaction& t : _transactions.preparedLongerThan(age)) {
        out.push_back({std::move(t.lsid), t.txnNumber, std::move(t.coordinator.shard),
                       std::move(t.coordinator.host)});
    }
    return out;
}

}  // namespace tessera::txn
