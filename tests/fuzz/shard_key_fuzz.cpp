// Fuzzes the shard key pattern and chunk bound parsers (placement/shard_key_pattern.h): the
// input's first field, when a document, is a key pattern; every other document field is a
// candidate shard key, chunk bound or query. Any pattern parses or fails with a status; for a
// parsed one: a bound that validates encodes, and encodings order as BSON compares the keys; a
// prefix bound extends to a valid full one that encodes between the global min and max; keys
// extracted from the sample documents and from candidate queries validate.
#include <utility>

#include "bson/compare.h"
#include "fuzz_util.h"
#include "placement/shard_key_pattern.h"

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::optional<bson::BsonView> input = fuzz::inputDocument(data, size);
    if (!input || input->isEmpty() || !input->firstElement().isObject()) return 0;
    auto parsed = placement::ShardKeyPattern::parse(input->firstElement().objValue());
    if (!parsed.isOK()) return 0;
    const placement::ShardKeyPattern& pattern = parsed.getValue();
    const std::string lo = pattern.encodeKey(pattern.globalMin());
    const std::string hi = pattern.encodeKey(pattern.globalMax());
    fuzz::check(lo < hi);
    std::vector<bson::BsonObj> keys;
    bool first = true;
    for (const bson::BsonElement& e : *input) {
        if (std::exchange(first, false) || !e.isObject()) continue;
        bson::BsonView candidate = e.objValue();
        if (pattern.validateKey(candidate).isOK()) {
            std::string k = pattern.encodeKey(candidate);
            fuzz::check(lo <= k && k <= hi);
            keys.push_back(candidate.copy());
        }
        auto extended = pattern.extendRangeBound(candidate);
        if (extended.isOK()) {
            fuzz::check(pattern.validateKey(extended.getValue()).isOK());
            std::string k = pattern.encodeKey(extended.getValue());
            fuzz::check(lo <= k && k <= hi);
        }
        auto fromQuery = pattern.extractShardKeyFromQuery(candidate);
        if (fromQuery.isOK() && !fromQuery.getValue().isEmpty()) {
            fuzz::check(pattern.validateKey(fromQuery.getValue()).isOK());
        }
    }
    for (const bson::BsonObj& doc : fuzz::sampleDocuments()) {
        auto key = pattern.extractShardKeyFromDoc(doc);
        if (key.isOK()) {
            fuzz::check(pattern.validateKey(key.getValue()).isOK());
            keys.push_back(key.getValue());
        }
    }
    // The encoding orders keys as BSON compares them (a hashed field holds NumberLongs).
    for (const bson::BsonObj& a : keys) {
        for (const bson::BsonObj& b : keys) {
            int bsonOrder = bson::compareObjects(a, b);
            std::string ka = pattern.encodeKey(a), kb = pattern.encodeKey(b);
            fuzz::check((bsonOrder < 0) == (ka < kb) && (bsonOrder == 0) == (ka == kb));
        }
    }
    return 0;
}
