#include "txn/local_participant.h"

#include "base/mutex.h"
#include "txn/session_transactions.h"

namespace tessera::txn {

using txn::SessionTransactions;

StatusWith<LocalParticipant::Prepared> LocalParticipant::prepare(
    const std::string& lsid, int64_t txnNumber, const std::string& coordinatorShard,
    const std::string& coordinatorHost) {
    ASSIGN_OR_RETURN(
        SessionTransactions::Checkout session,
        _transactions.beginStatement(lsid, txnNumber, false, std::nullopt, "prepareTransaction"));
    ASSIGN_OR_RETURN(Timestamp ts, SessionTransactions::prepare(
                                       *session, {coordinatorShard, coordinatorHost}, false));
    MutexLock lk(session->stateMutex);
    return Prepared{ts, session->state == txn::TransactionState::kCommitted};
}

Status LocalParticipant::commit(const std::string& lsid, int64_t txnNumber, Timestamp commitTs) {
    ASSIGN_OR_RETURN(
        SessionTransactions::Checkout session,
        _transactions.beginStatement(lsid, txnNumber, false, std::nullopt, "commitTransaction"));
    return _transactions.commit(*session, commitTs).getStatus();
}

Status LocalParticipant::abort(const std::string& lsid, int64_t txnNumber) {
    ASSIGN_OR_RETURN(
        SessionTransactions::Checkout session,
        _transactions.beginStatement(lsid, txnNumber, false, std::nullopt, "abortTransaction"));
    return SessionTransactions::abort(*session);
}

std::vector<SessionTransactions::PreparedTransaction> LocalParticipant::preparedLongerThan(
    std::chrono::milliseconds age) {
    return _transactions.preparedLongerThan(age);
}

}  // namespace tessera::txn
