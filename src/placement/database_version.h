#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "base/hlc.h"
#include "base/status.h"
#include "bson/bson_builder.h"
#include "bson/bson_obj.h"

namespace tessera::placement {

// 16 raw UUID bytes (BSON BinData subtype 4).
using Uuid = std::array<uint8_t, 16>;

// MongoDB's DatabaseVersion DBV<uuid, timestamp, lastMod>: uuid and timestamp identify one
// incarnation of the database (drop + recreate changes both); lastMod is incremented when the
// primary shard changes (movePrimary). Sent as `databaseVersion` with every request routed to a
// database primary (unsharded collections). `config` and `admin` have no version.
class DatabaseVersion {
  public:
    DatabaseVersion() = default;
    DatabaseVersion(Uuid uuid, Timestamp timestamp, int32_t lastMod)
        : _uuid(uuid), _timestamp(timestamp), _lastMod(lastMod) {}

    const Uuid& uuid() const { return _uuid; }
    Timestamp timestamp() const { return _timestamp; }
    int32_t lastMod() const { return _lastMod; }

    bool isSameDatabase(const DatabaseVersion& other) const {
        return _uuid == other._uuid && _timestamp == other._timestamp;
    }
    // Same incarnation and a lower lastMod; across incarnations, ordered by timestamp (the newer
    // incarnation wins), as a router compares cache entries.
    bool isOlderThan(const DatabaseVersion& other) const;
    // movePrimary commit: lastMod + 1.
    DatabaseVersion makeUpdated() const { return DatabaseVersion(_uuid, _timestamp, _lastMod + 1); }

    bool operator==(const DatabaseVersion&) const = default;
    std::string toString() const;

    // {uuid: UUID, timestamp: Timestamp, lastMod: int}
    void appendToBson(bson::BsonBuilder& b, std::string_view name) const;
    bson::BsonObj toBson() const;
    // `uuid` is optional on the wire since 5.2 (left zero when absent).
    static StatusWith<DatabaseVersion> parse(bson::BsonView obj);

  private:
    Uuid _uuid{};
    Timestamp _timestamp;
    int32_t _lastMod = 0;
};

}  // namespace tessera::placement
