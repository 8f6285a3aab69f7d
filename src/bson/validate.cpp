#include "bson/validate.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "bson/bson_obj.h"
#include "bson/bson_types.h"

namespace tessera::bson {
namespace {

Status invalid(const std::string& why) {
    return Status(ErrorCodes::InvalidBSON, "Invalid BSON: " + why);
}

// Whether [p, p + n) is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
// above U+10FFFF; NUL allowed — BSON strings carry their length). ASCII, the common case, is
// checked eight bytes at a time.
bool isValidUtf8(const uint8_t* p, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t word;
            std::memcpy(&word, p + i, 8);
            if ((word & 0x8080808080808080ULL) == 0) {
                i += 8;
                continue;
            }
        }
        uint8_t c = p[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        size_t len;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            cp = c & 0x07;
        } else {
            return false;  // a continuation byte, an overlong lead (C0, C1) or F5..FF
        }
        if (i + len > n) return false;
        for (size_t k = 1; k < len; ++k) {
            uint8_t cc = p[i + k];
            if ((cc & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (cc & 0x3F);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) {
            return false;
        }
        i += len;
    }
    return true;
}

bool readInt32(const uint8_t* data, size_t pos, size_t limit, int32_t* out) {
    if (pos + 4 > limit) return false;
    std::memcpy(out, data + pos, 4);
    return true;
}

// Validates the document at [start, start + length) iteratively. Each frame is one open document;
// the stack never exceeds maxDepth frames, so hostile nesting costs no native stack. `utf8`:
// field names must be valid UTF-8 too (what libbson's bson_validate, used before, checked; string
// values are taken as they are, as mongod does).
Status validateAt(const uint8_t* data, size_t start, size_t limit, int depth, int maxDepth,
                  bool utf8) {
    struct Frame {
        size_t end;  // one past the document's terminating NUL
    };
    std::vector<Frame> stack;
    int32_t len;
    if (!readInt32(data, start, limit, &len) || len < 5 || start + len > limit) {
        return invalid("document length out of bounds");
    }
    if (depth > maxDepth) {
        return Status(ErrorCodes::Overflow,
                      "BSON nesting depth exceeds " + std::to_string(maxDepth));
    }
    stack.push_back({start + static_cast<size_t>(len)});
    size_t pos = start + 4;
    while (!stack.empty()) {
        size_t end = stack.back().end;
        if (pos >= end) return invalid("document is not terminated");
        uint8_t typeByte = data[pos];
        if (typeByte == 0) {
            if (pos != end - 1) return invalid("document terminator before its declared end");
            ++pos;
            stack.pop_back();
            continue;
        }
        ++pos;
        if (pos >= end) return invalid("document is not terminated");
        const void* nul = std::memchr(data + pos, 0, end - 1 - pos);
        if (!nul) return invalid("field name is not terminated");
        const size_t nameEnd = static_cast<const uint8_t*>(nul) - data;
        if (utf8 && !isValidUtf8(data + pos, nameEnd - pos)) {
            return invalid("field name is not valid UTF-8");
        }
        pos = nameEnd + 1;
        const size_t valueLimit = end - 1;  // the document's own terminator follows the values
        auto need = [&](size_t n) { return pos + n <= valueLimit; };
        switch (static_cast<BsonType>(static_cast<int8_t>(typeByte))) {
            case BsonType::Double:
            case BsonType::Date:
            case BsonType::Timestamp:
            case BsonType::Int64:
                if (!need(8)) return invalid("truncated 8-byte value");
                pos += 8;
                break;
            case BsonType::Int32:
                if (!need(4)) return invalid("truncated int32");
                pos += 4;
                break;
            case BsonType::Decimal128:
                if (!need(16)) return invalid("truncated decimal128");
                pos += 16;
                break;
            case BsonType::ObjectId:
                if (!need(12)) return invalid("truncated ObjectId");
                pos += 12;
                break;
            case BsonType::Bool:
                if (!need(1)) return invalid("truncated bool");
                if (data[pos] > 1) return invalid("bool is neither 0 nor 1");
                pos += 1;
                break;
            case BsonType::Undefined:
            case BsonType::Null:
            case BsonType::MinKey:
            case BsonType::MaxKey:
                break;
            case BsonType::String:
            case BsonType::Code:
            case BsonType::Symbol: {
                int32_t sl;
                if (!readInt32(data, pos, valueLimit, &sl) || sl < 1 || !need(4 + size_t(sl))) {
                    return invalid("string length out of bounds");
                }
                if (data[pos + 4 + sl - 1] != 0) return invalid("string is not NUL-terminated");
                pos += 4 + sl;
                break;
            }
            case BsonType::BinData: {
                int32_t bl;
                if (!readInt32(data, pos, valueLimit, &bl) || bl < 0 || !need(5 + size_t(bl))) {
                    return invalid("binary length out of bounds");
                }
                pos += 5 + bl;
                break;
            }
            case BsonType::Regex:
                for (int part = 0; part < 2; ++part) {
                    const void* z =
                        pos < valueLimit ? std::memchr(data + pos, 0, valueLimit - pos) : nullptr;
                    if (!z) return invalid("regex is not terminated");
                    pos = static_cast<const uint8_t*>(z) - data + 1;
                }
                break;
            case BsonType::DBPointer: {
                int32_t sl;
                if (!readInt32(data, pos, valueLimit, &sl) || sl < 1 ||
                    !need(4 + size_t(sl) + 12)) {
                    return invalid("DBPointer out of bounds");
                }
                if (data[pos + 4 + sl - 1] != 0) return invalid("DBPointer namespace unterminated");
                pos += 4 + sl + 12;
                break;
            }
            case BsonType::CodeWScope: {
                int32_t total, sl;
                if (!readInt32(data, pos, valueLimit, &total) || total < 14 ||
                    !need(size_t(total))) {
                    return invalid("code with scope out of bounds");
                }
                if (!readInt32(data, pos + 4, pos + total, &sl) || sl < 1 ||
                    size_t(8) + sl + 5 > size_t(total) || data[pos + 8 + sl - 1] != 0) {
                    return invalid("code with scope string out of bounds");
                }
                size_t scope = pos + 8 + sl;
                int32_t scopeLen;
                if (!readInt32(data, scope, pos + total, &scopeLen) ||
                    scope + scopeLen != pos + size_t(total)) {
                    return invalid("code with scope length mismatch");
                }
                // Bounded recursion: depth grows by one per call and is capped by maxDepth.
                int frameDepth = depth + static_cast<int>(stack.size());
                TRY_STATUS(validateAt(data, scope, pos + total, frameDepth, maxDepth, utf8));
                pos += total;
                break;
            }
            case BsonType::Object:
            case BsonType::Array: {
                int32_t dl;
                if (!readInt32(data, pos, valueLimit, &dl) || dl < 5 || !need(size_t(dl))) {
                    return invalid("embedded document length out of bounds");
                }
                if (depth + static_cast<int>(stack.size()) > maxDepth) {
                    return Status(ErrorCodes::Overflow,
                                  "BSON nesting depth exceeds " + std::to_string(maxDepth));
                }
                stack.push_back({pos + static_cast<size_t>(dl)});
                pos += 4;
                break;
            }
            default:
                return invalid("unknown BSON type " + std::to_string(static_cast<int>(typeByte)));
        }
    }
    return Status::OK();
}

Status validateDocument(const uint8_t* data, size_t len, int maxDepth, bool utf8) {
    maxDepth = std::min(maxDepth, kMaxParseDepth);
    if (len < 5) return invalid("document shorter than 5 bytes");
    int32_t declared;
    std::memcpy(&declared, data, 4);
    if (declared < 5 || static_cast<size_t>(declared) != len) {
        return invalid("declared length " + std::to_string(declared) + " but " +
                       std::to_string(len) + " bytes");
    }
    return validateAt(data, 0, len, 1, maxDepth, utf8);
}

}  // namespace

Status validateBsonStructure(const uint8_t* data, size_t len, int maxDepth) {
    return validateDocument(data, len, maxDepth, /*utf8=*/false);
}

Status validateBson(const uint8_t* data, size_t len, int maxDepth) {
    // One pass: the structure and the UTF-8 of every field name (libbson's bson_validate, the
    // earlier second pass over the same bytes, cost as much again).
    return validateDocument(data, len, maxDepth, /*utf8=*/true);
}

int documentDepth(const uint8_t* data) {
    int deepest = 0;
    for (BsonElement e : BsonView(data)) {
        if (e.type() == BsonType::Object || e.type() == BsonType::Array) {
            deepest = std::max(deepest, documentDepth(e.value()));
        }
    }
    return 1 + deepest;
}

}  // namespace tessera::bson
