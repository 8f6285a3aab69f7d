#include "bson/element_hash.h"

#include <openssl/evp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "bson/compare.h"

namespace tessera::bson {
namespace {

class Md5 {
  public:
    Md5() : _ctx(EVP_MD_CTX_new()) {
        invariant(_ctx != nullptr);
        invariant(EVP_DigestInit_ex(_ctx, EVP_md5(), nullptr) == 1);
    }
    ~Md5() { EVP_MD_CTX_free(_ctx); }
    Md5(const Md5&) = delete;
    Md5& operator=(const Md5&) = delete;

    void add(const void* data, size_t n) {
        if (n > 0) invariant(EVP_DigestUpdate(_ctx, data, n) == 1);
    }
    void addInt32(int32_t v) {
        uint8_t le[4];
        for (int i = 0; i < 4; ++i)
            le[i] = static_cast<uint8_t>(static_cast<uint32_t>(v) >> (8 * i));
        add(le, sizeof le);
    }
    void addInt64(int64_t v) {
        uint8_t le[8];
        for (int i = 0; i < 8; ++i)
            le[i] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i));
        add(le, sizeof le);
    }
    // The first 8 digest bytes as a little-endian int64.
    int64_t finish64() {
        uint8_t digest[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        invariant(EVP_DigestFinal_ex(_ctx, digest, &len) == 1 && len == 16);
        uint64_t v = 0;
        for (int i = 7; i >= 0; --i) v = (v << 8) | digest[i];
        return static_cast<int64_t>(v);
    }

  private:
    EVP_MD_CTX* _ctx;
};

uint32_t readU32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

bool mayEncapsulate(BsonType t) {
    return t == BsonType::Object || t == BsonType::Array || t == BsonType::CodeWScope;
}

void recursiveHash(Md5& h, const BsonElement& e, bool includeFieldName) {
    h.addInt32(canonicalTypeOrder(e.type()));
    if (includeFieldName) {
        std::string_view name = e.fieldName();
        h.add(name.data(), name.size() + 1);  // with the NUL
    }
    if (!mayEncapsulate(e.type())) {
        if (e.isNumber()) {
            h.addInt64(squashNumberForHash(e));
        } else {
            h.add(e.value(), e.valueSize());
        }
        return;
    }
    BsonView sub;
    if (e.type() == BsonType::CodeWScope) {
        // value: int32 total, int32 code length (with NUL), code bytes, scope document.
        const uint8_t* v = e.value();
        uint32_t codeLen = readU32(v + 4);
        h.add(v + 8, codeLen);
        sub = BsonView(v + 8 + codeLen);
    } else {
        sub = e.objValue();
    }
    for (const BsonElement& child : sub) recursiveHash(h, child, true);
    // The terminating EOO element: canonical type 0, empty name, no value.
    h.addInt32(canonicalTypeOrder(BsonType::EOO));
}

}  // namespace

int64_t squashNumberForHash(const BsonElement& e) {
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
    constexpr double kTwo63 = 9223372036854775808.0;
    switch (e.type()) {
        case BsonType::Int32:
            return e.int32Value();
        case BsonType::Int64:
            return e.int64Value();
        case BsonType::Double: {
            double d = e.doubleValue();
            if (std::isnan(d)) return 0;
            if (d == kTwo63) return kMin;  // safeNumberLongForHash's historical overflow
            if (!(d < kTwo63)) return kMax;
            if (d < -kTwo63) return kMin;
            return static_cast<int64_t>(d);
        }
        case BsonType::Decimal128: {
            Decimal128 d = e.decimalValue();
            if (d.isNaN()) return 0;
            long double v = d.toLongDouble();
            if (v > static_cast<long double>(kMax)) return kMax;
            if (v < static_cast<long double>(kMin)) return kMin;
            // Decimal128::toLong rounds half to even (the default rounding mode of nearbyint).
            long double r = std::nearbyint(v);
            if (r >= 9223372036854775808.0L) return kMax;
            return static_cast<int64_t>(r);
        }
        default:
            return 0;
    }
}

int64_t hashElement(const BsonElement& e, int32_t seed) {
    Md5 h;
    h.addInt32(seed);
    recursiveHash(h, e, false);
    return h.finish64();
}

}  // namespace tessera::bson
