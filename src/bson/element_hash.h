#pragma once

#include <cstdint>

#include "bson/bson_element.h"

namespace tessera::bson {

// The seed MongoDB uses for hashed indexes and hashed shard keys
// (BSONElementHasher::DEFAULT_HASH_SEED).
constexpr int32_t kDefaultHashSeed = 0;

// MongoDB's BSONElementHasher::hash64: the first 8 bytes (little-endian int64) of
// MD5(seed ‖ canonicalType ‖ value), where
//  - seed and the canonical type (bson::canonicalTypeOrder) are int32 little-endian;
//  - numbers of every type are squashed to int64 first (doubles and decimals truncated toward
//    zero / rounded half-even, NaN -> 0, out-of-range values clamped; the double 2^63 hashes as
//    INT64_MIN for compatibility), so 1, 1.0, 1.9, Long(1) and Decimal("1") hash equally;
//  - objects, arrays and the scope of CodeWScope hash each element as (canonicalType, field name
//    with its NUL, value) recursively, then the terminating EOO (its type 0 only);
//  - every other type hashes its raw BSON value bytes (strings with their length prefix and NUL,
//    so String and Symbol hash equally; null, undefined, MinKey and MaxKey have no bytes).
// Dates and Timestamps have different canonical types (45 and 47) and hash differently.
// The value hashed is the element's value; its field name is never part of the hash.
int64_t hashElement(const BsonElement& e, int32_t seed = kDefaultHashSeed);

// MongoDB's BSONElement::safeNumberLongForHash for a numeric element (0 for non-numbers).
int64_t squashNumberForHash(const BsonElement& e);

}  // namespace tessera::bson
