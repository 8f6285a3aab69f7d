#include "keystring/keystring.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "bson/bson_builder.h"
#include "keystring/exact_number.h"

// Format (see README.md in this folder). A component is `tag body`; tags are canonical-type
// ranks, all in [0x01, 0x7f], so a descending (inverted) component starts with a byte >= 0x80.
namespace tessera::keystring {
namespace {

using bson::BsonElement;
using bson::BsonType;

enum Tag : uint8_t {
    kEnd = 0x00,  // end of an object/array body
    kMinKey = 0x0a,
    kUndefined = 0x0f,  // also "missing" (EOO): canonical rank 0, below null
    kNull = 0x14,
    kNumber = 0x1e,
    kString = 0x28,  // and Symbol
    kObject = 0x32,
    kArray = 0x3c,
    kBinData = 0x46,
    kObjectId = 0x50,
    kBool = 0x5a,
    kDate = 0x5f,
    kTimestamp = 0x64,
    kRegex = 0x69,
    kDBPointer = 0x6e,
    kCode = 0x73,
    kCodeWScope = 0x78,
    kMaxKey = 0x7d,
};

constexpr int kMaxDepth = 200;

uint8_t tagOf(BsonType t) {
    switch (t) {
        case BsonType::MinKey:
            return kMinKey;
        case BsonType::EOO:
        case BsonType::Undefined:
            return kUndefined;
        case BsonType::Null:
            return kNull;
        case BsonType::Double:
        case BsonType::Int32:
        case BsonType::Int64:
        case BsonType::Decimal128:
            return kNumber;
        case BsonType::String:
        case BsonType::Symbol:
            return kString;
        case BsonType::Object:
            return kObject;
        case BsonType::Array:
            return kArray;
        case BsonType::BinData:
            return kBinData;
        case BsonType::ObjectId:
            return kObjectId;
        case BsonType::Bool:
            return kBool;
        case BsonType::Date:
            return kDate;
        case BsonType::Timestamp:
            return kTimestamp;
        case BsonType::Regex:
            return kRegex;
        case BsonType::DBPointer:
            return kDBPointer;
        case BsonType::Code:
            return kCode;
        case BsonType::CodeWScope:
            return kCodeWScope;
        case BsonType::MaxKey:
            return kMaxKey;
    }
    return kUndefined;
}

void putU64(std::string& out, uint64_t v) {
    for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}

void putU32(std::string& out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}

// Bytes with 0x00 escaped as 00 ff, terminated by 00 00: prefix-free and order-preserving.
void putEscaped(std::string& out, std::string_view s) {
    for (char c : s) {
        out.push_back(c);
        if (c == 0) out.push_back(static_cast<char>(0xff));
    }
    out.push_back(0);
    out.push_back(0);
}

// A C string (field name, regex pattern/options): cannot contain NUL, so one 00 terminates it.
void putCString(std::string& out, std::string_view s) {
    out.append(s);
    out.push_back(0);
}

uint64_t orderedDoubleBits(double d) {
    if (d == 0) d = 0.0;
    uint64_t bits = std::bit_cast<uint64_t>(d);
    return (bits >> 63) ? ~bits : bits ^ (uint64_t{1} << 63);
}

double doubleFromOrderedBits(uint64_t bits) {
    bits = (bits >> 63) ? bits ^ (uint64_t{1} << 63) : ~bits;
    return std::bit_cast<double>(bits);
}

// The exact tie-breaker of a number that is not a double: exponent, then digit pairs (1..100),
// then 00; inverted for negative numbers so that larger magnitudes sort first.
void putExactTail(std::string& out, const ExactDecimal& x) {
    size_t start = out.size();
    uint16_t exp = static_cast<uint16_t>(static_cast<int32_t>(x.exponent) + 0x8000);
    out.push_back(static_cast<char>(exp >> 8));
    out.push_back(static_cast<char>(exp & 0xff));
    for (size_t i = 0; i < x.digits.size(); i += 2) {
        int hi = x.digits[i] - '0';
        int lo = i + 1 < x.digits.size() ? x.digits[i + 1] - '0' : 0;
        out.push_back(static_cast<char>(hi * 10 + lo + 1));
    }
    out.push_back(0);
    if (x.negative) {
        for (size_t i = start; i < out.size(); ++i) out[i] = static_cast<char>(~out[i]);
    }
}

// Number body: 8 bytes of the largest double <= x (order-preserving bits; NaN is all zeros,
// below -inf), then 00 when x is exactly that double, or 01 + the exact tail otherwise.
void putNumber(std::string& out, const BsonElement& e) {
    switch (e.type()) {
        case BsonType::Int32:
            putU64(out, orderedDoubleBits(e.int32Value()));
            out.push_back(0);
            return;
        case BsonType::Double: {
            double d = e.doubleValue();
            putU64(out, std::isnan(d) ? 0 : orderedDoubleBits(d));
            out.push_back(0);
            return;
        }
        case BsonType::Int64: {
            int64_t v = e.int64Value();
            DoubleFloor f = doubleFloorOfInt64(v);
            putU64(out, orderedDoubleBits(f.floor));
            if (f.exact) {
                out.push_back(0);
            } else {
                out.push_back(1);
                putExactTail(out, ExactDecimal::fromInt64(v));
            }
            return;
        }
        case BsonType::Decimal128: {
            bson::Decimal128 d = e.decimalValue();
            if (d.isNaN()) {
                putU64(out, 0);
                out.push_back(0);
                return;
            }
            if (d.isInfinite()) {
                double inf = std::numeric_limits<double>::infinity();
                putU64(out, orderedDoubleBits(d.isNegative() ? -inf : inf));
                out.push_back(0);
                return;
            }
            ExactDecimal x = ExactDecimal::fromDecimal128(d);
            DoubleFloor f = doubleFloorOfDecimal(x);
            putU64(out, orderedDoubleBits(f.floor));
            if (f.exact) {
                out.push_back(0);
            } else {
                out.push_back(1);
                putExactTail(out, x);
            }
            return;
        }
        default:
            invariant(false);
    }
}

void putObjectBody(std::string& out, bson::BsonView obj, bool withNames);

// Appends the body of `e` (everything after its tag).
void putBody(std::string& out, const BsonElement& e) {
    switch (e.type()) {
        case BsonType::MinKey:
        case BsonType::MaxKey:
        case BsonType::EOO:
        case BsonType::Undefined:
        case BsonType::Null:
            return;
        case BsonType::Double:
        case BsonType::Int32:
        case BsonType::Int64:
        case BsonType::Decimal128:
            putNumber(out, e);
            return;
        case BsonType::String:
        case BsonType::Symbol:
        case BsonType::Code:
            putEscaped(out, e.stringValue());
            return;
        case BsonType::Object:
            putObjectBody(out, e.objValue(), true);
            return;
        case BsonType::Array:
            putObjectBody(out, e.objValue(), false);
            return;
        case BsonType::BinData: {
            auto bin = e.binaryValue();
            putU32(out, static_cast<uint32_t>(bin.data.size()));
            out.push_back(static_cast<char>(bin.subtype));
            out.append(bin.data);
            return;
        }
        case BsonType::ObjectId:
            out.append(reinterpret_cast<const char*>(e.value()), 12);
            return;
        case BsonType::Bool:
            out.push_back(e.boolValue() ? 1 : 0);
            return;
        case BsonType::Date:
            putU64(out, static_cast<uint64_t>(e.dateValue()) ^ (uint64_t{1} << 63));
            return;
        case BsonType::Timestamp:
            putU64(out, e.timestampValue());
            return;
        case BsonType::Regex: {
            auto re = e.regexValue();
            putCString(out, re.pattern);
            putCString(out, re.options);
            return;
        }
        case BsonType::DBPointer: {
            auto p = e.dbPointerValue();
            putU32(out, static_cast<uint32_t>(p.ns.size()));
            out.append(p.ns);
            out.append(reinterpret_cast<const char*>(p.oid.bytes), 12);
            return;
        }
        case BsonType::CodeWScope:
            putEscaped(out, e.stringValue());
            putObjectBody(out, e.objValue(), true);
            return;
    }
}

// Object: (tag name 00 body)* 00. Array: (tag body)* 00 — array field names are "0", "1", ...
// in every array Tessera accepts, so they carry no order information and are not stored.
void putObjectBody(std::string& out, bson::BsonView obj, bool withNames) {
    for (const BsonElement& e : obj) {
        out.push_back(static_cast<char>(tagOf(e.type())));
        if (withNames) putCString(out, e.fieldName());
        putBody(out, e);
    }
    out.push_back(kEnd);
}

void invertFrom(std::string& s, size_t start) {
    for (size_t i = start; i < s.size(); ++i) s[i] = static_cast<char>(~s[i]);
}

void appendComponent(std::string& out, const BsonElement& value, bool descending) {
    size_t start = out.size();
    out.push_back(static_cast<char>(tagOf(value.type())));
    putBody(out, value);
    if (descending) invertFrom(out, start);
}

void appendTagOnly(std::string& out, uint8_t tag, bool descending) {
    out.push_back(static_cast<char>(descending ? static_cast<uint8_t>(~tag) : tag));
}

// ---- decoding ----

Status notAKey(const std::string& why) {
    return Status(ErrorCodes::BadValue, "invalid keystring: " + why);
}

class Reader {
  public:
    Reader(std::string_view key, size_t pos) : _key(key), _pos(pos) {}
    void setInverted(bool inverted) { _mask = inverted ? 0xff : 0; }
    bool inverted() const { return _mask != 0; }
    size_t pos() const { return _pos; }
    bool atEnd() const { return _pos >= _key.size(); }

