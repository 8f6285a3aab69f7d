#include "query/update_predicate.h"

#include <functional>

#include "bson/bson_builder.h"
#include "bson/compare.h"
#include "query/path.h"

#if __has_include("query/matcher.h") && !defined(TESSERA_UPDATE_FALLBACK_MATCHER)
#define TESSERA_UPDATE_HAS_MATCHER 1
#include "query/matcher.h"
#endif

namespace tessera::query {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using bson::BsonView;

namespace {

// ---- The built-in matcher (used when query/matcher.h is absent) ----

bool isDigits(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

// Values reached by `parts[i..]` from `doc` with implicit array traversal. A leaf array yields
// its elements and itself; a missing path yields one eoo element.
void collect(BsonView doc, const std::vector<std::string>& parts, size_t i,
             std::vector<BsonElement>* out, bool expandLeafArray = true) {
    BsonElement e = doc.getField(parts[i]);
    if (e.eoo()) {
        out->push_back(BsonElement());
        return;
    }
    if (i + 1 == parts.size()) {
        if (e.isArray() && expandLeafArray) {
            for (BsonElement x : e.objValue()) out->push_back(x);
        }
        out->push_back(e);
        return;
    }
    if (e.isObject()) {
        collect(e.objValue(), parts, i + 1, out, expandLeafArray);
    } else if (e.isArray()) {
        const std::string& next = parts[i + 1];
        if (isDigits(next)) {
            BsonElement at = e.objValue().getField(next);
            if (!at.eoo()) {
                if (i + 2 == parts.size()) {
                    if (at.isArray() && expandLeafArray) {
                        for (BsonElement x : at.objValue()) out->push_back(x);
                    }
                    out->push_back(at);
                } else if (at.isObject() || at.isArray()) {
                    collect(at.objValue(), parts, i + 2, out, expandLeafArray);
                }
            }
        }
        for (BsonElement x : e.objValue()) {
            if (x.isObject()) collect(x.objValue(), parts, i + 1, out, expandLeafArray);
        }
    } else {
        out->push_back(BsonElement());
    }
}

bool sameBracket(const BsonElement& a, const BsonElement& b) {
    return bson::canonicalTypeOrder(a.type()) == bson::canonicalTypeOrder(b.type());
}

bool valueEquals(const BsonElement& v, const BsonElement& operand) {
    if (v.eoo()) return operand.isNull();
    return sameBracket(v, operand) && bson::compareElementValues(v, operand) == 0;
}

class Expr {
  public:
    virtual ~Expr() = default;
    virtual bool matches(BsonView doc) const = 0;
};

// A condition on one value (used per value reached by a path).
class ValueCond {
  public:
    virtual ~ValueCond() = default;
    // Whether any of `values` satisfies this condition (MongoDB's "any element" semantics).
    virtual bool matchesAny(const std::vector<BsonElement>& values) const {
        for (const auto& v : values)
            if (matchesOne(v)) return true;
        return false;
    }
    virtual bool matchesOne(const BsonElement& v) const = 0;
    // Whether this condition looks at arrays as a whole only ($size, $elemMatch).
    virtual bool wholeArrays() const { return false; }
};

StatusWith<std::unique_ptr<Expr>> parseExpr(BsonView filter);
StatusWith<std::unique_ptr<ValueCond>> parseValueConds(BsonView ops);

class CmpCond : public ValueCond {
  public:
    CmpCond(std::string op, BsonElement operand) : _op(std::move(op)), _operand(operand) {}
    bool matchesOne(const BsonElement& v) const override {
        if (_op == "$eq") return valueEquals(v, _operand);
        if (v.eoo()) {
            return _operand.isNull() && (_op == "$gte" || _op == "$lte");
        }
        if (!sameBracket(v, _operand)) return false;
        int c = bson::compareElementValues(v, _operand);
        if (_op == "$gt") return c > 0;
        if (_op == "$gte") return c >= 0;
        if (_op == "$lt") return c < 0;
        return c <= 0;
    }

  private:
    std::string _op;
    BsonElement _operand;
};

class InCond : public ValueCond {
  public:
    explicit InCond(BsonElement arr) : _arr(arr) {}
    bool matchesOne(const BsonElement& v) const override {
        for (BsonElement x : _arr.objValue())
            if (valueEquals(v, x)) return true;
        return false;
    }

  private:
    BsonElement _arr;
};

class NotCond : public ValueCond {
  public:
    explicit NotCond(std::unique_ptr<ValueCond> inner) : _inner(std::move(inner)) {}
    bool matchesAny(const std::vector<BsonElement>& values) const override {
        return !_inner->matchesAny(values);
    }
    bool matchesOne(const BsonElement& v) const override { return !_inner->matchesOne(v); }

  private:
    std::unique_ptr<ValueCond> _inner;
};

class ExistsCond : public ValueCond {
  public:
    explicit ExistsCond(bool want) : _want(want) {}
    bool matchesAny(const std::vector<BsonElement>& values) const override {
        bool exists = false;
        for (const auto& v : values) exists = exists || !v.eoo();
        return exists == _want;
    }
    bool matchesOne(const BsonElement& v) const override { return !v.eoo() == _want; }

  private:
    bool _want;
};

class SizeCond : public ValueCond {
  public:
    explicit SizeCond(long long n) : _n(n) {}
    bool matchesOne(const BsonElement& v) const override {
        return v.isArray() && static_cast<long long>(v.objValue().nFields()) == _n;
    }
    bool wholeArrays() const override { return true; }

  private:
    long long _n;
};

class ElemMatchCond : public ValueCond {
  public:
    ElemMatchCond(std::unique_ptr<Expr> doc, std::unique_ptr<ValueCond> value)
        : _doc(std::move(doc)), _value(std::move(value)) {}
    bool matchesOne(const BsonElement& v) const override {
        if (!v.isArray()) return false;
        for (BsonElement x : v.objValue()) {
            if (_doc && x.isObject() && _doc->matches(x.objValue())) return true;
            if (_value && _value->matchesAny({x})) return true;
        }
        return false;
    }
    bool wholeArrays() const override { return true; }

  private:
    std::unique_ptr<Expr> _doc;
    std::unique_ptr<ValueCond> _value;
};

class AllOfCond : public ValueCond {
  public:
    std::vector<std::unique_ptr<ValueCond>> conds;
    bool matchesAny(const std::vector<BsonElement>& values) const override {
        for (const auto& c : conds)
            if (!c->matchesAny(values)) return false;
        return true;
    }
    bool matchesOne(const BsonElement& v) const override {
        for (const auto& c : conds)
            if (!c->matchesOne(v)) return false;
        return true;
    }
};

class FieldExpr : public Expr {
  public:
    FieldExpr(std::string path, std::unique_ptr<ValueCond> cond)
        : _parts(splitDottedPath(path)), _cond(std::move(cond)) {}
    bool matches(BsonView doc) const override {
        std::vector<BsonElement> values;
        collect(doc, _parts, 0, &values);
        return _cond->matchesAny(values);
    }

  private:
    std::vector<std::string> _parts;
    std::unique_ptr<ValueCond> _cond;
};

class LogicalExpr : public Expr {
  public:
    enum class Op { kAnd, kOr, kNor };
    explicit LogicalExpr(Op op) : _op(op) {}
    std::vector<std::unique_ptr<Expr>> children;
    bool matches(BsonView doc) const override {
        for (const auto& c : children) {
            bool m = c->matches(doc);
            if (_op == Op::kAnd && !m) return false;
            if (_op == Op::kOr && m) return true;
            if (_op == Op::kNor && m) return false;
        }
        return _op != Op::kOr;
    }

  private:
    Op _op;
};

StatusWith<std::unique_ptr<ValueCond>> parseValueConds(BsonView ops) {
    auto all = std::make_unique<AllOfCond>();
    for (BsonElement op : ops) {
        std::string_view name = op.fieldName();
        if (name == "$eq" || name == "$gt" || name == "$gte" || name == "$lt" || name == "$lte") {
            all->conds.push_back(std::make_unique<CmpCond>(std::string(name), op));
        } else if (name == "$ne") {
            all->conds.push_back(std::make_unique<NotCond>(std::make_unique<CmpCond>("$eq", op)));
        } else if (name == "$in" || name == "$nin") {
            if (!op.isArray()) return Status(ErrorCodes::BadValue, "$in needs an array");
            std::unique_ptr<ValueCond> in = std::make_unique<InCond>(op);
            if (name == "$nin") in = std::make_unique<NotCond>(std::move(in));
            all->conds.push_back(std::move(in));
        } else if (name == "$exists") {
            all->conds.push_back(std::make_unique<ExistsCond>(op.trueValue()));
        } else if (name == "$size") {
            if (!op.isNumber()) return Status(ErrorCodes::BadValue, "$size needs a number");
            all->conds.push_back(std::make_unique<SizeCond>(op.numberLong()));
        } else if (name == "$not") {
            if (!op.isObject())
                return Status(ErrorCodes::BadValue, "$not needs a regex or a document");
            ASSIGN_OR_RETURN(auto inner, parseValueConds(op.objValue()));
            all->conds.push_back(std::make_unique<NotCond>(std::move(inner)));
        } else if (name == "$elemMatch") {
            if (!op.isObject()) return Status(ErrorCodes::BadValue, "$elemMatch needs an Object");
            BsonView spec = op.objValue();
            std::string_view first = spec.isEmpty() ? "" : spec.firstElement().fieldName();
            bool valueForm = !first.empty() && first[0] == '$' && first != "$and" &&
                             first != "$or" && first != "$nor";
            if (valueForm) {
                ASSIGN_OR_RETURN(auto v, parseValueConds(spec));
                all->conds.push_back(std::make_unique<ElemMatchCond>(nullptr, std::move(v)));
            } else {
                ASSIGN_OR_RETURN(auto d, parseExpr(spec));
                all->conds.push_back(std::make_unique<ElemMatchCond>(std::move(d), nullptr));
            }
        } else {
            return Status(ErrorCodes::BadValue, "unknown operator: " + std::string(name));
        }
    }
    return std::unique_ptr<ValueCond>(std::move(all));
}

StatusWith<std::unique_ptr<Expr>> parseExpr(BsonView filter) {
    auto root = std::make_unique<LogicalExpr>(LogicalExpr::Op::kAnd);
    for (BsonElement e : filter) {
        std::string_view name = e.fieldName();
        if (name == "$and" || name == "$or" || name == "$nor") {
            if (!e.isArray() || e.objValue().isEmpty()) {
                return Status(ErrorCodes::BadValue,
                              std::string(name) + " must be a nonempty array");
            }
            auto op = name == "$and"  ? LogicalExpr::Op::kAnd
                      : name == "$or" ? LogicalExpr::Op::kOr
                                      : LogicalExpr::Op::kNor;
            auto node = std::make_unique<LogicalExpr>(op);
            for (BsonElement c : e.objValue()) {
                if (!c.isObject()) {
                    return Status(ErrorCodes::BadValue,
                                  "$or/$and/$nor entries need to be full objects");
                }
                ASSIGN_OR_RETURN(auto child, parseExpr(c.objValue()));
                node->children.push_back(std::move(child));
            }
            root->children.push_back(std::move(node));
            continue;
        }
        if (!name.empty() && name[0] == '$') {
            return Status(ErrorCodes::BadValue, "unknown top level operator: " + std::string(name));
        }
        std::unique_ptr<ValueCond> cond;
        if (e.isObject() && !e.objValue().isEmpty() &&
            e.objValue().firstElement().fieldName()[0] == '$') {
            ASSIGN_OR_RETURN(cond, parseValueConds(e.objValue()));
        } else {
            cond = std::make_unique<CmpCond>("$eq", e);
        }
        root->children.push_back(std::make_unique<FieldExpr>(std::string(name), std::move(cond)));
    }
    return std::unique_ptr<Expr>(std::move(root));
}

class FallbackPredicate : public DocPredicate {
  public:
    FallbackPredicate(BsonObj filter, std::unique_ptr<Expr> expr)
        : _filter(std::move(filter)), _expr(std::move(expr)) {}
    bool matches(BsonView doc) const override { return _expr->matches(doc); }

  private:
    BsonObj _filter;  // owns the operands the expression points into
    std::unique_ptr<Expr> _expr;
};

#ifdef TESSERA_UPDATE_HAS_MATCHER
class MatcherPredicate : public DocPredicate {
  public:
    explicit MatcherPredicate(std::unique_ptr<Matcher> m) : _m(std::move(m)) {}
    bool matches(BsonView doc) const override { return _m->matches(doc); }

  private:
    std::unique_ptr<Matcher> _m;
};
#endif

// MongoDB's rule for array filter identifiers: ^[a-z][a-zA-Z0-9]*$.
bool validIdentifier(std::string_view id) {
    if (id.empty() || id[0] < 'a' || id[0] > 'z') return false;
    for (char c : id) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!ok) return false;
    }
    return true;
}

// Collects the first path components of a filter's predicates (through $and/$or/$nor).
void collectPlaceholders(BsonView filter, std::vector<std::string>* out) {
    for (BsonElement e : filter) {
        std::string_view name = e.fieldName();
        if (name == "$and" || name == "$or" || name == "$nor") {
            if (!e.isArray()) continue;
            for (BsonElement c : e.objValue())
                if (c.isObject()) collectPlaceholders(c.objValue(), out);
            continue;
        }
        if (!name.empty() && name[0] == '$') continue;
        out->emplace_back(name.substr(0, name.find('.')));
    }
}

}  // namespace

