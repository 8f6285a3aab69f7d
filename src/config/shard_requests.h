#pragma once

// Small builders and readers of the commands the config server's DDL sends to shards (and of
// their replies), shared by the ddl_*.cpp files. Pure: no network.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bson/bson_obj.h"

namespace tessera::config {

// "db.coll" → {"db", "coll"} (no dot: {ns, ""}).
std::pair<std::string, std::string> splitNs(const std::string& ns);
// {name: value}
bson::BsonObj oneField(std::string_view name, std::string_view value);
// The documents of a listIndexes / listCollections reply's first batch.
std::vector<bson::BsonObj> firstBatch(bson::BsonView reply);
// The index specs of a listIndexes reply, `v`/`ns` removed (createIndexes input).
std::vector<bson::BsonObj> indexSpecs(bson::BsonView reply);
// {_shardsvrClusterCollection: coll, key}: the shard stores the collection clustered by the
// shard key (src/cluster/README.md), so that a chunk is a contiguous range of its records.
bson::BsonObj clusterCollectionCmd(const std::string& coll, bson::BsonView key);
// Whether collection options (or an index spec) have no collation or the simple one.
bool isSimpleCollation(bson::BsonView options);
// Whether an index spec can serve as the index of shard key `key`: the key's fields are a prefix
// of the index's (isShardKeyIndexPrefix), and it is neither partial nor sparse, with the simple
// collation.
bool canServeShardKey(bson::BsonView key, bson::BsonView spec);

}  // namespace tessera::config
