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

// While alive, reads on this thread are not ownership-filtered: the shard's own maintenance
// (range deletion, a migration donor reading its range) must see orphans. Nests.
class UnfilteredReadsScope {
  public:
    UnfilteredReadsScope();
    ~UnfilteredReadsScope();
    UnfilteredReadsScope(const UnfilteredReadsScope&) = delete;
    UnfilteredReadsScope& operator=(const UnfilteredReadsScope&) = delete;

    static bool active();
};

}  // namespace tessera::shard
