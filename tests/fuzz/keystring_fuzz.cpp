// Fuzzes the keystring encoding (keystring/keystring.h) with the values of the input document:
// every value encodes (both directions) and decodes back to a value that compares equal to it in
// BSON order, and for every pair of values the order of their encodings (memcmp) is the BSON
// order — ascending and, reversed, descending: the invariant index scans and chunk bounds rely on.
#include <algorithm>

#include "bson/compare.h"
#include "fuzz_util.h"
#include "keystring/keystring.h"

using namespace tessera;

namespace {

int sign(int x) { return (x > 0) - (x < 0); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::optional<bson::BsonView> input = fuzz::inputDocument(data, size);
    if (!input) return 0;
    std::vector<bson::BsonElement> values;
    for (const bson::BsonElement& e : *input) {
        if (values.size() == 16) break;
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
            fuzz::check(sign(asc[i].compare(asc[j])) == bsonOrder);
            fuzz::check(sign(desc[i].compare(desc[j])) == -bsonOrder);
        }
    }
    return 0;
}
