#include "bench_document.h"

#include <string_view>

namespace tessera::bench {
namespace {

void appendFields(bson_t* doc, int64_t id, std::string_view pad) {
    BSON_APPEND_INT64(doc, "_id", id);
    BSON_APPEND_INT64(doc, "k", secondaryKey(id));
    BSON_APPEND_INT32(doc, "n", 0);
    // An empty view may carry a null pointer, which libbson would append as BSON null.
    bson_append_utf8(doc, "pad", 3, pad.empty() ? "" : pad.data(), static_cast<int>(pad.size()));
}

}  // namespace

uint32_t minDocumentSize() {
    bson_t doc;
    bson_init(&doc);
    appendFields(&doc, 0, {});
    uint32_t len = doc.len;
    bson_destroy(&doc);
    return len;
}

int64_t secondaryKey(int64_t id) {
    // Keep it positive and well spread; distinct ids give distinct keys.
    return static_cast<int64_t>(scramble64(static_cast<uint64_t>(id)) >> 1);
}

void makeDocument(int64_t id, uint32_t docSize, const ValueSource& pad, bson_t* out) {
    static const uint32_t kFixed = minDocumentSize();
    uint64_t padLen = docSize > kFixed ? docSize - kFixed : 0;
    if (padLen > pad.size()) {
        padLen = pad.size();
    }
    bson_init(out);
    appendFields(out, id, pad.slice(static_cast<uint64_t>(id)).substr(0, padLen));
}

}  // namespace tessera::bench
