#include "storage/index_keys.h"

#include <algorithm>
#include <cmath>
#include <mutex>

#include "base/mutex.h"
#include "bson/bson_builder.h"
#include "bson/element_hash.h"
#include "keystring/keystring.h"

namespace tessera::storage {
namespace {

using bson::BsonElement;
using bson::BsonType;
using bson::BsonView;

const BsonElement& nullElement() {
    static const bson::BsonObj obj = bson::BsonBuilder().appendNull("").obj();
    static const BsonElement e = obj.firstElement();
    return e;
}

const BsonElement& undefinedElement() {
    static const bson::BsonObj obj = bson::BsonBuilder().appendUndefined("").obj();
    static const BsonElement e = obj.firstElement();
    return e;
}

bool isPositional(std::string_view component) {
    return !component.empty() && std::all_of(component.begin(), component.end(),
                                             [](char c) { return c >= '0' && c <= '9'; });
}

// The state of one key-pattern field while walking a document.
struct Slot {
    BsonView obj;           // where the remaining path is looked up
    std::string_view rest;  // remaining dotted path
    bool resolved = false;
    bool missing = false;
    BsonElement value;  // when resolved
    BsonElement array;  // when the walk stopped at an array to expand
    std::string_view arrayTail;
};

// Walks `slot` until it resolves to a value or stops at an array that must be expanded.
void resolve(Slot& slot) {
    while (!slot.resolved && slot.array.eoo()) {
        size_t dot = slot.rest.find('.');
        std::string_view head = slot.rest.substr(0, dot);
        std::string_view tail =
            dot == std::string_view::npos ? std::string_view{} : slot.rest.substr(dot + 1);
        BsonElement e = slot.obj.getField(head);
        if (e.eoo()) {
            slot.resolved = true;
            slot.missing = true;
            slot.value = nullElement();
        } else if (tail.empty()) {
            if (e.isArray()) {
                slot.array = e;
                slot.arrayTail = tail;
            } else {
                slot.resolved = true;
                slot.value = e;
            }
        } else if (e.isObject()) {
            slot.obj = e.objValue();
            slot.rest = tail;
        } else if (e.isArray()) {
            std::string_view next = tail.substr(0, tail.find('.'));
            if (isPositional(next)) {
                slot.obj = e.objValue();  // "a.0.b": select the element, no expansion
                slot.rest = tail;
            } else {
                slot.array = e;
                slot.arrayTail = tail;
            }
        } else {
            slot.resolved = true;
            slot.missing = true;
            slot.value = nullElement();
        }
    }
}

struct Emitter {
    const std::vector<std::pair<std::string, bool>>& fields;  // name, descending
    bool sparse;
    const CollationKeyFn& collationKey;
    std::vector<std::pair<std::string, bson::BsonObj>>* out;
    bool wantValues;
    bool multikey = false;

    void emit(const std::vector<Slot>& slots) {
        if (sparse &&
            std::all_of(slots.begin(), slots.end(), [](const Slot& s) { return s.missing; }))
            return;
        keystring::Builder b;
        for (size_t i = 0; i < slots.size(); ++i) {
            const BsonElement& v = slots[i].value;
            if (collationKey && (v.type() == BsonType::String || v.type() == BsonType::Symbol ||
                                 v.type() == BsonType::Object || v.type() == BsonType::Array)) {
                b.append(applyCollationKey(v, collationKey).firstElement(), fields[i].second);
            } else {
                b.append(v, fields[i].second);
            }
        }
        bson::BsonObj values;
        if (wantValues) {
            bson::BsonBuilder vb;
            for (size_t i = 0; i < slots.size(); ++i)
                vb.appendElementAs(slots[i].value, fields[i].first);
            values = vb.obj();
        }
        out->emplace_back(b.release(), std::move(values));
    }

