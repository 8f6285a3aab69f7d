#include "query/update_operators.h"

#include <algorithm>
#include <cstring>

#include "bson/bson_builder.h"
#include "bson/compare.h"
#include "query/update_arithmetic.h"
#include "query/update_predicate.h"

namespace tessera::query {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using bson::BsonView;

namespace {

// Arrays are padded with nulls up to an index at most this large (MongoDB's kMaxPaddingAllowed).
constexpr size_t kMaxPaddingAllowed = 1500000;

bool parseIndex(std::string_view s, size_t* out) {
    if (s.empty() || s.size() > 18) return false;
    size_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + static_cast<size_t>(c - '0');
    }
    *out = v;
    return true;
}

// Same type and same value bytes (MongoDB's binaryEqualValues): the no-op test of $set.
bool sameValue(const BsonElement& a, const BsonElement& b) {
    return a.type() == b.type() && a.valueSize() == b.valueSize() &&
           std::memcmp(a.value(), b.value(), a.valueSize()) == 0;
}

BsonObj wrap(const BsonElement& e) {
    BsonBuilder b;
    b.appendElementAs(e, "v");
    return b.obj();
}

std::string typeNameOf(BsonType t) { return std::string(bson::typeName(t)); }

// "{_id: 1}" for the document being updated, as MongoDB's messages print it.
std::string idForMessage(UpdateApplyState& s) {
    MutableNode* id = s.doc->root().findChild("_id");
    if (!id) return "{no id}";
    BsonObj holder;
    return "{" + mongoElementString(id->element(&holder)) + "}";
}

std::string idElementForMessage(UpdateApplyState& s) {
    MutableNode* id = s.doc->root().findChild("_id");
    if (!id) return "no id";
    BsonObj holder;
    return mongoElementString(id->element(&holder));
}

// "{a: 1}" style: the argument as a one-field document.
std::string argForMessage(const BsonElement& e) { return "{" + mongoElementString(e) + "}"; }

BsonElement nullElement() {
    static const BsonObj kNull = [] {
        BsonBuilder b;
        b.appendNull("v");
        return b.obj();
    }();
    return kNull.firstElement();
}

// Values of an array node, kept alive by `holder`.
std::vector<BsonElement> arrayValues(MutableNode& node, BsonObj* holder) {
    std::vector<BsonElement> out;
    BsonElement arr = node.element(holder);
    for (BsonElement e : arr.objValue()) out.push_back(e);
    return out;
}

BsonElement buildArray(MutableDocument* doc, const std::vector<BsonElement>& values) {
    BsonArrayBuilder ab;
    for (const auto& v : values) ab.appendElement(v);
    BsonObj arr = ab.arr();
    return doc->makeValue([&](BsonBuilder& b, std::string_view name) { b.appendArray(name, arr); });
}

// Replaces the node's value unless it is byte-identical already.
void setIfChanged(UpdateApplyState& s, MutableNode* node, const BsonElement& value) {
    BsonObj holder;
    if (sameValue(node->element(&holder), value)) return;
    node->setValue(s.doc->copyValue(value));
}

// Creates target.pathToCreate under target.element with `value` at its end (MongoDB's
// pathsupport::createPathAt): missing intermediate fields become documents; an array is padded
// with nulls up to a numeric first component.
Status createPath(UpdateApplyState& s, const UpdateTarget& t, const BsonElement& value) {
    MutableNode* el = t.element;
    const std::vector<std::string>& parts = t.pathToCreate;
    const std::string& first = parts.front();
    size_t index = 0;
    bool viable = el->isObject() || (el->isArray() && parseIndex(first, &index));
    if (!viable) {
        return Status(ErrorCodes::PathNotViable,
                      "Cannot create field '" + first + "' in element " + mongoNodeString(*el));
    }
    if (t.pathTaken.empty() && !first.empty() && first[0] == '$') {
        return Status(ErrorCodes::DollarPrefixedFieldName, "The dollar ($) prefixed field '" +
                                                               first + "' in '" + t.fullPath() +
                                                               "' is not valid for storage.");
    }
    BsonElement newValue = value;
    if (parts.size() > 1) {
        newValue = s.doc->makeValue([&](BsonBuilder& b, std::string_view name) {
            b.startObject(name);
            for (size_t i = 1; i + 1 < parts.size(); ++i) b.startObject(parts[i]);
            b.appendElementAs(value, parts.back());
            for (size_t i = 1; i + 1 < parts.size(); ++i) b.end();
            b.end();
        });
    } else {
        newValue = s.doc->copyValue(value);
    }
    if (el->isObject()) {
        el->appendChild(first, newValue);
        return Status::OK();
    }
    if (index > kMaxPaddingAllowed) {
        return Status(ErrorCodes::BadValue, "can't backfill more than " +
                                                std::to_string(kMaxPaddingAllowed) + " elements");
    }
    size_t size = el->numChildren();
    while (size < index) {
        el->appendChild(std::to_string(size), nullElement());
        ++size;
    }
    el->appendChild(first, newValue);
    return Status::OK();
}

// Base of the modifiers that apply at a path (MongoDB's ModifierNode).
class ModifierNode : public UpdateLeafNode {
  public:
    Status apply(UpdateApplyState& s, UpdateTarget& t) const final {
        if (onlyOnInsert() && !s.insert) return Status::OK();
        if (t.pathToCreate.empty()) return updateExisting(s, t);
        if (!allowCreation()) return Status::OK();
        // Check viability before computing the value (errors come in MongoDB's order).
        const std::string& first = t.pathToCreate.front();
        size_t index = 0;
        if (!t.element->isObject() && !(t.element->isArray() && parseIndex(first, &index))) {
            return Status(
                ErrorCodes::PathNotViable,
                "Cannot create field '" + first + "' in element " + mongoNodeString(*t.element));
        }
        BsonObj holder;
        ASSIGN_OR_RETURN(BsonElement v, valueForNew(s, t, &holder));
        return createPath(s, t, v);
    }

