#include "config/catalog_docs.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "bson/compare.h"

namespace tessera::config {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonType;

placement::Uuid generateUuid() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    placement::Uuid uuid;
    uint64_t a = rng(), b = rng();
    std::memcpy(uuid.data(), &a, 8);
    std::memcpy(uuid.data() + 8, &b, 8);
    uuid[6] = static_cast<uint8_t>((uuid[6] & 0x0f) | 0x40);  // version 4
    uuid[8] = static_cast<uint8_t>((uuid[8] & 0x3f) | 0x80);  // variant 1
    return uuid;
}

void appendUuid(BsonBuilder& b, std::string_view name, const placement::Uuid& uuid) {
    b.appendBinary(name, 4, std::string_view(reinterpret_cast<const char*>(uuid.data()), 16));
}

StatusWith<placement::Uuid> uuidFromElement(const BsonElement& e) {
    if (e.type() != BsonType::BinData || e.binaryValue().subtype != 4 ||
        e.binaryValue().data.size() != 16) {
        return Status(ErrorCodes::TypeMismatch, "expected a UUID");
    }
    placement::Uuid uuid;
    std::memcpy(uuid.data(), e.binaryValue().data.data(), 16);
    return uuid;
}

bson::BsonObj makeChunkDoc(const ChunkRecord& chunk, const placement::Uuid& uuid) {
    BsonBuilder b;
    b.appendOid("_id", chunk.id);
    appendUuid(b, "uuid", uuid);
    b.appendObject("min", chunk.min)
        .appendObject("max", chunk.max)
        .appendString("shard", chunk.shard);
    b.appendTimestamp("lastmod", chunk.lastmod().value);
    b.appendTimestamp("onCurrentShardSince", chunk.onCurrentShardSince.value);
    b.startArray("history");
    for (size_t i = 0; i < chunk.history.size(); ++i) {
        b.startObject(std::to_string(i))
            .appendTimestamp("validAfter", chunk.history[i].first.value)
            .appendString("shard", chunk.history[i].second)
            .end();
    }
    b.end();
    if (chunk.jumbo) b.appendBool("jumbo", true);
    return b.obj();
}

StatusWith<ChunkRecord> parseChunkRecord(bson::BsonView doc) {
    ChunkRecord c;
    auto bad = [&](std::string_view what) {
        return Status(ErrorCodes::FailedToParse, "malformed config.chunks document (" +
                                                     std::string(what) + "): " + doc.toJson());
    };
    if (doc["_id"].type() != BsonType::ObjectId) return bad("_id");
    c.id = doc["_id"].oidValue();
    if (!doc["min"].isObject() || !doc["max"].isObject()) return bad("min/max");
    c.min = doc["min"].objValue().copy();
    c.max = doc["max"].objValue().copy();
    if (doc["shard"].type() != BsonType::String) return bad("shard");
    c.shard = std::string(doc["shard"].stringValue());
    if (doc["lastmod"].type() != BsonType::Timestamp) return bad("lastmod");
    Timestamp lastmod{doc["lastmod"].timestampValue()};
    c.major = lastmod.secs();
    c.minor = lastmod.inc();
    if (doc["onCurrentShardSince"].type() == BsonType::Timestamp) {
        c.onCurrentShardSince = Timestamp{doc["onCurrentShardSince"].timestampValue()};
    }
    if (doc["history"].isArray()) {
        for (const BsonElement& h : doc["history"].objValue()) {
            if (!h.isObject()) return bad("history");
            bson::BsonView hv = h.objValue();
            if (hv["validAfter"].type() != BsonType::Timestamp ||
                hv["shard"].type() != BsonType::String) {
                return bad("history");
            }
            c.history.emplace_back(Timestamp{hv["validAfter"].timestampValue()},
                                   std::string(hv["shard"].stringValue()));
        }
    }
    c.jumbo = doc["jumbo"].trueValue();
    return c;
}

