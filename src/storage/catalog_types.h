#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bson/bson_obj.h"

namespace tessera::storage {

// One index of a collection, as listIndexes shows it. Immutable once published.
struct IndexSpec {
    std::string name;          // e.g. "_id_", "a_1_b_-1"
    bson::BsonObj keyPattern;  // e.g. {a: 1, b: -1}; values 1/-1 (or "hashed" later)
    bool unique = false;
    bool sparse = false;
    // The whole spec as listIndexes returns it: {v: 2, key, name, unique?, sparse?, ...}.
    bson::BsonObj spec;
    // True once any indexed document had an array on an indexed path (MongoDB's "multikey").
    // The planner must not intersect bounds on multikey fields.
    bool multikey = false;
    // Keyspace id of the index entries inside the collection (never reused within it). The
    // _id_ index of a collection clustered by _id has id 0: it is the records keyspace itself.
    // In a collection with a cluster key, _id_ is an ordinary unique index with its own id.
    uint32_t id = 0;

    bool isIdIndex() const { return name == "_id_"; }
};

// An immutable snapshot of a collection's metadata. Holders keep it alive; DDL publishes a new one.
struct CollectionInfo {
    std::string db;
    std::string name;
    std::string ns() const { return db + "." + name; }
    std::string uuid;  // 16 raw bytes (BinData subtype 4 in replies)
    uint64_t id = 0;   // keyspace prefix of this collection's records and indexes; never reused
    bson::BsonObj options;  // create options as given ({} when none), e.g. {capped, validator, ...}
    std::vector<IndexSpec> indexes;  // indexes[0] is always _id_
    uint32_t nextIndexId = 1;        // persisted; allocates IndexSpec::id
    // The key pattern the records are clustered by (cluster_key.h); empty = _id. Internal: not
    // part of listCollections. Changed only by Engine::clusterCollection.
    bson::BsonObj clusterKey;

    bool isClustered() const { return !clusterKey.isEmpty(); }
    // True when the _id_ index is the records keyspace (no entries of its own).
    bool idIndexIsRecords() const { return !isClustered(); }

    const IndexSpec* findIndex(std::string_view indexName) const;
    const IndexSpec* findIndexByKeyPattern(bson::BsonView keyPattern) const;
};

using CollectionPtr = std::shared_ptr<const CollectionInfo>;

// Exact counts maintained with every write (no scans).
struct CollectionStats {
    int64_t count = 0;        // documents
    int64_t dataSize = 0;     // sum of BSON sizes of the documents
    int64_t storageSize = 0;  // estimate of bytes on disk for the records
    std::vector<std::pair<std::string, int64_t>> indexSizes;  // estimate per index name
};

}  // namespace tessera::storage
