#include "query/update_node.h"

#include "query/update_driver.h"
#include "query/update_predicate.h"

namespace tessera::query {

namespace {

std::string join(const std::vector<std::string>& a, const std::vector<std::string>* b = nullptr) {
    std::string out;
    for (const auto& p : a) {
        if (!out.empty()) out += '.';
        out += p;
    }
    if (b) {
        for (const auto& p : *b) {
            if (!out.empty()) out += '.';
            out += p;
        }
    }
    return out;
}

std::string dottedPrefix(const std::vector<std::string>& parts, size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) {
        if (i) out += '.';
        out += parts[i];
    }
    return out;
}

Status conflict(const std::string& path) {
    return Status(ErrorCodes::ConflictingUpdateOperators,
                  "Update created a conflict at '" + path + "'");
}

// Serialised `_id` of the document root, for immutability checks around a leaf.
std::string idBytes(MutableDocument* doc) {
    MutableNode* id = doc->root().findChild("_id");
    if (!id) return {};
    bson::BsonObj holder;
    bson::BsonElement e = id->element(&holder);
    return std::string(reinterpret_cast<const char*>(e.value()), e.valueSize()) +
           static_cast<char>(e.type());
}

Status applyLeaf(const UpdateLeafNode* leaf, UpdateApplyState& state, UpdateTarget& target) {
    const std::string& first =
        target.pathTaken.empty() ? target.pathToCreate.front() : target.pathTaken.front();
    if (first != "_id" || state.originalId.eoo()) return leaf->apply(state, target);
    std::string before = idBytes(state.doc);
    TRY_STATUS(leaf->apply(state, target));
    if (idBytes(state.doc) != before) {
        return Status(ErrorCodes::ImmutableField, "Performing an update on the path '" +
                                                      target.fullPath() +
                                                      "' would modify the immutable field '_id'");
    }
    return Status::OK();
}

Status applyObjectNodes(const std::vector<const UpdateNode*>& nodes, UpdateApplyState& state,
                        const UpdateTarget& target) {
    std::map<std::string, std::vector<const UpdateNode*>> merged;
    for (const UpdateNode* n : nodes) {
        auto* obj = static_cast<const UpdateObjectNode*>(n);
        for (const auto& [field, child] : obj->children) merged[field].push_back(child.get());
        if (obj->positionalChild) {
            if (!state.ctx->positionalIndex) {
                return Status(ErrorCodes::BadValue,
                              "The positional operator did not find the match needed from the "
                              "query.");
            }
            merged[std::to_string(*state.ctx->positionalIndex)].push_back(
                obj->positionalChild.get());
        }
    }
    for (const auto& [field, list] : merged) {
        // Resolve the child's position afresh: an earlier sibling may have created part of
        // what was missing ({$set: {"a.b": 1, "a.c": 1}} on {} creates "a" for "a.b" first).
        UpdateTarget child = target;
        child.pathToCreate.push_back(field);
        while (!child.pathToCreate.empty()) {
            MutableNode* c = child.element->findChild(child.pathToCreate.front());
            if (!c) break;
            child.parent = child.element;
            child.element = c;
            child.pathTaken.push_back(child.pathToCreate.front());
            child.pathToCreate.erase(child.pathToCreate.begin());
        }
        TRY_STATUS(applyUpdateNodes(list, state, std::move(child)));
    }
    return Status::OK();
}

Status applyArrayNodes(const std::vector<const UpdateNode*>& nodes, UpdateApplyState& state,
                       const UpdateTarget& target) {
    if (!target.pathToCreate.empty()) {
        return Status(ErrorCodes::BadValue, "The path '" + target.fullPath() +
                                                "' must exist in the document in order to apply "
                                                "array updates.");
    }
    MutableNode* array = target.element;
    if (!array->isArray()) {
        bson::BsonObj holder;
        return Status(ErrorCodes::BadValue, "Cannot apply array updates to non-array element " +
                                                mongoElementString(array->element(&holder)));
    }
    size_t n = array->numChildren();
    for (size_t i = 0; i < n; ++i) {
        MutableNode* elem = array->children()[i].get();
        std::vector<const UpdateNode*> matching;
        bson::BsonObj holder;
        bson::BsonElement value;
        bool haveValue = false;
        for (const UpdateNode* node : nodes) {
            for (const auto& [id, child] : static_cast<const UpdateArrayNode*>(node)->children) {
                if (!id.empty()) {
                    if (!haveValue) {
                        value = elem->element(&holder);
                        haveValue = true;
                    }
                    if (!state.arrayFilters->matches(id, value)) continue;
                }
                matching.push_back(child.get());
            }
        }
        if (matching.empty()) continue;
        UpdateTarget child = target;
        child.parent = array;
        child.element = elem;
        child.pathTaken.push_back(std::to_string(i));
        TRY_STATUS(applyUpdateNodes(matching, state, std::move(child)));
    }
    return Status::OK();
}

}  // namespace

