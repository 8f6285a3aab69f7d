#include "query/projection.h"

#include <cmath>

#include "bson/bson_builder.h"

namespace tessera::query {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using bson::BsonView;

struct Projection::Node {
    enum class Kind { kSubTree, kInclude, kExclude, kLiteral, kSlice, kElemMatch, kPositional };
    Kind kind = Kind::kSubTree;
    // kSubTree: children in spec order.
    std::vector<std::pair<std::string, std::unique_ptr<Node>>> children;
    BsonElement literal;                 // kLiteral
    int64_t sliceSkip = 0;               // kSlice: [skip, limit]; skip < 0 counts from the end
    int64_t sliceLimit = 0;              // kSlice
    bool sliceHasSkip = false;           // kSlice: the [skip, limit] form
    std::unique_ptr<Matcher> elemMatch;  // kElemMatch: {field: {$elemMatch: ...}}
    bool onPositionalPath = false;

    Node* find(std::string_view name) const {
        for (const auto& c : children) {
            if (c.first == name) return c.second.get();
        }
        return nullptr;
    }
};

namespace {

using Node = Projection::Node;
using Kind = Node::Kind;

Status collision(const std::string& path, const std::string& remaining) {
    if (remaining.empty()) return Status(31250, "Path collision at " + path);
    return Status(31249, "Path collision at " + path + " remaining portion " + remaining);
}

// Inserts `leaf` at dotted `path` under `root`.
Status insert(Node* root, const std::string& path, std::unique_ptr<Node> leaf, bool positional) {
    FieldPath fp(path);
    Node* cur = root;
    for (size_t i = 0; i < fp.numParts(); ++i) {
        const std::string& part = fp.part(i);
        if (part.empty()) {
            return Status(ErrorCodes::BadValue, "FieldPath field names may not be empty strings.");
        }
        if (positional) cur->onPositionalPath = true;
        Node* next = cur->find(part);
        const bool last = i + 1 == fp.numParts();
        if (last) {
            if (next) return collision(path, "");
            if (positional) leaf->onPositionalPath = true;
            cur->children.emplace_back(part, std::move(leaf));
            return Status::OK();
        }
        if (!next) {
            cur->children.emplace_back(part, std::make_unique<Node>());
            next = cur->children.back().second.get();
        } else if (next->kind != Kind::kSubTree) {
            std::string remaining;
            for (size_t j = i + 1; j < fp.numParts(); ++j) {
                if (!remaining.empty()) remaining += '.';
                remaining += fp.part(j);
            }
            return collision(path, remaining);
        }
        cur = next;
    }
    return Status::OK();
}

StatusWith<int64_t> sliceNumber(const BsonElement& e) {
    if (!e.isNumber()) {
        return Status(28667, "$slice only supports numbers and [skip, limit] arrays");
    }
    double d = e.numberDouble();
    if (std::isnan(d))
        return Status(28667, "$slice only supports numbers and [skip, limit] arrays");
    return e.numberLong();
}

class SpecParser {
  public:
    Status parseLevel(BsonView spec, const std::string& prefix, Node* root) {
        for (BsonElement e : spec) {
            std::string name = prefix.empty() ? std::string(e.fieldName())
                                              : prefix + "." + std::string(e.fieldName());
            TRY_STATUS(parseField(name, e, root));
        }
        return Status::OK();
    }

    std::optional<bool> mode;  // true = inclusion
    bool hasPositional = false;

  private:
    Status setMode(const std::string& name, bool inclusion) {
        if (name == "_id") return Status::OK();
        if (!mode) {
            mode = inclusion;
            return Status::OK();
        }
        if (*mode && !inclusion) {
            return Status(31254,
                          "Cannot do exclusion on field " + name + " in inclusion projection");
        }
        if (!*mode && inclusion) {
            return Status(31253,
                          "Cannot do inclusion on field " + name + " in exclusion projection");
        }
        return Status::OK();
    }