    StatusWith<uint8_t> byte() {
        if (_pos >= _key.size()) return notAKey("truncated");
        return static_cast<uint8_t>(static_cast<uint8_t>(_key[_pos++]) ^ _mask);
    }
    StatusWith<uint64_t> u64() {
        uint64_t v = 0;
        for (int i = 0; i < 8; ++i) {
            ASSIGN_OR_RETURN(uint8_t b, byte());
            v = (v << 8) | b;
        }
        return v;
    }
    StatusWith<uint32_t> u32() {
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i) {
            ASSIGN_OR_RETURN(uint8_t b, byte());
            v = (v << 8) | b;
        }
        return v;
    }
    StatusWith<std::string> bytes(size_t n) {
        if (_key.size() - _pos < n) return notAKey("truncated");
        std::string out(_key.substr(_pos, n));
        for (char& c : out) c = static_cast<char>(static_cast<uint8_t>(c) ^ _mask);
        _pos += n;
        return out;
    }
    StatusWith<std::string> escaped() {
        std::string out;
        while (true) {
            ASSIGN_OR_RETURN(uint8_t b, byte());
            if (b != 0) {
                out.push_back(static_cast<char>(b));
                continue;
            }
            ASSIGN_OR_RETURN(uint8_t next, byte());
            if (next == 0) return out;
            if (next != 0xff) return notAKey("bad string escape");
            out.push_back(0);
        }
    }
    StatusWith<std::string> cstring() {
        std::string out;
        while (true) {
            ASSIGN_OR_RETURN(uint8_t b, byte());
            if (b == 0) return out;
            out.push_back(static_cast<char>(b));
        }
    }