std::string UpdateTarget::fullPath() const { return join(pathTaken, &pathToCreate); }
std::string UpdateTarget::takenPath() const { return join(pathTaken); }

bool isArrayFilterPart(const std::string& part, std::string* id) {
    if (part.size() < 3 || part[0] != '$' || part[1] != '[' || part.back() != ']') return false;
    if (id) *id = part.substr(2, part.size() - 3);
    return true;
}

Status applyUpdateNodes(const std::vector<const UpdateNode*>& nodes, UpdateApplyState& state,
                        UpdateTarget target) {
    invariant(!nodes.empty());
    UpdateNode::Type type = nodes.front()->type();
    if (nodes.size() == 1 && type == UpdateNode::Type::kLeaf) {
        return applyLeaf(static_cast<const UpdateLeafNode*>(nodes.front()), state, target);
    }
    for (const UpdateNode* n : nodes) {
        if (n->type() != type || n->type() == UpdateNode::Type::kLeaf) {
            return conflict(target.fullPath());
        }
    }
    if (type == UpdateNode::Type::kObject) return applyObjectNodes(nodes, state, target);
    return applyArrayNodes(nodes, state, target);
}

Status addUpdateLeaf(UpdateObjectNode* root, const std::vector<std::string>& parts,
                     const std::string& dotted, std::unique_ptr<UpdateNode> leaf) {
    UpdateInnerNode* current = root;
    auto slot = [](UpdateInnerNode* node, const std::string& part) -> std::unique_ptr<UpdateNode>& {
        if (node->type() == UpdateNode::Type::kObject) {
            auto* obj = static_cast<UpdateObjectNode*>(node);
            if (part == "$") return obj->positionalChild;
            return obj->children[part];
        }
        std::string id;
        invariant(isArrayFilterPart(part, &id));
        return node->children[id];
    };
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
        bool nextIsArray = isArrayFilterPart(parts[i + 1]);
        UpdateNode::Type want = nextIsArray ? UpdateNode::Type::kArray : UpdateNode::Type::kObject;
        std::unique_ptr<UpdateNode>& child = slot(current, parts[i]);
        if (child) {
            if (child->type() != want) {
                return Status(ErrorCodes::ConflictingUpdateOperators,
                              "Updating the path '" + dotted + "' would create a conflict at '" +
                                  dottedPrefix(parts, i + 1) + "'");
            }
        } else {
            if (nextIsArray) {
                child = std::make_unique<UpdateArrayNode>();
            } else {
                child = std::make_unique<UpdateObjectNode>();
            }
        }
        current = static_cast<UpdateInnerNode*>(child.get());
    }
    std::unique_ptr<UpdateNode>& last = slot(current, parts.back());
    if (last) {
        return Status(
            ErrorCodes::ConflictingUpdateOperators,
            "Updating the path '" + dotted + "' would create a conflict at '" + dotted + "'");
    }
    last = std::move(leaf);
    return Status::OK();
}

}  // namespace tessera::query
