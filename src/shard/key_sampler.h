#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bson/bson_obj.h"

namespace tessera::shard {

// Keys sampled from a range scan every `step` bytes of owned documents, with the bytes before
// each: split points by bytes in one pass and bounded memory (at most 2 × kMaxSamples keys; the
// step doubles and every other sample is dropped when full), whatever the range's size.
class KeySampler {
  public:
    static constexpr size_t kMaxSamples = 4096;

    void add(std::string encoded, const bson::BsonObj& key, int64_t docBytes) {
        if (!_samples.empty() && !_secondKey && encoded != _samples.front().encoded) {
            _secondKey = key;  // the first key after the range's first one, sampled or not
        }
        if (_samples.empty() || _bytes >= _nextAt) {
            _samples.push_back({std::move(encoded), key, _bytes});
            _nextAt = _bytes + _step;
            if (_samples.size() >= 2 * kMaxSamples) thin();
        }
        _bytes += docBytes;
    }
    int64_t bytes() const { return _bytes; }
    bool empty() const { return _samples.empty(); }
    // Whether every document had one key.
    bool oneKey() const { return !_secondKey; }
    const std::optional<bson::BsonObj>& secondKey() const { return _secondKey; }
    const bson::BsonObj& firstKey() const { return _samples.front().key; }
    // Up to pieces − 1 increasing keys cutting the range into pieces of about equal bytes; never
    // the range's first key (that would leave an empty chunk).
    std::vector<bson::BsonObj> points(int64_t pieces) const {
        std::vector<bson::BsonObj> out;
        const std::string* previous = &_samples.front().encoded;
        size_t i = 0;
        for (int64_t k = 1; k < pieces; ++k) {
            const int64_t target = _bytes * k / pieces;
            while (i < _samples.size() &&
                   (_samples[i].before < target || _samples[i].encoded <= *previous)) {
                ++i;
            }
            if (i == _samples.size()) break;
            out.push_back(_samples[i].key);
            previous = &_samples[i].encoded;
        }
        return out;
    }

  private:
    struct Sample {
        std::string encoded;
        bson::BsonObj key;
        int64_t before;
    };
    void thin() {
        std::vector<Sample> kept;
        for (size_t i = 0; i < _samples.size(); i += 2) kept.push_back(std::move(_samples[i]));
        _samples = std::move(kept);
        _step *= 2;
    }

    std::vector<Sample> _samples;
    int64_t _bytes = 0, _step = 16 * 1024, _nextAt = 0;
    std::optional<bson::BsonObj> _secondKey;
};

}  // namespace tessera::shard