StatusWith<std::unique_ptr<DocPredicate>> DocPredicate::parseFallback(BsonView filter) {
    BsonObj owned = filter.copy();
    ASSIGN_OR_RETURN(auto expr, parseExpr(owned));
    return std::unique_ptr<DocPredicate>(
        std::make_unique<FallbackPredicate>(std::move(owned), std::move(expr)));
}

StatusWith<std::unique_ptr<DocPredicate>> DocPredicate::parse(BsonView filter) {
#ifdef TESSERA_UPDATE_HAS_MATCHER
    ASSIGN_OR_RETURN(auto m, Matcher::parse(filter));
    return std::unique_ptr<DocPredicate>(std::make_unique<MatcherPredicate>(std::move(m)));
#else
    return parseFallback(filter);
#endif
}

StatusWith<std::unique_ptr<PullPredicate>> PullPredicate::parse(const BsonElement& arg) {
    auto p = std::make_unique<PullPredicate>();
    BsonBuilder b;
    b.appendElementAs(arg, "v");
    p->_holder = b.obj();
    if (!arg.isObject()) {
        p->_kind = Kind::kEquality;
        return p;
    }
    BsonView spec = arg.objValue();
    bool operatorForm = !spec.isEmpty() && spec.firstElement().fieldName().starts_with("$");
    if (operatorForm) {
        p->_kind = Kind::kWrapped;
        ASSIGN_OR_RETURN(p->_pred, DocPredicate::parse(p->_holder));
    } else {
        p->_kind = Kind::kObject;
        ASSIGN_OR_RETURN(p->_pred, DocPredicate::parse(spec));
    }
    return p;
}