  protected:
    virtual Status updateExisting(UpdateApplyState& s, UpdateTarget& t) const = 0;
    virtual bool allowCreation() const { return true; }
    virtual bool onlyOnInsert() const { return false; }
    virtual StatusWith<BsonElement> valueForNew(UpdateApplyState& s, const UpdateTarget& t,
                                                BsonObj* holder) const {
        invariant(false);
        return BsonElement();
    }
};

// ---- $set / $setOnInsert ----

class SetNode : public ModifierNode {
  public:
    SetNode(const BsonElement& v, bool onInsert) : _val(wrap(v)), _onInsert(onInsert) {}

  protected:
    bool onlyOnInsert() const override { return _onInsert; }
    Status updateExisting(UpdateApplyState& s, UpdateTarget& t) const override {
        setIfChanged(s, t.element, _val.firstElement());
        return Status::OK();
    }
    StatusWith<BsonElement> valueForNew(UpdateApplyState&, const UpdateTarget&,
                                        BsonObj*) const override {
        return _val.firstElement();
    }

  private:
    BsonObj _val;
    bool _onInsert;
};

// ---- $unset ----

class UnsetNode : public ModifierNode {
  protected:
    bool allowCreation() const override { return false; }
    Status updateExisting(UpdateApplyState& s, UpdateTarget& t) const override {
        MutableNode* parent = t.parent;
        invariant(parent);
        if (parent->isArray()) {
            // Array elements are set to null, never removed (indices stay stable).
            setIfChanged(s, t.element, nullElement());
            return Status::OK();
        }
        long i = parent->indexOf(t.element);
        invariant(i >= 0);
        parent->eraseChild(static_cast<size_t>(i));
        t.element = nullptr;
        return Status::OK();
    }
};

// ---- $inc / $mul ----

class ArithmeticNode : public ModifierNode {
  public:
    ArithmeticNode(const BsonElement& v, bool inc) : _val(wrap(v)), _inc(inc) {}

  protected:
    Status updateExisting(UpdateApplyState& s, UpdateTarget& t) const override {
        BsonObj holder;
        BsonElement cur = t.element->element(&holder);
        std::string op = _inc ? "$inc" : "$mul";
        if (!cur.isNumber()) {
            return Status(ErrorCodes::TypeMismatch,
                          "Cannot apply " + op + " to a value of non-numeric type. " +
                              idForMessage(s) + " has the field '" + t.element->name() +
                              "' of non-numeric type " + typeNameOf(cur.type()));
        }
        BsonBuilder b;
        if (!applyArithmetic(_inc ? ArithOp::kAdd : ArithOp::kMul, cur, _val.firstElement(), b,
                             "v")) {
            return Status(ErrorCodes::BadValue,
                          "Failed to apply " + op + " operations to current value (" +
                              safeNumDebugString(cur) + ") for document " + idForMessage(s));
        }
        setIfChanged(s, t.element, s.doc->keep(b.obj()));
        return Status::OK();
    }
    StatusWith<BsonElement> valueForNew(UpdateApplyState&, const UpdateTarget&,
                                        BsonObj* holder) const override {
        BsonElement v = _val.firstElement();
        if (_inc) return v;
        // $mul on a missing field stores 0 of the argument's type.
        BsonBuilder b;
        switch (v.type()) {
            case BsonType::Int32:
                b.appendInt32("v", 0);
                break;
            case BsonType::Int64:
                b.appendInt64("v", 0);
                break;
            case BsonType::Double:
                b.appendDouble("v", 0.0);
                break;
            default:
                b.appendDecimal("v", bson::Decimal128::fromString("0"));
                break;
        }
        *holder = b.obj();
        return holder->firstElement();
    }

