#include "placement/chunk_version.h"

#include <algorithm>
#include <tuple>

namespace tessera::placement {
namespace {

using bson::BsonElement;
using bson::BsonType;
using bson::BsonView;

std::string timestampString(Timestamp t) {
    return "Timestamp(" + std::to_string(t.secs()) + ", " + std::to_string(t.inc()) + ")";
}

StatusWith<ChunkVersion> fromParts(const BsonElement& v, const BsonElement& e,
                                   const BsonElement& t) {
    if (v.type() != BsonType::Timestamp) {
        return Status(ErrorCodes::TypeMismatch, "shard version 'v' must be a Timestamp, found " +
                                                    std::string(bson::typeName(v.type())));
    }
    if (e.type() != BsonType::ObjectId) {
        return Status(ErrorCodes::TypeMismatch, "shard version 'e' must be an ObjectId, found " +
                                                    std::string(bson::typeName(e.type())));
    }
    if (t.type() != BsonType::Timestamp) {
        return Status(ErrorCodes::TypeMismatch, "shard version 't' must be a Timestamp, found " +
                                                    std::string(bson::typeName(t.type())));
    }
    Timestamp placement{v.timestampValue()};
    return ChunkVersion(CollectionGeneration{e.oidValue(), Timestamp{t.timestampValue()}},
                        placement.secs(), placement.inc());
}

}  // namespace

ChunkVersion ChunkVersion::ignored() {
    bson::ObjectId epoch;
    std::fill(std::begin(epoch.bytes) + 4, std::end(epoch.bytes), 0xff);  // zero time, max rest
    return ChunkVersion(CollectionGeneration{epoch, Timestamp::max()}, 0, 0);
}

bool ChunkVersion::isOlderThan(const ChunkVersion& other) const {
    if (!isSameGeneration(other)) return false;
    return std::tie(_major, _minor) < std::tie(other._major, other._minor);
}

bool ChunkVersion::isOlderRoutingInfoThan(const ChunkVersion& other) const {
    if (!isSameGeneration(other)) return _gen.timestamp < other._gen.timestamp;
    return isOlderThan(other);
}

std::string ChunkVersion::toString() const {
    return std::to_string(_major) + "|" + std::to_string(_minor) + "||" + _gen.epoch.toHex() +
           "||" + timestampString(_gen.timestamp);
}

void ChunkVersion::appendToBson(bson::BsonBuilder& b, std::string_view name) const {
    b.startObject(name)
        .appendOid("e", _gen.epoch)
        .appendTimestamp("t", _gen.timestamp.value)
        .appendTimestamp("v", placement().value)
        .end();
}

bson::BsonObj ChunkVersion::toBson() const {
    bson::BsonBuilder b;
    b.appendOid("e", _gen.epoch)
        .appendTimestamp("t", _gen.timestamp.value)
        .appendTimestamp("v", placement().value);
    return b.obj();
}

StatusWith<ChunkVersion> ChunkVersion::parse(BsonView obj) {
    BsonElement v = obj["v"];
    if (!v.eoo()) return fromParts(v, obj["e"], obj["t"]);
    BsonElement zero = obj["0"];
    if (!zero.eoo()) return fromParts(zero, obj["1"], obj["2"]);
    return Status(ErrorCodes::BadValue, "not a shard version: " + obj.toJson());
}

StatusWith<ChunkVersion> ChunkVersion::parse(const BsonElement& e) {
    if (e.type() != BsonType::Object && e.type() != BsonType::Array) {
        return Status(ErrorCodes::TypeMismatch, "shard version must be an object, found " +
                                                    std::string(bson::typeName(e.type())));
    }
    return parse(e.objValue());
}

}  // namespace tessera::placement
