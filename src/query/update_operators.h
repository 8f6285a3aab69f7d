#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "query/update_node.h"

namespace tessera::query {

// MongoDB's update operators (modifier_table.cpp).
enum class ModifierType {
    kSet,
    kUnset,
    kInc,
    kMul,
    kMin,
    kMax,
    kRename,
    kSetOnInsert,
    kCurrentDate,
    kPush,
    kAddToSet,
    kPull,
    kPullAll,
    kPop,
    kBit,
};

// The operator named `name` ("$set"), or false for unknown names.
bool modifierFromName(std::string_view name, ModifierType* out);

// Parses the argument of one `{path: arg}` entry into a leaf node. Not for $rename.
StatusWith<std::unique_ptr<UpdateLeafNode>> makeModifierNode(ModifierType type,
                                                             const bson::BsonElement& arg);

// $rename's two halves: the node at the destination (moves the source value there) and the
// placeholder at the source (occupies the path so other operators conflict with it).
std::unique_ptr<UpdateLeafNode> makeRenameNode(std::string from, std::string to);
std::unique_ptr<UpdateLeafNode> makeConflictPlaceholder();

}  // namespace tessera::query
