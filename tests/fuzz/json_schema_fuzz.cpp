// Fuzzes $jsonSchema (query/json_schema.h): any schema document parses or fails with a status; a
// parsed one checks every sample document without crashing, the same way twice.
#include "fuzz_util.h"
#include "query/json_schema.h"

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::optional<bson::BsonView> schema = fuzz::inputDocument(data, size);
    if (!schema) return 0;
    auto parsed = query::JsonSchema::parse(*schema);
    if (!parsed.isOK()) return 0;
    for (const bson::BsonObj& doc : fuzz::sampleDocuments()) {
        bool once = parsed.getValue()->matches(doc);
        fuzz::check(once == parsed.getValue()->matches(doc));
    }
    return 0;
}
