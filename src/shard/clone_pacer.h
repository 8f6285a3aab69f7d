#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace tessera::shard {

// How long a migration's clone pauses between pages so that it yields to the foreground
// (docs/protocols/migration.md, pacing). The first measurement of the foreground p99 (the larger of
// the two shards') times `factor` is the budget (never below `floorMicros`); while the p99 is
// above it the pause doubles (5 ms … 500 ms), below it halves to zero, so an idle shard clones
// at full rate. Pure: the caller measures and sleeps.
class ClonePacer {
  public:
    explicit ClonePacer(double factor = 3.0, int64_t floorMicros = 2000)
        : _factor(factor), _floorMicros(floorMicros) {}

    void setFactor(double factor) { _factor = factor; }
    std::chrono::milliseconds next(int64_t p99Micros) {
        if (_budgetMicros == 0) {
            _budgetMicros =
                std::max<int64_t>(_floorMicros, static_cast<int64_t>(p99Micros * _factor));
            return std::chrono::milliseconds(0);
        }
        if (p99Micros > _budgetMicros) {
            _delayMs = std::min<int64_t>(_delayMs == 0 ? 5 : _delayMs * 2, 500);
        } else {
            _delayMs /= 2;
        }
        return std::chrono::milliseconds(_delayMs);
    }
    int64_t budgetMicros() const { return _budgetMicros; }

  private:
    double _factor;
    int64_t _floorMicros;
    int64_t _budgetMicros = 0;  // 0: not measured yet
    int64_t _delayMs = 0;
};

}  // namespace tessera::shard
