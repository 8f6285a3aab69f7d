#include "net/remote_message.h"

#include <atomic>
#include <optional>
#include <string>

#include "bson/bson_builder.h"
#include "wire/op_msg.h"

namespace tessera::net {
namespace {

std::atomic<int32_t> gNextRequestId{1};

}  // namespace

int32_t nextRemoteRequestId() { return gNextRequestId.fetch_add(1, std::memory_order_relaxed); }

wire::Message buildRemoteRequest(std::string_view db, bson::BsonView cmd, int32_t requestId) {
    std::optional<bson::BsonElement> last;
    int dbFields = 0;
    for (const auto& e : cmd) {
        last = e;
        if (e.fieldName() == "$db") ++dbFields;
    }
    if (dbFields == 1 && last && last->fieldName() == "$db" &&
        last->type() == bson::BsonType::String && last->stringValue() == db) {
        return wire::buildOpMsg(requestId, 0, 0, cmd);
    }
    bson::BsonBuilder b;
    for (const auto& e : cmd) {
        if (e.fieldName() != "$db") b.appendElement(e);
    }
    b.append("$db", db);
    bson::BsonObj body = b.obj();
    return wire::buildOpMsg(requestId, 0, 0, body);
}

Status checkReplyHeader(std::string_view host, const wire::MsgHeader& h, int32_t requestId) {
    if (h.opCode != static_cast<int32_t>(wire::OpCode::kMsg) || h.responseTo != requestId) {
        return Status(ErrorCodes::ProtocolError, "unexpected reply from " + std::string(host) +
                                                     " (opCode " + std::to_string(h.opCode) + ")");
    }
    return Status::OK();
}

StatusWith<bson::BsonObj> replyBody(std::string_view host, wire::Message message) {
    // A peer's reply: structurally checked (safe to read), its strings were checked where they
    // entered the cluster.
    ASSIGN_OR_RETURN(wire::OpMsgRequest reply,
                     wire::parseOpMsg(std::move(message), wire::BsonCheck::kStructure));
    if (reply.bodySections != 1) {
        return Status(ErrorCodes::ProtocolError,
                      "reply from " + std::string(host) + " has no body");
    }
    // The body shares the message's buffer: no copy of what may be a large reply.
    return bson::BsonObj::fromBuffer(
        std::shared_ptr<const uint8_t[]>(reply.message.sharedBuffer(), reply.body.data()));
}

}  // namespace tessera::net
