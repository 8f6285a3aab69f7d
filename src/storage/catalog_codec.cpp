#include "storage/catalog_codec.h"

#include "bson/bson_builder.h"

namespace tessera::storage {

bson::BsonObj makeIndexSpecDoc(const IndexSpec& spec) {
    bson::BsonBuilder b;
    b.appendInt32("v", 2).appendObject("key", spec.keyPattern).appendString("name", spec.name);
    if (spec.unique && !spec.isIdIndex()) b.appendBool("unique", true);
    if (spec.sparse) b.appendBool("sparse", true);
    return b.obj();
}

bson::BsonObj encodeCollectionInfo(const CollectionInfo& info) {
    bson::BsonBuilder b;
    b.appendString("db", info.db)
        .appendString("name", info.name)
        .appendBinary("uuid", 4, info.uuid)
        .appendInt64("id", static_cast<int64_t>(info.id))
        .appendObject("options", info.options)
        .appendInt64("nextIndexId", info.nextIndexId);
    // Absent for collections clustered by _id, so their entries are unchanged.
    if (info.isClustered()) b.appendObject("clusterKey", info.clusterKey);
    b.startArray("indexes");
    int i = 0;
    for (const auto& index : info.indexes) {
        b.startObject(std::to_string(i++))
            .appendInt64("id", index.id)
            .appendString("name", index.name)
            .appendObject("key", index.keyPattern)
            .appendBool("unique", index.unique)
            .appendBool("sparse", index.sparse)
            .appendBool("multikey", index.multikey)
            .appendObject("spec", index.spec)
            .end();
    }
    b.end();
    return b.obj();
}

StatusWith<CollectionInfo> decodeCollectionInfo(bson::BsonView entry) {
    auto corrupt = [&](const char* what) {
        return Status(ErrorCodes::InternalError,
                      std::string("corrupt catalog entry (") + what + "): " + entry.toJson());
    };
    CollectionInfo info;
    if (entry["db"].type() != bson::BsonType::String ||
        entry["name"].type() != bson::BsonType::String ||
        entry["uuid"].type() != bson::BsonType::BinData ||
        entry["id"].type() != bson::BsonType::Int64 || !entry["options"].isObject() ||
        !entry["indexes"].isArray())
        return corrupt("fields");
    info.db = std::string(entry["db"].stringValue());
    info.name = std::string(entry["name"].stringValue());
    info.uuid = std::string(entry["uuid"].binaryValue().data);
    info.id = static_cast<uint64_t>(entry["id"].int64Value());
    info.options = entry["options"].objValue().copy();
    info.nextIndexId = static_cast<uint32_t>(entry["nextIndexId"].numberLong());
    if (bson::BsonElement ck = entry["clusterKey"]; !ck.eoo()) {
        if (!ck.isObject()) return corrupt("clusterKey");
        info.clusterKey = ck.objValue().copy();
    }
    for (bson::BsonElement e : entry["indexes"].objValue()) {
        if (!e.isObject()) return corrupt("index");
        bson::BsonView ix = e.objValue();
        IndexSpec spec;
        spec.id = static_cast<uint32_t>(ix["id"].numberLong());
        spec.name = std::string(ix["name"].stringValue());
        spec.keyPattern = ix["key"].objValue().copy();
        spec.unique = ix["unique"].trueValue();
        spec.sparse = ix["sparse"].trueValue();
        spec.multikey = ix["multikey"].trueValue();
        spec.spec = ix["spec"].objValue().copy();
        info.indexes.push_back(std::move(spec));
    }
    if (info.indexes.empty() || !info.indexes[0].isIdIndex()) return corrupt("_id_ index");
    if (info.isClustered() == (info.indexes[0].id == 0)) return corrupt("_id_ index id");
    return info;
}

std::pair<std::string_view, std::string_view> splitNamespace(std::string_view ns) {
    size_t dot = ns.find('.');
    if (dot == std::string_view::npos) return {ns, {}};
    return {ns.substr(0, dot), ns.substr(dot + 1)};
}

Status validateDbName(std::string_view db) {
    if (db.empty()) return Status(ErrorCodes::InvalidNamespace, "Invalid database name: ''");
    if (db.size() >= 64) {
        return Status(ErrorCodes::InvalidNamespace,
                      "db name is too long: '" + std::string(db) + "', max is 63 bytes");
    }
    for (char c : db) {
        if (c == '/' || c == '\\' || c == '.' || c == '"' || c == '$' || c == ' ' || c == '\0') {
            return Status(ErrorCodes::InvalidNamespace,
                          "Invalid database name: '" + std::string(db) + "'");
        }
    }
    return Status::OK();
}

Status validateNamespace(std::string_view ns) {
    auto [db, coll] = splitNamespace(ns);
    TRY_STATUS(validateDbName(db));
    if (ns.size() >= 255) {
        return Status(
            ErrorCodes::InvalidNamespace,
            "Fully qualified namespace is too long. Namespace: " + std::string(ns) + " Max: 255");
    }
    bool bad = coll.empty() || coll.front() == '.' || coll.find('\0') != std::string_view::npos;
    if (!bad && coll.find('$') != std::string_view::npos && !coll.starts_with("system.")) {
        bad = true;
    }
    if (bad) {
        return Status(ErrorCodes::InvalidNamespace,
                      "Invalid collection name: " + std::string(coll.empty() ? ns : coll));
    }
    return Status::OK();
}

}  // namespace tessera::storage
