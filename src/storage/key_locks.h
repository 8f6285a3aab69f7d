#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <vector>

#include "base/mutex.h"

namespace tessera::storage {

// Document-level write exclusion (internal to the storage engine). A document write locks the
// keys it decides on — its record key(s) and the user keys of the unique-index entries it adds
// or removes — for the moment it checks the latest state and commits, so that writers of one
// collection run in parallel and exclude each other only on the same document or unique value.
//
// Keys are hashed (with their collection id) onto a fixed set of stripes. One guard locks the
// stripes of all its keys in ascending stripe order and holds nothing else while it waits, so
// guards cannot deadlock; two keys that share a stripe only wait for each other.
class KeyLocks {
  public:
    static constexpr size_t kStripes = 4096;

    class Guard {
      public:
        Guard() = default;
        Guard(Guard&& other) noexcept : _locks(other._locks), _stripes(std::move(other._stripes)) {
            other._locks = nullptr;
        }
        Guard& operator=(Guard&&) = delete;
        Guard(const Guard&) = delete;
        ~Guard() { release(); }
        // (The analysis cannot follow a set of stripes chosen at run time: lock and release are
        // left out of it.)
        void release() NO_THREAD_SAFETY_ANALYSIS;

      private:
        friend class KeyLocks;
        KeyLocks* _locks = nullptr;
        std::vector<uint16_t> _stripes;  // ascending, distinct
    };

    // Blocks until every stripe of `keys` of collection `collId` is locked.
    Guard lock(uint64_t collId,
               const std::vector<std::string_view>& keys) NO_THREAD_SAFETY_ANALYSIS;

    static size_t stripeOf(uint64_t collId, std::string_view key);

  private:
    std::array<Mutex, kStripes> _stripes;
};

}  // namespace tessera::storage