  private:
    BsonObj _val;
    bool _inc;
};

// ---- $min / $max ----

class CompareNode : public ModifierNode {
  public:
    CompareNode(const BsonElement& v, bool isMin) : _val(wrap(v)), _min(isMin) {}

  protected:
    Status updateExisting(UpdateApplyState& s, UpdateTarget& t) const override {
        BsonObj holder;
        BsonElement cur = t.element->element(&holder);
        int c = bson::compareElementValues(cur, _val.firstElement());
        if ((_min && c > 0) || (!_min && c < 0)) {
            t.element->setValue(_val.firstElement());
        }
        return Status::OK();
    }
    StatusWith<BsonElement> valueForNew(UpdateApplyState&, const UpdateTarget&,
                                        BsonObj*) const override {
        return _val.firstElement();
    }

  private:
    BsonObj _val;
    bool _min;
};

// ---- $currentDate ----

class CurrentDateNode : public ModifierNode {
  public:
    explicit CurrentDateNode(bool date) : _date(date) {}

  protected:
    Status updateExisting(UpdateApplyState& s, UpdateTarget& t) const override {
        t.element->setValue(makeNow(s));
        return Status::OK();
    }
    StatusWith<BsonElement> valueForNew(UpdateApplyState& s, const UpdateTarget&,
                                        BsonObj*) const override {
        return makeNow(s);
    }

  private:
    BsonElement makeNow(UpdateApplyState& s) const {
        return s.doc->makeValue([&](BsonBuilder& b, std::string_view name) {
            if (_date) {
                b.appendDate(name, s.nowMillis);
            } else {
                b.appendTimestamp(name, s.nowTimestamp);
            }
        });
    }
    bool _date;
};

// ---- $push ----

struct SortSpec {
    bool present = false;
    int direction = 1;                                 // whole-element sort
    std::vector<std::pair<std::string, int>> pattern;  // sort by fields
};

BsonElement dottedField(const BsonElement& e, const std::string& path) {
    if (!e.isObject()) return BsonElement();
    BsonView cur = e.objValue();
    size_t start = 0;
    while (true) {
        size_t dot = path.find('.', start);
        std::string part = path.substr(start, dot == std::string::npos ? dot : dot - start);
        BsonElement f = cur.getField(part);
        if (dot == std::string::npos || f.eoo()) return f;
        if (!f.isObject() && !f.isArray()) return BsonElement();
        cur = f.objValue();
        start = dot + 1;
    }
}

class PushNode : public ModifierNode {
  public:
    static StatusWith<std::unique_ptr<UpdateLeafNode>> parse(const BsonElement& arg) {
        auto node = std::make_unique<PushNode>();
        bool modifiers = arg.isObject() && arg.objValue().hasField("$each");
        if (!modifiers) {
            BsonArrayBuilder ab;
            ab.appendElement(arg);
            node->_each = ab.arr();
            return std::unique_ptr<UpdateLeafNode>(std::move(node));
        }
        bool seenEach = false, seenSlice = false, seenSort = false, seenPosition = false;
        for (BsonElement clause : arg.objValue()) {
            std::string_view name = clause.fieldName();
            if (name == "$each") {
                if (seenEach) return dup("$each");
                seenEach = true;
                if (!clause.isArray()) {
                    return Status(ErrorCodes::BadValue,
                                  "The argument to $each in $push must be an array but it was of "
                                  "type: " +
                                      typeNameOf(clause.type()));
                }
                node->_each = clause.objValue().copy();
            } else if (name == "$slice") {
                if (seenSlice) return dup("$slice");
                seenSlice = true;
                if (!clause.isNumber()) {
                    return Status(ErrorCodes::BadValue,
                                  "The value for $slice must be an integer value but was given "
                                  "type: " +
                                      typeNameOf(clause.type()));
                }
                if (!clause.isIntegral()) {
                    return Status(ErrorCodes::BadValue,
                                  "The $slice value in $push must be an integer value but was "
                                  "given type: " +
                                      typeNameOf(clause.type()));
                }
                node->_slice = clause.numberLong();
            } else if (name == "$sort") {
                if (seenSort) return dup("$sort");
                seenSort = true;
                TRY_STATUS(parseSort(clause, &node->_sort));
            } else if (name == "$position") {
                if (seenPosition) return dup("$position");
                seenPosition = true;
                if (!clause.isNumber() || !clause.isIntegral()) {
                    return Status(ErrorCodes::BadValue,
                                  "The value for $position must be an integer value, not of "
                                  "type: " +
                                      typeNameOf(clause.type()));
                }
                node->_position = clause.numberLong();
            } else {
                return Status(ErrorCodes::BadValue,
                              "Unrecognized clause in $push: " + std::string(name));
            }
        }
        return std::unique_ptr<UpdateLeafNode>(std::move(node));
    }

