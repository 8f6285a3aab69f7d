#include "command/exec/agg_projection.h"

#include "bson/bson_builder.h"

namespace tessera::command::exec {

using bson::BsonType;

struct AggProjection::Node {
    enum class Type { kSub, kInclude, kExclude, kComputed };
    Type type = Type::kSub;
    StageExpressionPtr expr;  // kComputed; null means "the value given to applySet"
    std::vector<std::pair<std::string, std::unique_ptr<Node>>> children;
    bool hasComputed = false;  // in this subtree

    Node* find(std::string_view name) const {
        for (const auto& [n, c] : children) {
            if (n == name) return c.get();
        }
        return nullptr;
    }
};

AggProjection::AggProjection() = default;
AggProjection::~AggProjection() = default;

namespace {

using Node = AggProjection::Node;

const bson::BsonObj& emptyDoc() {
    static const bson::BsonObj kEmpty = bson::BsonBuilder().obj();
    return kEmpty;
}

Status checkFieldName(std::string_view path) {
    if (path.empty()) return Status(40352, "FieldPath cannot be constructed with empty string");
    size_t start = 0;
    while (true) {
        size_t dot = path.find('.', start);
        std::string_view part =
            path.substr(start, dot == std::string_view::npos ? path.npos : dot - start);
        if (part.empty()) {
            return Status(15998, "FieldPath field names may not be empty strings.");
        }
        if (part[0] == '$') {
            return Status(16410,
                          "FieldPath field names may not start with '$'. Consider using "
                          "$getField or $setField.");
        }
        if (dot == std::string_view::npos) break;
        start = dot + 1;
    }
    return Status::OK();
}

// Adds a leaf at the dotted `path` below `root`.
StatusWith<Node*> addLeaf(Node* root, std::string_view path, std::string_view stage) {
    Node* node = root;
    size_t start = 0;
    while (true) {
        size_t dot = path.find('.', start);
        std::string part(
            path.substr(start, dot == std::string_view::npos ? path.npos : dot - start));
        Node* child = node->find(part);
        bool last = dot == std::string_view::npos;
        if (child && (last || child->type != Node::Type::kSub)) {
            return Status(31250, "Invalid " + std::string(stage) +
                                     " :: caused by :: Path collision at " + std::string(path));
        }
        if (!child) {
            node->children.emplace_back(part, std::make_unique<Node>());
            child = node->children.back().second.get();
        }
        if (last) return child;
        node = child;
        start = dot + 1;
    }
}

bool markComputed(Node* n) {
    bool any = n->type == Node::Type::kComputed;
    for (auto& [name, c] : n->children) any = markComputed(c.get()) || any;
    n->hasComputed = any;
    return any;
}

bool isExpressionObject(const bson::BsonElement& e) {
    if (e.type() != BsonType::Object) return false;
    bson::BsonElement first = e.objValue().firstElement();
    return !first.eoo() && first.fieldName().starts_with("$");
}

struct ProjectParseState {
    bool inclusion = false;
    bool exclusion = false;
    bool idExcluded = false;
    bool idSpecified = false;
};

Status parseProjectLevel(Node* root, bson::BsonView spec, const std::string& prefix,
                         ProjectParseState& st) {
    for (auto f : spec) {
        std::string path =
            prefix.empty() ? std::string(f.fieldName()) : prefix + "." + std::string(f.fieldName());
        TRY_STATUS(checkFieldName(f.fieldName()));
        bool isId = path == "_id";
        if (isId) st.idSpecified = true;
        if (f.type() == BsonType::Object && !isExpressionObject(f)) {
            if (f.objValue().isEmpty()) {
                return Status(51270,
                              "An empty sub-projection is not a valid value. Found empty object "
                              "at path");
            }
            TRY_STATUS(parseProjectLevel(root, f.objValue(), path, st));
            continue;
        }
        ASSIGN_OR_RETURN(Node * leaf, addLeaf(root, path, "$project"));
        if (f.isNumber() || f.type() == BsonType::Bool) {
            if (f.trueValue()) {
                if (st.exclusion && !isId) {
                    return Status(31253,
                                  "Invalid $project :: caused by :: Cannot do inclusion "
                                  "on field " +
                                      path + " in exclusion projection");
                }
                if (!isId) st.inclusion = true;
                leaf->type = Node::Type::kInclude;
            } else {
                if (isId) {
                    st.idExcluded = true;
                } else {
                    if (st.inclusion) {
                        return Status(31254,
                                      "Invalid $project :: caused by :: Cannot do "
                                      "exclusion on field " +
                                          path + " in inclusion projection");
                    }
                    st.exclusion = true;
                }
                leaf->type = Node::Type::kExclude;
            }
            continue;
        }
        if (st.exclusion) {
            return Status(31252,
                          "Invalid $project :: caused by :: Cannot use expression other than "
                          "$meta in exclusion projection");
        }
        st.inclusion = true;
        leaf->type = Node::Type::kComputed;
        ASSIGN_OR_RETURN(leaf->expr, StageExpression::parse(f));
    }
    return Status::OK();
}

Status parseAddFieldsLevel(Node* root, bson::BsonView spec, const std::string& prefix,
                           std::string_view stage) {
    for (auto f : spec) {
        std::string path =
            prefix.empty() ? std::string(f.fieldName()) : prefix + "." + std::string(f.fieldName());
        TRY_STATUS(checkFieldName(f.fieldName()));
        if (f.type() == BsonType::Object && !isExpressionObject(f) && !f.objValue().isEmpty()) {
            TRY_STATUS(parseAddFieldsLevel(root, f.objValue(), path, stage));
            continue;
        }
        ASSIGN_OR_RETURN(Node * leaf, addLeaf(root, path, stage));
        leaf->type = Node::Type::kComputed;
        ASSIGN_OR_RETURN(leaf->expr, StageExpression::parse(f));
    }
    return Status::OK();
}

struct Applier {
    AggProjection::Kind kind;
    bson::BsonView root;
    const bson::BsonElement* setValue = nullptr;

