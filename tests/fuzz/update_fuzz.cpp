// Fuzzes the update language (query/update_driver.h): the input's first field is the update
// (`u`: operators, a replacement or a pipeline), its second, when an array, the arrayFilters. Any
// update parses or fails with a status; a parsed one applied to every sample document either
// fails with a status or yields a valid BSON document, and applying it again to its own output
// never crashes.
#include "fuzz_util.h"
#include "query/update_driver.h"

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::optional<bson::BsonView> input = fuzz::inputDocument(data, size);
    if (!input) return 0;
    if (fuzz::hasLargeRange(*input)) return 0;
    auto it = input->begin();
    if (it == input->end()) return 0;
    bson::BsonElement u = *it;
    ++it;
    bson::BsonView arrayFilters;
    if (it != input->end() && (*it).isArray()) arrayFilters = (*it).objValue();
    auto parsed = query::UpdateDriver::parse(u, arrayFilters, nullptr);
    if (!parsed.isOK()) return 0;
    const query::UpdateDriver& driver = parsed.getValue();
    query::ApplyContext ctx;
    ctx.positionalIndex = 0;
    ctx.nowMillis = [] { return int64_t{1700000000000}; };
    ctx.nowTimestamp = [] { return uint64_t{1700000000} << 32; };
    for (const bson::BsonObj& doc : fuzz::sampleDocuments()) {
        bson::BsonObj out;
        bool modified = false;
        if (!driver.apply(doc, ctx, &out, &modified).isOK()) continue;
        fuzz::checkValid(out);
        bson::BsonObj again;
        if (driver.apply(out, ctx, &again, &modified).isOK()) fuzz::checkValid(again);
    }
    bson::BsonObj upserted;
    if (driver.applyForUpsert(bson::BsonView(), &upserted, ctx).isOK()) fuzz::checkValid(upserted);
    return 0;
}
