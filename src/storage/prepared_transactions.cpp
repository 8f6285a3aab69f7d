#include "storage/prepared_transactions.h"

#include <algorithm>
#include <string>

namespace tessera::storage {

void PrepareReads::reset(Policy policy) {
    MutexLock lk(_mutex);
    _policy = policy;
    _conflict = Status::OK();
    _conflicted.store(false, std::memory_order_release);
}

PrepareReads::Policy PrepareReads::policy() const {
    MutexLock lk(_mutex);
    return _policy;
}

Status PrepareReads::conflict() const {
    MutexLock lk(_mutex);
    return _conflict;
}

void PrepareReads::noteConflict(Status conflict) {
    MutexLock lk(_mutex);
    if (!_conflict.isOK()) return;
    _conflict = std::move(conflict);
    _conflicted.store(true, std::memory_order_release);
}

namespace {

using Entries = std::vector<std::pair<std::string, std::string>>;

Entries::const_iterator lowerBound(const Entries& entries, std::string_view key) {
    return std::lower_bound(entries.begin(), entries.end(), key,
                            [](const auto& e, std::string_view k) { return e.first < k; });
}

}  // namespace

const std::string* PreparedTransaction::versionOf(uint32_t cfId, std::string_view userKey) const {
    auto cf = _versions.find(cfId);
    if (cf == _versions.end()) return nullptr;
    auto it = lowerBound(cf->second, userKey);
    if (it == cf->second.end() || it->first != userKey) return nullptr;
    return &it->second;
}

StatusWith<std::optional<Timestamp>> PreparedTransaction::awaitDecision(
    const PrepareReads::Policy& policy) const {
    UniqueLock lk(_mutex);
    if (_decided) return _commitTs;
    if (!policy.mayWait) {
        return Status(ErrorCodes::InlineWouldBlock, "a prepared transaction's decision is pending");
    }
    _waiting->fetch_add(1);
    bool decided = true;
    if (!policy.deadline) {
        _decidedCv.wait(lk, [&]() REQUIRES(_mutex) { return _decided; });
    } else {
        decided = _decidedCv.wait_until(lk, *policy.deadline,
                                        [&]() REQUIRES(_mutex) { return _decided; });
    }
    _waiting->fetch_sub(1);
    if (decided) return _commitTs;
    if (policy.deadlineIsMaxTime) {
        return Status(ErrorCodes::MaxTimeMSExpired,
                      "operation exceeded time limit while waiting for the commit decision of a "
                      "prepared transaction");
    }
    return Status(ErrorCodes::ExceededTimeLimit,
                  "a read waited too long for the commit decision of a prepared transaction; its "
                  "coordinator has not decided yet. Retry the read.");
}

StatusWith<std::optional<Timestamp>> PreparedTransaction::awaitDecisionFor(
    Timestamp readTs, const PrepareReads::Policy& policy) const {
    ASSIGN_OR_RETURN(std::optional<Timestamp> commitTs, awaitDecision(policy));
    if (!commitTs || *commitTs <= readTs) return commitTs;
    if (policy.restartIfCommittedAfterRead) {
        return Status(ErrorCodes::ReadMetLaterCommit,
                      "a prepared transaction the read met committed after the read's timestamp; "
                      "the read runs again at a later one");
    }
    return std::optional<Timestamp>();
}

void PreparedTransaction::decide(std::optional<Timestamp> commitTs) {
    {
        MutexLock lk(_mutex);
        if (_decided) return;
        _decided = true;
        _commitTs = commitTs;
    }
    _decidedCv.notify_all();
}

bool PreparedTransaction::waitDecidedUntil(std::chrono::steady_clock::time_point deadline) const {
    UniqueLock lk(_mutex);
    return _decidedCv.wait_until(lk, deadline, [&]() REQUIRES(_mutex) { return _decided; });
}

std::vector<PreparedSet::Version> PreparedSet::versionsIn(uint32_t cfId, std::string_view lower,
                                                          std::string_view upper) const {
    std::vector<Version> out;
    for (const auto& txn : _txns) {
        auto cf = txn->versions().find(cfId);
        if (cf == txn->versions().end()) continue;
        for (auto it = lowerBound(cf->second, lower); it != cf->second.end(); ++it) {
            if (!upper.empty() && std::string_view(it->first) >= upper) break;
            out.push_back(Version{it->first, it->second, txn.get()});
        }
    }
    if (_txns.size() > 1) {
        std::stable_sort(out.begin(), out.end(),
                         [](const Version& a, const Version& b) { return a.userKey < b.userKey; });
    }
    return out;
}

std::optional<PreparedSet::Version> PreparedSet::versionOf(uint32_t cfId,
                                                           std::string_view userKey) const {
    for (const auto& txn : _txns) {
        if (const std::string* value = txn->versionOf(cfId, userKey)) {
            return Version{userKey, *value, txn.get()};
        }
    }
    return std::nullopt;
}

PreparedSet::Seen PreparedSet::resolve(const Version& v, Timestamp readTs, std::string_view* value,
                                       Timestamp* commitTs) const {
    const PrepareReads::Policy policy = _reads ? _reads->policy() : PrepareReads::Policy{};
    StatusWith<std::optional<Timestamp>> decided = v.txn->awaitDecisionFor(readTs, policy);
    if (!decided.isOK()) {
        _reads->noteConflict(decided.getStatus());  // only a bound policy refuses a wait
        return Seen::kConflict;
    }
    if (!decided.getValue()) return Seen::kHidden;
    *value = v.value;
    if (commitTs) *commitTs = *decided.getValue();
    return Seen::kCommitted;
}

Timestamp PreparedTransactions::prepare(uint64_t txnId, HybridLogicalClock& clock,
                                        PreparedVersions versions) {
    MutexLock lk(_mutex);
    // Counted before the timestamp is drawn: a reader whose timestamp is at or after it sees
    // any() true, then takes the mutex and finds the transaction.
    _count.store(_byTxn.size() + 1);
    Timestamp ts = clock.next();
    _byTxn[txnId] = std::make_shared<PreparedTransaction>(ts, std::move(versions), _waiting);
    _count.store(_byTxn.size());
    return ts;
}

void PreparedTransactions::restore(uint64_t txnId, Timestamp prepareTs, PreparedVersions versions) {
    MutexLock lk(_mutex);
    _byTxn[txnId] = std::make_shared<PreparedTransaction>(prepareTs, std::move(versions), _waiting);
    _count.store(_byTxn.size());
}

void PreparedTransactions::finish(uint64_t txnId, std::optional<Timestamp> commitTs) {
    std::shared_ptr<PreparedTransaction> txn;
    {
        MutexLock lk(_mutex);
        auto it = _byTxn.find(txnId);
        if (it == _byTxn.end()) return;
        txn = std::move(it->second);
        _byTxn.erase(it);
        _count.store(_byTxn.size());
    }
    txn->decide(commitTs);
}

bool PreparedTransactions::awaitDecided(const std::vector<uint64_t>& txnIds,
                                        std::chrono::steady_clock::time_point deadline) const {
    std::vector<std::shared_ptr<const PreparedTransaction>> pending;
    {
        MutexLock lk(_mutex);
        for (uint64_t id : txnIds) {
            if (auto it = _byTxn.find(id); it != _byTxn.end()) pending.push_back(it->second);
        }
    }
    for (const auto& txn : pending) {
        if (!txn->waitDecidedUntil(deadline)) return false;
    }
    return true;
}

std::shared_ptr<const PreparedSet> PreparedTransactions::capture(
    Timestamp readTs, std::shared_ptr<PrepareReads> reads) const {
    if (!any()) return nullptr;
    std::vector<std::shared_ptr<const PreparedTransaction>> relevant;
    {
        MutexLock lk(_mutex);
        for (const auto& [id, txn] : _byTxn) {
            if (txn->prepareTs() <= readTs) relevant.push_back(txn);
        }
    }
    if (relevant.empty()) return nullptr;
    return std::make_shared<PreparedSet>(std::move(relevant), std::move(reads));
}

}  // namespace tessera::storage
