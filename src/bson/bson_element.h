#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "bson/bson_types.h"

namespace tessera::bson {

class BsonView;

// A borrowed view of one element inside a BSON document: type byte, field name, value. It is valid
// only while the document's bytes are. A default-constructed element is "missing" (eoo()).
//
// Elements are only created over documents that were validated (wire input) or built by Tessera, so
// accessors trust the element's declared sizes. Fixed-size typed accessors (doubleValue, oidValue,
// ...) have a precondition on type(); use the number helpers (isNumber/numberDouble/...) when the
// type may vary. The accessors of variable-length values (stringValue, objValue, binaryValue,
// regexValue, dbPointerValue) answer an empty value for any other type, missing included: a
// document of an unexpected shape (a catalog entry a client wrote, an ObjectId where a string was
// expected) must never have its bytes read as a length.
class BsonElement {
  public:
    BsonElement() = default;
    // `raw` points at the type byte. Computes sizes; `raw` must be inside a valid document.
    explicit BsonElement(const uint8_t* raw);

    bool eoo() const { return _raw == nullptr || type() == BsonType::EOO; }
    explicit operator bool() const { return !eoo(); }
    BsonType type() const { return _raw ? static_cast<BsonType>(_raw[0]) : BsonType::EOO; }
    std::string_view fieldName() const;

    const uint8_t* raw() const { return _raw; }  // type byte
    size_t size() const { return _size; }        // whole element
    const uint8_t* value() const { return _raw + 1 + _nameSize; }
    size_t valueSize() const { return _size - 1 - _nameSize; }

    double doubleValue() const;
    int32_t int32Value() const;
    int64_t int64Value() const;
    bool boolValue() const;
    // String, Symbol, Code and the code of CodeWScope.
    std::string_view stringValue() const;
    // Object, Array, and the scope of CodeWScope.
    BsonView objValue() const;
    int64_t dateValue() const;        // milliseconds since the epoch
    uint64_t timestampValue() const;  // (secs << 32) | inc
    ObjectId oidValue() const;
    Decimal128 decimalValue() const;
    struct Binary {
        uint8_t subtype;
        std::string_view data;
    };
    Binary binaryValue() const;
    struct Regex {
        std::string_view pattern;
        std::string_view options;
    };
    Regex regexValue() const;
    struct DBPointer {
        std::string_view ns;
        ObjectId oid;
    };
    DBPointer dbPointerValue() const;

    bool isNumber() const;
    bool isObject() const { return type() == BsonType::Object; }
    bool isArray() const { return type() == BsonType::Array; }
    bool isNull() const { return type() == BsonType::Null; }
    // Numeric value as double/int64 (0 for non-numbers; int64 truncates and saturates doubles).
    double numberDouble() const;
    int64_t numberLong() const;
    int32_t numberInt() const;
    // True when the number is an integral value that fits int64 (e.g. 3.0, Long(3)).
    bool isIntegral() const;
    // MongoDB truthiness: false, 0, null, undefined and missing are false; everything else true.
    bool trueValue() const;

    // `{"name": value}` in relaxed extended JSON; for logs and error messages.
    std::string toString(bool includeFieldName = true) const;

  private:
    const uint8_t* _raw = nullptr;
    uint32_t _nameSize = 0;  // including the terminating NUL
    uint32_t _size = 0;
};

}  // namespace tessera::bson
