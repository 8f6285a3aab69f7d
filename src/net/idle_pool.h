#pragma once

// Internal to src/net: the idle connections of RemoteClient and AsyncRemoteClient.

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/mutex.h"

namespace tessera::net {

// Idle connections per host ("host:port"), the most recently returned one first out (it is the
// likeliest to be still open and warm). Thread-safe. `Ptr` is a smart pointer to a connection.
template <typename Ptr>
class IdlePool {
  public:
    explicit IdlePool(size_t maxPerHost) : _maxPerHost(maxPerHost) {}

    // The most recent idle connection to `host` that `usable(conn)` accepts, or null; the ones
    // it refuses (closed by the remote) are dropped on the way.
    template <typename Usable>
    Ptr take(std::string_view host, Usable&& usable) {
        MutexLock lock(_mutex);
        auto it = _idle.find(host);
        while (it != _idle.end() && !it->second.empty()) {
            Ptr conn = std::move(it->second.back());
            it->second.pop_back();
            if (usable(*conn)) return conn;
        }
        return nullptr;
    }

    // Keeps `conn` for reuse, unless `host` already has maxPerHost idle ones (then it is closed).
    void put(const std::string& host, Ptr conn) {
        MutexLock lock(_mutex);
        auto& idle = _idle[host];
        if (idle.size() < _maxPerHost) idle.push_back(std::move(conn));
    }

    // Closes every idle connection to `host`.
    void drop(std::string_view host) {
        std::vector<Ptr> dropped;
        MutexLock lock(_mutex);
        auto it = _idle.find(host);
        if (it != _idle.end()) dropped.swap(it->second);
    }

  private:
    const size_t _maxPerHost;
    Mutex _mutex;
    std::map<std::string, std::vector<Ptr>, std::less<>> _idle GUARDED_BY(_mutex);
};

}  // namespace tessera::net
