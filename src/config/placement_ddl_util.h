#pragma once

// Commands the placement DDL coordinators send to shards (placement_ddl_coordinator.h).

#include <string>
#include <string_view>
#include <vector>

#include "base/log.h"
#include "bson/bson_builder.h"
#include "config/coordinator_state.h"

namespace tessera::config {

inline bson::BsonObj createIndexesCmd(const std::string& coll,
                                      const std::vector<bson::BsonObj>& specs) {
    bson::BsonBuilder b;
    b.appendString("createIndexes", coll);
    b.startArray("indexes");
    for (size_t i = 0; i < specs.size(); ++i) b.appendObject(std::to_string(i), specs[i]);
    b.end();
    return b.obj();
}

// {create: coll, <options of the primary's collection>}: every shard that holds the collection
// has the same options (validator, validationLevel/Action, collation, ...).
inline bson::BsonObj createLikeCmd(const std::string& coll, bson::BsonView options) {
    bson::BsonBuilder b;
    b.appendString("create", coll);
    for (const bson::BsonElement& e : options) {
        if (e.fieldName() != "uuid") b.appendElement(e);
    }
    return b.obj();
}

// The critical section command of a placement DDL: collection key (`coll:<ns>`) or database key.
inline bson::BsonObj criticalSectionCmd(const PlacementDdlState& s, bool database, bool enter) {
    bson::BsonBuilder b;
    b.appendString(
         database ? "_shardsvrDatabaseCriticalSection" : "_shardsvrMigrationCriticalSection",
         s.target)
        .appendBool("enter", enter);
    b.startObject("reason").appendString("command", s.type).appendString("ns", s.target).end();
    return b.obj();
}

inline void logFailure(int id, std::string_view msg, const Status& s) {
    log::warning("SHARDING", id, msg, "{\"error\":\"" + log::jsonEscape(s.toString()) + "\"}");
}

}  // namespace tessera::config
