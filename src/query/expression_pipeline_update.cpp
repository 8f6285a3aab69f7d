#include "query/expression_pipeline_update.h"

#include <map>

#include "bson/bson_builder.h"

namespace tessera::query {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using bson::BsonView;

namespace {

std::vector<std::string> splitDots(std::string_view path) {
    std::vector<std::string> parts;
    size_t s = 0;
    while (true) {
        size_t d = path.find('.', s);
        parts.emplace_back(path.substr(s, d == path.npos ? path.npos : d - s));
        if (d == path.npos) break;
        s = d + 1;
    }
    return parts;
}

// A field spec flattened to dotted paths: {a: {b: X}} -> ("a.b", X) when the inner object is not
// an operator expression.
void flatten(BsonView spec, const std::string& prefix,
             std::vector<std::pair<std::string, BsonElement>>* out) {
    for (BsonElement e : spec) {
        std::string path =
            prefix.empty() ? std::string(e.fieldName()) : prefix + "." + std::string(e.fieldName());
        if (e.isObject() && !e.objValue().isEmpty() &&
            !e.objValue().firstElement().fieldName().starts_with("$")) {
            flatten(e.objValue(), path, out);
        } else {
            out->emplace_back(path, e);
        }
    }
}

Status checkPath(const std::string& path) {
    auto parts = splitDots(path);
    for (const auto& p : parts) {
        if (p.empty()) return Status(40352, "FieldPath cannot be constructed with empty string");
        if (p[0] == '$') {
            return Status(16410,
                          "FieldPath field names may not start with '$'. Consider using "
                          "$getField or $setField.");
        }
    }
    return Status::OK();
}

// Sets (or, for a missing value, removes) `parts[i..]` in `doc`, MongoDB $addFields style:
// arrays along the path apply the rest to each element.
void setPath(BsonView doc, const std::vector<std::string>& parts, size_t i, const Value& v,
             BsonBuilder* b);

void setInValue(const BsonElement& e, const std::vector<std::string>& parts, size_t i,
                const Value& v, BsonBuilder* b, std::string_view name) {
    if (e.isObject()) {
        b->startObject(name);
        setPath(e.objValue(), parts, i, v, b);
        b->end();
    } else if (e.isArray()) {
        b->startArray(name);
        size_t k = 0;
        for (BsonElement x : e.objValue()) {
            setInValue(x, parts, i, v, b, std::to_string(k++));
        }
        b->end();
    } else {
        b->startObject(name);
        setPath(BsonView(), parts, i, v, b);
        b->end();
    }
}

void setPath(BsonView doc, const std::vector<std::string>& parts, size_t i, const Value& v,
             BsonBuilder* b) {
    bool done = false;
    for (BsonElement e : doc) {
        if (e.fieldName() != parts[i]) {
            b->appendElement(e);
            continue;
        }
        done = true;
        if (i + 1 == parts.size()) {
            v.appendTo(*b, parts[i]);
        } else {
            setInValue(e, parts, i + 1, v, b, parts[i]);
        }
    }
    if (!done) {
        if (i + 1 == parts.size()) {
            v.appendTo(*b, parts[i]);
        } else if (!v.missing()) {
            b->startObject(parts[i]);
            setPath(BsonView(), parts, i + 1, v, b);
            b->end();
        }
    }
}

// A projection tree: children by name; leaf = the path itself is included/excluded/computed.
struct ProjNode {
    bool leaf = false;
    std::map<std::string, std::unique_ptr<ProjNode>> children;
    std::vector<std::string> order;
};

void addPath(ProjNode* root, const std::vector<std::string>& parts) {
    ProjNode* n = root;
    for (const auto& p : parts) {
        auto& c = n->children[p];
        if (!c) {
            c = std::make_unique<ProjNode>();
            n->order.push_back(p);
        }
        n = c.get();
    }
    n->leaf = true;
}

void includeDoc(BsonView doc, const ProjNode& node, BsonBuilder* b);

void includeValue(const BsonElement& e, const ProjNode& node, BsonBuilder* b, std::string_view name,
                  bool inArray) {
    if (e.isObject()) {
        b->startObject(name);
        includeDoc(e.objValue(), node, b);
        b->end();
    } else if (e.isArray()) {
        b->startArray(name);
        size_t k = 0;
        for (BsonElement x : e.objValue()) {
            if (x.isObject() || x.isArray()) includeValue(x, node, b, std::to_string(k++), true);
        }
        b->end();
    }
    (void)inArray;
}

void includeDoc(BsonView doc, const ProjNode& node, BsonBuilder* b) {
    for (BsonElement e : doc) {
        auto it = node.children.find(std::string(e.fieldName()));
        if (it == node.children.end()) continue;
        if (it->second->leaf) {
            b->appendElement(e);
        } else {
            includeValue(e, *it->second, b, e.fieldName(), false);
        }
    }
}

void excludeDoc(BsonView doc, const ProjNode& node, BsonBuilder* b);

void excludeValue(const BsonElement& e, const ProjNode& node, BsonBuilder* b,
                  std::string_view name) {
    if (e.isObject()) {
        b->startObject(name);
        excludeDoc(e.objValue(), node, b);
        b->end();
    } else if (e.isArray()) {
        b->startArray(name);
        size_t k = 0;
        for (BsonElement x : e.objValue()) {
            std::string key = std::to_string(k++);
            if (x.isObject() || x.isArray()) {
                excludeValue(x, node, b, key);
            } else {
                b->appendElementAs(x, key);
            }
        }
        b->end();
    } else {
        b->appendElementAs(e, name);
    }
}

void excludeDoc(BsonView doc, const ProjNode& node, BsonBuilder* b) {
    for (BsonElement e : doc) {
        auto it = node.children.find(std::string(e.fieldName()));
        if (it == node.children.end()) {
            b->appendElement(e);
        } else if (!it->second->leaf) {
            excludeValue(e, *it->second, b, e.fieldName());
        }
    }
}

}  // namespace

struct UpdatePipeline::Stage {
    enum class Kind { kAddFields, kProject, kExclude, kReplaceRoot } kind;
    std::string name;
    // kAddFields and computed fields of kProject, in spec order.
    std::vector<std::pair<std::vector<std::string>, std::unique_ptr<Expression>>> fields;
    ProjNode tree;  // kProject inclusions / kExclude exclusions
    bool excludeId = false;
    std::unique_ptr<Expression> newRoot;

