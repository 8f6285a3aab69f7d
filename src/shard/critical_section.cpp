#include "shard/critical_section.h"

#include "base/mutex.h"

namespace tessera::shard {

Status CriticalSections::enter(const std::string& key, std::string reason,
                               Clock::time_point deadline, Block block, bool drainReads) {
    UniqueLock lk(_mutex);
    Entry& e = _entries[key];
    const bool wasEntered = e.entered;
    const Block previous = e.block;
    if (!e.entered || block == Block::kAll) e.block = block;
    if (!e.entered) e.enteredAt = Clock::now();
    e.entered = true;
    e.reason = std::move(reason);
    const bool waitReads = block == Block::kAll && drainReads;
    bool drained = _changed.wait_until(lk, deadline, [&]() REQUIRES(_mutex) {
        const Entry& now = _entries[key];
        return now.writesInFlight == 0 && (!waitReads || now.readsInFlight == 0);
    });
    if (!drained) {
        Entry& now = _entries[key];
        if (wasEntered) {
            now.block = previous;
        } else {
            now.entered = false;
        }
        _changed.notify_all();
        return Status(ErrorCodes::LockTimeout,
                      "timed out waiting for the operations in flight on " + key +
                          " to finish before entering the critical section");
    }
    return Status::OK();
}

void CriticalSections::exit(const std::string& key) {
    MutexLock lk(_mutex);
    auto it = _entries.find(key);
    if (it == _entries.end()) return;
    if (it->second.entered) _lastExit[key] = Clock::now();
    it->second.entered = false;
    maybeErase(key);
    _changed.notify_all();
}

bool CriticalSections::isEntered(const std::string& key) const {
    MutexLock lk(_mutex);
    auto it = _entries.find(key);
    return it != _entries.end() && it->second.entered;
}

bool CriticalSections::blocks(const std::string& key, bool isWrite) const {
    MutexLock lk(_mutex);
    auto it = _entries.find(key);
    return it != _entries.end() && it->second.blocks(isWrite);
}

std::optional<CriticalSections::Block> CriticalSections::entered(const std::string& key) const {
    MutexLock lk(_mutex);
    auto it = _entries.find(key);
    if (it == _entries.end() || !it->second.entered) return std::nullopt;
    return it->second.block;
}

std::optional<CriticalSections::Clock::time_point> CriticalSections::enteredAt(
    const std::string& key) const {
    MutexLock lk(_mutex);
    auto it = _entries.find(key);
    if (it == _entries.end() || !it->second.entered) return std::nullopt;
    return it->second.enteredAt;
}

bool CriticalSections::waitForExit(const std::string& key, Clock::time_point deadline, bool* waited,
                                   Clock::time_point* exitedAt, bool isWrite) {
    UniqueLock lk(_mutex);
    auto blocked = [&]() REQUIRES(_mutex) {
        auto it = _entries.find(key);
        return it != _entries.end() && it->second.blocks(isWrite);
    };
    bool mustWait = blocked();
    if (waited) *waited = mustWait;
    if (!mustWait) return true;
    if (_blockedWaiters >= kMaxBlockedWaiters) return false;
    ++_blockedWaiters;
    bool exited = _changed.wait_until(lk, deadline, [&]() REQUIRES(_mutex) { return !blocked(); });
    --_blockedWaiters;
    if (!exited) return false;
    if (mustWait && exitedAt) {
        auto it = _lastExit.find(key);
        *exitedAt = it != _lastExit.end() ? it->second : Clock::now();
    }
    return true;
}

bool CriticalSections::tryAdmit(const std::string& key, bool isWrite) {
    MutexLock lk(_mutex);
    auto it = _entries.find(key);
    if (it != _entries.end() && it->second.blocks(isWrite)) return false;
    Entry& e = _entries[key];
    (isWrite ? e.writesInFlight : e.readsInFlight)++;
    return true;
}

void CriticalSections::leave(const std::string& key, bool isWrite) {
    MutexLock lk(_mutex);
    auto it = _entries.find(key);
    if (it == _entries.end()) return;
    int64_t& n = isWrite ? it->second.writesInFlight : it->second.readsInFlight;
    if (n == 0) return;
    n--;
    maybeErase(key);
    _changed.notify_all();
}

int64_t CriticalSections::inFlight(const std::string& key) const {
    MutexLock lk(_mutex);
    auto it = _entries.find(key);
    return it == _entries.end() ? 0 : it->second.readsInFlight + it->second.writesInFlight;
}

int CriticalSections::blockedWaiters() const {
    MutexLock lk(_mutex);
    return _blockedWaiters;
}

void CriticalSections::maybeErase(const std::string& key) {
    auto it = _entries.find(key);
    if (it != _entries.end() && !it->second.entered && it->second.readsInFlight == 0 &&
        it->second.writesInFlight == 0) {
        _entries.erase(it);
    }
}

}  // namespace tessera::shard
