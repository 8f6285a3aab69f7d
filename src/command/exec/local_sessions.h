#pragma once

#include <string>
#include <vector>

#include "bson/bson_obj.h"

namespace tessera::command::exec {

// The sessions this process has seen (a minimal logical session cache for $listLocalSessions):
// lsid (16 raw bytes) -> last use. Thread-safe. Today only aggregate records the sessions it
// runs under; the service entry point should record every command's lsid (and endSessions
// forget them) for the list to be complete.
void recordLocalSession(const std::string& lsid);
void forgetLocalSession(const std::string& lsid);

// {_id: {id: UUID, uid: BinData(0, SHA-256 of the user name, "" without auth)}, lastUse: Date}
// per known session.
std::vector<bson::BsonObj> listLocalSessions();

}  // namespace tessera::command::exec