    Status gen(std::vector<Slot> slots) {
        const Slot* first = nullptr;
        for (auto& s : slots) {
            resolve(s);
            if (s.array.eoo()) continue;
            if (!first) {
                first = &s;
            } else if (s.array.raw() != first->array.raw()) {
                return Status(ErrorCodes::CannotIndexParallelArrays,
                              "cannot index parallel arrays [" + std::string(s.array.fieldName()) +
                                  "] [" + std::string(first->array.fieldName()) + "]");
            }
        }
        if (!first) {
            emit(slots);
            return Status::OK();
        }
        multikey = true;
        const uint8_t* arrayRaw = first->array.raw();
        BsonView arr = first->array.objValue();
        auto expandInto = [&](std::vector<Slot>& copy, const BsonElement* el) {
            for (auto& s : copy) {
                if (s.array.raw() != arrayRaw) continue;
                std::string_view tail = s.arrayTail;
                s.array = BsonElement();
                if (!el) {  // empty array
                    s.resolved = true;
                    s.missing = !tail.empty();
                    s.value = tail.empty() ? undefinedElement() : nullElement();
                } else if (tail.empty()) {
                    s.resolved = true;
                    s.value = *el;
                } else if (el->isObject()) {
                    s.obj = el->objValue();
                    s.rest = tail;
                } else {
                    s.resolved = true;
                    s.missing = true;
                    s.value = nullElement();
                }
            }
        };
        if (arr.isEmpty()) {
            std::vector<Slot> copy = slots;
            expandInto(copy, nullptr);
            return gen(std::move(copy));
        }
        for (BsonElement el : arr) {
            std::vector<Slot> copy = slots;
            expandInto(copy, &el);
            TRY_STATUS(gen(std::move(copy)));
        }
        return Status::OK();
    }
};

}  // namespace

IndexKeyGenerator::IndexKeyGenerator(bson::BsonView keyPattern, bool sparse,
                                     CollationKeyFn collationKey)
    : _sparse(sparse), _collationKey(std::move(collationKey)) {
    for (BsonElement e : keyPattern) {
        bool hashed = e.type() == BsonType::String && e.stringValue() == "hashed";
        _fields.push_back(
            {std::string(e.fieldName()), e.isNumber() && e.numberDouble() < 0, hashed});
        _hashed = _hashed || hashed;
    }
}

IndexKeyGenerator::IndexKeyGenerator(const IndexSpec& spec)
    : IndexKeyGenerator(spec.keyPattern, spec.sparse) {
    auto fn = collationKeyFnFor(spec.spec);
    if (fn.isOK()) {
        _collationKey = std::move(fn.getValue());
    } else {
        _status = fn.getStatus();
    }
}

namespace {
Mutex& factoryMutex() {
    static Mutex m;
    return m;
}
CollationKeyFactory& factoryInstance() {
    static CollationKeyFactory f;
    return f;
}

void appendTransformed(bson::BsonBuilder& b, std::string_view name, const BsonElement& v,
                       const CollationKeyFn& keyFn) {
    switch (v.type()) {
        case BsonType::String:
        case BsonType::Symbol:
            b.appendString(name, keyFn(v.stringValue()));
            break;
        case BsonType::Object:
        case BsonType::Array:
            if (v.type() == BsonType::Object) {
                b.startObject(name);
            } else {
                b.startArray(name);
            }
            for (BsonElement e : v.objValue()) appendTransformed(b, e.fieldName(), e, keyFn);
            b.end();
            break;
        default:
            b.appendElementAs(v, name);
    }
}
}  // namespace

void setCollationKeyFactory(CollationKeyFactory factory) {
    MutexLock lock(factoryMutex());
    factoryInstance() = std::move(factory);
}

StatusWith<CollationKeyFn> collationKeyFnFor(bson::BsonView indexSpec) {
    BsonElement c = indexSpec["collation"];
    if (!c.isObject()) return CollationKeyFn();
    BsonElement locale = c.objValue()["locale"];
    if (locale.type() == BsonType::String && locale.stringValue() == "simple") {
        return CollationKeyFn();
    }
    CollationKeyFactory factory;
    {
        MutexLock lock(factoryMutex());
        factory = factoryInstance();
    }
    if (!factory) {
        return Status(
            ErrorCodes::InternalError,
            "no collation support installed for index collation " + c.objValue().toJson());
    }
    return factory(c.objValue());
}

bson::BsonObj applyCollationKey(const BsonElement& value, const CollationKeyFn& keyFn) {
    bson::BsonBuilder b;
    appendTransformed(b, "", value, keyFn);
    return b.obj();
}

namespace {

// MongoDB's dotted_path_support::extractElementAtPathOrArrayAlongPath: the element at `path`,
// or the first array met along it (then *arrayPathLen is the length of the path prefix that
// names that array), or EOO when the path leads nowhere.
BsonElement extractAtPathOrArray(BsonView doc, std::string_view path, size_t* arrayPathLen) {
    BsonView obj = doc;
    size_t start = 0;
    while (true) {
        size_t dot = path.find('.', start);
        size_t end = dot == std::string_view::npos ? path.size() : dot;
        BsonElement e = obj.getField(path.substr(start, end - start));
        if (e.eoo() || e.isArray() || dot == std::string_view::npos) {
            if (e.isArray()) *arrayPathLen = end;
            return e;
        }
        if (!e.isObject()) return BsonElement();
        obj = e.objValue();
        start = dot + 1;
    }
}

}  // namespace

Status IndexKeyGenerator::getHashedKeys(bson::BsonView doc, std::vector<std::string>* keys,
                                        std::vector<bson::BsonObj>* values) const {
    keystring::Builder b;
    bson::BsonBuilder vb;
    bool anyPresent = false;
    for (const Field& f : _fields) {
        size_t arrayPathLen = 0;
        BsonElement v = extractAtPathOrArray(doc, f.name, &arrayPathLen);
        if (v.isArray()) {
            return Status(16766,
                          "Error: hashed indexes do not currently support array values. Found "
                          "array at path: " +
                              f.name.substr(0, arrayPathLen));
        }
        anyPresent = anyPresent || !v.eoo();
        if (v.eoo()) v = nullElement();
        bson::BsonObj collated;
        if (_collationKey && (v.type() == BsonType::String || v.type() == BsonType::Symbol ||
                              v.type() == BsonType::Object)) {
            collated = applyCollationKey(v, _collationKey);
            v = collated.firstElement();
        }
        if (f.hashed) {
            bson::BsonObj h = bson::BsonBuilder().appendInt64("", bson::hashElement(v)).obj();
            b.append(h.firstElement(), f.descending);
            if (values) vb.appendElementAs(h.firstElement(), f.name);
        } else {
            b.append(v, f.descending);
            if (values) vb.appendElementAs(v, f.name);
        }
    }
    keys->clear();
    if (values) values->clear();
    if (_sparse && !anyPresent) return Status::OK();
    keys->push_back(b.release());
    if (values) values->push_back(vb.obj());
    return Status::OK();
}

Status IndexKeyGenerator::getKeys(bson::BsonView doc, std::vector<std::string>* keys,
                                  bool* multikey, std::vector<bson::BsonObj>* values) const {
    if (_hashed) {
        TRY_STATUS(_status);
        if (multikey) *multikey = false;
        return getHashedKeys(doc, keys, values);
    }
    std::vector<std::pair<std::string, bool>> fields;
    fields.reserve(_fields.size());
    for (const auto& f : _fields) fields.emplace_back(f.name, f.descending);
    TRY_STATUS(_status);
    std::vector<std::pair<std::string, bson::BsonObj>> out;
    Emitter emitter{fields, _sparse, _collationKey, &out, values != nullptr};
    std::vector<Slot> slots(_fields.size());
    for (size_t i = 0; i < _fields.size(); ++i) {
        slots[i].obj = doc;
        slots[i].rest = _fields[i].name;
    }
    TRY_STATUS(emitter.gen(std::move(slots)));
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    out.erase(std::unique(out.begin(), out.end(),
                          [](const auto& a, const auto& b) { return a.first == b.first; }),
              out.end());
    keys->clear();
    if (values) values->clear();
    for (auto& [k, v] : out) {
        keys->push_back(std::move(k));
        if (values) values->push_back(std::move(v));
    }
    if (multikey) *multikey = emitter.multikey;
    return Status::OK();
}

Status validateKeyPattern(bson::BsonView keyPattern) {
    if (keyPattern.isEmpty())
        return Status(ErrorCodes::CannotCreateIndex, "Index keys cannot be an empty field.");
    int hashedFields = 0;
    for (BsonElement e : keyPattern) {
        if (e.fieldName().empty())
            return Status(ErrorCodes::CannotCreateIndex, "Index key cannot be an empty field.");
        if (e.type() == BsonType::String && e.stringValue() == "hashed") {
            ++hashedFields;
            continue;
        }
        if (e.type() == BsonType::String) {
            return Status(ErrorCodes::CannotCreateIndex,
                          "Index type '" + std::string(e.stringValue()) +
                              "' is not supported yet in " + keyPattern.toJson());
        }
        if (!e.isNumber()) {
            return Status(ErrorCodes::CannotCreateIndex,
                          "Values in v:2 index key pattern cannot be of type " +
                              std::string(bson::typeName(e.type())) +
                              ". Only numbers > 0, numbers < 0, and strings are allowed.");
        }
        double d = e.numberDouble();
        if (d == 0 || std::isnan(d)) {
            return Status(
                ErrorCodes::CannotCreateIndex,
                "Values in the index key pattern can't be 0 or NaN: " + keyPattern.toJson());
        }
    }
    if (hashedFields > 1) {
        return Status(31303, "A maximum of one index field is allowed to be hashed but found " +
                                 std::to_string(hashedFields) + " for 'key' " +
                                 formatKeyForMessage(keyPattern));
    }
    return Status::OK();
}

bool isHashedKeyPattern(bson::BsonView keyPattern) {
    for (BsonElement e : keyPattern) {
        if (e.type() == BsonType::String && e.stringValue() == "hashed") return true;
    }
    return false;
}

Status validateHashedIndexOptions(bson::BsonView keyPattern, bool unique) {
    if (unique && isHashedKeyPattern(keyPattern)) {
        return Status(16764,
                      "Currently hashed indexes cannot guarantee uniqueness. Use a regular index.");
    }
    return Status::OK();
}

std::string defaultIndexName(bson::BsonView keyPattern) {
    std::string name;
    for (BsonElement e : keyPattern) {
        if (!name.empty()) name += '_';
        name += e.fieldName();
        name += '_';
        if (e.type() == BsonType::String) {
            name += e.stringValue();
        } else if (e.isIntegral()) {
            name += std::to_string(e.numberLong());
        } else {
            name += e.toString(false);
        }
    }
    return name;
}

namespace {
void formatValue(std::string& out, const BsonElement& e) {
    switch (e.type()) {
        case BsonType::Int32:
        case BsonType::Int64:
            out += std::to_string(e.numberLong());
            break;
        case BsonType::Double: {
            double d = e.doubleValue();
            if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e15) {
                out += std::to_string(static_cast<int64_t>(d));
                out += ".0";
            } else {
                out += e.toString(false);
            }
            break;
        }
        case BsonType::String:
            out += '"';
            out += e.stringValue();
            out += '"';
            break;
        case BsonType::ObjectId:
            out += "ObjectId('" + e.oidValue().toHex() + "')";
            break;
        case BsonType::Null:
            out += "null";
            break;
        case BsonType::Undefined:
            out += "undefined";
            break;
        case BsonType::Bool:
            out += e.boolValue() ? "true" : "false";
            break;
        case BsonType::Object:
            out += formatKeyForMessage(e.objValue());
            break;
        case BsonType::Array: {
            out += "[ ";
            bool first = true;
            for (BsonElement x : e.objValue()) {
                if (!first) out += ", ";
                first = false;
                formatValue(out, x);
            }
            out += first ? "]" : " ]";
            break;
        }
        default:
            out += e.toString(false);
    }
}
}  // namespace

std::string formatKeyForMessage(bson::BsonView keyValue) {
    if (keyValue.isEmpty()) return "{}";
    std::string out = "{ ";
    bool first = true;
    for (BsonElement e : keyValue) {
        if (!first) out += ", ";
        first = false;
        out += e.fieldName();
        out += ": ";
        formatValue(out, e);
    }
    out += " }";
    return out;
}

}  // namespace tessera::storage
