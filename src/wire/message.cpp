#include "wire/message.h"

#include <string>

namespace tessera::wire {

StatusWith<MsgHeader> parseHeader(const uint8_t* data) {
    MsgHeader h;
    h.messageLength = readInt32LE(data);
    h.requestId = readInt32LE(data + 4);
    h.responseTo = readInt32LE(data + 8);
    h.opCode = readInt32LE(data + 12);
    if (h.messageLength < static_cast<int32_t>(kHeaderSize) ||
        h.messageLength > kMaxMessageSizeBytes) {
        return Status(ErrorCodes::ProtocolError,
                      "message length " + std::to_string(h.messageLength) + " is invalid: min " +
                          std::to_string(kHeaderSize) + ", max " +
                          std::to_string(kMaxMessageSizeBytes));
    }
    return h;
}

void writeHeader(const MsgHeader& header, uint8_t* out) {
    writeInt32LE(out, header.messageLength);
    writeInt32LE(out + 4, header.requestId);
    writeInt32LE(out + 8, header.responseTo);
    writeInt32LE(out + 12, header.opCode);
}

Message Message::allocate(size_t size) {
    Message m;
    m._buf = std::make_shared_for_overwrite<uint8_t[]>(size);
    m._size = size;
    return m;
}

Message Message::fromBytes(std::string_view bytes) {
    Message m = allocate(bytes.size());
    if (!bytes.empty()) std::memcpy(m._buf.get(), bytes.data(), bytes.size());
    return m;
}

MsgHeader Message::header() const {
    invariant(_size >= kHeaderSize);
    MsgHeader h;
    h.messageLength = readInt32LE(data());
    h.requestId = readInt32LE(data() + 4);
    h.responseTo = readInt32LE(data() + 8);
    h.opCode = readInt32LE(data() + 12);
    return h;
}

}  // namespace tessera::wire
