#include "shard/critical_section.h"

namespace tessera::shard {

Status CriticalSections::enter(const std::string& key, std::string reason,
                               Clock::time_point deadline) {
    std::unique_lock lk(_mutex);
    Entry& e = _entries[key];
    e.entered = true;
    e.reason = std::move(reason);
    bool drained = _changed.wait_until(lk, deadline, [&] { return _entries[key].inFlight == 0; });
    if (!drained) {
        _entries[key].entered = false;
        _changed.notify_all();
        return Status(ErrorCodes::LockTimeout,
                      "timed out waiting for the operations in flight on " + key +
                          " to finish before entering the critical section");
    }
    return Status::OK();
}

void CriticalSections::exit(const std::string& key) {
    std::lock_guard lk(_mutex);
    auto it = _entries.find(key);
    if (it == _entries.end()) return;
    if (it->second.entered) _lastExit[key] = Clock::now();
    it->second.entered = false;
    maybeErase(key);
    _changed.notify_all();
}

bool CriticalSections::isEntered(const std::string& key) const {
    std::lock_guard lk(_mutex);
    auto it = _entries.find(key);
    return it != _entries.end() && it->second.entered;
}

bool CriticalSections::waitForExit(const std::string& key, Clock::time_point deadline, bool* waited,
                                   Clock::time_point* exitedAt) {
    std::unique_lock lk(_mutex);
    auto entered = [&] {
        auto it = _entries.find(key);
        return it != _entries.end() && it->second.entered;
    };
    bool mustWait = entered();
    if (waited) *waited = mustWait;
    if (!mustWait) return true;
    if (_blockedWaiters >= kMaxBlockedWaiters) return false;
    ++_blockedWaiters;
    bool exited = _changed.wait_until(lk, deadline, [&] { return !entered(); });
    --_blockedWaiters;
    if (!exited) return false;
    if (mustWait && exitedAt) {
        auto it = _lastExit.find(key);
        *exitedAt = it != _lastExit.end() ? it->second : Clock::now();
    }
    return true;
}

bool CriticalSections::tryAdmit(const std::string& key) {
    std::lock_guard lk(_mutex);
    auto it = _entries.find(key);
    if (it != _entries.end() && it->second.entered) return false;
    _entries[key].inFlight++;
    return true;
}

void CriticalSections::leave(const std::string& key) {
    std::lock_guard lk(_mutex);
    auto it = _entries.find(key);
    if (it == _entries.end() || it->second.inFlight == 0) return;
    it->second.inFlight--;
    maybeErase(key);
    _changed.notify_all();
}

int64_t CriticalSections::inFlight(const std::string& key) const {
    std::lock_guard lk(_mutex);
    auto it = _entries.find(key);
    return it == _entries.end() ? 0 : it->second.inFlight;
}

int CriticalSections::blockedWaiters() const {
    std::lock_guard lk(_mutex);
    return _blockedWaiters;
}

void CriticalSections::maybeErase(const std::string& key) {
    auto it = _entries.find(key);
    if (it != _entries.end() && !it->second.entered && it->second.inFlight == 0) {
        _entries.erase(it);
    }
}

}  // namespace tessera::shard
