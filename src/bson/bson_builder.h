#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bson/bson_obj.h"

namespace tessera::bson {

// Builds a BSON document in one growing buffer. Nested documents and arrays are built in place:
// startObject/startArray open one, end() closes the innermost. obj() closes the document and
// returns it; the builder is then empty and reusable.
//
//   BsonBuilder b;
//   b.append("ok", 1.0).startObject("cursor").append("id", int64_t{0}).end();
//   BsonObj reply = b.obj();
class BsonBuilder {
  public:
    BsonBuilder();

    BsonBuilder& append(std::string_view name, double v) { return appendDouble(name, v); }
    BsonBuilder& append(std::string_view name, int32_t v) { return appendInt32(name, v); }
    BsonBuilder& append(std::string_view name, int64_t v) { return appendInt64(name, v); }
    BsonBuilder& append(std::string_view name, long long v) {
        return appendInt64(name, static_cast<int64_t>(v));
    }
    BsonBuilder& append(std::string_view name, bool v) { return appendBool(name, v); }
    BsonBuilder& append(std::string_view name, std::string_view v) { return appendString(name, v); }
    BsonBuilder& append(std::string_view name, const char* v) { return appendString(name, v); }
    BsonBuilder& append(std::string_view name, const std::string& v) {
        return appendString(name, v);
    }
    BsonBuilder& append(std::string_view name, BsonView v) { return appendObject(name, v); }
    BsonBuilder& append(std::string_view name, const BsonObj& v) { return appendObject(name, v); }
    BsonBuilder& append(std::string_view name, const ObjectId& v) { return appendOid(name, v); }
    BsonBuilder& append(std::string_view name, const Decimal128& v) {
        return appendDecimal(name, v);
    }

    BsonBuilder& appendDouble(std::string_view name, double v);
    BsonBuilder& appendInt32(std::string_view name, int32_t v);
    BsonBuilder& appendInt64(std::string_view name, int64_t v);
    // Appends the smallest of int32/int64 that holds v (MongoDB's "appendNumber" for counts).
    BsonBuilder& appendNumber(std::string_view name, int64_t v);
    BsonBuilder& appendBool(std::string_view name, bool v);
    BsonBuilder& appendString(std::string_view name, std::string_view v);
    BsonBuilder& appendSymbol(std::string_view name, std::string_view v);
    BsonBuilder& appendCode(std::string_view name, std::string_view v);
    BsonBuilder& appendObject(std::string_view name, BsonView v);
    // `v` is a document whose keys are "0", "1", ...
    BsonBuilder& appendArray(std::string_view name, BsonView v);
    BsonBuilder& appendNull(std::string_view name);
    BsonBuilder& appendUndefined(std::string_view name);
    BsonBuilder& appendMinKey(std::string_view name);
    BsonBuilder& appendMaxKey(std::string_view name);
    BsonBuilder& appendDate(std::string_view name, int64_t millisSinceEpoch);
    BsonBuilder& appendTimestamp(std::string_view name, uint64_t ts);
    BsonBuilder& appendOid(std::string_view name, const ObjectId& oid);
    BsonBuilder& appendDecimal(std::string_view name, const Decimal128& d);
    BsonBuilder& appendBinary(std::string_view name, uint8_t subtype, std::string_view data);
    BsonBuilder& appendRegex(std::string_view name, std::string_view pattern,
                             std::string_view options);
    // Copies an element, keeping its name / renaming it.
    BsonBuilder& appendElement(const BsonElement& e);
    BsonBuilder& appendElementAs(const BsonElement& e, std::string_view name);
    // Appends all elements of `obj`.
    BsonBuilder& appendElements(BsonView obj);

    BsonBuilder& startObject(std::string_view name);
    BsonBuilder& startArray(std::string_view name);
    BsonBuilder& end();

    // Whether the outermost document has a field `name` (no nested document may be open).
    bool hasField(std::string_view name) const;
    // Bytes so far (the document is not closed yet).
    size_t len() const { return _buf.size(); }
    // Closes the document (and any open nesting) and returns it. The builder is reset.
    BsonObj obj();

  private:
    void appendHeader(BsonType type, std::string_view name);
    void appendRaw(const void* p, size_t n) { _buf.append(static_cast<const char*>(p), n); }
    template <typename T>
    void appendLittleEndian(T v) {
        appendRaw(&v, sizeof v);  // x86-64 and aarch64 are little-endian; BSON is too.
    }
    void appendStringValue(std::string_view v);

    std::string _buf;
    std::vector<size_t> _open;  // offsets of the length prefixes of open documents
};

// Builds an array: append() uses the next index ("0", "1", ...) as the field name.
class BsonArrayBuilder {
  public:
    template <typename T>
    BsonArrayBuilder& append(const T& v) {
        _b.append(nextKey(), v);
        return *this;
    }
    BsonArrayBuilder& appendElement(const BsonElement& e) {
        _b.appendElementAs(e, nextKey());
        return *this;
    }
    BsonArrayBuilder& appendNull() {
        _b.appendNull(nextKey());
        return *this;
    }
    BsonArrayBuilder& appendArray(BsonView arr) {
        _b.appendArray(nextKey(), arr);
        return *this;
    }
    size_t count() const { return _count; }
    size_t len() const { return _b.len(); }
    // The array as a document with keys "0".."n-1" (append it with appendArray).
    BsonObj arr() { return _b.obj(); }

  private:
    std::string nextKey() { return std::to_string(_count++); }
    BsonBuilder _b;
    size_t _count = 0;
};

}  // namespace tessera::bson
