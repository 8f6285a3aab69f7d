#include "bson/bson_element.h"

#include <bson/bson.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "bson/bson_builder.h"
#include "bson/bson_obj.h"

namespace tessera::bson {
namespace {

template <typename T>
T readLE(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Size of the value part of an element whose value starts at `v`.
uint32_t valueSizeOf(BsonType type, const uint8_t* v) {
    switch (type) {
        case BsonType::Double:
        case BsonType::Date:
        case BsonType::Timestamp:
        case BsonType::Int64:
            return 8;
        case BsonType::String:
        case BsonType::Code:
        case BsonType::Symbol:
            return 4 + readLE<uint32_t>(v);
        case BsonType::Object:
        case BsonType::Array:
        case BsonType::CodeWScope:
            return readLE<uint32_t>(v);
        case BsonType::BinData:
            return 5 + readLE<uint32_t>(v);
        case BsonType::Undefined:
        case BsonType::Null:
        case BsonType::MinKey:
        case BsonType::MaxKey:
        case BsonType::EOO:
            return 0;
        case BsonType::ObjectId:
            return 12;
        case BsonType::Bool:
            return 1;
        case BsonType::Regex: {
            size_t p = std::strlen(reinterpret_cast<const char*>(v)) + 1;
            p += std::strlen(reinterpret_cast<const char*>(v + p)) + 1;
            return static_cast<uint32_t>(p);
        }
        case BsonType::DBPointer:
            return 4 + readLE<uint32_t>(v) + 12;
        case BsonType::Int32:
            return 4;
        case BsonType::Decimal128:
            return 16;
    }
    return 0;
}

}  // namespace

BsonElement::BsonElement(const uint8_t* raw) : _raw(raw) {
    if (raw[0] == 0) {
        _nameSize = 0;
        _size = 1;
        return;
    }
    _nameSize = static_cast<uint32_t>(std::strlen(reinterpret_cast<const char*>(raw + 1)) + 1);
    _size = 1 + _nameSize + valueSizeOf(type(), raw + 1 + _nameSize);
}

std::string_view BsonElement::fieldName() const {
    if (eoo()) return {};
    return {reinterpret_cast<const char*>(_raw + 1), _nameSize - 1};
}

double BsonElement::doubleValue() const { return readLE<double>(value()); }
int32_t BsonElement::int32Value() const { return readLE<int32_t>(value()); }
int64_t BsonElement::int64Value() const { return readLE<int64_t>(value()); }
bool BsonElement::boolValue() const { return value()[0] != 0; }
int64_t BsonElement::dateValue() const { return readLE<int64_t>(value()); }
uint64_t BsonElement::timestampValue() const { return readLE<uint64_t>(value()); }

std::string_view BsonElement::stringValue() const {
    switch (type()) {
        case BsonType::String:
        case BsonType::Symbol:
        case BsonType::Code:
        case BsonType::CodeWScope:
            break;
        default:
            return {};  // never read another type's bytes as a length (the refine OOM)
    }
    const uint8_t* v = value();
    if (type() == BsonType::CodeWScope) v += 4;
    uint32_t len = readLE<uint32_t>(v);
    return {reinterpret_cast<const char*>(v + 4), len - 1};
}

BsonView BsonElement::objValue() const {
    if (type() != BsonType::Object && type() != BsonType::Array && type() != BsonType::CodeWScope) {
        return BsonView();
    }
    if (type() == BsonType::CodeWScope) {
        const uint8_t* v = value() + 4;
        return BsonView(v + 4 + readLE<uint32_t>(v));
    }
    return BsonView(value());
}

ObjectId BsonElement::oidValue() const {
    ObjectId oid;
    std::memcpy(oid.bytes, value(), 12);
    return oid;
}

Decimal128 BsonElement::decimalValue() const {
    return Decimal128{readLE<uint64_t>(value()), readLE<uint64_t>(value() + 8)};
}

BsonElement::Binary BsonElement::binaryValue() const {
    if (type() != BsonType::BinData) return Binary{0, {}};
    uint32_t len = readLE<uint32_t>(value());
    return Binary{value()[4], {reinterpret_cast<const char*>(value() + 5), len}};
}

BsonElement::Regex BsonElement::regexValue() const {
    if (type() != BsonType::Regex) return Regex{};
    const char* p = reinterpret_cast<const char*>(value());
    std::string_view pattern(p);
    std::string_view options(p + pattern.size() + 1);
    return Regex{pattern, options};
}

BsonElement::DBPointer BsonElement::dbPointerValue() const {
    if (type() != BsonType::DBPointer) return DBPointer{};
    uint32_t len = readLE<uint32_t>(value());
    DBPointer out;
    out.ns = {reinterpret_cast<const char*>(value() + 4), len - 1};
    std::memcpy(out.oid.bytes, value() + 4 + len, 12);
    return out;
}

bool BsonElement::isNumber() const {
    switch (type()) {
        case BsonType::Double:
        case BsonType::Int32:
        case BsonType::Int64:
        case BsonType::Decimal128:
            return true;
        default:
            return false;
    }
}

double BsonElement::numberDouble() const {
    switch (type()) {
        case BsonType::Double:
            return doubleValue();
        case BsonType::Int32:
            return int32Value();
        case BsonType::Int64:
            return static_cast<double>(int64Value());
        case BsonType::Decimal128:
            return static_cast<double>(decimalValue().toLongDouble());
        default:
            return 0;
    }
}

int64_t BsonElement::numberLong() const {
    switch (type()) {
        case BsonType::Int32:
            return int32Value();
        case BsonType::Int64:
            return int64Value();
        case BsonType::Double:
        case BsonType::Decimal128: {
            long double d =
                type() == BsonType::Double ? doubleValue() : decimalValue().toLongDouble();
            if (std::isnan(d)) return 0;
            if (d >= 9223372036854775807.0L) return std::numeric_limits<int64_t>::max();
            if (d <= -9223372036854775808.0L) return std::numeric_limits<int64_t>::min();
            return static_cast<int64_t>(d);
        }
        default:
            return 0;
    }
}

int32_t BsonElement::numberInt() const {
    int64_t v = numberLong();
    if (v > std::numeric_limits<int32_t>::max()) return std::numeric_limits<int32_t>::max();
    if (v < std::numeric_limits<int32_t>::min()) return std::numeric_limits<int32_t>::min();
    return static_cast<int32_t>(v);
}

bool BsonElement::isIntegral() const {
    switch (type()) {
        case BsonType::Int32:
        case BsonType::Int64:
            return true;
        case BsonType::Double: {
            double d = doubleValue();
            return std::isfinite(d) && std::trunc(d) == d && d >= -9223372036854775808.0 &&
                   d < 9223372036854775808.0;
        }
        case BsonType::Decimal128: {
            Decimal128 dec = decimalValue();
            if (dec.isNaN() || dec.isInfinite()) return false;
            long double d = dec.toLongDouble();
            return std::truncl(d) == d && d >= -9223372036854775808.0L &&
                   d < 9223372036854775808.0L;
        }
        default:
            return false;
    }
}

bool BsonElement::trueValue() const {
    switch (type()) {
        case BsonType::EOO:
        case BsonType::Null:
        case BsonType::Undefined:
            return false;
        case BsonType::Bool:
            return boolValue();
        case BsonType::Int32:
            return int32Value() != 0;
        case BsonType::Int64:
            return int64Value() != 0;
        case BsonType::Double:
            return doubleValue() != 0;  // NaN is true
        case BsonType::Decimal128: {
            Decimal128 d = decimalValue();
            return d.isNaN() || d.toLongDouble() != 0;
        }
        default:
            return true;
    }
}

std::string BsonElement::toString(bool includeFieldName) const {
    if (eoo()) return "MISSING";
    BsonBuilder b;
    b.appendElementAs(*this, includeFieldName ? fieldName() : std::string_view("v"));
    std::string json = b.obj().toJson();
    if (includeFieldName) return json;
    // `{ "v" : X }` -> `X`
    size_t colon = json.find(" : ");
    if (colon == std::string::npos || json.size() < colon + 5) return json;
    return json.substr(colon + 3, json.size() - colon - 5);
}

}  // namespace tessera::bson