    Status apply(BsonView doc, const Variables& vars, BsonObj* out) const {
        switch (kind) {
            case Kind::kAddFields: {
                std::vector<Value> values;
                for (const auto& [parts, e] : fields) {
                    ASSIGN_OR_RETURN(Value v, e->evaluate(doc, vars));
                    values.push_back(std::move(v));
                }
                BsonObj cur = doc.copy();
                for (size_t i = 0; i < fields.size(); ++i) {
                    BsonBuilder b;
                    setPath(cur, fields[i].first, 0, values[i], &b);
                    cur = b.obj();
                }
                *out = cur;
                return Status::OK();
            }
            case Kind::kProject: {
                std::vector<Value> values;
                for (const auto& [parts, e] : fields) {
                    ASSIGN_OR_RETURN(Value v, e->evaluate(doc, vars));
                    values.push_back(std::move(v));
                }
                BsonBuilder b;
                if (!excludeId && !tree.children.count("_id")) {
                    BsonElement id = doc["_id"];
                    if (!id.eoo()) b.appendElement(id);
                }
                includeDoc(doc, tree, &b);
                BsonObj cur = b.obj();
                for (size_t i = 0; i < fields.size(); ++i) {
                    BsonBuilder nb;
                    setPath(cur, fields[i].first, 0, values[i], &nb);
                    cur = nb.obj();
                }
                *out = cur;
                return Status::OK();
            }
            case Kind::kExclude: {
                BsonBuilder b;
                excludeDoc(doc, tree, &b);
                *out = b.obj();
                return Status::OK();
            }
            case Kind::kReplaceRoot: {
                ASSIGN_OR_RETURN(Value v, newRoot->evaluate(doc, vars));
                if (!v.isObject()) {
                    return Status(40228,
                                  "'newRoot' expression must evaluate to an object, but "
                                  "resulting value was: " +
                                      v.toString() + ". Type of resulting value: '" +
                                      (v.missing() ? std::string("missing")
                                                   : std::string(bson::typeName(v.type()))) +
                                      "'. Input document: " + doc.toJson());
                }
                *out = v.objectView().copy();
                return Status::OK();
            }
        }
        return Status::OK();
    }
};

UpdatePipeline::~UpdatePipeline() = default;

StatusWith<std::shared_ptr<const UpdatePipeline>> UpdatePipeline::parse(
    BsonView pipeline, std::shared_ptr<const Variables> let) {
    std::shared_ptr<UpdatePipeline> p(new UpdatePipeline());
    p->_vars = let ? std::move(let) : std::make_shared<const Variables>();
    ExpressionParseContext pctx;
    pctx.defineAll(*p->_vars);
    for (BsonElement se : pipeline) {
        if (!se.isObject()) {
            return Status(ErrorCodes::TypeMismatch,
                          "Each element of the 'pipeline' array must be an object");
        }
        BsonView spec = se.objValue();
        if (spec.nFields() != 1) {
            return Status(40323,
                          "A pipeline stage specification object must contain exactly one field.");
        }
        BsonElement s = spec.firstElement();
        std::string name(s.fieldName());
        auto stage = std::make_unique<Stage>();
        stage->name = name;
        if (name == "$addFields" || name == "$set") {
            if (!s.isObject()) {
                return Status(40272, name + " specification stage must be an object, got " +
                                         std::string(bson::typeName(s.type())));
            }
            stage->kind = Stage::Kind::kAddFields;
            std::vector<std::pair<std::string, BsonElement>> flat;
            flatten(s.objValue(), "", &flat);
            for (auto& [path, e] : flat) {
                TRY_STATUS(checkPath(path));
                ASSIGN_OR_RETURN(auto x, Expression::parse(e, pctx));
                stage->fields.emplace_back(splitDots(path), std::move(x));
            }
        } else if (name == "$project") {
            if (!s.isObject()) {
                return Status(15969, "$project specification must be an object");
            }
            std::vector<std::pair<std::string, BsonElement>> flat;
            flatten(s.objValue(), "", &flat);
            int mode = 0;  // 1 inclusion, -1 exclusion
            std::vector<std::pair<std::string, BsonElement>> computed;
            for (auto& [path, e] : flat) {
                TRY_STATUS(checkPath(path));
                bool isFlag = e.isNumber() || e.type() == BsonType::Bool;
                if (isFlag && path == "_id") {
                    if (!e.trueValue())
                        stage->excludeId = true;
                    else
                        addPath(&stage->tree, {"_id"});
                    continue;
                }
                int m = isFlag ? (e.trueValue() ? 1 : -1) : 1;
                if (mode != 0 && m != mode) {
                    return Status(m == -1 ? 31254 : 31253,
                                  "Invalid $project :: caused by :: Cannot do " +
                                      std::string(m == -1 ? "exclusion" : "inclusion") +
                                      " on field " + path + " in " +
                                      std::string(m == -1 ? "inclusion" : "exclusion") +
                                      " projection");
                }
                mode = m;
                if (isFlag) {
                    addPath(&stage->tree, splitDots(path));
                } else {
                    ASSIGN_OR_RETURN(auto x, Expression::parse(e, pctx));
                    stage->fields.emplace_back(splitDots(path), std::move(x));
                }
            }
            if (mode == -1 || (mode == 0 && stage->excludeId)) {
                stage->kind = Stage::Kind::kExclude;
                if (stage->excludeId) addPath(&stage->tree, {"_id"});
            } else if (mode == 0) {
                return Status(51272,
                              "Invalid $project :: caused by :: projection specification "
                              "must have at least one field");
            } else {
                stage->kind = Stage::Kind::kProject;
            }
        } else if (name == "$unset") {
            stage->kind = Stage::Kind::kExclude;
            std::vector<BsonElement> items;
            if (s.type() == BsonType::String) {
                items.push_back(s);
            } else if (s.isArray() && !s.objValue().isEmpty()) {
                for (BsonElement x : s.objValue()) items.push_back(x);
            } else {
                return Status(31002,
                              "$unset specification must be a string or an array with at "
                              "least one field");
            }
            for (const auto& x : items) {
                if (x.type() != BsonType::String) {
                    return Status(31120,
                                  "$unset specification must be a string or an array "
                                  "containing only string values");
                }
                TRY_STATUS(checkPath(std::string(x.stringValue())));
                addPath(&stage->tree, splitDots(x.stringValue()));
            }
        } else if (name == "$replaceRoot" || name == "$replaceWith") {
            stage->kind = Stage::Kind::kReplaceRoot;
            BsonElement root = s;
            if (name == "$replaceRoot") {
                if (!s.isObject()) {
                    return Status(40229,
                                  "expected an object as specification for $replaceRoot "
                                  "stage, got " +
                                      std::string(bson::typeName(s.type())));
                }
                for (BsonElement f : s.objValue()) {
                    if (f.fieldName() != "newRoot") {
                        return Status(40415, "BSON field '$replaceRoot." +
                                                 std::string(f.fieldName()) +
                                                 "' is an unknown field.");
                    }
                }
                root = s.objValue()["newRoot"];
                if (root.eoo()) {
                    return Status(40414,
                                  "BSON field '$replaceRoot.newRoot' is missing but a "
                                  "required field");
                }
            }
            ASSIGN_OR_RETURN(stage->newRoot, Expression::parse(root, pctx));
        } else if (name == "$match" || name == "$group" || name == "$sort" || name == "$limit" ||
                   name == "$skip" || name == "$lookup" || name == "$unwind" || name == "$facet" ||
                   name == "$out" || name == "$merge" || name == "$count" || name == "$bucket" ||
                   name == "$sample" || name == "$redact") {
            return Status(ErrorCodes::InvalidOptions,
                          name + " is not allowed to be used within an update");
        } else {
            return Status(40324, "Unrecognized pipeline stage name: '" + name + "'");
        }
        p->_stages.push_back(std::move(stage));
    }
    return std::shared_ptr<const UpdatePipeline>(std::move(p));
}

Status UpdatePipeline::apply(BsonView doc, BsonObj* out) const {
    BsonObj cur = doc.copy();
    for (const auto& s : _stages) {
        BsonObj next;
        TRY_STATUS(s->apply(cur, *_vars, &next));
        cur = std::move(next);
    }
    BsonElement origId = doc["_id"];
    if (!origId.eoo() && cur["_id"].eoo()) {
        BsonBuilder b;
        b.appendElement(origId);
        b.appendElements(cur);
        cur = b.obj();
    }
    *out = std::move(cur);
    return Status::OK();
}

}  // namespace tessera::query
