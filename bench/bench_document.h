// The documents the load generator writes: {_id: <int64 id>, k: <int64>, n: <int32 0>,
// pad: <string>}, with `pad` sized so that the whole BSON document is exactly the requested size
// (or as small as possible when the requested size is below the fixed fields' size).
#pragma once

#include <bson/bson.h>

#include <cstdint>

#include "value_source.h"

namespace tessera::bench {

// BSON size of a document with an empty pad: the smallest document makeDocument can produce.
uint32_t minDocumentSize();

// The secondary field's value for a document id: a scrambled, well-spread int64.
int64_t secondaryKey(int64_t id);

// Initialises *out (an uninitialised bson_t) with the document for `id`; caller bson_destroy()s.
void makeDocument(int64_t id, uint32_t docSize, const ValueSource& pad, bson_t* out);

}  // namespace tessera::bench
