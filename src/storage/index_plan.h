#pragma once

#include <vector>

#include "base/status.h"
#include "storage/catalog_types.h"

namespace tessera::storage {

// The indexes of `specs` that collection `info` does not have yet (Engine::createIndexes'
// rules): each validated, named, given the next index id of `info` (advanced) and appended to
// `toBuild`; one whose name and key match an existing or earlier one is skipped (not an error).
// IndexOptionsConflict (85) / IndexKeySpecsConflict (86) for clashes, BadValue or
// CannotCreateIndex (67) for bad specs. Shared by DDL and a transaction's createIndexes.
Status planIndexes(std::vector<IndexSpec> specs, CollectionInfo* info,
                   std::vector<IndexSpec>* toBuild);

}  // namespace tessera::storage
