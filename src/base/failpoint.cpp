#include "base/failpoint.h"

#include <algorithm>
#include <thread>

#include "base/log.h"
#include "base/mutex.h"

namespace tessera {

FailPoint::FailPoint(std::string name) : _name(std::move(name)) {
    FailPointRegistry::global().add(this);
}

std::optional<std::string> FailPoint::shouldFail() {
    if (!active()) return std::nullopt;
    MutexLock lock(_mutex);
    if (_mode == Mode::kOff) return std::nullopt;
    return fireLocked();
}

void pauseWhileActive(FailPoint& fp, std::string_view component, int logId,
                      std::chrono::milliseconds limit) {
    if (!fp.shouldFail()) return;
    log::info(component, logId, "Hanging at failpoint", "{\"failpoint\":\"" + fp.name() + "\"}");
    for (auto until = std::chrono::steady_clock::now() + limit;
         fp.active() && std::chrono::steady_clock::now() < until;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

std::optional<std::string> FailPoint::fireLocked() {
    switch (_mode) {
        case Mode::kOff:
            return std::nullopt;
        case Mode::kAlwaysOn:
            break;
        case Mode::kTimes:
            if (_count <= 0) return std::nullopt;
            if (--_count == 0) {
                _mode = Mode::kOff;
                _active.store(false, std::memory_order_release);
            }
            break;
        case Mode::kSkip:
            if (_count > 0) {
                --_count;
                return std::nullopt;
            }
            break;
    }
    ++_entered;
    return _data;
}

void FailPoint::configure(Mode mode, int64_t count, std::string data) {
    MutexLock lock(_mutex);
    _mode = mode;
    _count = count;
    _data = std::move(data);
    _entered = 0;
    bool on = mode != Mode::kOff && !(mode == Mode::kTimes && count <= 0);
    if (!on) _mode = Mode::kOff;
    _active.store(on, std::memory_order_release);
}

int64_t FailPoint::timesEntered() const {
    MutexLock lock(_mutex);
    return _entered;
}

FailPointRegistry& FailPointRegistry::global() {
    static FailPointRegistry registry;
    return registry;
}

void FailPointRegistry::add(FailPoint* fp) {
    MutexLock lock(_mutex);
    _points.push_back(fp);
}

FailPoint* FailPointRegistry::find(const std::string& name) const {
    MutexLock lock(_mutex);
    auto it = std::find_if(_points.begin(), _points.end(),
                           [&](FailPoint* fp) { return fp->name() == name; });
    return it == _points.end() ? nullptr : *it;
}

std::vector<FailPoint*> FailPointRegistry::all() const {
    MutexLock lock(_mutex);
    return _points;
}

}  // namespace tessera