  protected:
    Status updateExisting(UpdateApplyState& s, UpdateTarget& t) const override {
        if (!t.element->isArray()) {
            return Status(ErrorCodes::BadValue,
                          "The field '" + t.element->name() + "' must be an array but is of type " +
                              typeNameOf(t.element->type()) + " in document {" +
                              idElementForMessage(s) + "}");
        }
        BsonObj holder;
        std::vector<BsonElement> values = arrayValues(*t.element, &holder);
        setIfChanged(s, t.element, compute(s, std::move(values)));
        return Status::OK();
    }
    StatusWith<BsonElement> valueForNew(UpdateApplyState& s, const UpdateTarget&,
                                        BsonObj*) const override {
        return compute(s, {});
    }

  private:
    static Status dup(std::string_view clause) {
        return Status(ErrorCodes::BadValue,
                      "Only one " + std::string(clause) + " clause is supported.");
    }

    static Status parseSort(const BsonElement& e, SortSpec* out) {
        out->present = true;
        if (e.isNumber()) {
            if (!e.isIntegral() || (e.numberLong() != 1 && e.numberLong() != -1)) {
                return Status(ErrorCodes::BadValue,
                              "The $sort element value must be either 1 or -1");
            }
            out->direction = static_cast<int>(e.numberLong());
            return Status::OK();
        }
        if (!e.isObject()) {
            return Status(ErrorCodes::BadValue,
                          "The $sort is invalid: use 1/-1 to sort the whole element, or "
                          "{field:1/-1} to sort embedded fields");
        }
        if (e.objValue().isEmpty()) {
            return Status(ErrorCodes::BadValue,
                          "The $sort pattern is empty when it should be a set of fields.");
        }
        for (BsonElement f : e.objValue()) {
            std::string_view name = f.fieldName();
            if (name.empty() || name.front() == '.' || name.back() == '.' ||
                name.find("..") != std::string_view::npos) {
                return Status(ErrorCodes::BadValue,
                              "The $sort field is a dotted field but has an empty part: " +
                                  std::string(name));
            }
            if (name[0] == '$') {
                return Status(ErrorCodes::BadValue,
                              "The $sort field cannot start with $: " + std::string(name));
            }
            if (!f.isNumber() || !f.isIntegral() || (f.numberLong() != 1 && f.numberLong() != -1)) {
                return Status(ErrorCodes::BadValue,
                              "The $sort element value must be either 1 or -1");
            }
            out->pattern.emplace_back(std::string(name), static_cast<int>(f.numberLong()));
        }
        return Status::OK();
    }

