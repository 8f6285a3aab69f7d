#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"

namespace tessera::placement {

// A collection's shard key pattern, as `shardCollection` accepts it (MongoDB's ShardKeyPattern):
// one or more dotted field paths, each `1` (ranged) or `"hashed"` (at most one hashed field),
// e.g. {a: 1}, {a: 1, "b.c": 1}, {_id: "hashed"}, {a: 1, b: "hashed", c: 1}.
//
// A *shard key* is a document with exactly the pattern's field names, in pattern order, where a
// hashed field holds the NumberLong hash of the document's value (hasher.h). Chunk bounds are
// shard keys too, and may hold MinKey/MaxKey.
//
// Invariants:
//  1. Shard keys never hold arrays (a document whose key path crosses an array cannot be
//     inserted into a sharded collection).
//  2. encodeKey() is order-preserving: memcmp of two encodings has the sign of comparing the
//     keys field by field in MongoDB's order (all fields ascending, hashed fields by hash), so
//     chunk ranges compare as bytes. Numbers compare by value (1 == 1.0 == Long(1)).
class ShardKeyPattern {
  public:
    // Validates `keyPattern` as MongoDB does (all BadValue): "Shard key is empty"; "Field <f> is
    // empty" / "contains extra dot" / "contains empty parts"; a part starting with '$' (other than
    // the DBRef fields $id, $db, $ref); a value other than 1 or "hashed", or a second hashed field
    // ("Shard key <p> can contain at most one 'hashed' field, and/or multiple numerical fields set
    // to a value of 1. Failed to parse field <f>"); a field listed twice. `_id` is allowed.
    static StatusWith<ShardKeyPattern> parse(bson::BsonView keyPattern);

    const bson::BsonObj& toBson() const { return _pattern; }
    size_t numFields() const { return _paths.size(); }
    const std::string& fieldPath(size_t i) const { return _paths[i]; }
    bool isHashedField(size_t i) const { return _hashedIndex && *_hashedIndex == i; }
    std::optional<size_t> hashedFieldIndex() const { return _hashedIndex; }
    bool isHashed() const { return _hashedIndex.has_value(); }
    bool hasHashedPrefix() const { return _hashedIndex && *_hashedIndex == 0; }
    // The pattern with "hashed" replaced by 1: the index over which shard keys are ordered.
    const bson::BsonObj& rangedIndexPattern() const { return _rangedPattern; }

    // {f1: MinKey, ...} and {f1: MaxKey, ...}: the bounds of the whole key space.
    bson::BsonObj globalMin() const;
    bson::BsonObj globalMax() const;

    // The shard key of a document (MongoDB's extractShardKeyFromDocThrows): each path read
    // through embedded documents (a scalar met before the end, or a missing field, yields null);
    // hashed fields replaced by their hash. A path that reaches an array fails with
    // ShardKeyNotFound (61) "Shard key cannot contain array values or array descendants.".
    StatusWith<bson::BsonObj> extractShardKeyFromDoc(bson::BsonView doc) const;

    // The shard key a filter pins down (MongoDB's extractShardKeyFromQuery): every key path is
    // bound by a top-level equality (implicit, $eq, a one-element $in, under $and), or lies
    // inside an equality on an embedded document ({a: {b: 1}} for path "a.b"). Returns an empty
    // document when the filter does not pin every field (or pins one to an array, a regex or
    // undefined); returns the parse error if the filter is invalid.
    StatusWith<bson::BsonObj> extractShardKeyFromQuery(bson::BsonView filter) const;

    // OK when `key` is a shard key or a chunk bound for this pattern: the pattern's fields in
    // order and nothing else, no arrays or missing values, a hashed field a NumberLong, MinKey
    // or MaxKey. BadValue otherwise.
    Status validateKey(bson::BsonView key) const;

    // A range bound given for a prefix of this pattern's fields ({a: 5} for {a: 1, b: 1}), as
    // MongoDB's extendRangeBound: the missing fields MinKey — MaxKey when every given field is
    // MaxKey (the global max) — so the bound keeps exactly the documents it held for the prefix
    // (refining a key, zones given on the old key). A full bound is returned as it is. BadValue
    // (as validateKey) when `bound` is not a non-empty prefix or the result is not a valid key.
    StatusWith<bson::BsonObj> extendRangeBound(bson::BsonView bound) const;

    // The order-preserving encoding of a valid key (see invariant 2). Precondition: validateKey.
    std::string encodeKey(bson::BsonView key) const;

    // MongoDB's isUniqueIndexCompatible: a unique index can be enforced by each shard alone
    // only when every document with one index key lives on one shard, i.e. when this pattern's
    // field names are a prefix of the index's ({a: "hashed"} is a prefix of {a: 1, b: 1}), or
    // when the index starts with `_id` (MongoDB's documented exception: `_id` uniqueness is
    // the application's promise across shards). Until global unique indexes exist, every other
    // unique index is refused on a sharded collection.
    bool isUniqueIndexCompatible(bson::BsonView indexKey) const;

    // "{ a: 1, b: \"hashed\" }".
    std::string toString() const;

  private:
    ShardKeyPattern() = default;

    bson::BsonObj _pattern;
    bson::BsonObj _rangedPattern;
    std::vector<std::string> _paths;
    std::optional<size_t> _hashedIndex;
};

// MongoDB's getFieldDottedOrArray: follows `path` through embedded documents and stops at the
// first array met (returned as is); a missing field or a scalar before the last part yields a
// missing (eoo) element.
bson::BsonElement extractPathOrArray(bson::BsonView doc, std::string_view path);

}  // namespace tessera::placement