    Status parseField(const std::string& name, const BsonElement& e, Node* root) {
        // Positional: "a.$" / "a.b.$".
        auto dollar = name.find(".$");
        if (name == "$" || name.rfind("$", 0) == 0) {
            return Status(16410,
                          "FieldPath field names may not start with '$'. Consider using "
                          "$getField or $setField.");
        }
        if (dollar != std::string::npos) {
            if (dollar + 2 != name.size()) {
                return Status(31394,
                              "As of 4.4, it's illegal to specify positional operator in "
                              "the middle of a path.Positional projection may only be "
                              "used at the end, for example: a.b.$. If the query "
                              "previously used a form like a.b.$.d, remove the parts "
                              "following the '$' and the results will be equivalent.");
            }
            if (hasPositional) {
                return Status(31276,
                              "Cannot specify more than one positional projection per query.");
            }
            hasPositional = true;
            TRY_STATUS(setMode(name, true));
            auto leaf = std::make_unique<Node>();
            leaf->kind = Kind::kPositional;
            return insert(root, name.substr(0, dollar), std::move(leaf), true);
        }
        if (e.isObject()) {
            BsonView obj = e.objValue();
            if (obj.isEmpty()) {
                return Status(51270,
                              "An empty sub-projection is not a valid value. Found "
                              "empty object at path");
            }
            auto op = obj.firstElement().fieldName();
            if (!op.empty() && op[0] == '$') return parseOperator(name, obj, root);
            return parseLevel(obj, name, root);
        }
        auto leaf = std::make_unique<Node>();
        if (e.isNumber() || e.type() == BsonType::Bool) {
            bool include = e.trueValue();
            TRY_STATUS(setMode(name, include));
            leaf->kind = include ? Kind::kInclude : Kind::kExclude;
            return insert(root, name, std::move(leaf), false);
        }
        if (e.type() == BsonType::String && !e.stringValue().empty() && e.stringValue()[0] == '$') {
            return Status(ErrorCodes::BadValue,
                          "projection field path expressions are not supported: " + e.toString());
        }
        if (e.isArray()) {
            for (BsonElement x : e.objValue()) {
                if ((x.type() == BsonType::String && !x.stringValue().empty() &&
                     x.stringValue()[0] == '$') ||
                    x.isObject()) {
                    return Status(ErrorCodes::BadValue,
                                  "projection expressions are not supported: " + e.toString());
                }
            }
        }
        TRY_STATUS(setMode(name, true));
        leaf->kind = Kind::kLiteral;
        leaf->literal = e;
        return insert(root, name, std::move(leaf), false);
    }

