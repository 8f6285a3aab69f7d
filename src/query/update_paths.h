#pragma once

#include <string_view>
#include <vector>

#include "bson/bson_element.h"

namespace tessera::query {

// True when two dotted paths overlap: equal, or one a prefix of the other at a dot ("a" and
// "a.b", not "a" and "ab").
bool pathsOverlap(std::string_view a, std::string_view b);

// Whether an update's `u` (the element: a replacement or operator document, or a pipeline array)
// may change the value at one of `paths` — conservative, "true" means "may":
//  - a replacement and a pipeline always may (an empty replacement too);
//  - an operator document when a path some operator writes overlaps one of `paths` ($rename:
//    its source and its destination). Positional and array-filter parts ("a.$.b", "a.$[x]")
//    end the comparison: they write inside arrays, so only the prefix before them matters.
// Used for shard keys: the router sends an update that may move a document through the path
// that reads it first, and a shard checks only those updates for a changed key.
bool updateMayModifyPaths(bson::BsonElement u, const std::vector<std::string_view>& paths);
// The same for an update already split into its document and kind.
bool updateMayModifyPaths(bson::BsonView update, bool isPipeline,
                          const std::vector<std::string_view>& paths);

}  // namespace tessera::query
