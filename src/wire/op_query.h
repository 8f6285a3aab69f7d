#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "wire/message.h"
#include "wire/op_msg.h"

namespace tessera::wire {

// A parsed OP_QUERY (opCode 2004). Tessera serves it only for the handshake: drivers send
// `{isMaster|ismaster|hello: 1, ...}` on "admin.$cmd" before they know the server speaks OP_MSG.
struct OpQueryRequest {
    int32_t requestId = 0;
    int32_t flags = 0;
    std::string fullCollectionName;  // "admin.$cmd"
    int32_t numberToSkip = 0;
    int32_t numberToReturn = 0;
    bson::BsonView query;
    bson::BsonView returnFieldsSelector;  // the empty document when absent
    bool hasReturnFieldsSelector = false;
    Message message;  // owns the bytes the views point into
};

// Parses the OP_QUERY in `message` (header included). Every failure is a framing error (the
// caller closes the connection): ProtocolError for truncation or trailing bytes, InvalidBSON /
// Overflow / BSONObjectTooLarge for the documents.
StatusWith<OpQueryRequest> parseOpQuery(Message message);

// Converts a handshake OP_QUERY into the OpMsgRequest the command layer sees: `body` is the query
// document (unwrapped from `$query` when the driver wrapped it, keeping `$readPreference`) with
// `$db` set to the database of fullCollectionName ("admin.$cmd" -> "admin"). Failures are
// command-level errors, answered in an OP_REPLY:
//   UnsupportedOpQueryCommand (352) the namespace is not "<db>.$cmd", or the command is not one
//                                   that MongoDB still accepts over OP_QUERY (hello, isMaster,
//                                   ismaster, authenticate, getnonce).
StatusWith<OpMsgRequest> opQueryToOpMsgRequest(const OpQueryRequest& query);

// OP_REPLY responseFlags.
constexpr int32_t kResultFlagCursorNotFound = 1;
constexpr int32_t kResultFlagQueryFailure = 2;
constexpr int32_t kResultFlagAwaitCapable = 8;  // set on every reply by MongoDB servers

// Builds an OP_REPLY (opCode 1) carrying `doc`: cursorID 0, startingFrom 0, numberReturned 1.
Message buildOpReply(int32_t requestId, int32_t responseTo, bson::BsonView doc,
                     int32_t responseFlags = kResultFlagAwaitCapable);

// A parsed OP_REPLY (for clients and tests).
struct OpReply {
    int32_t responseTo = 0;
    int32_t responseFlags = 0;
    int64_t cursorId = 0;
    int32_t startingFrom = 0;
    int32_t numberReturned = 0;
    std::vector<bson::BsonView> documents;
    Message message;
};
StatusWith<OpReply> parseOpReply(Message message);

}  // namespace tessera::wire
