#include "wire/message.h"

#include <gtest/gtest.h>

namespace tessera::wire {
namespace {

std::array<uint8_t, kHeaderSize> header(int32_t len, int32_t op = 2013) {
    std::array<uint8_t, kHeaderSize> h{};
    writeHeader({len, 5, 6, op}, h.data());
    return h;
}

TEST(MsgHeader, RoundTrip) {
    auto h = header(100, 2004);
    auto parsed = parseHeader(h.data());
    ASSERT_TRUE(parsed.isOK()) << parsed.getStatus().toString();
    EXPECT_EQ(parsed.getValue().messageLength, 100);
    EXPECT_EQ(parsed.getValue().requestId, 5);
    EXPECT_EQ(parsed.getValue().responseTo, 6);
    EXPECT_EQ(parsed.getValue().opCode, 2004);
}

TEST(MsgHeader, LengthLimits) {
    EXPECT_TRUE(parseHeader(header(16).data()).isOK());
    EXPECT_TRUE(parseHeader(header(kMaxMessageSizeBytes).data()).isOK());
    for (int32_t bad : {0, 15, -1, -16, INT32_MIN, kMaxMessageSizeBytes + 1, INT32_MAX}) {
        auto parsed = parseHeader(header(bad).data());
        ASSERT_FALSE(parsed.isOK()) << bad;
        EXPECT_TRUE(parsed.getStatus().is(ErrorCodes::ProtocolError));
    }
}

TEST(Message, FromBytesCopiesAndSharesOnCopy) {
    auto h = header(16, 1);
    Message m = Message::fromBytes({reinterpret_cast<const char*>(h.data()), h.size()});
    ASSERT_EQ(m.size(), 16u);
    EXPECT_EQ(m.opCode(), OpCode::kReply);
    Message copy = m;
    EXPECT_EQ(copy.data(), m.data());
    EXPECT_TRUE(Message().empty());
}

}  // namespace
}  // namespace tessera::wire
