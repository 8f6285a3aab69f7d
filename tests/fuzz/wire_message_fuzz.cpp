// Fuzzes the wire parsers: bytes -> header -> OP_MSG / OP_QUERY / OP_REPLY parse, plus the
// round-trip property (a parsed message rebuilds into a message that parses to the same content).

#include <cstdint>
#include <cstdlib>
#include <string>

#include "bson/bson_obj.h"
#include "wire/message.h"
#include "wire/op_msg.h"
#include "wire/op_query.h"

using namespace tessera;

namespace {

void check(bool cond) {
    if (!cond) std::abort();
}

// Touches every element (reads every byte the views claim).
size_t walk(bson::BsonView doc) {
    size_t n = 0;
    for (const bson::BsonElement& e : doc) {
        n += e.fieldName().size() + e.valueSize();
        if (e.isObject() || e.isArray()) n += walk(e.objValue());
    }
    return n;
}

void fuzzOpMsg(const wire::Message& m) {
    auto parsed = wire::parseOpMsg(m);
    if (!parsed.isOK()) return;
    const wire::OpMsgRequest& r = parsed.getValue();
    Status check1 = wire::checkOpMsgCommand(r);
    (void)r.commandName();
    (void)r.database();
    walk(r.body);
    for (const auto& seq : r.sequences) {
        for (const auto& doc : seq.documents) walk(doc);
        check(r.sequence(seq.identifier) != nullptr);
    }
    if (r.bodySections != 1) return;
    // Round trip: rebuild with the same flags (a fresh checksum if one was present).
    wire::Message again = wire::buildOpMsg(r.requestId, 0, r.flags, r.body, r.sequences);
    auto reparsed = wire::parseOpMsg(again);
    check(reparsed.isOK());
    const wire::OpMsgRequest& r2 = reparsed.getValue();
    check(r2.flags == r.flags);
    check(r2.body.binaryEqual(r.body));
    check(r2.sequences.size() == r.sequences.size());
    for (size_t i = 0; i < r.sequences.size(); ++i) {
        check(r2.sequences[i].identifier == r.sequences[i].identifier);
        check(r2.sequences[i].documents.size() == r.sequences[i].documents.size());
    }
    check(wire::checkOpMsgCommand(r2).code() == check1.code());
    // The reply builder always produces a parseable message.
    auto reply = wire::parseOpMsg(wire::buildOpMsgReply(r, 1, r.body));
    check(reply.isOK());
}

void fuzzOpQuery(const wire::Message& m) {
    auto parsed = wire::parseOpQuery(m);
    if (!parsed.isOK()) return;
    walk(parsed.getValue().query);
    walk(parsed.getValue().returnFieldsSelector);
    auto converted = wire::opQueryToOpMsgRequest(parsed.getValue());
    if (!converted.isOK()) return;
    // A converted handshake is always a usable command on the namespace's database.
    check(wire::checkOpMsgCommand(converted.getValue()).isOK());
    const std::string& ns = parsed.getValue().fullCollectionName;
    check(ns.substr(0, ns.size() - 5) == converted.getValue().database());
    auto reply = wire::parseOpReply(wire::buildOpReply(2, 1, converted.getValue().body));
    check(reply.isOK());
    check(reply.getValue().documents.size() == 1);
    check(reply.getValue().documents[0].binaryEqual(converted.getValue().body));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < wire::kHeaderSize) return 0;
    // The header exactly as sent.
    auto header = wire::parseHeader(data);
    if (header.isOK()) {
        check(header.getValue().messageLength >= static_cast<int32_t>(wire::kHeaderSize));
        check(header.getValue().messageLength <= wire::kMaxMessageSizeBytes);
    }
    // The parsers with the bytes as sent (messageLength usually disagrees: must be rejected)...
    wire::Message asSent = wire::Message::fromBytes({reinterpret_cast<const char*>(data), size});
    if (wire::readInt32LE(data) != static_cast<int32_t>(size)) {
        check(!wire::parseOpMsg(asSent).isOK());
        check(!wire::parseOpQuery(asSent).isOK());
        check(!wire::parseOpReply(asSent).isOK());
    }
    // ... and with messageLength fixed up, so the fuzzer explores the bodies. Every parser sees
    // every input regardless of the opcode (they never look at it).
    std::string fixed(reinterpret_cast<const char*>(data), size);
    wire::writeInt32LE(reinterpret_cast<uint8_t*>(fixed.data()), static_cast<int32_t>(size));
    wire::Message m = wire::Message::fromBytes(fixed);
    fuzzOpMsg(m);
    fuzzOpQuery(m);
    auto reply = wire::parseOpReply(m);
    if (reply.isOK()) {
        for (const auto& doc : reply.getValue().documents) walk(doc);
    }
    return 0;
}
