// Fuzzes the keystring encoding (keystring/keystring.h) with the values of the input document:
// every value encodes (both directions) and decodes back to a value that compares equal to it in
// BSON order, and for every pair of values the order of their encodings (memcmp) is the BSON
// order — ascending and, reversed, descending: the invariant index scans and chunk bounds rely on.
#include <algorithm>
#include <string>

#include "bson/compare.h"
#include "fuzz_util.h"
#include "keystring/keystring.h"

using namespace tessera;

namespace {

int sign(int x) { return (x > 0) - (x < 0); }

// compareElementValues compares a decimal through long double (the limit src/bson/compare.cpp
// names): two numbers it calls equal may differ beyond that precision (5E-6091 and 2E-6145 both
// round to 0), and the keystring orders them exactly. Between two numbers an inequality it
// reports is right (rounding keeps order), so only its "equal" is not checked; inside documents
// and arrays a wrong "equal" passes the decision to a later field, so such pairs are not checked.
bool containsDecimal(const bson::BsonElement& v) {
    if (v.type() == bson::BsonType::Decimal128) return true;
    if (!v.isObject() && !v.isArray()) return false;
    for (const bson::BsonElement& e : v.objValue()) {
        if (containsDecimal(e)) return true;
    }
    return false;
}

// Whether every array in `v` names its elements "0", "1", … as drivers write them. The keystring
// (as MongoDB's) keeps an array's values, not its element names, while BSON comparison reads the
// names too: an array named otherwise ({"0": 1, "0": 2}) is no input either order is defined on.
bool canonicalArrays(const bson::BsonElement& v) {
    if (!v.isObject() && !v.isArray()) return true;
    size_t i = 0;
    for (const bson::BsonElement& e : v.objValue()) {
        if (v.isArray() && e.fieldName() != std::to_string(i)) return false;
        if (!canonicalArrays(e)) return false;
        ++i;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::optional<bson::BsonView> input = fuzz::inputDocument(data, size);
    if (!input) return 0;
    std::vector<bson::BsonElement> values;
    for (const bson::BsonElement& e : *input) {
        if (values.size() == 16) break;
        if (!canonicalArrays(e)) return 0;
        values.push_back(e);
    }
    std::vector<std::string> asc, desc;
    for (const bson::BsonElement& v : values) {
        asc.push_back(keystring::encodeValue(v));
        desc.push_back(keystring::encodeValue(v, true));
        for (bool descending : {false, true}) {
            auto decoded = keystring::decode(descending ? desc.back() : asc.back(), {descending});
            fuzz::check(decoded.isOK());
            bson::BsonElement back = decoded.getValue().firstElement();
            fuzz::check(bson::compareElementValues(back, v) == 0);
        }
        fuzz::check(keystring::componentLength(asc.back()).isOK());
    }
    for (size_t i = 0; i < values.size(); ++i) {
        for (size_t j = 0; j < values.size(); ++j) {
            int bsonOrder = sign(bson::compareElementValues(values[i], values[j]));
            if (containsDecimal(values[i]) || containsDecimal(values[j])) {
                const bool nested = values[i].isObject() || values[i].isArray() ||
                                    values[j].isObject() || values[j].isArray();
                if (bsonOrder == 0 || nested) continue;
            }
            fuzz::check(sign(asc[i].compare(asc[j])) == bsonOrder);
            fuzz::check(sign(desc[i].compare(desc[j])) == -bsonOrder);
        }
    }
    return 0;
}
