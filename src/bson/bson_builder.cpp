#include "bson/bson_builder.h"

#include <cstring>
#include <limits>

namespace tessera::bson {

BsonBuilder::BsonBuilder() {
    _buf.reserve(64);
    _buf.append(4, '\0');  // length prefix, patched by end()/obj()
    _open.push_back(0);
}

void BsonBuilder::appendHeader(BsonType type, std::string_view name) {
    _buf.push_back(static_cast<char>(type));
    // BSON field names are C strings: a name with an embedded NUL would corrupt the document.
    size_t nul = name.find('\0');
    _buf.append(name.data(), nul == std::string_view::npos ? name.size() : nul);
    _buf.push_back('\0');
}

void BsonBuilder::appendStringValue(std::string_view v) {
    appendLittleEndian<int32_t>(static_cast<int32_t>(v.size() + 1));
    appendRaw(v.data(), v.size());
    _buf.push_back('\0');
}

BsonBuilder& BsonBuilder::appendDouble(std::string_view name, double v) {
    appendHeader(BsonType::Double, name);
    appendLittleEndian(v);
    return *this;
}

BsonBuilder& BsonBuilder::appendInt32(std::string_view name, int32_t v) {
    appendHeader(BsonType::Int32, name);
    appendLittleEndian(v);
    return *this;
}

BsonBuilder& BsonBuilder::appendInt64(std::string_view name, int64_t v) {
    appendHeader(BsonType::Int64, name);
    appendLittleEndian(v);
    return *this;
}

BsonBuilder& BsonBuilder::appendNumber(std::string_view name, int64_t v) {
    if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) {
        return appendInt32(name, static_cast<int32_t>(v));
    }
    return appendInt64(name, v);
}

BsonBuilder& BsonBuilder::appendBool(std::string_view name, bool v) {
    appendHeader(BsonType::Bool, name);
    _buf.push_back(v ? 1 : 0);
    return *this;
}

BsonBuilder& BsonBuilder::appendString(std::string_view name, std::string_view v) {
    appendHeader(BsonType::String, name);
    appendStringValue(v);
    return *this;
}

BsonBuilder& BsonBuilder::appendSymbol(std::string_view name, std::string_view v) {
    appendHeader(BsonType::Symbol, name);
    appendStringValue(v);
    return *this;
}

BsonBuilder& BsonBuilder::appendCode(std::string_view name, std::string_view v) {
    appendHeader(BsonType::Code, name);
    appendStringValue(v);
    return *this;
}

BsonBuilder& BsonBuilder::appendObject(std::string_view name, BsonView v) {
    appendHeader(BsonType::Object, name);
    appendRaw(v.data(), v.size());
    return *this;
}

BsonBuilder& BsonBuilder::appendArray(std::string_view name, BsonView v) {
    appendHeader(BsonType::Array, name);
    appendRaw(v.data(), v.size());
    return *this;
}

BsonBuilder& BsonBuilder::appendNull(std::string_view name) {
    appendHeader(BsonType::Null, name);
    return *this;
}

BsonBuilder& BsonBuilder::appendUndefined(std::string_view name) {
    appendHeader(BsonType::Undefined, name);
    return *this;
}

BsonBuilder& BsonBuilder::appendMinKey(std::string_view name) {
    appendHeader(BsonType::MinKey, name);
    return *this;
}

BsonBuilder& BsonBuilder::appendMaxKey(std::string_view name) {
    appendHeader(BsonType::MaxKey, name);
    return *this;
}

BsonBuilder& BsonBuilder::appendDate(std::string_view name, int64_t millis) {
    appendHeader(BsonType::Date, name);
    appendLittleEndian(millis);
    return *this;
}

BsonBuilder& BsonBuilder::appendTimestamp(std::string_view name, uint64_t ts) {
    appendHeader(BsonType::Timestamp, name);
    appendLittleEndian(ts);
    return *this;
}

BsonBuilder& BsonBuilder::appendOid(std::string_view name, const ObjectId& oid) {
    appendHeader(BsonType::ObjectId, name);
    appendRaw(oid.bytes, 12);
    return *this;
}

BsonBuilder& BsonBuilder::appendDecimal(std::string_view name, const Decimal128& d) {
    appendHeader(BsonType::Decimal128, name);
    appendLittleEndian(d.low);
    appendLittleEndian(d.high);
    return *this;
}

BsonBuilder& BsonBuilder::appendBinary(std::string_view name, uint8_t subtype,
                                       std::string_view data) {
    appendHeader(BsonType::BinData, name);
    appendLittleEndian<int32_t>(static_cast<int32_t>(data.size()));
    _buf.push_back(static_cast<char>(subtype));
    appendRaw(data.data(), data.size());
    return *this;
}

BsonBuilder& BsonBuilder::appendRegex(std::string_view name, std::string_view pattern,
                                      std::string_view options) {
    appendHeader(BsonType::Regex, name);
    appendRaw(pattern.data(), pattern.size());
    _buf.push_back('\0');
    appendRaw(options.data(), options.size());
    _buf.push_back('\0');
    return *this;
}

BsonBuilder& BsonBuilder::appendElement(const BsonElement& e) {
    if (e.eoo()) return *this;
    appendRaw(e.raw(), e.size());
    return *this;
}

BsonBuilder& BsonBuilder::appendElementAs(const BsonElement& e, std::string_view name) {
    if (e.eoo()) return *this;
    appendHeader(e.type(), name);
    appendRaw(e.value(), e.valueSize());
    return *this;
}

BsonBuilder& BsonBuilder::appendElements(BsonView obj) {
    for (BsonElement e : obj) appendElement(e);
    return *this;
}

BsonBuilder& BsonBuilder::startObject(std::string_view name) {
    appendHeader(BsonType::Object, name);
    _open.push_back(_buf.size());
    _buf.append(4, '\0');
    return *this;
}

BsonBuilder& BsonBuilder::startArray(std::string_view name) {
    appendHeader(BsonType::Array, name);
    _open.push_back(_buf.size());
    _buf.append(4, '\0');
    return *this;
}

BsonBuilder& BsonBuilder::end() {
    invariant(_open.size() > 1);
    size_t start = _open.back();
    _open.pop_back();
    _buf.push_back('\0');
    int32_t len = static_cast<int32_t>(_buf.size() - start);
    std::memcpy(&_buf[start], &len, 4);
    return *this;
}

bool BsonBuilder::hasField(std::string_view name) const {
    invariant(_open.size() == 1);  // only between top-level appends
    size_t pos = 4;
    while (pos < _buf.size()) {
        BsonElement e(reinterpret_cast<const uint8_t*>(_buf.data() + pos));
        if (e.fieldName() == name) return true;
        pos += e.size();
    }
    return false;
}

BsonObj BsonBuilder::obj() {
    while (_open.size() > 1) end();
    _buf.push_back('\0');
    int32_t len = static_cast<int32_t>(_buf.size());
    std::memcpy(&_buf[0], &len, 4);
    BsonObj out = BsonObj::fromBytes(_buf);
    _buf.assign(4, '\0');
    return out;
}

}  // namespace tessera::bson
