#include "command/generic_args.h"

#include <array>

namespace tessera::command {

bool isGenericArgument(std::string_view field) {
    static constexpr std::array<std::string_view, 22> kGeneric = {"$db",
                                                                  "lsid",
                                                                  "$clusterTime",
                                                                  "$readPreference",
                                                                  "readConcern",
                                                                  "writeConcern",
                                                                  "maxTimeMS",
                                                                  "comment",
                                                                  "apiVersion",
                                                                  "apiStrict",
                                                                  "apiDeprecationErrors",
                                                                  "txnNumber",
                                                                  "autocommit",
                                                                  "startTransaction",
                                                                  "$audit",
                                                                  "$client",
                                                                  "mayBypassWriteBlocking",
                                                                  "$configServerState",
                                                                  "$gleStats",
                                                                  "databaseVersion",
                                                                  "shardVersion",
                                                                  "$queryOptions"};
    for (std::string_view g : kGeneric) {
        if (g == field) return true;
    }
    return false;
}

}  // namespace tessera::command
