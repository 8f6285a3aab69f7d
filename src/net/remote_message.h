#pragma once

// Internal to src/net: the request/reply framing RemoteClient and AsyncRemoteClient share.

#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "wire/message.h"

namespace tessera::net {

// Process-wide request ids of outgoing commands.
int32_t nextRemoteRequestId();

// OP_MSG of `cmd` (any `$db` in it replaced by `db`; used as it is when its last field is
// already `$db: db`).
wire::Message buildRemoteRequest(std::string_view db, bson::BsonView cmd, int32_t requestId);

// The reply header must be an OP_MSG answering `requestId` (ProtocolError 17 otherwise).
Status checkReplyHeader(std::string_view host, const wire::MsgHeader& header, int32_t requestId);

// The body of a complete reply message (ProtocolError when it has none or does not parse).
StatusWith<bson::BsonObj> replyBody(std::string_view host, wire::Message message);

}  // namespace tessera::net
