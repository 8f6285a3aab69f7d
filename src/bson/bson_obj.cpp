#include "bson/bson_obj.h"

#include <bson/bson.h>

#include <cstring>

namespace tessera::bson {
namespace {

const uint8_t kEmptyDocument[5] = {5, 0, 0, 0, 0};

uint32_t readLength(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

std::string toJsonWith(BsonView view, bool canonical) {
    bson_t b;
    if (!bson_init_static(&b, view.data(), view.size())) return "<invalid BSON>";
    size_t len = 0;
    char* json = canonical ? bson_as_canonical_extended_json(&b, &len)
                           : bson_as_relaxed_extended_json(&b, &len);
    if (!json) return "<invalid BSON>";
    std::string out(json, len);
    bson_free(json);
    return out;
}

}  // namespace

BsonView::Iterator::Iterator(const uint8_t* pos, const uint8_t* end) : _pos(pos), _end(end) {
    if (_pos < _end && *_pos != 0) {
        _current = BsonElement(_pos);
    } else {
        _pos = _end;
    }
}

BsonView::Iterator& BsonView::Iterator::operator++() {
    _pos += _current.size();
    if (_pos < _end && *_pos != 0) {
        _current = BsonElement(_pos);
    } else {
        _pos = _end;
        _current = BsonElement();
    }
    return *this;
}

BsonView::BsonView() : _data(kEmptyDocument) {}

size_t BsonView::size() const { return readLength(_data); }

size_t BsonView::nFields() const {
    size_t n = 0;
    for (auto it = begin(); it != end(); ++it) ++n;
    return n;
}

BsonView::Iterator BsonView::begin() const { return Iterator(_data + 4, _data + size() - 1); }
BsonView::Iterator BsonView::end() const {
    const uint8_t* last = _data + size() - 1;
    return Iterator(last, last);
}

BsonElement BsonView::getField(std::string_view name) const {
    for (BsonElement e : *this) {
        if (e.fieldName() == name) return e;
    }
    return BsonElement();
}

BsonObj BsonView::copy() const { return BsonObj::fromBytes(bytes()); }

std::string BsonView::toJson() const { return toJsonWith(*this, false); }
std::string BsonView::toCanonicalJson() const { return toJsonWith(*this, true); }

bool BsonView::binaryEqual(BsonView other) const {
    size_t n = size();
    return n == other.size() && std::memcmp(_data, other._data, n) == 0;
}

BsonObj::BsonObj() : BsonView() {}

BsonObj::BsonObj(std::shared_ptr<const uint8_t[]> buffer)
    : BsonView(buffer.get()), _buffer(std::move(buffer)) {}

BsonObj BsonObj::fromBuffer(std::shared_ptr<const uint8_t[]> buffer) {
    return BsonObj(std::move(buffer));
}

BsonObj BsonObj::fromBytes(std::string_view bytes) {
    std::shared_ptr<uint8_t[]> buf(new uint8_t[bytes.size()]);
    std::memcpy(buf.get(), bytes.data(), bytes.size());
    return BsonObj(std::shared_ptr<const uint8_t[]>(std::move(buf)));
}

StatusWith<BsonObj> BsonObj::fromJson(std::string_view json) {
    bson_error_t error;
    bson_t* b = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()),
                                   static_cast<ssize_t>(json.size()), &error);
    if (!b) return Status(ErrorCodes::FailedToParse, std::string("invalid JSON: ") + error.message);
    BsonObj out = fromBytes({reinterpret_cast<const char*>(bson_get_data(b)), b->len});
    bson_destroy(b);
    return out;
}

BsonObj fromJson(std::string_view json) {
    auto sw = BsonObj::fromJson(json);
    invariant(sw.isOK());
    return std::move(sw).getValue();
}

}  // namespace tessera::bson
