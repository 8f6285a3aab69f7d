#include "wire/op_query.h"

#include <array>
#include <cstring>
#include <string_view>

#include "bson/bson_builder.h"

namespace tessera::wire {
namespace {

constexpr std::array<std::string_view, 5> kOpQueryCommands = {"hello", "isMaster", "ismaster",
                                                              "authenticate", "getnonce"};

Status protocolError(std::string why) {
    return Status(ErrorCodes::ProtocolError, "Invalid OP_QUERY: " + std::move(why));
}

}  // namespace

StatusWith<OpQueryRequest> parseOpQuery(Message message) {
    const uint8_t* data = message.data();
    const size_t size = message.size();
    OpQueryRequest q;
    size_t pos = kHeaderSize;
    if (size < kHeaderSize || static_cast<size_t>(readInt32LE(data)) != size) {
        return protocolError("messageLength does not match the message size");
    }
    if (size < pos + 4) return protocolError("message too short for its flags");
    q.requestId = readInt32LE(data + 4);
    q.flags = readInt32LE(data + pos);
    pos += 4;
    const void* nul = std::memchr(data + pos, 0, size - pos);
    if (!nul) return protocolError("fullCollectionName is not terminated");
    const size_t nulPos = static_cast<size_t>(static_cast<const uint8_t*>(nul) - data);
    q.fullCollectionName.assign(reinterpret_cast<const char*>(data + pos), nulPos - pos);
    pos = nulPos + 1;
    if (size - pos < 8) return protocolError("message too short for numberToSkip/numberToReturn");
    q.numberToSkip = readInt32LE(data + pos);
    q.numberToReturn = readInt32LE(data + pos + 4);
    pos += 8;
    ASSIGN_OR_RETURN(q.query, readWireDocument(data, &pos, size));
    if (pos < size) {
        ASSIGN_OR_RETURN(q.returnFieldsSelector, readWireDocument(data, &pos, size));
        q.hasReturnFieldsSelector = true;
    }
    if (pos != size) return protocolError("trailing bytes after the documents");
    q.message = std::move(message);
    return q;
}

StatusWith<OpMsgRequest> opQueryToOpMsgRequest(const OpQueryRequest& query) {
    constexpr std::string_view kCmdSuffix = ".$cmd";
    const std::string& ns = query.fullCollectionName;
    if (ns.size() <= kCmdSuffix.size() ||
        std::string_view(ns).substr(ns.size() - kCmdSuffix.size()) != kCmdSuffix) {
        return Status(ErrorCodes::UnsupportedOpQueryCommand,
                      "OP_QUERY is no longer supported except for commands on <db>.$cmd; got "
                      "namespace '" +
                          ns + "'. The client driver may require an upgrade.");
    }
    const std::string_view db = std::string_view(ns).substr(0, ns.size() - kCmdSuffix.size());

    bson::BsonView command = query.query;
    bson::BsonElement readPreference;
    bson::BsonElement first = command.firstElement();
    if (!first.eoo() && (first.fieldName() == "$query" || first.fieldName() == "query") &&
        first.isObject()) {
        readPreference = command.getField("$readPreference");
        command = first.objValue();
    }

    const std::string_view name =
        command.isEmpty() ? std::string_view() : command.firstElement().fieldName();
    bool allowed = false;
    for (std::string_view c : kOpQueryCommands) allowed = allowed || c == name;
    if (!allowed) {
        return Status(ErrorCodes::UnsupportedOpQueryCommand,
                      "Unsupported OP_QUERY command: " + std::string(name) +
                          ". The client driver may require an upgrade. For more details see "
                          "https://dochub.mongodb.org/core/legacy-opcode-removal");
    }

    bson::BsonBuilder b;
    for (const bson::BsonElement& e : command) {
        if (e.fieldName() != "$db") b.appendElement(e);
    }
    if (!readPreference.eoo() && !command.hasField("$readPreference")) {
        b.appendElement(readPreference);
    }
    b.append("$db", db);

    OpMsgRequest request;
    request.requestId = query.requestId;
    request.ownedBody = b.obj();
    request.body = request.ownedBody;
    request.bodySections = 1;
    request.message = query.message;
    return request;
}

Message buildOpReply(int32_t requestId, int32_t responseTo, bson::BsonView doc,
                     int32_t responseFlags) {
    constexpr size_t kFixed = kHeaderSize + 4 + 8 + 4 + 4;
    const size_t total = kFixed + doc.size();
    invariant(total <= static_cast<size_t>(kMaxMessageSizeBytes));
    Message m = Message::allocate(total);
    uint8_t* out = m.mutableData();
    writeHeader(
        {static_cast<int32_t>(total), requestId, responseTo, static_cast<int32_t>(OpCode::kReply)},
        out);
    writeInt32LE(out + 16, responseFlags);
    const int64_t cursorId = 0;
    std::memcpy(out + 20, &cursorId, 8);
    writeInt32LE(out + 28, 0);  // startingFrom
    writeInt32LE(out + 32, 1);  // numberReturned
    std::memcpy(out + kFixed, doc.data(), doc.size());
    return m;
}

StatusWith<OpReply> parseOpReply(Message message) {
    constexpr size_t kFixed = kHeaderSize + 4 + 8 + 4 + 4;
    const uint8_t* data = message.data();
    const size_t size = message.size();
    if (size < kFixed || static_cast<size_t>(readInt32LE(data)) != size)
        return Status(ErrorCodes::ProtocolError, "Invalid OP_REPLY: too short");
    OpReply r;
    r.responseTo = readInt32LE(data + 8);
    r.responseFlags = readInt32LE(data + 16);
    r.cursorId = readInt64LE(data + 20);
    r.startingFrom = readInt32LE(data + 28);
    r.numberReturned = readInt32LE(data + 32);
    size_t pos = kFixed;
    while (pos < size) {
        ASSIGN_OR_RETURN(bson::BsonView doc, readWireDocument(data, &pos, size));
        r.documents.push_back(doc);
    }
    if (r.numberReturned < 0 || static_cast<size_t>(r.numberReturned) != r.documents.size()) {
        return Status(ErrorCodes::ProtocolError,
                      "Invalid OP_REPLY: numberReturned does not match the documents");
    }
    r.message = std::move(message);
    return r;
}

}  // namespace tessera::wire
