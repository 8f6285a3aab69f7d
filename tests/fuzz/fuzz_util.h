#pragma once

// Shared by the fuzz targets: the input as one validated BSON document, sample documents to run
// parsed filters, updates and expressions against, and a check that aborts (the fuzzer's crash).

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <vector>

#include "bson/bson_obj.h"
#include "bson/validate.h"

namespace tessera::fuzz {

inline void check(bool cond) {
    if (!cond) std::abort();
}

// The input when it is one valid BSON document (else nothing to fuzz: the parsers' callers
// always validate first).
inline std::optional<bson::BsonView> inputDocument(const uint8_t* data, size_t size) {
    if (!bson::validateBson(data, size, bson::kMaxParseDepth).isOK()) return std::nullopt;
    return bson::BsonView(data);
}

// Whether `doc` holds a {$range: [start, end, …]} spanning more than kMaxFuzzRange values. Such
// an array is legitimate up to the 32 MiB value cap (~2.8 M numbers, about a second in a release
// build), but the fuzz build's instrumentation makes it ~100 times slower, every sample document
// evaluates it again, and a $reduce that nests its accumulator ({in: {a: ["$$value"]}}) copies
// a growing value per element — quadratic (a known limit: expression values have no depth bound
// yet). Beyond a few thousand elements an input outlasts the 10 s per-input timeout without
// being a hang.
constexpr double kMaxFuzzRange = 2000;
inline bool hasLargeRange(bson::BsonView doc, int depth = 0) {
    if (depth > bson::kMaxParseDepth) return true;
    for (const bson::BsonElement& e : doc) {
        if (e.fieldName() == "$range" && e.isArray()) {
            double bounds[2] = {0, 0};
            int i = 0;
            for (const bson::BsonElement& b : e.objValue()) {
                if (i == 2) break;
                if (b.isNumber()) bounds[i] = b.numberDouble();
                ++i;
            }
            if (!(std::abs(bounds[1] - bounds[0]) <= kMaxFuzzRange)) return true;
        }
        if ((e.isObject() || e.isArray()) && hasLargeRange(e.objValue(), depth + 1)) return true;
    }
    return false;
}

// Documents of every shape a filter, an update or an expression meets: scalars of each type,
// nested documents and arrays, arrays of documents, missing and null fields.
inline const std::vector<bson::BsonObj>& sampleDocuments() {
    static const std::vector<bson::BsonObj> docs = [] {
        std::vector<bson::BsonObj> out;
        for (const char* json : {
                 R"({"_id": 1, "a": 1, "b": "x", "c": [1, 2, 3], "d": {"e": 5, "f": [{"g": 1}]}})",
                 R"({"_id": 2, "a": [1, [2, 3], {"b": 4}], "b": null, "s": "héllo"})",
                 R"({"_id": {"k": 1}, "a": {"$numberLong": "9223372036854775807"}, "b": 1.5})",
                 R"({"_id": "s", "a": {"$numberDecimal": "1E+30"}, "t": {"$date": 0}})",
                 R"({"_id": 3})",
                 R"({"_id": 4, "a": [], "b": {}, "c": [[], [{}]], "n": NaN})",
             }) {
            out.push_back(bson::fromJson(json));
        }
        return out;
    }();
    return docs;
}

// A built document a reader can walk: well-formed BSON of its declared size, as a router checks
// a shard's reply (validateBsonStructure). Field names may be any bytes: $rename's target or
// $unwind's includeArrayIndex come from string values, whose UTF-8 mongod does not check either.
// A value nested deeper than kMaxParseDepth ($reduce can build one) is refused by every reader
// with Overflow (15), a clean error, so that is accepted too.
inline void checkValid(bson::BsonView doc) {
    Status s = bson::validateBsonStructure(doc.data(), doc.size(), bson::kMaxParseDepth);
    check(s.isOK() || s.is(ErrorCodes::Overflow));
}

}  // namespace tessera::fuzz