  private:
    std::string_view _key;
    size_t _pos;
    uint8_t _mask = 0;
};

void appendLE32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }

// Appends a hand-built element (type, name, raw value bytes) to `b`: for the types BsonBuilder
// has no appender for (DBPointer, CodeWScope).
void appendRawElement(bson::BsonBuilder& b, std::string_view name, BsonType type,
                      std::string_view value) {
    std::string doc;
    appendLE32(doc, 0);
    doc.push_back(static_cast<char>(type));
    doc.push_back(0);  // empty name; renamed below
    doc.append(value);
    doc.push_back(0);
    uint32_t len = static_cast<uint32_t>(doc.size());
    std::memcpy(doc.data(), &len, 4);
    bson::BsonView view(doc.data());
    b.appendElementAs(view.firstElement(), name);
}

Status decodeNumber(Reader& r, bson::BsonBuilder& b, std::string_view name) {
    ASSIGN_OR_RETURN(uint64_t bits, r.u64());
    ASSIGN_OR_RETURN(uint8_t exactness, r.byte());
    if (bits == 0) {
        if (exactness != 0) return notAKey("bad NaN");
        b.appendDouble(name, std::numeric_limits<double>::quiet_NaN());
        return Status::OK();
    }
    double floor = doubleFromOrderedBits(bits);
    if (std::isnan(floor)) return notAKey("bad number");
    if (exactness == 0) {
        if (std::trunc(floor) == floor && floor >= -2147483648.0 && floor <= 2147483647.0) {
            b.appendInt32(name, static_cast<int32_t>(floor));
        } else if (std::trunc(floor) == floor && floor >= -9223372036854775808.0 &&
                   floor < 9223372036854775808.0) {
            b.appendInt64(name, static_cast<int64_t>(floor));
        } else {
            b.appendDouble(name, floor);
        }
        return Status::OK();
    }
    if (exactness != 1) return notAKey("bad number exactness byte");
    bool negative = floor < 0;
    bool wasInverted = r.inverted();
    if (negative) r.setInverted(!wasInverted);
    ExactDecimal x;
    x.negative = negative;
    ASSIGN_OR_RETURN(uint8_t e0, r.byte());
    ASSIGN_OR_RETURN(uint8_t e1, r.byte());
    x.exponent = static_cast<int32_t>((uint32_t{e0} << 8) | e1) - 0x8000;
    while (true) {
        ASSIGN_OR_RETURN(uint8_t pair, r.byte());
        if (pair == 0) break;
        if (pair > 100) return notAKey("bad digit pair");
        x.digits.push_back(static_cast<char>('0' + (pair - 1) / 10));
        x.digits.push_back(static_cast<char>('0' + (pair - 1) % 10));
    }
    r.setInverted(wasInverted);
    while (!x.digits.empty() && x.digits.back() == '0') x.digits.pop_back();
    if (x.digits.empty() || x.digits.size() > 34) return notAKey("bad number digits");
    if (auto v = x.toInt64()) {
        b.appendInt64(name, *v);
    } else {
        b.appendDecimal(name, bson::Decimal128::fromString(x.toDecimalString()));
    }
    return Status::OK();
}

