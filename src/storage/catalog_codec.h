#pragma once

#include <string_view>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "storage/catalog_types.h"

namespace tessera::storage {

// The persisted form of a collection's catalog entry (catalog CF, key "c" + collId):
//   {db, name, uuid: BinData(4), id: Long, options, nextIndexId, clusterKey?,
//    indexes: [{id, spec, name, key, unique, sparse, multikey}]}
// clusterKey is absent for collections clustered by _id (their _id_ index has id 0).
bson::BsonObj encodeCollectionInfo(const CollectionInfo& info);
StatusWith<CollectionInfo> decodeCollectionInfo(bson::BsonView entry);

// The listIndexes form of an index: {v: 2, key, name, unique?, sparse?}.
bson::BsonObj makeIndexSpecDoc(const IndexSpec& spec);

// InvalidNamespace (73) unless `db` is a valid database name: not empty, shorter than 64
// bytes, none of  / \ . " $ space or NUL.
Status validateDbName(std::string_view db);
// InvalidNamespace unless `ns` = "db.coll" with a valid db and a collection name that is not
// empty, has no NUL and no '$' (except system collections), and ns is shorter than 255 bytes.
Status validateNamespace(std::string_view ns);
// Splits "db.coll" at the first dot (no validation).
std::pair<std::string_view, std::string_view> splitNamespace(std::string_view ns);

}  // namespace tessera::storage
