#pragma once

// Test helper: assembles raw (possibly malformed) wire messages byte by byte.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "bson/bson_obj.h"
#include "wire/crc32c.h"
#include "wire/message.h"

namespace tessera::wire::test {

class RawMessage {
  public:
    explicit RawMessage(OpCode op, int32_t requestId = 7, int32_t responseTo = 0) {
        _bytes.resize(kHeaderSize);
        writeInt32At(4, requestId);
        writeInt32At(8, responseTo);
        writeInt32At(12, static_cast<int32_t>(op));
    }
    RawMessage& int32(int32_t v) {
        _bytes.append(reinterpret_cast<const char*>(&v), 4);
        return *this;
    }
    RawMessage& uint32(uint32_t v) {
        _bytes.append(reinterpret_cast<const char*>(&v), 4);
        return *this;
    }
    RawMessage& byte(uint8_t v) {
        _bytes.push_back(static_cast<char>(v));
        return *this;
    }
    RawMessage& raw(std::string_view v) {
        _bytes.append(v);
        return *this;
    }
    RawMessage& cstring(std::string_view v) {
        _bytes.append(v);
        _bytes.push_back('\0');
        return *this;
    }
    RawMessage& doc(const bson::BsonView& d) { return raw(d.bytes()); }
    // Offset of the next byte (to patch sizes later).
    size_t pos() const { return _bytes.size(); }
    RawMessage& patchInt32(size_t at, int32_t v) {
        writeInt32At(at, v);
        return *this;
    }
    // Sets messageLength to the current size (and appends the CRC-32C first when asked).
    Message finish(bool appendChecksum = false) {
        if (appendChecksum) {
            writeInt32At(0, static_cast<int32_t>(_bytes.size() + 4));
            uint32(crc32c(_bytes.data(), _bytes.size()));
        } else {
            writeInt32At(0, static_cast<int32_t>(_bytes.size()));
        }
        return Message::fromBytes(_bytes);
    }
    std::string& bytes() { return _bytes; }

  private:
    void writeInt32At(size_t at, int32_t v) { std::memcpy(_bytes.data() + at, &v, 4); }
    std::string _bytes;
};

}  // namespace tessera::wire::test
