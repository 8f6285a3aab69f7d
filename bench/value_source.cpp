#include "value_source.h"

namespace tessera::bench {
namespace {
constexpr uint64_t kOffsets = 1024;
constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
}  // namespace

ValueSource::ValueSource(uint64_t size) : _size(size) {
    _buffer.resize(size + kOffsets);
    uint64_t state = 42;
    for (auto& c : _buffer) {
        state = scramble64(state);
        c = kAlphabet[state % (sizeof(kAlphabet) - 1)];
    }
}

std::string_view ValueSource::slice(uint64_t seed) const {
    return std::string_view(_buffer).substr(scramble64(seed) % kOffsets, _size);
}

}  // namespace tessera::bench
