#include "shard/direct_client.h"

#include "command/service_entry_point.h"
#include "net/remote_client.h"

namespace tessera::shard {
namespace {
thread_local int tUnfilteredDepth = 0;
}

StatusWith<bson::BsonObj> runLocalCommand(command::ServiceContext& service, std::string_view db,
                                          bson::BsonView cmd) {
    command::ServiceEntryPoint sep(service);
    bson::BsonObj reply = sep.runCommand(db, cmd, nullptr);
    TRY_STATUS(net::replyStatus(reply));
    return reply;
}

UnfilteredReadsScope::UnfilteredReadsScope() { ++tUnfilteredDepth; }
UnfilteredReadsScope::~UnfilteredReadsScope() { --tUnfilteredDepth; }
bool UnfilteredReadsScope::active() { return tUnfilteredDepth > 0; }

}  // namespace tessera::shard
