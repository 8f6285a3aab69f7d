#include "storage/visibility.h"

#include <algorithm>

#include "base/mutex.h"

namespace tessera::storage {

Timestamp VisibilityTracker::beginCommit() {
    MutexLock lock(_mutex);
    Timestamp ts = _clock->next();
    _inFlight.push_back({ts.value, false});
    return ts;
}

void VisibilityTracker::popFinishedLocked() {
    bool popped = false;
    while (!_inFlight.empty() && _inFlight.front().done) {
        _lastVisible = std::max(_lastVisible, _inFlight.front().ts);
        _inFlight.pop_front();
        popped = true;
    }
    if (popped) _cv.notify_all();
}

void VisibilityTracker::endCommit(Timestamp ts) {
    UniqueLock lock(_mutex);
    for (auto& f : _inFlight) {
        if (f.ts == ts.value) {
            f.done = true;
            break;
        }
    }
    popFinishedLocked();
    _cv.wait(lock, [&]() REQUIRES(_mutex) {
        return _inFlight.empty() || _inFlight.front().ts > ts.value;
    });
}

Timestamp VisibilityTracker::readTimestamp(bool pin) {
    MutexLock lock(_mutex);
    Timestamp t = _inFlight.empty() ? _clock->current() : Timestamp{_inFlight.front().ts - 1};
    if (pin) _pins.insert(t.value);
    return t;
}

void VisibilityTracker::waitUntilVisible(Timestamp at, bool pin) {
    _clock->advanceTo(at);
    UniqueLock lock(_mutex);
    _cv.wait(lock, [&]() REQUIRES(_mutex) {
        return _inFlight.empty() || _inFlight.front().ts > at.value;
    });
    if (pin) _pins.insert(at.value);
}

void VisibilityTracker::unpin(Timestamp ts) {
    MutexLock lock(_mutex);
    auto it = _pins.find(ts.value);
    if (it != _pins.end()) _pins.erase(it);
}

Timestamp VisibilityTracker::gcHorizon(uint32_t historyWindowSeconds) const {
    MutexLock lock(_mutex);
    Timestamp now = _clock->current();
    uint32_t secs = now.secs() > historyWindowSeconds ? now.secs() - historyWindowSeconds : 0;
    uint64_t horizon = Timestamp::fromParts(secs, 0).value;
    if (!_pins.empty()) horizon = std::min(horizon, *_pins.begin());
    if (!_inFlight.empty()) horizon = std::min(horizon, _inFlight.front().ts - 1);
    return Timestamp{horizon};
}

Timestamp VisibilityTracker::lastVisible() const {
    MutexLock lock(_mutex);
    return Timestamp{_lastVisible};
}

void VisibilityTracker::observeApplied(Timestamp ts) {
    MutexLock lk(_mutex);
    _lastVisible = std::max(_lastVisible, ts.value);
}

}  // namespace tessera::storage
