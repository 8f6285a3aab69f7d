#pragma once

#include <memory>

#include "bson/compare.h"
#include "command/exec/transform_stages.h"

namespace tessera::command::exec {

// Bridges to the query module's sort and projection languages (src/query), so that stages stay
// independent of their parsers.

// A find/$sort sort specification ({a: 1, b: -1}). BadValue (2) for bad directions / empty
// field names.
// `collator` (optional) orders strings by a collation.
StatusWith<SortKeyFunctions> makeSortFunctions(
    bson::BsonView sortSpec, std::shared_ptr<const bson::StringComparator> collator = nullptr);

// A find projection ({a: 1}, {a: 0}, {"a.$": 1}, {a: {$elemMatch: ...}}, {a: {$slice: n}}).
StatusWith<ProjectionStage::Fn> makeProjection(bson::BsonView spec);

}  // namespace tessera::command::exec
