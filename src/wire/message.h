#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

#include "base/status.h"

namespace tessera::wire {

// MongoDB wire protocol opcodes
// (https://www.mongodb.com/docs/manual/reference/mongodb-wire-protocol/).
enum class OpCode : int32_t {
    kReply = 1,
    kUpdate = 2001,
    kInsert = 2002,
    kQuery = 2004,
    kGetMore = 2005,
    kDelete = 2006,
    kKillCursors = 2007,
    kCompressed = 2012,
    kMsg = 2013,
};

constexpr size_t kHeaderSize = 16;
// maxMessageSizeBytes advertised in hello; no message (request or reply) is larger.
constexpr int32_t kMaxMessageSizeBytes = 48'000'000;

// The 16-byte header every message starts with (all fields little-endian int32).
struct MsgHeader {
    int32_t messageLength = 0;  // whole message, header included
    int32_t requestId = 0;
    int32_t responseTo = 0;
    int32_t opCode = 0;
};

// Decodes the header at `data` (at least kHeaderSize bytes) and checks its length:
// kHeaderSize <= messageLength <= kMaxMessageSizeBytes, else ProtocolError. The opcode is not
// checked here (callers decide which opcodes they serve).
StatusWith<MsgHeader> parseHeader(const uint8_t* data);

// Writes `header` at `out` (kHeaderSize bytes).
void writeHeader(const MsgHeader& header, uint8_t* out);

// Little-endian helpers (x86-64 and aarch64 are little-endian, as is the protocol).
inline int32_t readInt32LE(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline uint32_t readUInt32LE(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline int64_t readInt64LE(const uint8_t* p) {
    int64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void writeInt32LE(uint8_t* p, int32_t v) { std::memcpy(p, &v, sizeof v); }
inline void writeUInt32LE(uint8_t* p, uint32_t v) { std::memcpy(p, &v, sizeof v); }

// One whole message (header included) in a shared, heap-allocated buffer. Copies share the
// bytes, so parse results (views into the buffer) stay valid as long as any copy lives. The bytes
// may be written only while the message is being filled (before it is parsed or shared).
class Message {
  public:
    Message() = default;
    // A buffer of `size` uninitialised bytes for a reader to fill.
    static Message allocate(size_t size);
    // A copy of `bytes`.
    static Message fromBytes(std::string_view bytes);

    bool empty() const { return _size == 0; }
    const uint8_t* data() const { return _buf.get(); }
    uint8_t* mutableData() { return _buf.get(); }
    size_t size() const { return _size; }
    std::string_view bytes() const { return {reinterpret_cast<const char*>(data()), _size}; }

    // The buffer, shared (for results that keep pointing into the message, e.g. a document).
    std::shared_ptr<const uint8_t[]> sharedBuffer() const { return _buf; }

    // The decoded header; requires size() >= kHeaderSize.
    MsgHeader header() const;
    OpCode opCode() const { return static_cast<OpCode>(header().opCode); }

  private:
    std::shared_ptr<uint8_t[]> _buf;
    size_t _size = 0;
};

}  // namespace tessera::wire
