#include "config/shard_requests.h"

#include "bson/bson_builder.h"
#include "config/catalog_docs.h"

namespace tessera::config {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

std::pair<std::string, std::string> splitNs(const std::string& ns) {
    size_t dot = ns.find('.');
    if (dot == std::string::npos) return {ns, ""};
    return {ns.substr(0, dot), ns.substr(dot + 1)};
}

BsonObj oneField(std::string_view name, std::string_view value) {
    BsonBuilder b;
    b.appendString(name, value);
    return b.obj();
}

std::vector<BsonObj> firstBatch(BsonView reply) {
    std::vector<BsonObj> out;
    if (!reply["cursor"].isObject()) return out;
    BsonView cursor = reply["cursor"].objValue();
    if (!cursor["firstBatch"].isArray()) return out;
    for (const bson::BsonElement& e : cursor["firstBatch"].objValue()) {
        if (e.isObject()) out.push_back(e.objValue().copy());
    }
    return out;
}

std::vector<BsonObj> indexSpecs(BsonView reply) {
    std::vector<BsonObj> specs;
    for (const BsonObj& index : firstBatch(reply)) {
        BsonBuilder b;
        for (const bson::BsonElement& f : index) {
            if (f.fieldName() == "v" || f.fieldName() == "ns") continue;
            b.appendElement(f);
        }
        specs.push_back(b.obj());
    }
    return specs;
}

BsonObj clusterCollectionCmd(const std::string& coll, BsonView key) {
    BsonBuilder b;
    b.appendString("_shardsvrClusterCollection", coll);
    b.appendObject("key", key);
    return b.obj();
}

bool isSimpleCollation(BsonView options) {
    if (!options["collation"].isObject()) return true;
    bson::BsonElement locale = options["collation"].objValue()["locale"];
    return locale.type() == bson::BsonType::String && locale.stringValue() == "simple";
}

bool canServeShardKey(BsonView key, BsonView spec) {
    if (!spec["key"].isObject() || !isShardKeyIndexPrefix(key, spec["key"].objValue())) {
        return false;
    }
    if (spec.hasField("partialFilterExpression") || spec["sparse"].trueValue()) return false;
    return isSimpleCollation(spec);
}

}  // namespace tessera::config
