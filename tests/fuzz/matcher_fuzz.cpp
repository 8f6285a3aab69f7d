// Fuzzes the query language's filter parser and matcher (query/matcher.h): any filter document
// parses or fails with a status; a parsed one matches every sample document without crashing,
// the same way twice (matching is a pure function of the document).
#include "fuzz_util.h"
#include "query/matcher.h"

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::optional<bson::BsonView> filter = fuzz::inputDocument(data, size);
    if (!filter) return 0;
    auto parsed = query::Matcher::parse(*filter);
    if (!parsed.isOK()) {
        fuzz::check(parsed.getStatus().code() != 0);
        return 0;
    }
    const query::Matcher& m = *parsed.getValue();
    for (const bson::BsonObj& doc : fuzz::sampleDocuments()) {
        bool once = m.matches(doc);
        fuzz::check(once == m.matches(doc));
    }
    (void)m.matches(*filter);
    (void)query::Matcher::collectEqualities(*filter);
    return 0;
}
