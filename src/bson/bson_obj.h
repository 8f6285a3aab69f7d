#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "bson/bson_element.h"

namespace tessera::bson {

class BsonObj;

// A borrowed, read-only BSON document: a pointer to its 4-byte length prefix. Never outlives the
// bytes it points to; never held across a co_await. The default view is the empty document.
class BsonView {
  public:
    class Iterator {
      public:
        using value_type = BsonElement;
        using difference_type = std::ptrdiff_t;
        Iterator() = default;
        Iterator(const uint8_t* pos, const uint8_t* end);
        BsonElement operator*() const { return _current; }
        const BsonElement* operator->() const { return &_current; }
        Iterator& operator++();
        Iterator operator++(int) {
            Iterator copy = *this;
            ++*this;
            return copy;
        }
        bool operator==(const Iterator& other) const { return _pos == other._pos; }

      private:
        const uint8_t* _pos = nullptr;
        const uint8_t* _end = nullptr;
        BsonElement _current;
    };

    BsonView();
    // `data` must point at a complete, valid BSON document (see validateBson).
    explicit BsonView(const uint8_t* data) : _data(data) {}
    explicit BsonView(const char* data) : _data(reinterpret_cast<const uint8_t*>(data)) {}

    const uint8_t* data() const { return _data; }
    size_t size() const;
    std::string_view bytes() const { return {reinterpret_cast<const char*>(_data), size()}; }
    bool isEmpty() const { return size() <= 5; }
    size_t nFields() const;

    Iterator begin() const;
    Iterator end() const;

    // The first element named `name` (no dots), or a missing element.
    BsonElement getField(std::string_view name) const;
    BsonElement operator[](std::string_view name) const { return getField(name); }
    bool hasField(std::string_view name) const { return !getField(name).eoo(); }
    BsonElement firstElement() const { return *begin(); }

    // An owning copy of these bytes.
    BsonObj copy() const;

    // Relaxed extended JSON (libbson), e.g. `{ "a" : 1 }`.
    std::string toJson() const;
    std::string toCanonicalJson() const;

    // Byte equality (same fields, order and types).
    bool binaryEqual(BsonView other) const;

  private:
    const uint8_t* _data;
};

// An owning, immutable BSON document. Copies share the buffer (cheap); the bytes never change
// after construction, so a BsonObj can be handed between threads.
class BsonObj : public BsonView {
  public:
    BsonObj();
    // Takes ownership of complete BSON bytes (length prefix included).
    static BsonObj fromBuffer(std::shared_ptr<const uint8_t[]> buffer);
    static BsonObj fromBytes(std::string_view bytes);

    // Parses extended JSON (libbson). For tests, tools and literals.
    static StatusWith<BsonObj> fromJson(std::string_view json);

    BsonView view() const { return *this; }

  private:
    explicit BsonObj(std::shared_ptr<const uint8_t[]> buffer);
    std::shared_ptr<const uint8_t[]> _buffer;
};

// Parses JSON in tests: crashes on malformed input (invariant) — test code only.
BsonObj fromJson(std::string_view json);

inline bool operator==(const BsonView& a, const BsonView& b) { return a.binaryEqual(b); }

}  // namespace tessera::bson