Status decodeObjectBody(Reader& r, bson::BsonBuilder& b, bool withNames, int depth);

// Decodes the body after `tag` and appends it to `b` as field `name`.
Status decodeBody(Reader& r, uint8_t tag, bson::BsonBuilder& b, std::string_view name, int depth) {
    if (depth > kMaxDepth) return notAKey("nested too deeply");
    switch (tag) {
        case kMinKey:
            b.appendMinKey(name);
            return Status::OK();
        case kMaxKey:
            b.appendMaxKey(name);
            return Status::OK();
        case kUndefined:
            b.appendUndefined(name);
            return Status::OK();
        case kNull:
            b.appendNull(name);
            return Status::OK();
        case kNumber:
            return decodeNumber(r, b, name);
        case kString: {
            ASSIGN_OR_RETURN(std::string s, r.escaped());
            b.appendString(name, s);
            return Status::OK();
        }
        case kCode: {
            ASSIGN_OR_RETURN(std::string s, r.escaped());
            b.appendCode(name, s);
            return Status::OK();
        }
        case kObject:
            b.startObject(name);
            TRY_STATUS(decodeObjectBody(r, b, true, depth + 1));
            b.end();
            return Status::OK();
        case kArray:
            b.startArray(name);
            TRY_STATUS(decodeObjectBody(r, b, false, depth + 1));
            b.end();
            return Status::OK();
        case kBinData: {
            ASSIGN_OR_RETURN(uint32_t len, r.u32());
            ASSIGN_OR_RETURN(uint8_t subtype, r.byte());
            ASSIGN_OR_RETURN(std::string data, r.bytes(len));
            b.appendBinary(name, subtype, data);
            return Status::OK();
        }
        case kObjectId: {
            ASSIGN_OR_RETURN(std::string raw, r.bytes(12));
            bson::ObjectId oid;
            std::memcpy(oid.bytes, raw.data(), 12);
            b.appendOid(name, oid);
            return Status::OK();
        }
        case kBool: {
            ASSIGN_OR_RETURN(uint8_t v, r.byte());
            if (v > 1) return notAKey("bad bool");
            b.appendBool(name, v == 1);
            return Status::OK();
        }
        case kDate: {
            ASSIGN_OR_RETURN(uint64_t v, r.u64());
            b.appendDate(name, static_cast<int64_t>(v ^ (uint64_t{1} << 63)));
            return Status::OK();
        }
        case kTimestamp: {
            ASSIGN_OR_RETURN(uint64_t v, r.u64());
            b.appendTimestamp(name, v);
            return Status::OK();
        }
        case kRegex: {
            ASSIGN_OR_RETURN(std::string pattern, r.cstring());
            ASSIGN_OR_RETURN(std::string options, r.cstring());
            b.appendRegex(name, pattern, options);
            return Status::OK();
        }
        case kDBPointer: {
            ASSIGN_OR_RETURN(uint32_t len, r.u32());
            ASSIGN_OR_RETURN(std::string ns, r.bytes(len));
            ASSIGN_OR_RETURN(std::string oid, r.bytes(12));
            std::string value;
            appendLE32(value, len + 1);
            value += ns;
            value.push_back(0);
            value += oid;
            appendRawElement(b, name, BsonType::DBPointer, value);
            return Status::OK();
        }
        case kCodeWScope: {
            ASSIGN_OR_RETURN(std::string code, r.escaped());
            bson::BsonBuilder scope;
            TRY_STATUS(decodeObjectBody(r, scope, true, depth + 1));
            bson::BsonObj scopeObj = scope.obj();
            std::string value;
            appendLE32(value, static_cast<uint32_t>(4 + 4 + code.size() + 1 + scopeObj.size()));
            appendLE32(value, static_cast<uint32_t>(code.size() + 1));
            value += code;
            value.push_back(0);
            value.append(scopeObj.bytes());
            appendRawElement(b, name, BsonType::CodeWScope, value);
            return Status::OK();
        }
        default:
            return notAKey("unknown type tag " + std::to_string(tag));
    }
}

