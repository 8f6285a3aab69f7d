#include "shard/direct_client.h"

#include "command/service_entry_point.h"
#include "net/remote_client.h"

namespace tessera::shard {
StatusWith<bson::BsonObj> runLocalCommand(command::ServiceContext& service, std::string_view db,
                                          bson::BsonView cmd) {
    command::ServiceEntryPoint sep(service);
    bson::BsonObj reply = sep.runCommand(db, cmd, nullptr);
    TRY_STATUS(net::replyStatus(reply));
    return reply;
}

}  // namespace tessera::shard
