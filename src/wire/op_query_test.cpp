#include "wire/op_query.h"

#include <gtest/gtest.h>

#include "wire/test_util.h"

namespace tessera::wire {
namespace {

using bson::fromJson;
using test::RawMessage;

RawMessage query(std::string_view ns, const bson::BsonObj& q, int32_t requestId = 11) {
    RawMessage m(OpCode::kQuery, requestId);
    m.int32(0).cstring(ns).int32(0).int32(-1).doc(q);
    return m;
}

TEST(OpQuery, ParsesHandshakeAndConvertsToOpMsgRequest) {
    bson::BsonObj hello =
        fromJson(R"({"ismaster": 1, "helloOk": true, "client": {"application": {"name": "x"}}})");
    auto parsed = parseOpQuery(query("admin.$cmd", hello).finish());
    ASSERT_TRUE(parsed.isOK()) << parsed.getStatus().toString();
    const OpQueryRequest& q = parsed.getValue();
    EXPECT_EQ(q.requestId, 11);
    EXPECT_EQ(q.fullCollectionName, "admin.$cmd");
    EXPECT_EQ(q.numberToReturn, -1);
    EXPECT_EQ(q.query, hello.view());
    EXPECT_FALSE(q.hasReturnFieldsSelector);

    auto converted = opQueryToOpMsgRequest(q);
    ASSERT_TRUE(converted.isOK()) << converted.getStatus().toString();
    const OpMsgRequest& r = converted.getValue();
    EXPECT_TRUE(checkOpMsgCommand(r).isOK());
    EXPECT_EQ(r.requestId, 11);
    EXPECT_EQ(r.commandName(), "ismaster");
    EXPECT_EQ(r.database(), "admin");
    EXPECT_EQ(r.body.getField("helloOk").boolValue(), true);
    EXPECT_EQ(r.body.getField("client").objValue(), hello.getField("client").objValue());
    EXPECT_TRUE(r.sequences.empty());
    EXPECT_FALSE(r.moreToCome());

    // The converted request keeps its body alive on its own.
    OpMsgRequest copy;
    {
        auto again =
            opQueryToOpMsgRequest(parseOpQuery(query("test.$cmd", hello).finish()).getValue());
        copy = again.getValue();
    }
    EXPECT_EQ(copy.database(), "test");
    EXPECT_EQ(copy.commandName(), "ismaster");
}

TEST(OpQuery, ReturnFieldsSelector) {
    bson::BsonObj q = fromJson(R"({"isMaster": 1})");
    bson::BsonObj proj = fromJson(R"({"a": 1})");
    auto parsed = parseOpQuery(query("admin.$cmd", q).doc(proj).finish());
    ASSERT_TRUE(parsed.isOK());
    EXPECT_TRUE(parsed.getValue().hasReturnFieldsSelector);
    EXPECT_EQ(parsed.getValue().returnFieldsSelector, proj.view());
}

TEST(OpQuery, UnwrapsDollarQueryAndKeepsReadPreference) {
    bson::BsonObj wrapped =
        fromJson(R"({"$query": {"hello": 1}, "$readPreference": {"mode": "primaryPreferred"}})");
    auto r = opQueryToOpMsgRequest(parseOpQuery(query("admin.$cmd", wrapped).finish()).getValue());
    ASSERT_TRUE(r.isOK()) << r.getStatus().toString();
    EXPECT_EQ(r.getValue().commandName(), "hello");
    EXPECT_EQ(r.getValue().body.getField("$readPreference").objValue(),
              fromJson(R"({"mode": "primaryPreferred"})").view());
    EXPECT_EQ(r.getValue().database(), "admin");
}

TEST(OpQuery, ExistingDbFieldIsReplacedByNamespace) {
    auto r = opQueryToOpMsgRequest(
        parseOpQuery(query("admin.$cmd", fromJson(R"({"hello": 1, "$db": "other"})")).finish())
            .getValue());
    ASSERT_TRUE(r.isOK());
    EXPECT_EQ(r.getValue().database(), "admin");
    EXPECT_EQ(r.getValue().body.nFields(), 2u);
}

TEST(OpQuery, OnlyHandshakeCommandsOnCmdNamespacesAreAccepted) {
    for (const char* cmd : {"hello", "isMaster", "ismaster", "authenticate", "getnonce"}) {
        bson::BsonObj q = fromJson(std::string(R"({")") + cmd + R"(": 1})");
        auto r = opQueryToOpMsgRequest(parseOpQuery(query("admin.$cmd", q).finish()).getValue());
        EXPECT_TRUE(r.isOK()) << cmd;
    }
    auto find = opQueryToOpMsgRequest(
        parseOpQuery(query("test.$cmd", fromJson(R"({"find": "c"})")).finish()).getValue());
    EXPECT_TRUE(find.getStatus().is(ErrorCodes::UnsupportedOpQueryCommand));
    auto empty = opQueryToOpMsgRequest(
        parseOpQuery(query("admin.$cmd", fromJson("{}")).finish()).getValue());
    EXPECT_TRUE(empty.getStatus().is(ErrorCodes::UnsupportedOpQueryCommand));
    for (const char* ns : {"test.coll", "$cmd", ".$cmd", "admin"}) {
        auto r = opQueryToOpMsgRequest(
            parseOpQuery(query(ns, fromJson(R"({"hello": 1})")).finish()).getValue());
        EXPECT_TRUE(r.getStatus().is(ErrorCodes::UnsupportedOpQueryCommand)) << ns;
    }
}

TEST(OpQuery, MalformedMessagesAreFramingErrors) {
    bson::BsonObj q = fromJson(R"({"hello": 1})");
    auto status = [](Message m) { return parseOpQuery(std::move(m)).getStatus(); };
    {
        RawMessage m(OpCode::kQuery);
        m.raw("ab");
        EXPECT_TRUE(status(m.finish()).is(ErrorCodes::ProtocolError));
    }
    {
        RawMessage m(OpCode::kQuery);
        m.int32(0).raw("admin.$cmd");  // no NUL
        EXPECT_TRUE(status(m.finish()).is(ErrorCodes::ProtocolError));
    }
    {
        RawMessage m(OpCode::kQuery);
        m.int32(0).cstring("admin.$cmd").int32(0);  // no numberToReturn
        EXPECT_TRUE(status(m.finish()).is(ErrorCodes::ProtocolError));
    }
    {
        RawMessage m(OpCode::kQuery);
        m.int32(0).cstring("admin.$cmd").int32(0).int32(1);  // no query
        EXPECT_TRUE(status(m.finish()).is(ErrorCodes::ProtocolError));
    }
    {
        RawMessage m(OpCode::kQuery);
        m.int32(0).cstring("admin.$cmd").int32(0).int32(1).raw(q.bytes().substr(0, 8));
        EXPECT_TRUE(status(m.finish()).is(ErrorCodes::ProtocolError));
    }
    EXPECT_TRUE(status(query("admin.$cmd", q).raw("xyz").finish()).is(ErrorCodes::ProtocolError));
    std::string bad(q.bytes());
    bad[4] = 0x7A;
    {
        RawMessage m(OpCode::kQuery);
        m.int32(0).cstring("admin.$cmd").int32(0).int32(1).raw(bad);
        EXPECT_TRUE(status(m.finish()).is(ErrorCodes::InvalidBSON));
    }
    // messageLength disagreeing with the bytes.
    Message good = query("admin.$cmd", q).finish();
    std::string shortened(good.bytes());
    shortened.pop_back();
    EXPECT_TRUE(status(Message::fromBytes(shortened)).is(ErrorCodes::ProtocolError));
}

TEST(OpReply, RoundTrip) {
    bson::BsonObj doc = fromJson(R"({"ismaster": true, "maxWireVersion": 25, "ok": 1.0})");
    Message m = buildOpReply(500, 11, doc);
    EXPECT_EQ(m.opCode(), OpCode::kReply);
    EXPECT_EQ(m.header().messageLength, static_cast<int32_t>(m.size()));
    auto r = parseOpReply(m);
    ASSERT_TRUE(r.isOK()) << r.getStatus().toString();
    EXPECT_EQ(r.getValue().responseTo, 11);
    EXPECT_EQ(r.getValue().responseFlags, kResultFlagAwaitCapable);
    EXPECT_EQ(r.getValue().cursorId, 0);
    EXPECT_EQ(r.getValue().startingFrom, 0);
    EXPECT_EQ(r.getValue().numberReturned, 1);
    ASSERT_EQ(r.getValue().documents.size(), 1u);
    EXPECT_EQ(r.getValue().documents[0], doc.view());

    std::string bytes(m.bytes());
    bytes[32] = 2;  // numberReturned disagrees
    EXPECT_FALSE(parseOpReply(Message::fromBytes(bytes)).isOK());
}

}  // namespace
}  // namespace tessera::wire
