#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"

namespace tessera {

// A named switch that tests turn on with `configureFailPoint` (mode alwaysOn, times N, skip N, off)
// to force errors, hangs or crashes at a precise point. `data` is the BSON document given as
// `data` (raw bytes, interpreted by whoever evaluates the failpoint).
//
// Failpoints are defined once, at namespace scope, with TESSERA_FAIL_POINT_DEFINE(name) and are
// found by name through FailPointRegistry. Evaluating an inactive failpoint costs one atomic load.
class FailPoint {
  public:
    enum class Mode { kOff, kAlwaysOn, kTimes, kSkip };

    explicit FailPoint(std::string name);
    FailPoint(const FailPoint&) = delete;
    FailPoint& operator=(const FailPoint&) = delete;

    const std::string& name() const { return _name; }

    // Returns the failpoint's data when it fires on this evaluation, consuming one of `times`.
    std::optional<std::string> shouldFail();
    // Like shouldFail, but lets `predicate(data)` decide whether this evaluation applies (e.g.
    // failCommand's `failCommands` list); only applicable evaluations consume `times`/`skip`.
    template <typename Predicate>
    std::optional<std::string> shouldFailIf(Predicate&& predicate);

    void configure(Mode mode, int64_t count, std::string data);
    bool active() const { return _active.load(std::memory_order_acquire); }
    // Number of times the failpoint fired since it was last configured.
    int64_t timesEntered() const;

  private:
    std::optional<std::string> fireLocked() REQUIRES(_mutex);

    const std::string _name;
    std::atomic<bool> _active{false};
    mutable Mutex _mutex;
    Mode _mode GUARDED_BY(_mutex) = Mode::kOff;
    int64_t _count GUARDED_BY(_mutex) = 0;
    int64_t _entered GUARDED_BY(_mutex) = 0;
    std::string _data GUARDED_BY(_mutex);
};

// A hang point: when `fp` fires, logs "Hanging at failpoint" (`component`, `logId`, the name)
// and blocks while it stays active — for at most `limit`, so that a test that forgets to turn
// it off cannot hang the process for good. Tests set such failpoints `alwaysOn` (a `times`
// failpoint turns itself off as it fires) and wait for them with waitForFailPoint.
void pauseWhileActive(FailPoint& fp, std::string_view component, int logId,
                      std::chrono::milliseconds limit = std::chrono::minutes(5));

class FailPointRegistry {
  public:
    static FailPointRegistry& global();
    void add(FailPoint* fp);
    // nullptr when no failpoint has that name.
    FailPoint* find(const std::string& name) const;
    std::vector<FailPoint*> all() const;

  private:
    mutable Mutex _mutex;
    std::vector<FailPoint*> _points GUARDED_BY(_mutex);
};

template <typename Predicate>
std::optional<std::string> FailPoint::shouldFailIf(Predicate&& predicate) {
    if (!active()) return std::nullopt;
    MutexLock lock(_mutex);
    if (_mode == Mode::kOff || !predicate(_data)) return std::nullopt;
    return fireLocked();
}

}  // namespace tessera

#define TESSERA_FAIL_POINT_DEFINE(fp) ::tessera::FailPoint fp(#fp)