bson::BsonObj makeCollectionDoc(const CollectionRecord& coll) {
    BsonBuilder b;
    b.appendString("_id", coll.ns)
        .appendOid("lastmodEpoch", coll.gen.epoch)
        .appendDate("lastmod", coll.lastmodMillis)
        .appendTimestamp("timestamp", coll.gen.timestamp.value);
    appendUuid(b, "uuid", coll.uuid);
    b.appendObject("key", coll.key)
        .appendBool("unique", coll.unique)
        .appendBool("noBalance", false);
    return b.obj();
}

StatusWith<CollectionRecord> parseCollectionRecord(bson::BsonView doc) {
    CollectionRecord c;
    auto bad = [&](std::string_view what) {
        return Status(ErrorCodes::FailedToParse, "malformed config.collections document (" +
                                                     std::string(what) + "): " + doc.toJson());
    };
    if (doc["_id"].type() != BsonType::String) return bad("_id");
    c.ns = std::string(doc["_id"].stringValue());
    if (doc["lastmodEpoch"].type() != BsonType::ObjectId) return bad("lastmodEpoch");
    c.gen.epoch = doc["lastmodEpoch"].oidValue();
    if (doc["timestamp"].type() != BsonType::Timestamp) return bad("timestamp");
    c.gen.timestamp = Timestamp{doc["timestamp"].timestampValue()};
    auto uuid = uuidFromElement(doc["uuid"]);
    if (!uuid.isOK()) return bad("uuid");
    c.uuid = uuid.getValue();
    if (!doc["key"].isObject()) return bad("key");
    c.key = doc["key"].objValue().copy();
    c.unique = doc["unique"].trueValue();
    if (doc["lastmod"].type() == BsonType::Date) c.lastmodMillis = doc["lastmod"].dateValue();
    return c;
}

bson::BsonObj makeShardDoc(std::string_view name, std::string_view host, Timestamp topologyTime) {
    BsonBuilder b;
    b.appendString("_id", name)
        .appendString("host", host)
        .appendInt32("state", 1)
        .appendTimestamp("topologyTime", topologyTime.value);
    return b.obj();
}

bson::BsonObj makeDatabaseDoc(std::string_view db, std::string_view primary,
                              const placement::DatabaseVersion& version) {
    BsonBuilder b;
    b.appendString("_id", db).appendString("primary", primary);
    version.appendToBson(b, "version");
    return b.obj();
}

bson::BsonObj makeChangelogDoc(std::string_view server, std::string_view what, std::string_view ns,
                               bson::BsonView details, int64_t timeMillis) {
    BsonBuilder b;
    b.appendString("_id", std::string(server) + "-" + std::to_string(timeMillis) + "-" +
                              bson::ObjectId::generate().toHex())
        .appendString("server", server)
        .appendString("shard", "config")
        .appendString("clientAddr", "")
        .appendDate("time", timeMillis)
        .appendString("what", what)
        .appendString("ns", ns)
        .appendObject("details", details);
    return b.obj();
}

std::string defaultShardName(const std::vector<std::string>& taken) {
    for (size_t i = 0;; ++i) {
        std::string name = "shard" + std::to_string(i);
        if (std::find(taken.begin(), taken.end(), name) == taken.end()) return name;
    }
}

std::string defaultIndexName(bson::BsonView keyPattern) {
    std::string name;
    for (const BsonElement& e : keyPattern) {
        if (!name.empty()) name += '_';
        name += e.fieldName();
        name += '_';
        if (e.type() == BsonType::String) {
            name += e.stringValue();
        } else {
            name += std::to_string(e.numberLong());
        }
    }
    return name;
}

bool isShardKeyIndexPrefix(bson::BsonView shardKey, bson::BsonView indexKey) {
    auto it = indexKey.begin();
    for (const BsonElement& k : shardKey) {
        if (it == indexKey.end()) return false;
        const BsonElement& ie = *it;
        if (ie.fieldName() != k.fieldName()) return false;
        if (k.type() == BsonType::String) {
            if (ie.type() != BsonType::String || ie.stringValue() != k.stringValue()) return false;
        } else {
            // Ranged shard key fields need an ascending index field (MongoDB accepts 1 only).
            if (!ie.isNumber() || ie.numberDouble() != 1.0) return false;
        }
        ++it;
    }
    return true;
}

}  // namespace tessera::config
