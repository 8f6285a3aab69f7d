#include "base/op_id.h"

#include <atomic>
#include <set>

#include "base/mutex.h"

namespace tessera {

int32_t nextOpId() {
    static std::atomic<uint32_t> next{0};
    for (;;) {
        uint32_t id = (next.fetch_add(1, std::memory_order_relaxed) + 1) & 0x7fffffffu;
        if (id != 0) return static_cast<int32_t>(id);  // wrapped: 0 is never an id
    }
}

int32_t KeyedOpIds::idFor(const std::string& key) {
    MutexLock lk(_mutex);
    auto [it, inserted] = _ids.try_emplace(key, 0);
    if (inserted) it->second = nextOpId();
    return it->second;
}

void KeyedOpIds::retainOnly(const std::vector<std::string>& listed) {
    std::set<std::string> keep(listed.begin(), listed.end());
    MutexLock lk(_mutex);
    std::erase_if(_ids, [&](const auto& entry) { return !keep.count(entry.first); });
}

}  // namespace tessera
