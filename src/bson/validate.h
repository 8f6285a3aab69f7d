#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"

namespace tessera::bson {

// MongoDB's limits.
constexpr size_t kMaxUserDocumentSize = 16 * 1024 * 1024;  // BSONObjMaxUserSize
// Commands may be slightly larger than one document (the document plus the command around it).
constexpr size_t kMaxInternalDocumentSize = kMaxUserDocumentSize + 16 * 1024;
// Nesting allowed in any BSON Tessera parses (MongoDB's BSONDepth::kDefaultMaxAllowableDepth).
constexpr int kMaxParseDepth = 200;
// Nesting allowed in stored documents (MongoDB's BSONDepth::kBSONDepthParameterFloor... user
// storage limit of 100 levels).
constexpr int kMaxStoredDepth = 100;

// Checks that `len` bytes at `data` are exactly one well-formed BSON document: every length field
// in bounds, strings and field names NUL-terminated, field names valid UTF-8 (string values are
// not checked, as mongod does not), known type bytes, booleans 0/1, nesting at most `maxDepth`
// (capped at kMaxParseDepth). One iterative pass, safe on any byte sequence. Returns InvalidBSON
// (22) or Overflow (15, too deep) otherwise.
Status validateBson(const uint8_t* data, size_t len, int maxDepth = kMaxParseDepth);

// validateBson without the UTF-8 check of field names: every
// length in bounds, strings and names NUL-terminated, known type bytes, booleans 0/1, nesting at
// most `maxDepth`. Enough to iterate the document safely; for BSON from a trusted peer (a shard's
// reply to the router) whose contents were validated where they entered the cluster.
Status validateBsonStructure(const uint8_t* data, size_t len, int maxDepth = kMaxParseDepth);

// Nesting depth of a valid document ({} is 1, {a:{}} is 2).
int documentDepth(const uint8_t* data);

}  // namespace tessera::bson
