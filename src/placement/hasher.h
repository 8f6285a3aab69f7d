#pragma once

// MongoDB's BSONElementHasher lives in src/bson/element_hash.h so that storage (hashed index
// keys) and query (hashed index bounds) can use it below placement; this header keeps
// placement's API (placement::hashElement, ...) unchanged.
#include "bson/element_hash.h"

namespace tessera::placement {

using bson::hashElement;
using bson::kDefaultHashSeed;
using bson::squashNumberForHash;

}  // namespace tessera::placement
