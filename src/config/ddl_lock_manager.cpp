#include "config/ddl_lock_manager.h"

#include <algorithm>

#include "base/mutex.h"
#include "command/namespace_util.h"

namespace tessera::config {
namespace {

// Databases and collections live in separate name spaces of the manager: a database "keep" and
// a (malformed) namespace "keep" can never be the same lock.
std::string databaseLockName(std::string_view db) { return "db:" + std::string(db); }
std::string collectionLockName(std::string_view ns) { return "coll:" + std::string(ns); }

}  // namespace

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
    UniqueLock lock(_mutex);
    const auto self = std::this_thread::get_id();
    if (auto held = _locks.find(name); held != _locks.end()) {
        const auto& holders = held->second.holders;
        if (std::find(holders.begin(), holders.end(), self) != holders.end()) {
#ifndef NDEBUG
            invariantFailed(("DDL lock '" + name + "' requested again by its holder").c_str(),
                            __FILE__, __LINE__);
#endif
            return Status(ErrorCodes::LockFailed,
                          "DDL lock '" + name + "' requested for " + reason +
                              " by the operation that holds it; refused instead of waiting on "
                              "itself");
        }
    }
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
    st.holders.push_back(self);
    return Status::OK();
}

void DdlLockManager::releaseOne(const std::string& name, Mode mode, const std::string& reason) {
    MutexLock lock(_mutex);
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
    // A guard may be released by another thread than its holder's (moved): forget one holder,
    // this thread's if it is one.
    auto h = std::find(st.holders.begin(), st.holders.end(), std::this_thread::get_id());
    if (h == st.holders.end()) h = st.holders.begin();
    if (h != st.holders.end()) st.holders.erase(h);
    if (st.unused()) _locks.erase(it);
    _released.notify_all();
}

StatusWith<DdlLockManager::Guard> DdlLockManager::lockDatabase(const std::string& db,
                                                               const std::string& reason,
                                                               Clock::duration timeout) {
    TRY_STATUS(command::validateDatabaseName(db));
    Guard g;
    g._manager = this;
    const std::string name = databaseLockName(db);
    TRY_STATUS(acquire(name, Mode::kExclusive, reason, Clock::now() + timeout));
    g._held.push_back({name, Mode::kExclusive, reason});
    return g;
}

StatusWith<DdlLockManager::Guard> DdlLockManager::lockCollection(const std::string& ns,
                                                                 const std::string& reason,
                                                                 Clock::duration timeout) {
    ASSIGN_OR_RETURN(command::Namespace parsed, command::parseValidNamespace(ns));
    auto deadline = Clock::now() + timeout;
    const std::string dbName = databaseLockName(parsed.db);
    const std::string collName = collectionLockName(ns);
    Guard g;
    g._manager = this;
    TRY_STATUS(acquire(dbName, Mode::kShared, reason, deadline));
    g._held.push_back({dbName, Mode::kShared, reason});
    TRY_STATUS(acquire(collName, Mode::kExclusive, reason, deadline));  // g releases the db
    g._held.push_back({collName, Mode::kExclusive, reason});
    return g;
}

int DdlLockManager::databaseWaiters(const std::string& db) const {
    MutexLock lock(_mutex);
    auto it = _locks.find(databaseLockName(db));
    return it == _locks.end() ? 0 : it->second.waiters;
}

std::vector<std::string> DdlLockManager::describeHeld() const {
    MutexLock lock(_mutex);
    std::vector<std::string> out;
    for (const auto& [name, st] : _locks) {
        for (const std::string& r : st.reasons) {
            out.push_back(name + (st.exclusive ? " exclusive " : " shared ") + r);
        }
    }
    return out;
}

}  // namespace tessera::config