    StatusWith<AggValue> eval(const Node& n) const {
        if (!n.expr) return AggValue::of(setValue ? *setValue : bson::BsonElement());
        return n.expr->evaluate(root);
    }

    // Appends the projected fields of `in` to `out`.
    Status apply(const Node& node, bson::BsonView in, bson::BsonBuilder& out) const {
        for (auto f : in) {
            std::string_view name = f.fieldName();
            Node* child = node.find(name);
            if (!child) {
                if (kind != AggProjection::Kind::kInclusion) out.appendElement(f);
                continue;
            }
            switch (child->type) {
                case Node::Type::kInclude:
                    out.appendElement(f);
                    break;
                case Node::Type::kExclude:
                    break;
                case Node::Type::kComputed:
                    if (kind == AggProjection::Kind::kAddFields) {
                        ASSIGN_OR_RETURN(AggValue v, eval(*child));
                        if (!v.missing()) out.appendElementAs(v.element(), name);
                    }
                    break;
                case Node::Type::kSub:
                    if (f.type() == BsonType::Object) {
                        out.startObject(name);
                        TRY_STATUS(apply(*child, f.objValue(), out));
                        out.end();
                    } else if (f.type() == BsonType::Array) {
                        out.startArray(name);
                        TRY_STATUS(applyArray(*child, f.objValue(), out));
                        out.end();
                    } else if (kind == AggProjection::Kind::kExclusion) {
                        out.appendElement(f);
                    } else if (child->hasComputed) {
                        out.startObject(name);
                        TRY_STATUS(apply(*child, emptyDoc(), out));
                        out.end();
                    }
                    break;
            }
        }
        if (kind == AggProjection::Kind::kExclusion) return Status::OK();
        // Computed fields not in the input (inclusion: all computed fields) come last, in
        // specification order.
        for (const auto& [name, child] : node.children) {
            bool present = in.hasField(name);
            if (child->type == Node::Type::kComputed) {
                if (present && kind == AggProjection::Kind::kAddFields) continue;
                ASSIGN_OR_RETURN(AggValue v, eval(*child));
                if (!v.missing()) out.appendElementAs(v.element(), name);
            } else if (child->type == Node::Type::kSub && child->hasComputed && !present) {
                out.startObject(name);
                TRY_STATUS(apply(*child, emptyDoc(), out));
                out.end();
            }
        }
        return Status::OK();
    }

