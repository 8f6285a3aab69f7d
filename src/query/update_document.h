#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bson/bson_builder.h"
#include "bson/bson_obj.h"

namespace tessera::query {

// A mutable document tree used while applying an update. Nodes are expanded lazily: a node holds
// its original BSON element until something inside it must change, and only then is replaced by
// a list of child nodes. Serialising copies untouched subtrees byte for byte.
//
// Invariants:
//  1. A node that is not expanded is fully described by `value` (its name is `name`).
//  2. An expanded node is an Object or Array whose children are in `children`, in order; array
//     children's names are ignored (indices are regenerated when serialising).
//  3. Node addresses are stable (children are held by unique_ptr): erasing one child never moves
//     its siblings, so a traversal can keep pointers to ancestors while a modifier edits elsewhere.

class MutableNode {
  public:
    MutableNode() = default;
    MutableNode(std::string name, bson::BsonElement value)
        : _name(std::move(name)), _value(value) {}

    const std::string& name() const { return _name; }
    void setName(std::string name) { _name = std::move(name); }

    bson::BsonType type() const { return _expanded ? _expandedType : _value.type(); }
    bool isContainer() const {
        return type() == bson::BsonType::Object || type() == bson::BsonType::Array;
    }
    bool isArray() const { return type() == bson::BsonType::Array; }
    bool isObject() const { return type() == bson::BsonType::Object; }

    // Replaces the value (the element must outlive the node: use MutableDocument::makeValue).
    void setValue(bson::BsonElement value);

    // Children of a container (expands it on first use).
    std::vector<std::unique_ptr<MutableNode>>& children();
    size_t numChildren();

    // The child named `field` for an object, or at index `field` for an array; nullptr if absent.
    MutableNode* findChild(std::string_view field);
    // Appends a child to an object / array (expanding it).
    MutableNode* appendChild(std::string name, bson::BsonElement value);
    // Removes the child at position `i`.
    void eraseChild(size_t i);
    // Position of `child` among the children, or -1.
    long indexOf(const MutableNode* child);

    // Appends this node as a field named `name` to `b`.
    void appendTo(bson::BsonBuilder& b, std::string_view name) const;
    // This node's value as a single element owned by `holder` (serialises expanded nodes).
    bson::BsonElement element(bson::BsonObj* holder) const;
    // Whether the node is expanded (for tests).
    bool expanded() const { return _expanded; }

  private:
    void expand();

    std::string _name;
    bson::BsonElement _value;
    bool _expanded = false;
    bson::BsonType _expandedType = bson::BsonType::Object;
    std::vector<std::unique_ptr<MutableNode>> _children;
};

class MutableDocument {
  public:
    explicit MutableDocument(bson::BsonView doc);

    MutableNode& root() { return _root; }
    // Stores a value built by `build(builder, name)` and returns the element (valid as long as
    // this document lives).
    template <typename F>
    bson::BsonElement makeValue(F&& build) {
        bson::BsonBuilder b;
        build(b, std::string_view("v"));
        return keep(b.obj());
    }
    // Keeps a copy of `e`'s value alive in this document and returns the kept element.
    bson::BsonElement copyValue(const bson::BsonElement& e);
    bson::BsonElement keep(bson::BsonObj wrapper);
    bson::BsonObj toBson() const;

  private:
    bson::BsonObj _original;
    MutableNode _root;
    std::vector<bson::BsonObj> _arena;
};

// MongoDB's BSONElement::toString style for error messages: `a: 1`, `{_id: 1, a: "x"}`,
// `[ 1, 2 ]`, `ObjectId('...')`.
std::string mongoValueString(const bson::BsonElement& e);
std::string mongoElementString(const bson::BsonElement& e);  // "name: value"
std::string mongoDocString(bson::BsonView doc);
// "{name: value}" for a mutable node (as mutablebson::Element::toString).
std::string mongoNodeString(const MutableNode& node);

}  // namespace tessera::query
