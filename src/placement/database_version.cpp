#include "placement/database_version.h"

#include <cstring>

namespace tessera::placement {

using bson::BsonElement;
using bson::BsonType;

bool DatabaseVersion::isOlderThan(const DatabaseVersion& other) const {
    if (!isSameDatabase(other)) return _timestamp < other._timestamp;
    return _lastMod < other._lastMod;
}

std::string DatabaseVersion::toString() const {
    static const char* kHex = "0123456789abcdef";
    std::string uuid;
    for (uint8_t byte : _uuid) {
        uuid += kHex[byte >> 4];
        uuid += kHex[byte & 0xf];
    }
    return "{uuid: " + uuid + ", timestamp: Timestamp(" + std::to_string(_timestamp.secs()) + ", " +
           std::to_string(_timestamp.inc()) + "), lastMod: " + std::to_string(_lastMod) + "}";
}

void DatabaseVersion::appendToBson(bson::BsonBuilder& b, std::string_view name) const {
    b.startObject(name)
        .appendBinary("uuid", 4,
                      std::string_view(reinterpret_cast<const char*>(_uuid.data()), _uuid.size()))
        .appendTimestamp("timestamp", _timestamp.value)
        .appendInt32("lastMod", _lastMod)
        .end();
}

bson::BsonObj DatabaseVersion::toBson() const {
    bson::BsonBuilder b;
    b.appendBinary("uuid", 4,
                   std::string_view(reinterpret_cast<const char*>(_uuid.data()), _uuid.size()))
        .appendTimestamp("timestamp", _timestamp.value)
        .appendInt32("lastMod", _lastMod);
    return b.obj();
}

StatusWith<DatabaseVersion> DatabaseVersion::parse(bson::BsonView obj) {
    DatabaseVersion v;
    BsonElement uuid = obj["uuid"];
    if (!uuid.eoo()) {
        if (uuid.type() != BsonType::BinData || uuid.binaryValue().subtype != 4 ||
            uuid.binaryValue().data.size() != 16) {
            return Status(ErrorCodes::TypeMismatch, "databaseVersion.uuid must be a UUID");
        }
        std::memcpy(v._uuid.data(), uuid.binaryValue().data.data(), 16);
    }
    BsonElement ts = obj["timestamp"];
    if (ts.type() != BsonType::Timestamp) {
        return Status(ErrorCodes::TypeMismatch, "databaseVersion.timestamp must be a Timestamp");
    }
    v._timestamp = Timestamp{ts.timestampValue()};
    BsonElement lastMod = obj["lastMod"];
    if (!lastMod.isNumber()) {
        return Status(ErrorCodes::TypeMismatch, "databaseVersion.lastMod must be a number");
    }
    v._lastMod = lastMod.numberInt();
    return v;
}

}  // namespace tessera::placement
