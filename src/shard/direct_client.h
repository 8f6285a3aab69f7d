#pragma once

#include <string_view>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "command/command.h"

namespace tessera::shard {

// Runs a command through this process's own command layer (MongoDB's DBDirectClient): the
// registry, the hooks (internal callers send no versions, so no check applies) and the executor.
// Returns the reply, or the reply's error as a Status (writeErrors are left in the reply).
StatusWith<bson::BsonObj> runLocalCommand(command::ServiceContext& service, std::string_view db,
                                          bson::BsonView cmd);

}  // namespace tessera::shard