    Status applyArray(const Node& node, bson::BsonView arr, bson::BsonBuilder& out) const {
        size_t i = 0;
        for (auto e : arr) {
            std::string key = std::to_string(i);
            if (e.type() == BsonType::Object) {
                out.startObject(key);
                TRY_STATUS(apply(node, e.objValue(), out));
                out.end();
            } else if (e.type() == BsonType::Array) {
                out.startArray(key);
                TRY_STATUS(applyArray(node, e.objValue(), out));
                out.end();
            } else if (kind == AggProjection::Kind::kExclusion) {
                out.appendElementAs(e, key);
            } else if (node.hasComputed) {
                out.startObject(key);
                TRY_STATUS(apply(node, emptyDoc(), out));
                out.end();
            } else {
                continue;
            }
            ++i;
        }
        return Status::OK();
    }
};

}  // namespace

StatusWith<std::unique_ptr<AggProjection>> AggProjection::parseProject(bson::BsonView spec) {
    if (spec.isEmpty()) {
        return Status(51272,
                      "Invalid $project :: caused by :: projection specification must "
                      "have at least one field");
    }
    std::unique_ptr<AggProjection> p(new AggProjection());
    p->_root = std::make_unique<Node>();
    ProjectParseState st;
    TRY_STATUS(parseProjectLevel(p->_root.get(), spec, "", st));
    if (st.exclusion || (!st.inclusion && st.idExcluded)) {
        p->_kind = Kind::kExclusion;
    } else {
        p->_kind = Kind::kInclusion;
        if (!st.idSpecified) {
            p->_root->children.emplace(p->_root->children.begin(), "_id", std::make_unique<Node>());
            p->_root->children.front().second->type = Node::Type::kInclude;
        }
    }
    markComputed(p->_root.get());
    return p;
}

StatusWith<std::unique_ptr<AggProjection>> AggProjection::parseAddFields(bson::BsonView spec,
                                                                         std::string_view stage) {
    std::unique_ptr<AggProjection> p(new AggProjection());
    p->_kind = Kind::kAddFields;
    p->_root = std::make_unique<Node>();
    TRY_STATUS(parseAddFieldsLevel(p->_root.get(), spec, "", stage));
    markComputed(p->_root.get());
    return p;
}

StatusWith<std::unique_ptr<AggProjection>> AggProjection::parseUnset(
    const bson::BsonElement& spec) {
    std::vector<std::string_view> paths;
    if (spec.type() == BsonType::String) {
        paths.push_back(spec.stringValue());
    } else if (spec.type() == BsonType::Array) {
        for (auto e : spec.objValue()) {
            if (e.type() != BsonType::String) {
                return Status(31120,
                              "$unset specification must be a string or an array containing "
                              "only string values");
            }
            paths.push_back(e.stringValue());
        }
        if (paths.empty()) {
            return Status(31119,
                          "$unset specification must be a string or an array with at least one "
                          "field");
        }
    } else {
        return Status(31002, "$unset specification must be a string or an array");
    }
    std::unique_ptr<AggProjection> p(new AggProjection());
    p->_kind = Kind::kExclusion;
    p->_root = std::make_unique<Node>();
    for (auto path : paths) {
        TRY_STATUS(checkFieldName(path));
        ASSIGN_OR_RETURN(Node * leaf, addLeaf(p->_root.get(), path, "$unset"));
        leaf->type = Node::Type::kExclude;
    }
    return p;
}

std::unique_ptr<AggProjection> AggProjection::setter(std::string_view path) {
    std::unique_ptr<AggProjection> p(new AggProjection());
    p->_kind = Kind::kAddFields;
    p->_root = std::make_unique<Node>();
    auto leaf = addLeaf(p->_root.get(), path, "$set");
    if (leaf.isOK()) leaf.getValue()->type = Node::Type::kComputed;
    markComputed(p->_root.get());
    return p;
}

StatusWith<bson::BsonObj> AggProjection::apply(bson::BsonView doc) const {
    Applier a{_kind, doc, nullptr};
    bson::BsonBuilder b;
    TRY_STATUS(a.apply(*_root, doc, b));
    return b.obj();
}

bson::BsonObj AggProjection::applySet(bson::BsonView doc, const bson::BsonElement& value) const {
    Applier a{_kind, doc, &value};
    bson::BsonBuilder b;
    Status s = a.apply(*_root, doc, b);
    (void)s;  // a constant value cannot fail
    return b.obj();
}

bson::BsonElement getNestedField(bson::BsonView doc, std::string_view path) {
    size_t dot = path.find('.');
    bson::BsonElement e = doc[path.substr(0, dot)];
    if (dot == std::string_view::npos) return e;
    if (e.type() != BsonType::Object) return bson::BsonElement();
    return getNestedField(e.objValue(), path.substr(dot + 1));
}

namespace {
void setNestedInto(bson::BsonBuilder& b, bson::BsonView doc, std::string_view path,
                   const bson::BsonElement& value) {
    size_t dot = path.find('.');
    std::string_view head = path.substr(0, dot);
    bool done = false;
    for (auto f : doc) {
        if (f.fieldName() != head) {
            b.appendElement(f);
            continue;
        }
        done = true;
        if (dot == std::string_view::npos) {
            if (!value.eoo()) b.appendElementAs(value, head);
        } else {
            b.startObject(head);
            setNestedInto(b, f.type() == BsonType::Object ? f.objValue() : emptyDoc().view(),
                          path.substr(dot + 1), value);
            b.end();
        }
    }
    if (!done) {
        if (dot == std::string_view::npos) {
            if (!value.eoo()) b.appendElementAs(value, head);
        } else {
            b.startObject(head);
            setNestedInto(b, emptyDoc(), path.substr(dot + 1), value);
            b.end();
        }
    }
}
}  // namespace

bson::BsonObj setNestedField(bson::BsonView doc, std::string_view path,
                             const bson::BsonElement& value) {
    bson::BsonBuilder b;
    setNestedInto(b, doc, path, value);
    return b.obj();
}

}  // namespace tessera::command::exec
