#include "storage/prepared_transactions.h"

#include <string>

namespace tessera::storage {

thread_local PrepareWaitScope::Limit PrepareWaitScope::tlsLimit;

Timestamp PreparedTransactions::prepare(uint64_t txnId, HybridLogicalClock& clock) {
    std::lock_guard lk(_mutex);
    Timestamp ts = clock.next();
    _byTxn[txnId] = ts;
    _count.store(_byTxn.size());
    return ts;
}

void PreparedTransactions::restore(uint64_t txnId, Timestamp prepareTs) {
    std::lock_guard lk(_mutex);
    _byTxn[txnId] = prepareTs;
    _count.store(_byTxn.size());
}

void PreparedTransactions::finish(uint64_t txnId) {
    {
        std::lock_guard lk(_mutex);
        if (_byTxn.erase(txnId) == 0) return;
        _count.store(_byTxn.size());
    }
    _decided.notify_all();
}

bool PreparedTransactions::blockingLocked(Timestamp readTs) const {
    for (const auto& [id, ts] : _byTxn) {
        if (ts <= readTs) return true;
    }
    return false;
}

void PreparedTransactions::waitForDecisions(Timestamp readTs) {
    if (!any()) return;
    std::unique_lock lk(_mutex);
    if (!blockingLocked(readTs)) return;
    const PrepareWaitScope::Limit& limit = PrepareWaitScope::current();
    if (!limit.mayWait) {
        throw PrepareConflict("a prepared transaction's decision is pending",
                              PrepareConflict::Kind::kWouldBlock);
    }
    _waiting.fetch_add(1);
    bool decided = true;
    if (!limit.deadline) {
        _decided.wait(lk, [&] { return !blockingLocked(readTs); });
    } else {
        decided = _decided.wait_until(lk, *limit.deadline, [&] { return !blockingLocked(readTs); });
    }
    _waiting.fetch_sub(1);
    if (decided) return;
    if (limit.isMaxTime) {
        throw PrepareConflict(
            "operation exceeded time limit while waiting for the commit "
            "decision of a prepared transaction",
            PrepareConflict::Kind::kDeadline);
    }
    throw PrepareConflict(
        "a read waited too long for the commit decision of a prepared "
        "transaction; its coordinator has not decided yet. Retry the read.",
        PrepareConflict::Kind::kTooLong);
}

}  // namespace tessera::storage
