#include "config/ddl_lock_manager.h"

#include <algorithm>

namespace tessera::config {

DdlLockManager::Guard::Guard(Guard&& other) noexcept
    : _manager(other._manager), _held(std::move(other._held)) {
    other._manager = nullptr;
    other._held.clear();
}

DdlLockManager::Guard& DdlLockManager::Guard::operator=(Guard&& other) noexcept {
    if (this != &other) {
        release();
        _manager = other._manager;
        _held = std::move(other._held);
        other._manager = nullptr;
        other._held.clear();
    }
    return *this;
}

void DdlLockManager::Guard::release() {
    if (!_manager) return;
    for (auto it = _held.rbegin(); it != _held.rend(); ++it) {
        _manager->releaseOne(it->name, it->mode, it->reason);
    }
    _held.clear();
    _manager = nullptr;
}

Status DdlLockManager::acquire(const std::string& name, Mode mode, const std::string& reason,
                               Clock::time_point deadline) {
    std::unique_lock lock(_mutex);
    LockState& st = _locks[name];
    auto available = [&] {
        return mode == Mode::kShared ? !st.exclusive && st.exclusiveWaiters == 0
                                     : !st.exclusive && st.shared == 0;
    };
    if (mode == Mode::kExclusive) ++st.exclusiveWaiters;
    ++st.waiters;
    bool got = _released.wait_until(lock, deadline, available);
    --st.waiters;
    if (mode == Mode::kExclusive) --st.exclusiveWaiters;
    if (!got) {
        std::string holders;
        for (const std::string& r : st.reasons) holders += (holders.empty() ? "" : ", ") + r;
        if (st.unused()) _locks.erase(name);
        _released.notify_all();  // a shared waiter may have been blocked by this one
        return Status(ErrorCodes::LockBusy, "Failed to acquire the DDL lock of '" + name +
                                                "' for " + reason + ": it is held by " +
                                                (holders.empty() ? "waiting operations" : holders) +
                                                "; try again when that operation has finished");
    }
    if (mode == Mode::kShared) {
        ++st.shared;
    } else {
        st.exclusive = true;
    }
    st.reasons.push_back(reason);
    return Status::OK();
}

void DdlLockManager::releaseOne(const std::string& name, Mode mode, const std::string& reason) {
    std::lock_guard lock(_mutex);
    auto it = _locks.find(name);
    if (it == _locks.end()) return;
    LockState& st = it->second;
    if (mode == Mode::kShared) {
        --st.shared;
    } else {
        st.exclusive = false;
    }
    if (auto r = std::find(st.reasons.begin(), st.reasons.end(), reason); r != st.reasons.end()) {
        st.reasons.erase(r);
    }
    if (st.unused()) _locks.erase(it);
    _released.notify_all();
}

StatusWith<DdlLockManager::Guard> DdlLockManager::lockDatabase(const std::string& db,
                                                               const std::string& reason,
                                                               Clock::duration timeout) {
    Guard g;
    g._manager = this;
    TRY_STATUS(acquire(db, Mode::kExclusive, reason, Clock::now() + timeout));
    g._held.push_back({db, Mode::kExclusive, reason});
    return g;
}

StatusWith<DdlLockManager::Guard> DdlLockManager::lockCollection(const std::string& ns,
                                                                 const std::string& reason,
                                                                 Clock::duration timeout) {
    auto deadline = Clock::now() + timeout;
    std::string db = ns.substr(0, ns.find('.'));
    Guard g;
    g._manager = this;
    TRY_STATUS(acquire(db, Mode::kShared, reason, deadline));
    g._held.push_back({db, Mode::kShared, reason});
    TRY_STATUS(acquire(ns, Mode::kExclusive, reason, deadline));  // g releases db on failure
    g._held.push_back({ns, Mode::kExclusive, reason});
    return g;
}

std::vector<std::string> DdlLockManager::describeHeld() const {
    std::lock_guard lock(_mutex);
    std::vector<std::string> out;
    for (const auto& [name, st] : _locks) {
        for (const std::string& r : st.reasons) {
            out.push_back(name + (st.exclusive ? " exclusive " : " shared ") + r);
        }
    }
    return out;
}

}  // namespace tessera::config