    Status parseOperator(const std::string& name, BsonView obj, Node* root) {
        BsonElement op = obj.firstElement();
        auto leaf = std::make_unique<Node>();
        if (op.fieldName() == "$slice") {
            leaf->kind = Kind::kSlice;
            if (op.isArray()) {
                BsonView arr = op.objValue();
                if (arr.nFields() != 2) {
                    return Status(28667, "$slice only supports numbers and [skip, limit] arrays");
                }
                auto it = arr.begin();
                ASSIGN_OR_RETURN(leaf->sliceSkip, sliceNumber(*it++));
                ASSIGN_OR_RETURN(leaf->sliceLimit, sliceNumber(*it));
                if (leaf->sliceLimit <= 0) {
                    return Status(28724, "Second argument to $slice must be positive");
                }
                leaf->sliceHasSkip = true;
            } else {
                ASSIGN_OR_RETURN(leaf->sliceLimit, sliceNumber(op));
            }
            return insert(root, name, std::move(leaf), false);
        }
        if (op.fieldName() == "$elemMatch") {
            if (name.find('.') != std::string::npos) {
                return Status(31275, "Cannot use $elemMatch projection on a nested field.");
            }
            if (!op.isObject())
                return Status(ErrorCodes::BadValue,
                              "elemMatch: Invalid argument, object required.");
            BsonBuilder b;
            b.startObject(name).appendElement(op).end();
            BsonObj filter = b.obj();
            ASSIGN_OR_RETURN(leaf->elemMatch, Matcher::parse(filter));
            TRY_STATUS(setMode(name, true));
            leaf->kind = Kind::kElemMatch;
            return insert(root, name, std::move(leaf), false);
        }
        if (op.fieldName() == "$literal") {
            TRY_STATUS(setMode(name, true));
            leaf->kind = Kind::kLiteral;
            leaf->literal = op;
            return insert(root, name, std::move(leaf), false);
        }
        if (op.fieldName() == "$meta") {
            return Status(ErrorCodes::BadValue, "$meta projections are not supported");
        }
        return Status(ErrorCodes::BadValue,
                      "projection expression " + std::string(op.fieldName()) + " is not supported");
    }
};

BsonObj sliceArray(BsonView arr, const Node& n) {
    std::vector<BsonElement> elems(arr.begin(), arr.end());
    const int64_t size = static_cast<int64_t>(elems.size());
    int64_t start, count;
    if (n.sliceHasSkip) {
        start = n.sliceSkip < 0 ? std::max<int64_t>(0, size + n.sliceSkip)
                                : std::min(n.sliceSkip, size);
        count = n.sliceLimit;
    } else if (n.sliceLimit >= 0) {
        start = 0;
        count = n.sliceLimit;
    } else {
        start = std::max<int64_t>(0, size + n.sliceLimit);
        count = size;
    }
    BsonArrayBuilder b;
    for (int64_t i = start; i < size && i - start < count; ++i) b.appendElement(elems[i]);
    return b.arr();
}

class Applier {
  public:
    Applier(bool inclusion, const MatchDetails* details)
        : _inclusion(inclusion), _details(details) {}

    Status applyObject(BsonView doc, const Node& node, BsonBuilder* out, bool positionalDone,
                       bool isRoot) {
        for (BsonElement e : doc) {
            const Node* child = node.find(e.fieldName());
            if (!child) {
                if (!_inclusion)
                    out->appendElement(e);
                else if (isRoot && e.fieldName() == "_id" && _includeIdByDefault)
                    out->appendElement(e);
                continue;
            }
            TRY_STATUS(applyField(e, *child, out, positionalDone));
        }
        if (_inclusion) TRY_STATUS(appendMissingLiterals(doc, node, out));
        return Status::OK();
    }

    bool _includeIdByDefault = true;

  private:
    Status appendMissingLiterals(BsonView doc, const Node& node, BsonBuilder* out) {
        for (const auto& [name, child] : node.children) {
            if (doc.hasField(name)) {
                continue;
            }
            if (child->kind == Kind::kLiteral) {
                out->appendElementAs(child->literal, name);
            } else if (child->kind == Kind::kSubTree && hasLiteral(*child)) {
                out->startObject(name);
                TRY_STATUS(appendMissingLiterals(BsonView(), *child, out));
                out->end();
            }
        }
        return Status::OK();
    }

    static bool hasLiteral(const Node& n) {
        if (n.kind == Kind::kLiteral) return true;
        for (const auto& c : n.children) {
            if (hasLiteral(*c.second)) return true;
        }
        return false;
    }

    Status positionalElement(BsonElement arr, BsonElement* out) {
        if (!_details || !_details->elemMatchKey) {
            return Status(51246,
                          "Executor error during find command :: caused by :: positional "
                          "operator '.$' couldn't find a matching element in the array");
        }
        BsonElement x = arr.objValue().getField(*_details->elemMatchKey);
        if (x.eoo()) {
            return Status(51246,
                          "Executor error during find command :: caused by :: positional "
                          "operator '.$' element mismatch");
        }
        *out = x;
        return Status::OK();
    }

