#include "bson/compare.h"

#include <cmath>
#include <cstring>

namespace tessera::bson {
namespace {

template <typename T>
int threeWay(const T& a, const T& b) {
    return a < b ? -1 : (b < a ? 1 : 0);
}

int compareBytes(std::string_view a, std::string_view b) {
    size_t n = std::min(a.size(), b.size());
    int c = n ? std::memcmp(a.data(), b.data(), n) : 0;
    if (c != 0) return c < 0 ? -1 : 1;
    return threeWay(a.size(), b.size());
}

int compareStrings(std::string_view a, std::string_view b, const StringComparator* strings) {
    if (strings) {
        int c = strings->compare(a, b);
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    return compareBytes(a, b);
}

// A number widened to long double: exact for int32, int64 and double on x86-64 (64-bit mantissa).
long double widen(const BsonElement& e) {
    switch (e.type()) {
        case BsonType::Int32:
            return e.int32Value();
        case BsonType::Int64:
            return static_cast<long double>(e.int64Value());
        case BsonType::Double:
            return e.doubleValue();
        case BsonType::Decimal128:
            return e.decimalValue().toLongDouble();
        default:
            return 0;
    }
}

}  // namespace

int canonicalTypeOrder(BsonType t) {
    switch (t) {
        case BsonType::MinKey:
            return -1;
        case BsonType::EOO:
        case BsonType::Undefined:
            return 0;
        case BsonType::Null:
            return 5;
        case BsonType::Double:
        case BsonType::Int32:
        case BsonType::Int64:
        case BsonType::Decimal128:
            return 10;
        case BsonType::String:
        case BsonType::Symbol:
            return 15;
        case BsonType::Object:
            return 20;
        case BsonType::Array:
            return 25;
        case BsonType::BinData:
            return 30;
        case BsonType::ObjectId:
            return 35;
        case BsonType::Bool:
            return 40;
        case BsonType::Date:
            return 45;
        case BsonType::Timestamp:
            return 47;
        case BsonType::Regex:
            return 50;
        case BsonType::DBPointer:
            return 55;
        case BsonType::Code:
            return 60;
        case BsonType::CodeWScope:
            return 65;
        case BsonType::MaxKey:
            return 127;
    }
    return 0;
}

int compareNumbers(const BsonElement& a, const BsonElement& b) {
    BsonType ta = a.type(), tb = b.type();
    bool aInt = ta == BsonType::Int32 || ta == BsonType::Int64;
    bool bInt = tb == BsonType::Int32 || tb == BsonType::Int64;
    if (aInt && bInt) return threeWay(a.numberLong(), b.numberLong());
    long double x = widen(a), y = widen(b);
    bool xNaN = std::isnan(x), yNaN = std::isnan(y);
    if (xNaN || yNaN) return xNaN && yNaN ? 0 : (xNaN ? -1 : 1);
    // Known limit: decimals that differ only beyond long double's 64-bit mantissa compare equal.
    return threeWay(x, y);
}

int compareElementValues(const BsonElement& a, const BsonElement& b,
                         const StringComparator* strings) {
    int ca = canonicalTypeOrder(a.type()), cb = canonicalTypeOrder(b.type());
    if (ca != cb) return ca < cb ? -1 : 1;
    switch (a.type()) {
        case BsonType::MinKey:
        case BsonType::MaxKey:
        case BsonType::EOO:
        case BsonType::Undefined:
        case BsonType::Null:
            return 0;
        case BsonType::Double:
        case BsonType::Int32:
        case BsonType::Int64:
        case BsonType::Decimal128:
            return compareNumbers(a, b);
        case BsonType::String:
        case BsonType::Symbol:
            return compareStrings(a.stringValue(), b.stringValue(), strings);
        case BsonType::Object:
        case BsonType::Array:
            return compareObjects(a.objValue(), b.objValue(), strings);
        case BsonType::BinData: {
            auto x = a.binaryValue(), y = b.binaryValue();
            if (x.data.size() != y.data.size()) return threeWay(x.data.size(), y.data.size());
            if (x.subtype != y.subtype) return threeWay(x.subtype, y.subtype);
            return compareBytes(x.data, y.data);
        }
        case BsonType::ObjectId: {
            int c = std::memcmp(a.value(), b.value(), 12);
            return c < 0 ? -1 : (c > 0 ? 1 : 0);
        }
        case BsonType::Bool:
            return threeWay(a.boolValue(), b.boolValue());
        case BsonType::Date:
            return threeWay(a.dateValue(), b.dateValue());
        case BsonType::Timestamp:
            return threeWay(a.timestampValue(), b.timestampValue());
        case BsonType::Regex: {
            auto x = a.regexValue(), y = b.regexValue();
            int c = compareBytes(x.pattern, y.pattern);
            return c != 0 ? c : compareBytes(x.options, y.options);
        }
        case BsonType::DBPointer: {
            auto x = a.dbPointerValue(), y = b.dbPointerValue();
            if (x.ns.size() != y.ns.size()) return threeWay(x.ns.size(), y.ns.size());
            int c = compareBytes(x.ns, y.ns);
            return c != 0 ? c : threeWay(x.oid, y.oid);
        }
        case BsonType::Code:
            return compareBytes(a.stringValue(), b.stringValue());
        case BsonType::CodeWScope: {
            int c = compareBytes(a.stringValue(), b.stringValue());
            return c != 0 ? c : compareObjects(a.objValue(), b.objValue());
        }
    }
    return 0;
}

int compareElements(const BsonElement& a, const BsonElement& b, const StringComparator* strings) {
    int ca = canonicalTypeOrder(a.type()), cb = canonicalTypeOrder(b.type());
    if (ca != cb) return ca < cb ? -1 : 1;
    int c = compareBytes(a.fieldName(), b.fieldName());
    if (c != 0) return c;
    return compareElementValues(a, b, strings);
}

int compareObjects(BsonView a, BsonView b, const StringComparator* strings) {
    auto ia = a.begin(), ib = b.begin();
    auto ea = a.end(), eb = b.end();
    for (; ia != ea && ib != eb; ++ia, ++ib) {
        int c = compareElements(*ia, *ib, strings);
        if (c != 0) return c;
    }
    if (ia == ea && ib == eb) return 0;
    return ia == ea ? -1 : 1;
}

}  // namespace tessera::bson
