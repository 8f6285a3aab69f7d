#include "storage/rocks_options.h"

#include <algorithm>
#include <string>

#include "storage/key_format.h"

namespace tessera::storage {
namespace {

class VersionPrefixExtractor : public rocksdb::SliceTransform {
  public:
    const char* Name() const override { return "tessera.VersionPrefix"; }
    rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
        return rocksdb::Slice(key.data(), key.size() - keys::kTsSize);
    }
    // Every versioned key is collId(8) | at least one keystring byte | ts(8).
    bool InDomain(const rocksdb::Slice& key) const override {
        return key.size() > keys::kCollIdSize + keys::kTsSize;
    }
};

class MvccGcFilter : public rocksdb::CompactionFilter {
  public:
    MvccGcFilter(Timestamp horizon, bool fullCompaction)
        : _horizon(horizon), _fullCompaction(fullCompaction) {}

    Decision FilterV2(int, const rocksdb::Slice& key, ValueType type, const rocksdb::Slice& value,
                      std::string*, std::string*) const override {
        if (type != ValueType::kValue || key.size() <= keys::kTsSize) return Decision::kKeep;
        std::string_view k(key.data(), key.size());
        std::string_view userKey = keys::userKeyOf(k);
        if (!_haveUserKey || userKey != _userKey) {
            _userKey.assign(userKey);
            _haveUserKey = true;
            _seenAtOrBelowHorizon = false;
        }
        if (keys::tsOf(k) > _horizon) return Decision::kKeep;
        if (_seenAtOrBelowHorizon) return Decision::kRemove;
        _seenAtOrBelowHorizon = true;
        if (value.empty() && _fullCompaction) return Decision::kRemove;
        return Decision::kKeep;
    }
    const char* Name() const override { return "tessera.MvccGcFilter"; }

  private:
    Timestamp _horizon;
    bool _fullCompaction;
    mutable std::string _userKey;
    mutable bool _haveUserKey = false;
    mutable bool _seenAtOrBelowHorizon = false;
};

class CountsMergeOperator : public rocksdb::AssociativeMergeOperator {
  public:
    bool Merge(const rocksdb::Slice&, const rocksdb::Slice* existing, const rocksdb::Slice& value,
               std::string* newValue, rocksdb::Logger*) const override {
        if (value.size() != 24 || (existing && existing->size() != 24)) return false;
        auto field = [](const rocksdb::Slice& s, size_t i) {
            return keys::readBigEndian64(std::string_view(s.data() + 8 * i, 8));
        };
        uint64_t count = field(value, 0), size = field(value, 1), ts = field(value, 2);
        if (existing) {
            count += field(*existing, 0);  // unsigned: two's complement wrap is the int64 sum
            size += field(*existing, 1);
            ts = std::max(ts, field(*existing, 2));
        }
        newValue->clear();
        keys::appendBigEndian64(*newValue, count);
        keys::appendBigEndian64(*newValue, size);
        keys::appendBigEndian64(*newValue, ts);
        return true;
    }
    const char* Name() const override { return "tessera.CountsMerge"; }
};

}  // namespace

std::shared_ptr<rocksdb::MergeOperator> newCountsMergeOperator() {
    return std::make_shared<CountsMergeOperator>();
}

std::string encodeCounts(int64_t count, int64_t dataSize, Timestamp lastTs) {
    std::string v;
    keys::appendBigEndian64(v, static_cast<uint64_t>(count));
    keys::appendBigEndian64(v, static_cast<uint64_t>(dataSize));
    keys::appendBigEndian64(v, lastTs.value);
    return v;
}

std::shared_ptr<const rocksdb::SliceTransform> newVersionPrefixExtractor() {
    return std::make_shared<VersionPrefixExtractor>();
}

std::unique_ptr<rocksdb::CompactionFilter> MvccGcFilterFactory::CreateCompactionFilter(
    const rocksdb::CompactionFilter::Context& context) {
    return std::make_unique<MvccGcFilter>(_horizon(), context.is_full_compaction);
}

}  // namespace tessera::storage
