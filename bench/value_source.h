// Deterministic, incompressible-ish payload bytes shared by the bench tools, so that RocksDB,
// the echo and the loadgen move comparable bytes (a run of 'x' would compress to nothing).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::bench {

// A bijective 64-bit mix (splitmix64 finaliser): distinct inputs give distinct outputs.
constexpr uint64_t scramble64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

class ValueSource {
  public:
    // Slices of `size` printable bytes (letters and digits, no NUL: usable as a BSON string).
    explicit ValueSource(uint64_t size);
    // A `size`-byte window that differs with `seed` (one of 1024 offsets into a larger buffer).
    std::string_view slice(uint64_t seed) const;
    uint64_t size() const { return _size; }

  private:
    uint64_t _size;
    std::string _buffer;
};

}  // namespace tessera::bench