    Status applyField(BsonElement e, const Node& child, BsonBuilder* out, bool positionalDone) {
        auto name = e.fieldName();
        switch (child.kind) {
            case Kind::kInclude:
                out->appendElement(e);
                return Status::OK();
            case Kind::kExclude:
                return Status::OK();
            case Kind::kLiteral:
                out->appendElementAs(child.literal, name);
                return Status::OK();
            case Kind::kSlice:
                if (e.isArray()) {
                    out->appendArray(name, sliceArray(e.objValue(), child));
                } else {
                    out->appendElement(e);
                }
                return Status::OK();
            case Kind::kElemMatch: {
                if (!e.isArray()) return Status::OK();
                // The sub-matcher is {name: {$elemMatch: ...}}; match on a document holding
                // just this array to find the element.
                BsonBuilder one;
                one.appendElement(e);
                BsonObj holder = one.obj();
                MatchDetails d;
                if (child.elemMatch->matches(holder, &d) && d.elemMatchKey) {
                    BsonElement x = e.objValue().getField(*d.elemMatchKey);
                    BsonArrayBuilder ab;
                    ab.appendElement(x);
                    out->appendArray(name, ab.arr());
                }
                return Status::OK();
            }
            case Kind::kPositional:
                if (e.isArray() && !positionalDone) {
                    BsonElement x;
                    TRY_STATUS(positionalElement(e, &x));
                    BsonArrayBuilder ab;
                    ab.appendElement(x);
                    out->appendArray(name, ab.arr());
                } else {
                    out->appendElement(e);
                }
                return Status::OK();
            case Kind::kSubTree:
                if (e.isObject()) {
                    out->startObject(name);
                    TRY_STATUS(applyObject(e.objValue(), child, out, positionalDone, false));
                    out->end();
                } else if (e.isArray()) {
                    if (child.onPositionalPath && !positionalDone) {
                        BsonElement x;
                        TRY_STATUS(positionalElement(e, &x));
                        out->startArray(name);
                        if (x.isObject()) {
                            out->startObject("0");
                            TRY_STATUS(applyObject(x.objValue(), child, out, true, false));
                            out->end();
                        }
                        out->end();
                    } else {
                        out->startArray(name);
                        TRY_STATUS(applyArray(e.objValue(), child, out, positionalDone));
                        out->end();
                    }
                } else if (!_inclusion) {
                    out->appendElement(e);
                }
                return Status::OK();
        }
        return Status::OK();
    }

    // Applies a sub-tree to each element of an array (the builder has an open array).
    Status applyArray(BsonView arr, const Node& node, BsonBuilder* out, bool positionalDone) {
        size_t i = 0;
        for (BsonElement x : arr) {
            std::string key = std::to_string(i);
            if (x.isObject()) {
                out->startObject(key);
                TRY_STATUS(applyObject(x.objValue(), node, out, positionalDone, false));
                out->end();
            } else if (x.isArray()) {
                out->startArray(key);
                TRY_STATUS(applyArray(x.objValue(), node, out, positionalDone));
                out->end();
            } else if (!_inclusion) {
                out->appendElementAs(x, key);
            } else {
                continue;
            }
            ++i;
        }
        return Status::OK();
    }

    bool _inclusion;
    const MatchDetails* _details;
};

}  // namespace

Projection::~Projection() = default;

StatusWith<std::unique_ptr<Projection>> Projection::parse(BsonView spec) {
    std::unique_ptr<Projection> p(new Projection());
    p->_spec = spec.copy();
    p->_root = std::make_unique<Node>();
    SpecParser parser;
    TRY_STATUS(parser.parseLevel(p->_spec, "", p->_root.get()));
    p->_hasPositional = parser.hasPositional;
    if (parser.mode) {
        p->_inclusion = *parser.mode;
    } else {
        // Only _id and/or $slice: {_id: 1} alone is an inclusion, everything else exclusion.
        Node* id = p->_root->find("_id");
        p->_inclusion = id && id->kind == Kind::kInclude;
    }
    return p;
}

StatusWith<BsonObj> Projection::apply(BsonView doc, const MatchDetails* details) const {
    Applier a(_inclusion, details);
    a._includeIdByDefault = _root->find("_id") == nullptr;
    BsonBuilder out;
    TRY_STATUS(a.applyObject(doc, *_root, &out, false, true));
    return out.obj();
}

}  // namespace tessera::query
