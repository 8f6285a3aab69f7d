#include "storage/key_locks.h"

#include <algorithm>
#include <functional>

namespace tessera::storage {

void KeyLocks::Guard::release() {
    if (!_locks) return;
    for (auto it = _stripes.rbegin(); it != _stripes.rend(); ++it) _locks->_stripes[*it].unlock();
    _stripes.clear();
    _locks = nullptr;
}

size_t KeyLocks::stripeOf(uint64_t collId, std::string_view key) {
    size_t h = std::hash<std::string_view>{}(key);
    h ^= collId + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h % kStripes;
}

KeyLocks::Guard KeyLocks::lock(uint64_t collId, const std::vector<std::string_view>& keys) {
    Guard g;
    g._locks = this;
    g._stripes.reserve(keys.size());
    for (std::string_view k : keys)
        g._stripes.push_back(static_cast<uint16_t>(stripeOf(collId, k)));
    std::sort(g._stripes.begin(), g._stripes.end());
    g._stripes.erase(std::unique(g._stripes.begin(), g._stripes.end()), g._stripes.end());
    for (uint16_t s : g._stripes) _stripes[s].lock();
    return g;
}

}  // namespace tessera::storage
