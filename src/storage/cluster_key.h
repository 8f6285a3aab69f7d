#pragma once

#include <string>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "storage/catalog_types.h"

namespace tessera::storage {

// The cluster key of a collection decides the order of its records (README.md, "Keyspace").
// Absent (an empty pattern) means `_id`: recordKey = keystring(_id), as every collection had
// before cluster keys existed. Otherwise the pattern is a shard key pattern (fields 1 or
// "hashed", at most one hashed) and
//   recordKey = keystring(v1, ..., vn) ‖ keystring(_id)
// where vi is the value of field i extracted like a shard key (placement::ShardKeyPattern::
// extractShardKeyFromDoc: dotted paths through embedded documents, missing or blocked by a
// scalar = null; a hashed field = NumberLong(bson::hashElement(value))). The prefix before
// keystring(_id) is byte-identical to ShardKeyPattern::encodeKey of the document's shard key, so
// a chunk [min, max) is the contiguous record-key range [encodeKey(min), encodeKey(max)).
// A pattern ending with `_id: 1` is normalized without it ({k: 1, _id: 1} → {k: 1}): the record
// key then *is* the shard key's encoding, and the statement above still holds.

// Validates a cluster key pattern and returns its normalized form: the empty pattern for `_id`
// ({} or {_id: 1}), else the pattern itself. BadValue for anything but non-empty dotted field
// names with values 1 or "hashed" (at most one hashed field, no field twice): descending cluster
// keys are not supported (shard keys are ascending or hashed).
StatusWith<bson::BsonObj> normalizeClusterKey(bson::BsonView pattern);

// The record key of `doc` (which must have an _id) in a collection clustered by `clusterKey`
// (normalized; empty = _id). ShardKeyNotFound (61) when a cluster key path reaches an array.
StatusWith<std::string> makeRecordKey(bson::BsonView clusterKey, bson::BsonView doc);
inline StatusWith<std::string> makeRecordKey(const CollectionInfo& coll, bson::BsonView doc) {
    return makeRecordKey(coll.clusterKey, doc);
}

}  // namespace tessera::storage
