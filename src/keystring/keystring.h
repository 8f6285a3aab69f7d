#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"

namespace tessera::keystring {

// An order-preserving binary encoding of BSON values: for any two values a and b,
//   memcmp(encode(a), encode(b)) has the sign of bson::compareElementValues(a, b),
// including across types (MongoDB's canonical type order) and across numeric types (numbers
// compare by value: 1 == 1.0 == Long(1) == Decimal("1.0") encode identically). Field names are
// not encoded. Descending components invert their bytes so that a compound key (the
// concatenation of its components) sorts by the index's key pattern.
//
// Keys are self-delimiting: a component never is a prefix of a different component, so
// concatenations compare component by component. The format is described in README.md.
//
// Canonical order, as compareElementValues has it: MinKey < undefined (and missing/EOO) < null <
// numbers < strings/symbols < objects < arrays < BinData < ObjectId < bool < Date < Timestamp <
// Regex < DBPointer < Code < CodeWScope < MaxKey. Undefined and null are different ranks (0 and
// 5, as in MongoDB's canonicalType), so they encode differently; missing encodes as undefined.
// Numbers are ordered exactly by value (NaN first), including int64 beyond 2^53 and decimal128
// values that no double represents.

class Builder {
  public:
    Builder& append(const bson::BsonElement& value, bool descending = false);
    // The values MinKey / MaxKey in the given direction (same bytes as append() of a MinKey /
    // MaxKey element): descending MaxKey is the smallest descending component, descending
    // MinKey the largest.
    Builder& appendMinKey(bool descending = false);
    Builder& appendMaxKey(bool descending = false);
    // Appends raw bytes of an already-encoded key (e.g. a record key after index values).
    Builder& appendEncoded(std::string_view encoded);
    const std::string& key() const { return _key; }
    std::string release() { return std::move(_key); }

  private:
    std::string _key;
};

// Encodes one value.
std::string encodeValue(const bson::BsonElement& value, bool descending = false);

// Decodes a key of `descending.size()` components into {"": v1, "": v2, ...}. Numbers decode to
// a value-equal number (the original numeric type is not kept): int32 if integral and it fits,
// else int64 if integral and it fits, else double if a double holds it exactly, else decimal128.
// Symbols decode as strings, missing as undefined. Returns BadValue for bytes that are not a key
// (including a component whose direction differs from `descending`).
StatusWith<bson::BsonObj> decode(std::string_view key, const std::vector<bool>& descending);

// Byte length of the first component of `key`, or an error if it is not a valid component.
StatusWith<size_t> componentLength(std::string_view key);

// The smallest string greater than every string that starts with `prefix` ("" if none exists).
std::string prefixSuccessor(std::string_view prefix);

}  // namespace tessera::keystring
