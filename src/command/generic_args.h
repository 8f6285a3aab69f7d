#pragma once

#include <string_view>

namespace tessera::command {

// Fields any command may carry that are not the command's own arguments (drivers add them to
// every command): $db, lsid, $clusterTime, $readPreference, readConcern, writeConcern,
// maxTimeMS, comment, apiVersion, apiStrict, apiDeprecationErrors, txnNumber, autocommit,
// startTransaction, ... Strict commands reject other unknown fields (IDL error 40415).
bool isGenericArgument(std::string_view field);

}  // namespace tessera::command