    BsonElement compute(UpdateApplyState& s, std::vector<BsonElement> values) const {
        std::vector<BsonElement> each;
        for (BsonElement e : BsonView(_each)) each.push_back(e);
        size_t pos = values.size();
        if (_position) {
            long long p = *_position;
            long long size = static_cast<long long>(values.size());
            if (p < 0) p = std::max(0LL, size + p);
            pos = static_cast<size_t>(std::min(p, size));
        }
        values.insert(values.begin() + static_cast<long>(pos), each.begin(), each.end());
        if (_sort.present) {
            const SortSpec& spec = _sort;
            std::stable_sort(values.begin(), values.end(),
                             [&](const BsonElement& a, const BsonElement& b) {
                                 if (spec.pattern.empty()) {
                                     return bson::compareElementValues(a, b) * spec.direction < 0;
                                 }
                                 for (const auto& [path, dir] : spec.pattern) {
                                     BsonElement x = dottedField(a, path);
                                     BsonElement y = dottedField(b, path);
                                     if (x.eoo()) x = nullElement();
                                     if (y.eoo()) y = nullElement();
                                     int c = bson::compareElementValues(x, y) * dir;
                                     if (c != 0) return c < 0;
                                 }
                                 return false;
                             });
        }
        if (_slice) {
            long long n = *_slice;
            size_t size = values.size();
            if (n >= 0) {
                if (static_cast<size_t>(n) < size) values.resize(static_cast<size_t>(n));
            } else {
                size_t keep = static_cast<size_t>(-n);
                if (keep < size)
                    values.erase(values.begin(), values.end() - static_cast<long>(keep));
            }
        }
        return buildArray(s.doc, values);
    }

    BsonObj _each;  // array document
    std::optional<long long> _slice;
    std::optional<long long> _position;
    SortSpec _sort;
};

// ---- $addToSet ----

class AddToSetNode : public ModifierNode {
  public:
    static StatusWith<std::unique_ptr<UpdateLeafNode>> parse(const BsonElement& arg) {
        auto node = std::make_unique<AddToSetNode>();
        BsonObj source;
        if (arg.isObject() && arg.objValue().hasField("$each") &&
            arg.objValue().firstElement().fieldName() == "$each") {
            BsonElement each = arg.objValue().getField("$each");
            if (!each.isArray()) {
                return Status(ErrorCodes::TypeMismatch,
                              "The argument to $each in $addToSet must be an array but it was of "
                              "type " +
                                  typeNameOf(each.type()));
            }
            if (arg.objValue().nFields() > 1) {
                return Status(
                    ErrorCodes::BadValue,
                    "Found unexpected fields after $each in $addToSet: " + mongoValueString(arg));
            }
            source = each.objValue().copy();
        } else {
            BsonArrayBuilder ab;
            ab.appendElement(arg);
            source = ab.arr();
        }
        // De-duplicate the values to add (first occurrence wins).
        std::vector<BsonElement> unique;
        for (BsonElement e : BsonView(source)) {
            bool seen = false;
            for (const auto& u : unique) seen = seen || bson::compareElementValues(u, e) == 0;
            if (!seen) unique.push_back(e);
        }
        BsonArrayBuilder ab;
        for (const auto& u : unique) ab.appendElement(u);
        node->_values = ab.arr();
        return std::unique_ptr<UpdateLeafNode>(std::move(node));
    }

  protected:
    Status updateExisting(UpdateApplyState& s, UpdateTarget& t) const override {
        if (!t.element->isArray()) {
            return Status(ErrorCodes::BadValue,
                          "Cannot apply $addToSet to non-array field. Field named '" +
                              t.element->name() + "' has non-array type " +
                              typeNameOf(t.element->type()));
        }
        BsonObj holder;
        std::vector<BsonElement> values = arrayValues(*t.element, &holder);
        size_t original = values.size();
        for (BsonElement v : BsonView(_values)) {
            bool present = false;
            for (size_t i = 0; i < original && !present; ++i) {
                present = bson::compareElementValues(values[i], v) == 0;
            }
            if (!present) values.push_back(v);
        }
        if (values.size() == original) return Status::OK();
        t.element->setValue(buildArray(s.doc, values));
        return Status::OK();
    }
    StatusWith<BsonElement> valueForNew(UpdateApplyState& s, const UpdateTarget&,
                                        BsonObj*) const override {
        std::vector<BsonElement> values;
        for (BsonElement v : BsonView(_values)) values.push_back(v);
        return buildArray(s.doc, values);
    }

