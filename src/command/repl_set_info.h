#pragma once

#include <cstdint>
#include <string_view>

#include "base/hlc.h"
#include "bson/bson_builder.h"
#include "bson/bson_types.h"

// What replies of a replica set member (hello, replSetGetStatus) share (cmd_repl_set.cpp).
namespace tessera::command {

// MongoDB's electionId: 0x7fffffff then the term (8 bytes, big-endian), so that a later
// election's id compares greater — what drivers use to ignore a deposed primary.
bson::ObjectId electionIdOf(uint64_t term);

// MongoDB's optime, `name: {ts, t}`.
void appendOpTime(bson::BsonBuilder& b, std::string_view name, Timestamp ts, uint64_t term);

}  // namespace tessera::command
