#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "wire/message.h"

namespace tessera::wire {

// OP_MSG flag bits. Bits 0-15 are "required": a receiver must reject a message with a required
// bit it does not know. Bits 16-31 are optional and ignored when unknown.
constexpr uint32_t kChecksumPresent = 1u << 0;
constexpr uint32_t kMoreToCome = 1u << 1;
constexpr uint32_t kExhaustAllowed = 1u << 16;

// At most this many kind-1 sections per message (MongoDB allows 2; drivers send at most 2:
// bulkWrite's `ops` and `nsInfo`). Bounds the duplicate-identifier checks.
constexpr size_t kMaxDocumentSequences = 16;

// A kind-1 section: documents that belong to the body's array field `identifier`.
struct DocumentSequence {
    std::string identifier;
    std::vector<bson::BsonView> documents;
};

// A parsed OP_MSG. `body` and the sequences' documents are views into `message` (or into
// `ownedBody` when the request was converted from OP_QUERY); copies of the struct share those
// buffers, so views stay valid as long as the struct (or a copy) lives.
struct OpMsgRequest {
    int32_t requestId = 0;
    uint32_t flags = 0;
    bson::BsonView body;
    std::vector<DocumentSequence> sequences;
    // Number of kind-0 sections seen (checkOpMsgCommand requires exactly 1); `body` is the first.
    int bodySections = 0;

    Message message;
    bson::BsonObj ownedBody;

    bool checksumPresent() const { return flags & kChecksumPresent; }
    bool moreToCome() const { return flags & kMoreToCome; }
    bool exhaustAllowed() const { return flags & kExhaustAllowed; }

    // The command name: the body's first field name ("" for an empty body).
    std::string_view commandName() const;
    // The body's `$db` string ("" when missing or not a string; checkOpMsgCommand rejects those).
    std::string_view database() const;
    // The kind-1 section named `identifier`, or nullptr.
    const DocumentSequence* sequence(std::string_view identifier) const;
};

// How much of a message's BSON a parser checks. kFull (validateBson) for anything a client sent;
// kStructure (validateBsonStructure: safe to iterate, strings not checked for UTF-8) only for
// replies from the cluster's own processes, whose contents were fully checked on the way in.
enum class BsonCheck { kFull, kStructure };

// Reads the BSON document at data[*pos], which must end at or before data[limit], and advances
// *pos past it. Checks bounds, size (<= kMaxInternalDocumentSize, else BSONObjectTooLarge) and
// validity (`check` at kMaxParseDepth). Shared by the OP_MSG, OP_QUERY and OP_REPLY parsers.
StatusWith<bson::BsonView> readWireDocument(const uint8_t* data, size_t* pos, size_t limit,
                                            BsonCheck check = BsonCheck::kFull);

// Parses the OP_MSG in `message` (header included; its header must have passed parseHeader and
// carry opCode 2013).
//
// Every failure here means the message's bytes cannot be trusted, and the caller closes the
// connection (see README.md, "Framing-error policy"):
//   IllegalOpMsgFlag (223)   an unknown required flag bit (0-15)
//   ChecksumMismatch (288)   checksumPresent and the CRC-32C does not match
//   ProtocolError (17)       truncated flags/checksum, a section overrunning the message, a bad
//                            kind-1 size or identifier, an unknown section kind
//   TooManyDocumentSequences (233)
//   InvalidBSON (22), Overflow (15, nesting > kMaxParseDepth), BSONObjectTooLarge (10334,
//                            > kMaxInternalDocumentSize) for any document.
//
// `check` applies to every document (kStructure only for a reply from a trusted peer).
StatusWith<OpMsgRequest> parseOpMsg(Message message, BsonCheck check = BsonCheck::kFull);

// Command-level checks on a well-framed request; a failure is answered with an error reply and
// the connection stays open:
//   40587 no body section, 40430 several body sections, 40431 duplicate document sequence,
//   40433 a sequence identifier that is also a field of the body, 40571 missing `$db`,
//   TypeMismatch (14) `$db` not a string.
Status checkOpMsgCommand(const OpMsgRequest& request);

// Builds an OP_MSG: one kind-0 `body`, then one kind-1 section per sequence, then the CRC-32C
// when `flags` has kChecksumPresent. Requires the result to fit kMaxMessageSizeBytes (invariant:
// callers bound replies; a reply that does not fit is a bug upstream).
Message buildOpMsg(int32_t requestId, int32_t responseTo, uint32_t flags, bson::BsonView body,
                   const std::vector<DocumentSequence>& sequences = {});

// The reply to `request`: flags 0 (or kMoreToCome when `moreToCome`), checksummed when the request
// was, responseTo = request.requestId.
Message buildOpMsgReply(const OpMsgRequest& request, int32_t requestId, bson::BsonView body,
                        bool moreToCome = false);

}  // namespace tessera::wire