  private:
    BsonObj _values;  // array document, de-duplicated
};

// ---- $pull / $pullAll ----

class ArrayCullingNode : public ModifierNode {
  protected:
    bool allowCreation() const override { return false; }
    virtual bool shouldRemove(const BsonElement& e) const = 0;
    Status updateExisting(UpdateApplyState& s, UpdateTarget& t) const override {
        if (!t.element->isArray()) {
            return Status(ErrorCodes::BadValue, "Cannot apply $pull to a non-array value");
        }
        BsonObj holder;
        std::vector<BsonElement> values = arrayValues(*t.element, &holder);
        std::vector<BsonElement> kept;
        for (const auto& v : values)
            if (!shouldRemove(v)) kept.push_back(v);
        if (kept.size() == values.size()) return Status::OK();
        t.element->setValue(buildArray(s.doc, kept));
        return Status::OK();
    }
};

class PullNode : public ArrayCullingNode {
  public:
    explicit PullNode(std::unique_ptr<PullPredicate> p) : _pred(std::move(p)) {}

  protected:
    bool shouldRemove(const BsonElement& e) const override { return _pred->matches(e); }

  private:
    std::unique_ptr<PullPredicate> _pred;
};

class PullAllNode : public ArrayCullingNode {
  public:
    explicit PullAllNode(const BsonElement& arr) : _values(arr.objValue().copy()) {}

  protected:
    bool shouldRemove(const BsonElement& e) const override {
        for (BsonElement v : BsonView(_values))
            if (bson::compareElementValues(e, v) == 0) return true;
        return false;
    }

  private:
    BsonObj _values;
};

// ---- $pop ----

class PopNode : public ModifierNode {
  public:
    explicit PopNode(bool fromFront) : _front(fromFront) {}

  protected:
    bool allowCreation() const override { return false; }
    Status updateExisting(UpdateApplyState& s, UpdateTarget& t) const override {
        if (!t.element->isArray()) {
            return Status(ErrorCodes::TypeMismatch,
                          "Path '" + t.fullPath() + "' contains an element of non-array type '" +
                              typeNameOf(t.element->type()) + "'");
        }
        BsonObj holder;
        std::vector<BsonElement> values = arrayValues(*t.element, &holder);
        if (values.empty()) return Status::OK();
        if (_front) {
            values.erase(values.begin());
        } else {
            values.pop_back();
        }
        t.element->setValue(buildArray(s.doc, values));
        return Status::OK();
    }

  private:
    bool _front;
};

// ---- $bit ----

class BitNode : public ModifierNode {
  public:
    static StatusWith<std::unique_ptr<UpdateLeafNode>> parse(const BsonElement& arg) {
        if (!arg.isObject()) {
            return Status(ErrorCodes::BadValue,
                          "The $bit modifier is not compatible with a " + typeNameOf(arg.type()) +
                              ". You must pass in an embedded document: {$bit: {field: "
                              "{and/or/xor: #}}");
        }
        auto node = std::make_unique<BitNode>();
        for (BsonElement op : arg.objValue()) {
            std::string_view name = op.fieldName();
            ArithOp kind;
            if (name == "and") {
                kind = ArithOp::kAnd;
            } else if (name == "or") {
                kind = ArithOp::kOr;
            } else if (name == "xor") {
                kind = ArithOp::kXor;
            } else {
                return Status(ErrorCodes::BadValue,
                              "The $bit modifier only supports 'and', 'or', and 'xor', not '" +
                                  std::string(name) + "' which is an unknown operator: {" +
                                  mongoElementString(op) + "}");
            }
            if (op.type() != BsonType::Int32 && op.type() != BsonType::Int64) {
                return Status(ErrorCodes::BadValue,
                              "The $bit modifier field must be an Integer(32/64 bit); a '" +
                                  typeNameOf(op.type()) + "' is not supported here: {" +
                                  mongoElementString(op) + "}");
            }
            node->_ops.emplace_back(kind, wrap(op));
        }
        if (node->_ops.empty()) {
            return Status(ErrorCodes::BadValue,
                          "You must pass in at least one bitwise operation. The format is: "
                          "{$bit: {field: {and/or/xor: #}}");
        }
        return std::unique_ptr<UpdateLeafNode>(std::move(node));
    }

  protected:
    Status updateExisting(UpdateApplyState& s, UpdateTarget& t) const override {
        BsonObj holder;
        BsonElement cur = t.element->element(&holder);
        if (cur.type() != BsonType::Int32 && cur.type() != BsonType::Int64) {
            return Status(ErrorCodes::BadValue,
                          "Cannot apply $bit to a value of non-integral type." + idForMessage(s) +
                              " has the field " + t.element->name() + " of non-integer type " +
                              typeNameOf(cur.type()));
        }
        setIfChanged(s, t.element, compute(s, cur));
        return Status::OK();
    }
    StatusWith<BsonElement> valueForNew(UpdateApplyState& s, const UpdateTarget&,
                                        BsonObj*) const override {
        BsonElement zero =
            s.doc->makeValue([](BsonBuilder& b, std::string_view name) { b.appendInt32(name, 0); });
        return compute(s, zero);
    }

