// Fuzzes aggregation expressions (query/expression.h): the input's first field is an expression.
// Any expression parses or fails with a status; a parsed one evaluated against every sample
// document either fails with a status or yields a value that appends to valid BSON, within the
// bound on an expression's value (kMaxValueBytes).
#include "fuzz_util.h"
#include "query/expression.h"

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::optional<bson::BsonView> input = fuzz::inputDocument(data, size);
    if (!input || input->isEmpty()) return 0;
    if (fuzz::hasLargeRange(*input)) return 0;
    query::ExpressionParseContext pctx;
    auto parsed = query::Expression::parse(input->firstElement(), pctx);
    if (!parsed.isOK()) return 0;
    query::Variables vars;
    vars.setNowMillis(1700000000000);
    for (const bson::BsonObj& doc : fuzz::sampleDocuments()) {
        auto v = parsed.getValue()->evaluate(doc, vars);
        if (!v.isOK()) continue;
        fuzz::check(v.getValue().holder().size() <= query::kMaxValueBytes + 64);
        bson::BsonBuilder b;
        v.getValue().appendTo(b, "v");
        fuzz::checkValid(b.obj());
    }
    return 0;
}
