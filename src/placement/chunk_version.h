#pragma once

#include <cstdint>
#include <string>

#include "base/hlc.h"
#include "base/status.h"
#include "bson/bson_builder.h"
#include "bson/bson_obj.h"

namespace tessera::placement {

// A collection's "generation" (MongoDB's CollectionGeneration): the epoch and the timestamp that
// shardCollection gives it. Drop/recreate, refineCollectionShardKey, reshard and rename make a
// new generation; versions of different generations are not comparable.
struct CollectionGeneration {
    bson::ObjectId epoch;
    Timestamp timestamp;
    bool operator==(const CollectionGeneration&) const = default;
};

// MongoDB's ChunkVersion / ShardVersion placement part: {epoch, timestamp, major, minor}.
//
// Rules (MongoDB's, see README.md):
//  - the first chunks of a collection get 1|0, 1|1, ...; a migration gives the moved chunk
//    (collection major + 1)|0; a split or merge bumps the minor (merge: major = collection
//    major + 1, minor 0);
//  - a chunk version names the last change to that chunk; a shard's version is the max of its
//    chunks' versions; the collection version is the max over all chunks;
//  - versions compare (isOlderThan) only within one generation; across generations a version is
//    neither older nor newer: the holder is simply stale and must refresh in full.
class ChunkVersion {
  public:
    // UNSHARDED: zero epoch, Timestamp(0, 0), 0|0 (the version sent for an unsharded collection).
    ChunkVersion() = default;
    ChunkVersion(CollectionGeneration gen, uint32_t major, uint32_t minor)
        : _gen(gen), _major(major), _minor(minor) {}

    static ChunkVersion unsharded() { return ChunkVersion(); }
    // IGNORED: epoch with zero time and max machine/inc bytes, Timestamp::max, 0|0. Sent by
    // broadcast operations that skip the version check.
    static ChunkVersion ignored();

    const CollectionGeneration& generation() const { return _gen; }
    const bson::ObjectId& epoch() const { return _gen.epoch; }
    Timestamp timestamp() const { return _gen.timestamp; }
    uint32_t majorVersion() const { return _major; }
    uint32_t minorVersion() const { return _minor; }
    // Timestamp(major, minor): the packed `v` / `lastmod` form.
    Timestamp placement() const { return Timestamp::fromParts(_major, _minor); }

    bool isUnsharded() const { return *this == unsharded(); }
    bool isIgnored() const { return *this == ignored(); }
    // major|minor is not 0|0 (a shard that owns no chunk has version 0|0 of the generation).
    bool isSet() const { return _major != 0 || _minor != 0; }

    bool isSameGeneration(const ChunkVersion& other) const { return _gen == other._gen; }
    // Same generation and a lower major|minor. False across generations.
    bool isOlderThan(const ChunkVersion& other) const;
    bool isOlderOrEqualThan(const ChunkVersion& other) const {
        return isOlderThan(other) || *this == other;
    }
    // Same generation and same major: what a shard requires of a routed request's version (a
    // split only bumps the minor and changes no ownership, so it does not invalidate routing).
    bool isWriteCompatibleWith(const ChunkVersion& other) const {
        return isSameGeneration(other) && _major == other._major;
    }
    // Whether routing information at this version is older than at `other`, comparing across
    // generations by the generation timestamp (MongoDB's ComparableChunkVersion): how a router
    // decides whether a refresh result is newer than its cache.
    bool isOlderRoutingInfoThan(const ChunkVersion& other) const;

    // The version after a migration commit (major + 1, minor 0) or a split (minor + 1).
    ChunkVersion incMajor() const { return ChunkVersion(_gen, _major + 1, 0); }
    ChunkVersion incMinor() const { return ChunkVersion(_gen, _major, _minor + 1); }

    bool operator==(const ChunkVersion& other) const = default;

    // "2|3||<epoch hex>||Timestamp(secs, inc)", as MongoDB logs versions.
    std::string toString() const;

    // Wire form: {e: ObjectId(epoch), t: Timestamp(collection timestamp), v: Timestamp(major,
    // minor)}, appended as a sub-document named `name` (e.g. "shardVersion", "vReceived").
    void appendToBson(bson::BsonBuilder& b, std::string_view name) const;
    bson::BsonObj toBson() const;
    // Parses the wire form, or the legacy positional form [Timestamp(major,minor), epoch,
    // timestamp] (an array, or an object with keys "0", "1", "2"). BadValue / TypeMismatch
    // otherwise.
    static StatusWith<ChunkVersion> parse(const bson::BsonElement& e);
    static StatusWith<ChunkVersion> parse(bson::BsonView obj);

  private:
    CollectionGeneration _gen;
    uint32_t _major = 0;
    uint32_t _minor = 0;
};

}  // namespace tessera::placement
