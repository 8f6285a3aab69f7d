#include "wire/op_msg.h"

#include <gtest/gtest.h>

#include "bson/bson_builder.h"
#include "bson/validate.h"
#include "wire/test_util.h"

namespace tessera::wire {
namespace {

using bson::fromJson;
using test::RawMessage;

RawMessage msgWithFlags(uint32_t flags) {
    RawMessage m(OpCode::kMsg);
    m.uint32(flags);
    return m;
}

// A kind-1 section with the given documents; returns the builder for chaining.
RawMessage& appendSequence(RawMessage& m, std::string_view id,
                           std::initializer_list<bson::BsonObj> docs) {
    m.byte(1);
    size_t sizeAt = m.pos();
    m.int32(0).cstring(id);
    for (const auto& d : docs) m.doc(d);
    m.patchInt32(sizeAt, static_cast<int32_t>(m.pos() - sizeAt));
    return m;
}

Status parseStatus(Message m) { return parseOpMsg(std::move(m)).getStatus(); }

TEST(OpMsg, RoundTripWithSequencesAndChecksum) {
    bson::BsonObj body = fromJson(R"({"insert": "c", "ordered": true, "$db": "test"})");
    bson::BsonObj d1 = fromJson(R"({"_id": 1})");
    bson::BsonObj d2 = fromJson(R"({"_id": 2, "x": "y"})");
    bson::BsonObj u1 = fromJson(R"({"q": {}, "u": {"$set": {"a": 1}}})");
    std::vector<DocumentSequence> seqs = {
        {"documents", {d1, d2}}, {"updates", {u1}}, {"empty", {}}};
    Message built = buildOpMsg(42, 0, kChecksumPresent | kExhaustAllowed, body, seqs);
    EXPECT_EQ(built.header().messageLength, static_cast<int32_t>(built.size()));
    EXPECT_EQ(built.opCode(), OpCode::kMsg);

    auto parsed = parseOpMsg(built);
    ASSERT_TRUE(parsed.isOK()) << parsed.getStatus().toString();
    const OpMsgRequest& r = parsed.getValue();
    EXPECT_TRUE(checkOpMsgCommand(r).isOK());
    EXPECT_EQ(r.requestId, 42);
    EXPECT_TRUE(r.checksumPresent());
    EXPECT_TRUE(r.exhaustAllowed());
    EXPECT_FALSE(r.moreToCome());
    EXPECT_EQ(r.body, body.view());
    EXPECT_EQ(r.commandName(), "insert");
    EXPECT_EQ(r.database(), "test");
    ASSERT_EQ(r.sequences.size(), 3u);
    ASSERT_NE(r.sequence("documents"), nullptr);
    ASSERT_EQ(r.sequence("documents")->documents.size(), 2u);
    EXPECT_EQ(r.sequence("documents")->documents[1], d2.view());
    ASSERT_EQ(r.sequence("updates")->documents.size(), 1u);
    EXPECT_EQ(r.sequence("updates")->documents[0], u1.view());
    EXPECT_TRUE(r.sequence("empty")->documents.empty());
    EXPECT_EQ(r.sequence("nope"), nullptr);

    // Rebuilding from the parse result gives the same bytes.
    Message again = buildOpMsg(42, 0, r.flags, r.body, r.sequences);
    EXPECT_EQ(again.bytes(), built.bytes());
}

TEST(OpMsg, ViewsOutliveTheOriginalMessageHandle) {
    bson::BsonObj body = fromJson(R"({"ping": 1, "$db": "admin"})");
    OpMsgRequest r;
    {
        auto parsed = parseOpMsg(buildOpMsg(1, 0, 0, body));
        ASSERT_TRUE(parsed.isOK());
        r = parsed.getValue();
    }
    EXPECT_EQ(r.body, body.view());
}

TEST(OpMsg, ReplyBuilderMirrorsChecksumAndSetsResponseTo) {
    bson::BsonObj body = fromJson(R"({"ping": 1, "$db": "admin"})");
    bson::BsonObj ok = fromJson(R"({"ok": 1.0})");
    for (bool checksum : {false, true}) {
        auto req = parseOpMsg(buildOpMsg(77, 0, checksum ? kChecksumPresent : 0, body));
        ASSERT_TRUE(req.isOK());
        Message reply = buildOpMsgReply(req.getValue(), 900, ok);
        EXPECT_EQ(reply.header().responseTo, 77);
        EXPECT_EQ(reply.header().requestId, 900);
        auto parsed = parseOpMsg(reply);
        ASSERT_TRUE(parsed.isOK()) << parsed.getStatus().toString();
        EXPECT_EQ(parsed.getValue().checksumPresent(), checksum);
        EXPECT_FALSE(parsed.getValue().moreToCome());
        EXPECT_EQ(parsed.getValue().body, ok.view());
        EXPECT_TRUE(parsed.getValue().sequences.empty());

        Message exhaust = buildOpMsgReply(req.getValue(), 901, ok, /*moreToCome=*/true);
        auto parsedExhaust = parseOpMsg(exhaust);
        ASSERT_TRUE(parsedExhaust.isOK());
        EXPECT_TRUE(parsedExhaust.getValue().moreToCome());
    }
}

TEST(OpMsg, FlagBits) {
    bson::BsonObj body = fromJson(R"({"ping": 1, "$db": "admin"})");
    // moreToCome is a known required bit.
    auto more = parseOpMsg(msgWithFlags(kMoreToCome).byte(0).doc(body).finish());
    ASSERT_TRUE(more.isOK());
    EXPECT_TRUE(more.getValue().moreToCome());
    // Unknown optional bits (16-31) are ignored.
    EXPECT_TRUE(parseOpMsg(msgWithFlags(1u << 20 | 1u << 31).byte(0).doc(body).finish()).isOK());
    // Unknown required bits (2-15) are rejected.
    for (int bit : {2, 3, 8, 15}) {
        Status s = parseStatus(msgWithFlags(1u << bit).byte(0).doc(body).finish());
        EXPECT_EQ(s.code(), static_cast<int>(ErrorCodes::IllegalOpMsgFlag)) << bit;
    }
}

TEST(OpMsg, ChecksumVerified) {
    bson::BsonObj body = fromJson(R"({"ping": 1, "$db": "admin"})");
    Message good = msgWithFlags(kChecksumPresent).byte(0).doc(body).finish(true);
    ASSERT_TRUE(parseOpMsg(good).isOK());

    // Any flipped byte after the header's length is detected.
    for (size_t i = 4; i < good.size(); ++i) {
        std::string bytes(good.bytes());
        bytes[i] ^= 0x01;
        if (i >= 16 && i < 20) continue;  // flips a flag bit: may become an illegal flag instead
        Status s = parseStatus(Message::fromBytes(bytes));
        EXPECT_FALSE(s.isOK()) << i;
        if (i >= 20) {
            EXPECT_EQ(s.code(), static_cast<int>(ErrorCodes::ChecksumMismatch)) << i;
        }
    }
    // checksumPresent without room for a checksum.
    EXPECT_TRUE(parseStatus(msgWithFlags(kChecksumPresent).finish()).is(ErrorCodes::ProtocolError));
    EXPECT_TRUE(parseStatus(msgWithFlags(kChecksumPresent).raw("ab").finish())
                    .is(ErrorCodes::ProtocolError));
    // A body section that would swallow the checksum bytes is detected as a mismatch.
    Message noChecksum = msgWithFlags(kChecksumPresent).byte(0).doc(body).finish(false);
    EXPECT_FALSE(parseOpMsg(noChecksum).isOK());
}

TEST(OpMsg, TruncatedAndOverrunningSections) {
    bson::BsonObj body = fromJson(R"({"ping": 1, "$db": "admin"})");
    // Too short for flags.
    {
        RawMessage m(OpCode::kMsg);
        m.raw("ab");
        EXPECT_TRUE(parseStatus(m.finish()).is(ErrorCodes::ProtocolError));
    }
    // Body cut short.
    {
        RawMessage m = msgWithFlags(0);
        m.byte(0).raw(body.bytes().substr(0, body.size() - 3));
        EXPECT_TRUE(parseStatus(m.finish()).is(ErrorCodes::ProtocolError));
    }
    // Kind byte with nothing after it.
    EXPECT_TRUE(parseStatus(msgWithFlags(0).byte(0).finish()).is(ErrorCodes::ProtocolError));
    EXPECT_TRUE(parseStatus(msgWithFlags(0).byte(0).raw("\x05\x00").finish())
                    .is(ErrorCodes::ProtocolError));
    // Negative and tiny document lengths.
    EXPECT_TRUE(parseStatus(msgWithFlags(0).byte(0).int32(-5).raw(std::string(8, '\0')).finish())
                    .is(ErrorCodes::ProtocolError));
    EXPECT_TRUE(
        parseStatus(msgWithFlags(0).byte(0).int32(4).finish()).is(ErrorCodes::ProtocolError));
    // Kind-1: size too small, negative, overrunning the message, identifier unterminated,
    // truncated size.
    for (int32_t size : {0, 4, -1, 1000}) {
        RawMessage m = msgWithFlags(0);
        m.byte(0).doc(body).byte(1).int32(size).cstring("documents");
        EXPECT_TRUE(parseStatus(m.finish()).is(ErrorCodes::ProtocolError)) << size;
    }
    {
        RawMessage m = msgWithFlags(0);
        m.byte(0).doc(body).byte(1).int32(4 + 3).raw("abc");
        EXPECT_TRUE(parseStatus(m.finish()).is(ErrorCodes::ProtocolError));
    }
    EXPECT_TRUE(parseStatus(msgWithFlags(0).byte(0).doc(body).byte(1).raw("\x05\x00").finish())
                    .is(ErrorCodes::ProtocolError));
    // Kind-1: a document overrunning its section (but not the message).
    {
        bson::BsonObj d = fromJson(R"({"_id": 1})");
        RawMessage m = msgWithFlags(0);
        m.byte(0).doc(body).byte(1);
        size_t at = m.pos();
        m.int32(0).cstring("documents").doc(d);
        m.patchInt32(at, static_cast<int32_t>(m.pos() - at - 2));  // section ends mid-document
        EXPECT_TRUE(parseStatus(m.finish()).is(ErrorCodes::ProtocolError));
    }
}

TEST(OpMsg, UnknownSectionKindClosesConnection) {
    bson::BsonObj body = fromJson(R"({"ping": 1, "$db": "admin"})");
    for (uint8_t kind : {2, 3, 0x80, 0xFF}) {
        Status s = parseStatus(msgWithFlags(0).byte(0).doc(body).byte(kind).doc(body).finish());
        EXPECT_TRUE(s.is(ErrorCodes::ProtocolError)) << int(kind);
        EXPECT_NE(s.reason().find("Unknown section kind"), std::string::npos);
    }
}

TEST(OpMsg, InvalidBsonIsRejected) {
    bson::BsonObj body = fromJson(R"({"ping": 1, "$db": "admin"})");
    // Unknown element type byte.
    std::string bad(body.bytes());
    bad[4] = 0x7A;
    EXPECT_TRUE(parseStatus(msgWithFlags(0).byte(0).raw(bad).finish()).is(ErrorCodes::InvalidBSON));
    // Missing terminating NUL.
    std::string unterminated(body.bytes());
    unterminated.back() = 'x';
    EXPECT_TRUE(parseStatus(msgWithFlags(0).byte(0).raw(unterminated).finish())
                    .is(ErrorCodes::InvalidBSON));
    // Invalid BSON inside a document sequence.
    RawMessage m = msgWithFlags(0);
    m.byte(0).doc(body);
    m.byte(1);
    size_t at = m.pos();
    m.int32(0).cstring("documents").raw(bad);
    m.patchInt32(at, static_cast<int32_t>(m.pos() - at));
    EXPECT_TRUE(parseStatus(m.finish()).is(ErrorCodes::InvalidBSON));
}

TEST(OpMsg, NestingDeeperThanLimitIsRejected) {
    auto nested = [](int depth) {
        bson::BsonBuilder b;
        for (int i = 1; i < depth; ++i) b.startObject("a");
        return b.obj();
    };
    Message ok = msgWithFlags(0).byte(0).doc(nested(bson::kMaxParseDepth)).finish();
    EXPECT_TRUE(parseOpMsg(ok).isOK());
    Message deep = msgWithFlags(0).byte(0).doc(nested(bson::kMaxParseDepth + 1)).finish();
    Status s = parseStatus(deep);
    EXPECT_FALSE(s.isOK());
    EXPECT_TRUE(s.is(ErrorCodes::Overflow) || s.is(ErrorCodes::InvalidBSON)) << s.toString();
}

TEST(OpMsg, OversizedDocumentIsRejected) {
    bson::BsonBuilder b;
    b.appendBinary("x", 0, std::string(bson::kMaxInternalDocumentSize, 'x'));
    bson::BsonObj big = b.obj();
    EXPECT_TRUE(
        parseStatus(msgWithFlags(0).byte(0).doc(big).finish()).is(ErrorCodes::BSONObjectTooLarge));
}

TEST(OpMsg, TooManyDocumentSequences) {
    bson::BsonObj body = fromJson(R"({"ping": 1, "$db": "admin"})");
    RawMessage m = msgWithFlags(0);
    m.byte(0).doc(body);
    for (size_t i = 0; i <= kMaxDocumentSequences; ++i) {
        appendSequence(m, "s" + std::to_string(i), {});
    }
    EXPECT_TRUE(parseStatus(m.finish()).is(ErrorCodes::TooManyDocumentSequences));
}

// Structurally sound messages whose command is unusable: parse succeeds, the command check fails
// with MongoDB's codes (answered with an error reply, connection kept).
TEST(OpMsg, CommandLevelErrors) {
    bson::BsonObj body = fromJson(R"({"insert": "c", "$db": "test"})");
    bson::BsonObj d = fromJson(R"({"_id": 1})");
    auto check = [](Message m) {
        auto parsed = parseOpMsg(std::move(m));
        EXPECT_TRUE(parsed.isOK()) << parsed.getStatus().toString();
        return parsed.isOK() ? checkOpMsgCommand(parsed.getValue()) : parsed.getStatus();
    };
    // No body at all (an empty message, or only a sequence).
    EXPECT_EQ(check(msgWithFlags(0).finish()).code(), 40587);
    {
        RawMessage m = msgWithFlags(0);
        EXPECT_EQ(check(appendSequence(m, "documents", {d}).finish()).code(), 40587);
    }
    // Two bodies.
    EXPECT_EQ(check(msgWithFlags(0).byte(0).doc(body).byte(0).doc(body).finish()).code(), 40430);
    // The same sequence twice.
    {
        RawMessage m = msgWithFlags(0);
        m.byte(0).doc(body);
        appendSequence(m, "documents", {d});
        appendSequence(m, "documents", {d});
        EXPECT_EQ(check(m.finish()).code(), 40431);
    }
    // A sequence that duplicates a body field, top-level and dotted.
    {
        RawMessage m = msgWithFlags(0);
        m.byte(0).doc(fromJson(R"({"insert": "c", "documents": [], "$db": "test"})"));
        EXPECT_EQ(check(appendSequence(m, "documents", {d}).finish()).code(), 40433);
    }
    {
        RawMessage m = msgWithFlags(0);
        m.byte(0).doc(fromJson(R"({"insert": "c", "a": {"b": 1}, "$db": "test"})"));
        EXPECT_EQ(check(appendSequence(m, "a.b", {d}).finish()).code(), 40433);
    }
    {
        RawMessage m = msgWithFlags(0);
        m.byte(0).doc(fromJson(R"({"insert": "c", "a": {"b": 1}, "$db": "test"})"));
        EXPECT_TRUE(check(appendSequence(m, "a.c", {d}).finish()).isOK());
    }
    // $db missing or not a string.
    EXPECT_EQ(check(msgWithFlags(0).byte(0).doc(fromJson(R"({"ping": 1})")).finish()).code(),
              40571);
    EXPECT_TRUE(check(msgWithFlags(0).byte(0).doc(fromJson(R"({"ping": 1, "$db": 5})")).finish())
                    .is(ErrorCodes::TypeMismatch));
    // The body may come after the sequences.
    {
        RawMessage m = msgWithFlags(0);
        appendSequence(m, "documents", {d});
        m.byte(0).doc(body);
        auto parsed = parseOpMsg(m.finish());
        ASSERT_TRUE(parsed.isOK());
        EXPECT_TRUE(checkOpMsgCommand(parsed.getValue()).isOK());
        EXPECT_EQ(parsed.getValue().commandName(), "insert");
    }
}

TEST(OpMsg, AccessorsOnOddBodies) {
    OpMsgRequest empty;
    EXPECT_EQ(empty.commandName(), "");
    EXPECT_EQ(empty.database(), "");
    auto parsed = parseOpMsg(msgWithFlags(0).byte(0).doc(fromJson(R"({"$db": 1})")).finish());
    ASSERT_TRUE(parsed.isOK());
    EXPECT_EQ(parsed.getValue().database(), "");
    EXPECT_EQ(parsed.getValue().commandName(), "$db");
}

}  // namespace
}  // namespace tessera::wire
