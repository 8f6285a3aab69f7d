#include "wire/op_msg.h"

#include <cstring>
#include <string>

#include "bson/bson_types.h"
#include "bson/validate.h"
#include "wire/crc32c.h"

namespace tessera::wire {
namespace {

constexpr uint32_t kKnownFlags = kChecksumPresent | kMoreToCome | kExhaustAllowed;
constexpr uint32_t kRequiredFlagMask = 0xFFFF;
constexpr size_t kFlagsSize = 4;
constexpr size_t kChecksumSize = 4;

Status protocolError(std::string why) {
    return Status(ErrorCodes::ProtocolError, "Invalid OP_MSG: " + std::move(why));
}

}  // namespace

// Reads one BSON document at data[*pos] that must end at or before `limit`; advances *pos.
// Shared by the OP_MSG and OP_QUERY parsers.
StatusWith<bson::BsonView> readWireDocument(const uint8_t* data, size_t* pos, size_t limit,
                                            BsonCheck check) {
    if (*pos > limit || limit - *pos < 4) {
        return Status(ErrorCodes::ProtocolError, "truncated BSON document in message");
    }
    const int32_t len = readInt32LE(data + *pos);
    if (len < 5 || static_cast<size_t>(len) > limit - *pos) {
        return Status(ErrorCodes::ProtocolError,
                      "BSON document length " + std::to_string(len) + " overruns its section");
    }
    if (static_cast<size_t>(len) > bson::kMaxInternalDocumentSize) {
        return Status(ErrorCodes::BSONObjectTooLarge,
                      "BSONObj size: " + std::to_string(len) +
                          " is invalid. Size must be between 0 and " +
                          std::to_string(bson::kMaxInternalDocumentSize));
    }
    // Checked here as well as by validateBson: a terminated outer document bounds every scan the
    // validator makes inside it (defence in depth for a validator bug found by the fuzzer).
    if (data[*pos + static_cast<size_t>(len) - 1] != 0) {
        return Status(ErrorCodes::InvalidBSON, "Invalid BSON: document is not terminated");
    }
    TRY_STATUS(check == BsonCheck::kFull
                   ? bson::validateBson(data + *pos, static_cast<size_t>(len), bson::kMaxParseDepth)
                   : bson::validateBsonStructure(data + *pos, static_cast<size_t>(len),
                                                 bson::kMaxParseDepth));
    bson::BsonView view(data + *pos);
    *pos += static_cast<size_t>(len);
    return view;
}

std::string_view OpMsgRequest::commandName() const {
    if (body.isEmpty()) return {};
    return body.firstElement().fieldName();
}

std::string_view OpMsgRequest::database() const {
    bson::BsonElement db = body.getField("$db");
    if (db.type() != bson::BsonType::String) return {};
    return db.stringValue();
}

const DocumentSequence* OpMsgRequest::sequence(std::string_view identifier) const {
    for (const auto& seq : sequences) {
        if (seq.identifier == identifier) return &seq;
    }
    return nullptr;
}

StatusWith<OpMsgRequest> parseOpMsg(Message message, BsonCheck check) {
    const uint8_t* data = message.data();
    const size_t size = message.size();
    if (size < kHeaderSize || static_cast<size_t>(readInt32LE(data)) != size) {
        return protocolError("messageLength does not match the message size");
    }
    if (size < kHeaderSize + kFlagsSize) return protocolError("message too short for its flags");

    OpMsgRequest request;
    request.requestId = readInt32LE(data + 4);
    request.flags = readUInt32LE(data + kHeaderSize);
    if (request.flags & ~kKnownFlags & kRequiredFlagMask) {
        return Status(ErrorCodes::IllegalOpMsgFlag,
                      "Message contains illegal flags value: " + std::to_string(request.flags));
    }

    size_t sectionsEnd = size;
    if (request.checksumPresent()) {
        if (size < kHeaderSize + kFlagsSize + kChecksumSize) {
            return protocolError("message too short for its checksum");
        }
        sectionsEnd -= kChecksumSize;
        if (crc32c(data, sectionsEnd) != readUInt32LE(data + sectionsEnd)) {
            return Status(ErrorCodes::ChecksumMismatch, "OP_MSG checksum does not match contents");
        }
    }

    size_t pos = kHeaderSize + kFlagsSize;
    while (pos < sectionsEnd) {
        const uint8_t kind = data[pos++];
        if (kind == 0) {
            ASSIGN_OR_RETURN(bson::BsonView doc, readWireDocument(data, &pos, sectionsEnd, check));
            if (request.bodySections++ == 0) request.body = doc;
        } else if (kind == 1) {
            if (request.sequences.size() >= kMaxDocumentSequences) {
                return Status(ErrorCodes::TooManyDocumentSequences,
                              "Too many document sequences in OP_MSG");
            }
            if (sectionsEnd - pos < 4) return protocolError("truncated document sequence size");
            const int32_t sectionSize = readInt32LE(data + pos);
            // The size counts itself and at least the identifier's terminating NUL.
            if (sectionSize < 5 || static_cast<size_t>(sectionSize) > sectionsEnd - pos) {
                return protocolError("document sequence size " + std::to_string(sectionSize) +
                                     " is out of bounds");
            }
            const size_t sectionEnd = pos + static_cast<size_t>(sectionSize);
            pos += 4;
            const void* nul = std::memchr(data + pos, 0, sectionEnd - pos);
            if (!nul) return protocolError("document sequence identifier is not terminated");
            const size_t nulPos = static_cast<size_t>(static_cast<const uint8_t*>(nul) - data);
            DocumentSequence seq;
            seq.identifier.assign(reinterpret_cast<const char*>(data + pos), nulPos - pos);
            pos = nulPos + 1;
            while (pos < sectionEnd) {
                ASSIGN_OR_RETURN(bson::BsonView doc,
                                 readWireDocument(data, &pos, sectionEnd, check));
                seq.documents.push_back(doc);
            }
            request.sequences.push_back(std::move(seq));
        } else {
            return protocolError("Unknown section kind " + std::to_string(kind));
        }
    }
    request.message = std::move(message);
    return request;
}

namespace {

// Whether `path` ("a" or "a.b") names an existing field of `doc`, descending through objects.
bool hasPath(bson::BsonView doc, std::string_view path) {
    while (true) {
        const size_t dot = path.find('.');
        bson::BsonElement e = doc.getField(path.substr(0, dot));
        if (e.eoo()) return false;
        if (dot == std::string_view::npos) return true;
        if (!e.isObject() && !e.isArray()) return false;
        doc = e.objValue();
        path.remove_prefix(dot + 1);
    }
}

}  // namespace

Status checkOpMsgCommand(const OpMsgRequest& request) {
    if (request.bodySections == 0) return Status(40587, "OP_MSG messages must have a body");
    if (request.bodySections > 1) return Status(40430, "Multiple body sections in message");
    for (size_t i = 0; i < request.sequences.size(); ++i) {
        const std::string& id = request.sequences[i].identifier;
        for (size_t j = 0; j < i; ++j) {
            if (request.sequences[j].identifier == id) {
                return Status(40431, "Duplicate document sequence: " + id);
            }
        }
        if (hasPath(request.body, id)) {
            return Status(40433, "Duplicate field between body and document sequence " + id);
        }
    }
    bson::BsonElement db = request.body.getField("$db");
    if (db.eoo()) return Status(40571, "OP_MSG requests require a $db argument");
    if (db.type() != bson::BsonType::String) {
        return Status(ErrorCodes::TypeMismatch, "BSON field '$db' is the wrong type '" +
                                                    std::string(bson::typeName(db.type())) +
                                                    "', expected type 'string'");
    }
    return Status::OK();
}

Message buildOpMsg(int32_t requestId, int32_t responseTo, uint32_t flags, bson::BsonView body,
                   const std::vector<DocumentSequence>& sequences) {
    const bool checksum = flags & kChecksumPresent;
    size_t total = kHeaderSize + kFlagsSize + 1 + body.size();
    for (const auto& seq : sequences) {
        total += 1 + 4 + seq.identifier.size() + 1;
        for (const auto& doc : seq.documents) total += doc.size();
    }
    if (checksum) total += kChecksumSize;
    invariant(total <= static_cast<size_t>(kMaxMessageSizeBytes));

    Message m = Message::allocate(total);
    uint8_t* out = m.mutableData();
    writeHeader(
        {static_cast<int32_t>(total), requestId, responseTo, static_cast<int32_t>(OpCode::kMsg)},
        out);
    size_t pos = kHeaderSize;
    writeUInt32LE(out + pos, flags);
    pos += kFlagsSize;
    out[pos++] = 0;
    std::memcpy(out + pos, body.data(), body.size());
    pos += body.size();
    for (const auto& seq : sequences) {
        out[pos++] = 1;
        const size_t sizePos = pos;
        pos += 4;
        std::memcpy(out + pos, seq.identifier.data(), seq.identifier.size());
        pos += seq.identifier.size();
        out[pos++] = 0;
        for (const auto& doc : seq.documents) {
            std::memcpy(out + pos, doc.data(), doc.size());
            pos += doc.size();
        }
        writeInt32LE(out + sizePos, static_cast<int32_t>(pos - sizePos));
    }
    if (checksum) {
        writeUInt32LE(out + pos, crc32c(out, pos));
        pos += kChecksumSize;
    }
    invariant(pos == total);
    return m;
}

Message buildOpMsgReply(const OpMsgRequest& request, int32_t requestId, bson::BsonView body,
                        bool moreToCome) {
    uint32_t flags = moreToCome ? kMoreToCome : 0;
    if (request.checksumPresent()) flags |= kChecksumPresent;
    return buildOpMsg(requestId, request.requestId, flags, body);
}

}  // namespace tessera::wire