Status decodeObjectBody(Reader& r, bson::BsonBuilder& b, bool withNames, int depth) {
    for (size_t index = 0;; ++index) {
        ASSIGN_OR_RETURN(uint8_t tag, r.byte());
        if (tag == kEnd) return Status::OK();
        std::string name;
        if (withNames) {
            ASSIGN_OR_RETURN(name, r.cstring());
        } else {
            name = std::to_string(index);
        }
        TRY_STATUS(decodeBody(r, tag, b, name, depth));
    }
}

// Decodes the component starting at `r`'s position (its direction read from its first byte).
StatusWith<bool> decodeComponent(Reader& r, bson::BsonBuilder& b) {
    ASSIGN_OR_RETURN(uint8_t first, r.byte());
    bool descending = first >= 0x80;
    r.setInverted(descending);
    uint8_t tag = descending ? static_cast<uint8_t>(~first) : first;
    if (tag == kEnd) return notAKey("empty component");
    TRY_STATUS(decodeBody(r, tag, b, "", 0));
    r.setInverted(false);
    return descending;
}

}  // namespace

Builder& Builder::append(const bson::BsonElement& value, bool descending) {
    appendComponent(_key, value, descending);
    return *this;
}

Builder& Builder::appendMinKey(bool descending) {
    appendTagOnly(_key, kMinKey, descending);
    return *this;
}

Builder& Builder::appendMaxKey(bool descending) {
    appendTagOnly(_key, kMaxKey, descending);
    return *this;
}

Builder& Builder::appendEncoded(std::string_view encoded) {
    _key.append(encoded);
    return *this;
}

std::string encodeValue(const bson::BsonElement& value, bool descending) {
    std::string out;
    appendComponent(out, value, descending);
    return out;
}

StatusWith<bson::BsonObj> decode(std::string_view key, const std::vector<bool>& descending) {
    Reader r(key, 0);
    bson::BsonBuilder b;
    for (bool expectDescending : descending) {
        ASSIGN_OR_RETURN(bool wasDescending, decodeComponent(r, b));
        if (wasDescending != expectDescending) return notAKey("component direction mismatch");
    }
    if (!r.atEnd()) return notAKey("trailing bytes");
    return b.obj();
}

StatusWith<size_t> componentLength(std::string_view key) {
    Reader r(key, 0);
    bson::BsonBuilder scratch;
    ASSIGN_OR_RETURN(bool descending, decodeComponent(r, scratch));
    (void)descending;
    return r.pos();
}

std::string prefixSuccessor(std::string_view prefix) {
    std::string out(prefix);
    while (!out.empty() && static_cast<uint8_t>(out.back()) == 0xff) out.pop_back();
    if (out.empty()) return out;
    out.back() = static_cast<char>(static_cast<uint8_t>(out.back()) + 1);
    return out;
}

}  // namespace tessera::keystring
