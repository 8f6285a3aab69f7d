#include "storage/prepared_transactions.h"

#include <algorithm>
#include <string>

namespace tessera::storage {

thread_local PrepareWaitScope::Limit PrepareWaitScope::tlsLimit;
thread_local bool LatestReadScope::tlsActive = false;

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

std::optional<Timestamp> PreparedTransaction::awaitDecision() const {
    std::unique_lock lk(_mutex);
    if (_decided) return _commitTs;
    const PrepareWaitScope::Limit& limit = PrepareWaitScope::current();
    if (!limit.mayWait) {
        throw PrepareConflict("a prepared transaction's decision is pending",
                              PrepareConflict::Kind::kWouldBlock);
    }
    _waiting->fetch_add(1);
    bool decided = true;
    if (!limit.deadline) {
        _decidedCv.wait(lk, [&] { return _decided; });
    } else {
        decided = _decidedCv.wait_until(lk, *limit.deadline, [&] { return _decided; });
    }
    _waiting->fetch_sub(1);
    if (decided) return _commitTs;
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

std::optional<Timestamp> PreparedTransaction::awaitDecisionFor(Timestamp readTs) const {
    std::optional<Timestamp> commitTs = awaitDecision();
    if (!commitTs || *commitTs <= readTs) return commitTs;
    if (LatestReadScope::active()) {
        throw PrepareConflict(
            "a prepared transaction the read met committed after the read's "
            "timestamp; the read runs again at a later one",
            PrepareConflict::Kind::kCommittedAfterRead);
    }
    return std::nullopt;
}

void PreparedTransaction::decide(std::optional<Timestamp> commitTs) {
    {
        std::lock_guard lk(_mutex);
        if (_decided) return;
        _decided = true;
        _commitTs = commitTs;
    }
    _decidedCv.notify_all();
}

bool PreparedTransaction::waitDecidedUntil(std::chrono::steady_clock::time_point deadline) const {
    std::unique_lock lk(_mutex);
    return _decidedCv.wait_until(lk, deadline, [&] { return _decided; });
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

std::optional<std::string_view> PreparedSet::resolve(const Version& v, Timestamp readTs) {
    if (!v.txn->awaitDecisionFor(readTs)) return std::nullopt;
    return v.value;
}

Timestamp PreparedTransactions::prepare(uint64_t txnId, HybridLogicalClock& clock,
                                        PreparedVersions versions) {
    std::lock_guard lk(_mutex);
    // Counted before the timestamp is drawn: a reader whose timestamp is at or after it sees
    // any() true, then takes the mutex and finds the transaction.
    _count.store(_byTxn.size() + 1);
    Timestamp ts = clock.next();
    _byTxn[txnId] = std::make_shared<PreparedTransaction>(ts, std::move(versions), _waiting);
    _count.store(_byTxn.size());
    return ts;
}

void PreparedTransactions::restore(uint64_t txnId, Timestamp prepareTs, PreparedVersions versions) {
    std::lock_guard lk(_mutex);
    _byTxn[txnId] = std::make_shared<PreparedTransaction>(prepareTs, std::move(versions), _waiting);
    _count.store(_byTxn.size());
}

void PreparedTransactions::finish(uint64_t txnId, std::optional<Timestamp> commitTs) {
    std::shared_ptr<PreparedTransaction> txn;
    {
        std::lock_guard lk(_mutex);
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
        std::lock_guard lk(_mutex);
        for (uint64_t id : txnIds) {
            if (auto it = _byTxn.find(id); it != _byTxn.end()) pending.push_back(it->second);
        }
    }
    for (const auto& txn : pending) {
        if (!txn->waitDecidedUntil(deadline)) return false;
    }
    return true;
}

std::shared_ptr<const PreparedSet> PreparedTransactions::capture(Timestamp readTs) const {
    if (!any()) return nullptr;
    std::vector<std::shared_ptr<const PreparedTransaction>> relevant;
    {
        std::lock_guard lk(_mutex);
        for (const auto& [id, txn] : _byTxn) {
            if (txn->prepareTs() <= readTs) relevant.push_back(txn);
        }
    }
    if (relevant.empty()) return nullptr;
    return std::make_shared<PreparedSet>(std::move(relevant));
}

}  // namespace tessera::storage