bool PullPredicate::matches(const BsonElement& e) const {
    switch (_kind) {
        case Kind::kEquality:
            return bson::compareElementValues(e, _holder.firstElement()) == 0;
        case Kind::kObject:
            return e.isObject() && _pred->matches(e.objValue());
        case Kind::kWrapped: {
            BsonBuilder b;
            b.appendElementAs(e, "v");
            return _pred->matches(b.obj());
        }
    }
    return false;
}

StatusWith<std::shared_ptr<const ArrayFilters>> ArrayFilters::parse(BsonView filters) {
    auto out = std::make_shared<ArrayFilters>();
    for (BsonElement f : filters) {
        if (!f.isObject()) {
            return Status(ErrorCodes::TypeMismatch,
                          "BSON field 'arrayFilters." + std::string(f.fieldName()) +
                              "' is the wrong type '" + std::string(bson::typeName(f.type())) +
                              "', expected type 'object'");
        }
        std::vector<std::string> names;
        collectPlaceholders(f.objValue(), &names);
        if (names.empty()) {
            return Status(ErrorCodes::FailedToParse,
                          "Cannot use an expression without a top-level field name in "
                          "arrayFilters");
        }
        for (const auto& n : names) {
            if (n != names[0]) {
                return Status(ErrorCodes::FailedToParse,
                              "Expected a single top-level field name, found '" + names[0] +
                                  "' and '" + n + "'");
            }
        }
        const std::string& id = names[0];
        if (!validIdentifier(id)) {
            return Status(ErrorCodes::BadValue,
                          "The top-level field name must be an alphanumeric string beginning "
                          "with a lowercase letter, found '" +
                              id + "'");
        }
        if (out->_filters.count(id)) {
            return Status(ErrorCodes::FailedToParse,
                          "Found multiple array filters with the same top-level field name " + id);
        }
        ASSIGN_OR_RETURN(auto pred, DocPredicate::parse(f.objValue()));
        out->_filters.emplace(id, std::move(pred));
    }
    return std::shared_ptr<const ArrayFilters>(std::move(out));
}

bool ArrayFilters::matches(const std::string& id, const BsonElement& e) const {
    auto it = _filters.find(id);
    invariant(it != _filters.end());
    BsonBuilder b;
    b.appendElementAs(e, id);
    return it->second->matches(b.obj());
}

std::vector<std::string> ArrayFilters::identifiers() const {
    std::vector<std::string> ids;
    for (const auto& [id, _] : _filters) ids.push_back(id);
    return ids;
}

}  // namespace tessera::query
