#include "storage/cluster_key.h"

#include <set>
#include <vector>

#include "bson/bson_builder.h"
#include "bson/element_hash.h"
#include "keystring/keystring.h"

namespace tessera::storage {
namespace {

bool isHashedValue(const bson::BsonElement& e) {
    return e.type() == bson::BsonType::String && e.stringValue() == "hashed";
}
bool isOne(const bson::BsonElement& e) { return e.isNumber() && e.numberDouble() == 1.0; }

// MongoDB's getFieldDottedOrArray (as placement::extractPathOrArray): stops at the first array;
// a missing field or a scalar before the last part yields eoo.
bson::BsonElement pathOrArray(bson::BsonView doc, std::string_view path) {
    bson::BsonView current = doc;
    while (true) {
        size_t dot = path.find('.');
        std::string_view part = path.substr(0, dot);
        bson::BsonElement e = current.getField(part);
        if (e.eoo()) return e;
        if (dot == std::string_view::npos || e.type() == bson::BsonType::Array) return e;
        if (e.type() != bson::BsonType::Object) return bson::BsonElement();
        current = e.objValue();
        path.remove_prefix(dot + 1);
    }
}

const bson::BsonObj& nullHolder() {
    static const bson::BsonObj kNull = [] {
        bson::BsonBuilder b;
        b.appendNull("");
        return b.obj();
    }();
    return kNull;
}

}  // namespace

StatusWith<bson::BsonObj> normalizeClusterKey(bson::BsonView pattern) {
    if (pattern.isEmpty()) return bson::BsonObj();
    std::set<std::string, std::less<>> seen;
    int hashed = 0;
    for (const bson::BsonElement& e : pattern) {
        std::string_view name = e.fieldName();
        bool badName = name.empty() || name.front() == '.' || name.back() == '.' ||
                       name.find("..") != std::string_view::npos || name.front() == '$';
        if (badName || !seen.insert(std::string(name)).second) {
            return Status(ErrorCodes::BadValue, "invalid cluster key " + pattern.toJson() +
                                                    ": bad field '" + std::string(name) + "'");
        }
        if (isHashedValue(e)) {
            ++hashed;
        } else if (!isOne(e)) {
            return Status(ErrorCodes::BadValue, "invalid cluster key " + pattern.toJson() +
                                                    ": values must be 1 or \"hashed\"");
        }
    }
    if (hashed > 1) {
        return Status(ErrorCodes::BadValue, "invalid cluster key " + pattern.toJson() +
                                                ": at most one field may be hashed");
    }
    if (pattern.nFields() == 1 && pattern.firstElement().fieldName() == "_id" &&
        isOne(pattern.firstElement())) {
        return bson::BsonObj();  // clustered by _id: the default layout
    }
    bson::BsonElement last;
    for (const bson::BsonElement& e : pattern) last = e;
    if (last.fieldName() == "_id" && isOne(last)) {
        // The record key ends with keystring(_id) anyway: {k: 1, _id: 1} is {k: 1}'s layout, and
        // then the whole record key is the shard key's encoding. This makes
        // refineCollectionShardKey {k: 1} → {k: 1, _id: 1} a metadata-only change.
        bson::BsonBuilder b;
        for (const bson::BsonElement& e : pattern) {
            if (e.fieldName() != "_id") b.appendElement(e);
        }
        return b.obj();
    }
    return pattern.copy();
}

StatusWith<std::string> makeRecordKey(bson::BsonView clusterKey, bson::BsonView doc) {
    bson::BsonElement id = doc.firstElement();
    if (id.eoo() || id.fieldName() != "_id") id = doc.getField("_id");
    if (id.eoo()) return Status(ErrorCodes::BadValue, "document has no _id");
    if (clusterKey.isEmpty()) return keystring::encodeValue(id);
    keystring::Builder b;
    for (const bson::BsonElement& field : clusterKey) {
        bson::BsonElement v = pathOrArray(doc, field.fieldName());
        if (v.type() == bson::BsonType::Array) {
            return Status(ErrorCodes::ShardKeyNotFound,
                          "Shard key cannot contain array values or array descendants.");
        }
        if (v.eoo()) v = nullHolder().firstElement();
        if (isHashedValue(field)) {
            bson::BsonBuilder hb;
            hb.appendInt64("", bson::hashElement(v));
            bson::BsonObj h = hb.obj();
            b.append(h.firstElement());
        } else {
            b.append(v);
        }
    }
    b.append(id);
    return b.release();
}

}  // namespace tessera::storage