  private:
    BsonElement compute(UpdateApplyState& s, BsonElement cur) const {
        for (const auto& [op, arg] : _ops) {
            BsonBuilder b;
            applyArithmetic(op, cur, arg.firstElement(), b, "v");
            cur = s.doc->keep(b.obj());
        }
        return cur;
    }
    std::vector<std::pair<ArithOp, BsonObj>> _ops;
};

// ---- $rename ----

std::vector<std::string> split(const std::string& path) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
        size_t dot = path.find('.', start);
        parts.push_back(path.substr(start, dot == std::string::npos ? dot : dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return parts;
}

class ConflictPlaceholderNode : public UpdateLeafNode {
  public:
    Status apply(UpdateApplyState&, UpdateTarget&) const override { return Status::OK(); }
};

class RenameNode : public UpdateLeafNode {
  public:
    RenameNode(std::string from, std::string to)
        : _from(std::move(from)), _to(std::move(to)), _fromParts(split(_from)) {}

    Status apply(UpdateApplyState& s, UpdateTarget& t) const override {
        // Find the source; a missing source makes the rename a no-op.
        MutableNode* parent = &s.doc->root();
        MutableNode* source = nullptr;
        for (size_t i = 0; i < _fromParts.size(); ++i) {
            if (parent->isArray()) {
                return Status(ErrorCodes::BadValue,
                              "The source field cannot be an array element, '" + _from +
                                  "' in doc with " + idElementForMessage(s) +
                                  " has an array field called '" + parent->name() + "'");
            }
            if (!parent->isObject()) return Status::OK();
            MutableNode* child = parent->findChild(_fromParts[i]);
            if (!child) return Status::OK();
            if (i + 1 == _fromParts.size()) {
                source = child;
            } else {
                parent = child;
            }
        }
        if (_fromParts.front() == "_id" && !s.originalId.eoo()) {
            return Status(ErrorCodes::ImmutableField,
                          "Performing an update on the path '_id' would modify the immutable "
                          "field '_id'");
        }
        // The destination may not go through arrays either.
        MutableNode* walk = &s.doc->root();
        for (const auto& part : t.pathTaken) {
            if (walk->isArray()) {
                return Status(ErrorCodes::BadValue,
                              "The destination field cannot be an array element, '" + _to +
                                  "' in doc with " + idElementForMessage(s) +
                                  " has an array field called '" + walk->name() + "'");
            }
            walk = walk->findChild(part);
            invariant(walk);
        }
        if (!t.pathToCreate.empty() && walk->isArray()) {
            return Status(ErrorCodes::BadValue,
                          "The destination field cannot be an array element, '" + _to +
                              "' in doc with " + idElementForMessage(s) +
                              " has an array field called '" + walk->name() + "'");
        }
        BsonObj holder;
        BsonElement value = s.doc->copyValue(source->element(&holder));
        if (t.pathToCreate.empty()) {
            t.element->setValue(value);
        } else {
            TRY_STATUS(createPath(s, t, value));
        }
        long i = parent->indexOf(source);
        invariant(i >= 0);
        parent->eraseChild(static_cast<size_t>(i));
        return Status::OK();
    }

  private:
    std::string _from;
    std::string _to;
    std::vector<std::string> _fromParts;
};

}  // namespace

bool modifierFromName(std::string_view name, ModifierType* out) {
    static const std::pair<std::string_view, ModifierType> kTable[] = {
        {"$set", ModifierType::kSet},
        {"$unset", ModifierType::kUnset},
        {"$inc", ModifierType::kInc},
        {"$mul", ModifierType::kMul},
        {"$min", ModifierType::kMin},
        {"$max", ModifierType::kMax},
        {"$rename", ModifierType::kRename},
        {"$setOnInsert", ModifierType::kSetOnInsert},
        {"$currentDate", ModifierType::kCurrentDate},
        {"$push", ModifierType::kPush},
        {"$addToSet", ModifierType::kAddToSet},
        {"$pull", ModifierType::kPull},
        {"$pullAll", ModifierType::kPullAll},
        {"$pop", ModifierType::kPop},
        {"$bit", ModifierType::kBit},
    };
    for (const auto& [n, t] : kTable) {
        if (n == name) {
            *out = t;
            return true;
        }
    }
    return false;
}

StatusWith<std::unique_ptr<UpdateLeafNode>> makeModifierNode(ModifierType type,
                                                             const BsonElement& arg) {
    using Ptr = std::unique_ptr<UpdateLeafNode>;
    switch (type) {
        case ModifierType::kSet:
            return Ptr(std::make_unique<SetNode>(arg, false));
        case ModifierType::kSetOnInsert:
            return Ptr(std::make_unique<SetNode>(arg, true));
        case ModifierType::kUnset:
            return Ptr(std::make_unique<UnsetNode>());
        case ModifierType::kInc:
        case ModifierType::kMul:
            if (!arg.isNumber()) {
                return Status(ErrorCodes::TypeMismatch,
                              std::string("Cannot ") +
                                  (type == ModifierType::kInc ? "increment" : "multiply") +
                                  " with non-numeric argument: " + argForMessage(arg));
            }
            return Ptr(std::make_unique<ArithmeticNode>(arg, type == ModifierType::kInc));
        case ModifierType::kMin:
        case ModifierType::kMax:
            return Ptr(std::make_unique<CompareNode>(arg, type == ModifierType::kMin));
        case ModifierType::kCurrentDate: {
            if (arg.type() == BsonType::Bool) return Ptr(std::make_unique<CurrentDateNode>(true));
            if (arg.isObject()) {
                BsonView spec = arg.objValue();
                bool date = true;
                bool sawType = false;
                for (BsonElement f : spec) {
                    if (f.fieldName() != "$type") {
                        return Status(ErrorCodes::BadValue,
                                      "The only valid field of the option is '$type': "
                                      "{$currentDate: {field : {$type: 'date/timestamp'}}}");
                    }
                    sawType = true;
                    if (f.type() == BsonType::String && f.stringValue() == "date") {
                        date = true;
                    } else if (f.type() == BsonType::String && f.stringValue() == "timestamp") {
                        date = false;
                    } else {
                        return Status(ErrorCodes::BadValue,
                                      "The '$type' string field is required to be 'date' or "
                                      "'timestamp': {$currentDate: {field : {$type: 'date'}}}");
                    }
                }
                if (!sawType) {
                    return Status(ErrorCodes::BadValue,
                                  "The '$type' string field is required to be 'date' or "
                                  "'timestamp': {$currentDate: {field : {$type: 'date'}}}");
                }
                return Ptr(std::make_unique<CurrentDateNode>(date));
            }
            return Status(ErrorCodes::BadValue,
                          mongoElementString(arg) +
                              " is not valid type for $currentDate. Please use a boolean ('true') "
                              "or a $type expression ({$type: 'timestamp/date'}).");
        }
        case ModifierType::kPush:
            return PushNode::parse(arg);
        case ModifierType::kAddToSet:
            return AddToSetNode::parse(arg);
        case ModifierType::kPull: {
            ASSIGN_OR_RETURN(auto pred, PullPredicate::parse(arg));
            return Ptr(std::make_unique<PullNode>(std::move(pred)));
        }
        case ModifierType::kPullAll:
            if (!arg.isArray()) {
                return Status(ErrorCodes::BadValue,
                              "$pullAll requires an array argument but was given a " +
                                  typeNameOf(arg.type()));
            }
            return Ptr(std::make_unique<PullAllNode>(arg));
        case ModifierType::kPop: {
            if (!arg.isNumber()) {
                return Status(ErrorCodes::FailedToParse,
                              "Expected a number in: " + mongoElementString(arg));
            }
            double v = arg.numberDouble();
            if (v != 1 && v != -1) {
                return Status(ErrorCodes::FailedToParse,
                              "$pop expects 1 or -1, found: " + mongoValueString(arg));
            }
            return Ptr(std::make_unique<PopNode>(v == -1));
        }
        case ModifierType::kBit:
            return BitNode::parse(arg);
        case ModifierType::kRename:
            break;
    }
    invariant(false);
    return Status(ErrorCodes::InternalError, "unreachable");
}

std::unique_ptr<UpdateLeafNode> makeRenameNode(std::string from, std::string to) {
    return std::make_unique<RenameNode>(std::move(from), std::move(to));
}

std::unique_ptr<UpdateLeafNode> makeConflictPlaceholder() {
    return std::make_unique<ConflictPlaceholderNode>();
}

}  // namespace tessera::query
