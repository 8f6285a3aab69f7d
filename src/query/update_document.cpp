#include "query/update_document.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>

namespace tessera::query {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using bson::BsonView;

namespace {

bool parseIndex(std::string_view s, size_t* out) {
    if (s.empty() || s.size() > 9) return false;
    size_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + static_cast<size_t>(c - '0');
    }
    *out = v;
    return true;
}

}  // namespace

void MutableNode::setValue(BsonElement value) {
    _value = value;
    _expanded = false;
    _children.clear();
}

void MutableNode::expand() {
    if (_expanded) return;
    invariant(isContainer());
    _expandedType = _value.type();
    _children.clear();
    for (BsonElement e : _value.objValue()) {
        _children.push_back(std::make_unique<MutableNode>(std::string(e.fieldName()), e));
    }
    _expanded = true;
}

std::vector<std::unique_ptr<MutableNode>>& MutableNode::children() {
    expand();
    return _children;
}

size_t MutableNode::numChildren() {
    if (!_expanded) return _value.objValue().nFields();
    return _children.size();
}

MutableNode* MutableNode::findChild(std::string_view field) {
    if (!isContainer()) return nullptr;
    if (isArray()) {
        size_t index = 0;
        if (!parseIndex(field, &index)) return nullptr;
        auto& kids = children();
        return index < kids.size() ? kids[index].get() : nullptr;
    }
    if (!_expanded) {
        // Avoid expanding objects that are only read through.
        BsonElement e = _value.objValue().getField(field);
        if (e.eoo()) return nullptr;
    }
    for (auto& c : children()) {
        if (c->name() == field) return c.get();
    }
    return nullptr;
}

MutableNode* MutableNode::appendChild(std::string name, BsonElement value) {
    auto& kids = children();
    kids.push_back(std::make_unique<MutableNode>(std::move(name), value));
    return kids.back().get();
}

void MutableNode::eraseChild(size_t i) {
    auto& kids = children();
    invariant(i < kids.size());
    kids.erase(kids.begin() + static_cast<long>(i));
}

long MutableNode::indexOf(const MutableNode* child) {
    auto& kids = children();
    for (size_t i = 0; i < kids.size(); ++i) {
        if (kids[i].get() == child) return static_cast<long>(i);
    }
    return -1;
}

void MutableNode::appendTo(BsonBuilder& b, std::string_view name) const {
    if (!_expanded) {
        b.appendElementAs(_value, name);
        return;
    }
    if (_expandedType == BsonType::Array) {
        b.startArray(name);
        size_t i = 0;
        for (const auto& c : _children) c->appendTo(b, std::to_string(i++));
    } else {
        b.startObject(name);
        for (const auto& c : _children) c->appendTo(b, c->name());
    }
    b.end();
}

BsonElement MutableNode::element(BsonObj* holder) const {
    if (!_expanded) return _value;
    BsonBuilder b;
    appendTo(b, _name);
    *holder = b.obj();
    return holder->firstElement();
}

MutableDocument::MutableDocument(BsonView doc) : _original(doc.copy()) {
    BsonBuilder b;
    b.appendObject("", _original);
    BsonObj wrapper = b.obj();
    _root = MutableNode("", wrapper.firstElement());
    _arena.push_back(std::move(wrapper));
}

BsonElement MutableDocument::keep(BsonObj wrapper) {
    BsonElement e = wrapper.firstElement();
    _arena.push_back(std::move(wrapper));
    return e;
}

BsonElement MutableDocument::copyValue(const BsonElement& e) {
    BsonBuilder b;
    b.appendElementAs(e, "v");
    return keep(b.obj());
}

BsonObj MutableDocument::toBson() const {
    BsonBuilder b;
    // The root is an object: append its children at top level.
    MutableNode& root = const_cast<MutableNode&>(_root);
    for (const auto& c : root.children()) c->appendTo(b, c->name());
    return b.obj();
}

// ---- Mongo-style strings for error messages ----

namespace {

std::string doubleString(double d) {
    if (std::isnan(d)) return "nan.0";
    if (std::isinf(d)) return d > 0 ? "inf.0" : "-inf.0";
    char buf[64];
    if (d == std::floor(d) && std::fabs(d) < 1e15) {
        std::snprintf(buf, sizeof buf, "%.1f", d);
    } else {
        std::snprintf(buf, sizeof buf, "%.17g", d);
        // Prefer the shortest representation that round-trips.
        for (int p = 1; p <= 17; ++p) {
            char tmp[64];
            std::snprintf(tmp, sizeof tmp, "%.*g", p, d);
            if (std::strtod(tmp, nullptr) == d) {
                std::snprintf(buf, sizeof buf, "%s", tmp);
                break;
            }
        }
    }
    return buf;
}

std::string docBody(BsonView doc, bool isArray) {
    if (doc.isEmpty()) return isArray ? "[]" : "{}";
    std::string out = isArray ? "[ " : "{ ";
    bool first = true;
    for (BsonElement e : doc) {
        if (!first) out += ", ";
        first = false;
        out += isArray ? mongoValueString(e) : mongoElementString(e);
    }
    out += isArray ? " ]" : " }";
    return out;
}

}  // namespace

std::string mongoValueString(const BsonElement& e) {
    switch (e.type()) {
        case BsonType::EOO:
            return "EOO";
        case BsonType::Double:
            return doubleString(e.doubleValue());
        case BsonType::Int32:
            return std::to_string(e.int32Value());
        case BsonType::Int64:
            return std::to_string(e.int64Value());
        case BsonType::Decimal128:
            return "NumberDecimal(\"" + e.decimalValue().toString() + "\")";
        case BsonType::String:
        case BsonType::Symbol:
            return "\"" + std::string(e.stringValue()) + "\"";
        case BsonType::Object:
            return docBody(e.objValue(), false);
        case BsonType::Array:
            return docBody(e.objValue(), true);
        case BsonType::Bool:
            return e.boolValue() ? "true" : "false";
        case BsonType::Null:
            return "null";
        case BsonType::Undefined:
            return "undefined";
        case BsonType::MinKey:
            return "MinKey";
        case BsonType::MaxKey:
            return "MaxKey";
        case BsonType::ObjectId:
            return "ObjectId('" + e.oidValue().toHex() + "')";
        case BsonType::Date:
            return "new Date(" + std::to_string(e.dateValue()) + ")";
        case BsonType::Timestamp: {
            uint64_t ts = e.timestampValue();
            return "Timestamp(" + std::to_string(ts >> 32) + ", " +
                   std::to_string(ts & 0xffffffffu) + ")";
        }
        case BsonType::Regex: {
            auto r = e.regexValue();
            return "/" + std::string(r.pattern) + "/" + std::string(r.options);
        }
        default:
            return e.toString(false);
    }
}

std::string mongoElementString(const BsonElement& e) {
    return std::string(e.fieldName()) + ": " + mongoValueString(e);
}

std::string mongoDocString(BsonView doc) { return docBody(doc, false); }

std::string mongoNodeString(const MutableNode& node) {
    BsonObj holder;
    BsonElement e = node.element(&holder);
    return "{" + node.name() + ": " + mongoValueString(e) + "}";
}

}  // namespace tessera::query
