#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "query/update_document.h"

namespace tessera::query {

struct ApplyContext;
class ArrayFilters;

// Everything a modifier needs while one update is applied to one document.
struct UpdateApplyState {
    MutableDocument* doc = nullptr;
    const ApplyContext* ctx = nullptr;
    const ArrayFilters* arrayFilters = nullptr;
    bool insert = false;
    // `_id` of the document before the update (eoo when it had none): immutable.
    bson::BsonElement originalId;
    bson::BsonObj originalHolder;
    int64_t nowMillis = 0;
    uint64_t nowTimestamp = 0;
};

// Where a node applies: the deepest existing element on its path, the path to it, and the part
// of the path that does not exist yet (MongoDB's pathTaken / pathToCreate).
struct UpdateTarget {
    MutableNode* element = nullptr;
    // The container holding `element` (nullptr for the root). Only meaningful when pathToCreate
    // is empty.
    MutableNode* parent = nullptr;
    std::vector<std::string> pathTaken;
    std::vector<std::string> pathToCreate;

    std::string fullPath() const;
    std::string takenPath() const;
};

// MongoDB's UpdateNode tree: object nodes keyed by field name (plus the positional `$`), array
// nodes keyed by array filter identifier ("" for `$[]`), and modifier leaves.
class UpdateNode {
  public:
    enum class Type { kObject, kArray, kLeaf };
    virtual ~UpdateNode() = default;
    virtual Type type() const = 0;
};

class UpdateLeafNode : public UpdateNode {
  public:
    Type type() const override { return Type::kLeaf; }
    virtual Status apply(UpdateApplyState& state, UpdateTarget& target) const = 0;
};

class UpdateInnerNode : public UpdateNode {
  public:
    // Children in lexicographic order of their keys (MongoDB applies them in that order).
    std::map<std::string, std::unique_ptr<UpdateNode>> children;
};

class UpdateObjectNode : public UpdateInnerNode {
  public:
    Type type() const override { return Type::kObject; }
    std::unique_ptr<UpdateNode> positionalChild;
};

class UpdateArrayNode : public UpdateInnerNode {
  public:
    Type type() const override { return Type::kArray; }
};

// Applies several nodes that target the same element (one node normally; more when a positional
// `$` resolves to an index that also has a child, or when an array element matches several
// array filters). Leaves cannot be merged: ConflictingUpdateOperators.
Status applyUpdateNodes(const std::vector<const UpdateNode*>& nodes, UpdateApplyState& state,
                        UpdateTarget target);

// Adds a leaf at `parts` (already validated) under `root`; reports conflicts with MongoDB's
// message ("Updating the path 'a.b' would create a conflict at 'a'").
Status addUpdateLeaf(UpdateObjectNode* root, const std::vector<std::string>& parts,
                     const std::string& dotted, std::unique_ptr<UpdateNode> leaf);

// Whether a path part is `$[]` or `$[id]`; `id` receives the identifier ("" for `$[]`).
bool isArrayFilterPart(const std::string& part, std::string* id = nullptr);

}  // namespace tessera::query
