#include "placement/shard_key_pattern.h"

#include <set>

#include "bson/bson_builder.h"
#include "keystring/keystring.h"
#include "placement/hasher.h"
#include "query/matcher.h"
#include "query/planner.h"

namespace tessera::placement {
namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using bson::BsonView;

bool isHashedPatternElement(const BsonElement& e) {
    return e.type() == BsonType::String && e.stringValue() == "hashed";
}

std::vector<std::string_view> splitPath(std::string_view path) {
    std::vector<std::string_view> parts;
    size_t start = 0;
    while (true) {
        size_t dot = path.find('.', start);
        parts.push_back(path.substr(start, dot == std::string_view::npos ? dot : dot - start));
        if (dot == std::string_view::npos) return parts;
        start = dot + 1;
    }
}

Status badValue(std::string msg) { return Status(ErrorCodes::BadValue, std::move(msg)); }

// isValidShardKeyElementForStorage, plus undefined (which the matcher treats as full bounds).
bool isStorableKeyValue(const BsonElement& e) {
    switch (e.type()) {
        case BsonType::EOO:
        case BsonType::Array:
        case BsonType::Regex:
        case BsonType::Undefined:
            return false;
        case BsonType::Object:
            for (const BsonElement& f : e.objValue()) {
                if (f.fieldName().starts_with("$")) return false;
            }
            return true;
        default:
            return true;
    }
}

}  // namespace

BsonElement extractPathOrArray(BsonView doc, std::string_view path) {
    BsonView current = doc;
    std::vector<std::string_view> parts = splitPath(path);
    for (size_t i = 0; i < parts.size(); ++i) {
        BsonElement e = current.getField(parts[i]);
        if (e.eoo()) return BsonElement();
        if (i + 1 == parts.size() || e.type() == BsonType::Array) return e;
        if (e.type() != BsonType::Object) return BsonElement();
        current = e.objValue();
    }
    return BsonElement();
}

StatusWith<ShardKeyPattern> ShardKeyPattern::parse(BsonView keyPattern) {
    if (keyPattern.isEmpty()) return badValue("Shard key is empty");
    ShardKeyPattern p;
    std::set<std::string, std::less<>> seen;
    BsonBuilder ranged;
    size_t index = 0;
    for (const BsonElement& e : keyPattern) {
        std::string_view name = e.fieldName();
        std::string field(name);
        if (name.empty()) return badValue("Field " + field + " is empty");
        std::vector<std::string_view> parts = splitPath(name);
        if (parts.front().empty() || parts.back().empty()) {
            return badValue("Field " + field + " contains extra dot");
        }
        for (std::string_view part : parts) {
            if (part.empty()) return badValue("Field " + field + " contains empty parts");
            if (part.starts_with("$") && part != "$id" && part != "$db" && part != "$ref") {
                return badValue("Field " + field + " contains a part " + std::string(part) +
                                " that starts with '$'");
            }
        }
        bool hashed = isHashedPatternElement(e);
        bool ranged1 = e.isNumber() && e.isIntegral() && e.numberLong() == 1;
        if (!(ranged1 || (hashed && !p._hashedIndex))) {
            return badValue("Shard key " + keyPattern.toJson() +
                            " can contain at most one 'hashed' field, and/or multiple numerical "
                            "fields set to a value of 1. Failed to parse field " +
                            field);
        }
        if (!seen.insert(field).second) {
            return badValue("Shard key " + keyPattern.toJson() + " has field " + field +
                            " more than once");
        }
        if (hashed) p._hashedIndex = index;
        p._paths.push_back(field);
        ranged.appendInt32(name, 1);
        ++index;
    }
    p._pattern = keyPattern.copy();
    p._rangedPattern = ranged.obj();
    return p;
}

BsonObj ShardKeyPattern::globalMin() const {
    BsonBuilder b;
    for (const std::string& path : _paths) b.appendMinKey(path);
    return b.obj();
}

BsonObj ShardKeyPattern::globalMax() const {
    BsonBuilder b;
    for (const std::string& path : _paths) b.appendMaxKey(path);
    return b.obj();
}

StatusWith<BsonObj> ShardKeyPattern::extractShardKeyFromDoc(BsonView doc) const {
    BsonBuilder b;
    for (size_t i = 0; i < _paths.size(); ++i) {
        BsonElement e = extractPathOrArray(doc, _paths[i]);
        if (e.type() == BsonType::Array) {
            return Status(ErrorCodes::ShardKeyNotFound,
                          "Shard key cannot contain array values or array descendants.");
        }
        static const BsonObj kNull = [] {
            BsonBuilder nb;
            nb.appendNull("");
            return nb.obj();
        }();
        if (e.eoo()) e = kNull.firstElement();  // a missing field is null (hashed: hash(null))
        if (isHashedField(i)) {
            b.appendInt64(_paths[i], hashElement(e));
        } else {
            b.appendElementAs(e, _paths[i]);
        }
    }
    return b.obj();
}

StatusWith<BsonObj> ShardKeyPattern::extractShardKeyFromQuery(BsonView filter) const {
    auto parsed = query::Matcher::parse(filter);
    if (!parsed.isOK()) return parsed.getStatus();
    auto equalities = query::Matcher::collectEqualities(filter);
    if (!equalities.isOK()) return BsonObj();  // conflicting equalities: no key, not an error
    BsonView eq = equalities.getValue();

    BsonBuilder b;
    for (size_t i = 0; i < _paths.size(); ++i) {
        const std::string& path = _paths[i];
        BsonElement value = eq.getField(path);
        if (value.eoo()) {
            // An equality on an enclosing document: {a: {b: 1}} pins "a.b".
            for (const BsonElement& candidate : eq) {
                std::string_view name = candidate.fieldName();
                if (path.size() > name.size() && path.starts_with(name) &&
                    path[name.size()] == '.') {
                    if (candidate.type() == BsonType::Object) {
                        value = extractPathOrArray(candidate.objValue(),
                                                   std::string_view(path).substr(name.size() + 1));
                    }
                    break;
                }
            }
        }
        if (!isStorableKeyValue(value)) return BsonObj();
        if (isHashedField(i)) {
            b.appendInt64(path, hashElement(value));
        } else {
            b.appendElementAs(value, path);
        }
    }
    return b.obj();
}

Status ShardKeyPattern::validateKey(BsonView key) const {
    size_t i = 0;
    for (const BsonElement& e : key) {
        if (i >= _paths.size() || e.fieldName() != _paths[i]) {
            return badValue("Shard key " + key.toJson() + " does not match the shard key pattern " +
                            toString());
        }
        if (e.type() == BsonType::Array) {
            return badValue("Shard key element " + e.toString() + " is not valid for storage");
        }
        if (isHashedField(i) && e.type() != BsonType::Int64 && e.type() != BsonType::MinKey &&
            e.type() != BsonType::MaxKey) {
            return badValue("Shard key " + key.toJson() + " has a non-NumberLong value for the " +
                            "hashed field " + _paths[i]);
        }
        ++i;
    }
    if (i != _paths.size()) {
        return badValue("Shard key " + key.toJson() + " does not match the shard key pattern " +
                        toString());
    }
    return Status::OK();
}

StatusWith<BsonObj> ShardKeyPattern::extendRangeBound(BsonView bound) const {
    size_t given = 0;
    bool allMaxKey = true;
    for (const BsonElement& e : bound) {
        if (given >= _paths.size() || e.fieldName() != _paths[given]) {
            return badValue("Shard key range bound " + bound.toJson() +
                            " is not a prefix of the shard key pattern " + toString());
        }
        allMaxKey = allMaxKey && e.type() == BsonType::MaxKey;
        ++given;
    }
    if (given == 0) return badValue("a shard key range bound cannot be empty");
    bson::BsonBuilder b;
    b.appendElements(bound);
    for (size_t i = given; i < _paths.size(); ++i) {
        if (allMaxKey) {
            b.appendMaxKey(_paths[i]);
        } else {
            b.appendMinKey(_paths[i]);
        }
    }
    BsonObj extended = b.obj();
    TRY_STATUS(validateKey(extended));
    return extended;
}

std::string ShardKeyPattern::encodeKey(BsonView key) const {
    keystring::Builder b;
    for (const BsonElement& e : key) b.append(e);
    return b.release();
}

std::string ShardKeyPattern::toString() const { return query::keyPatternSummary(_pattern); }

bool ShardKeyPattern::isUniqueIndexCompatible(bson::BsonView indexKey) const {
    if (!indexKey.isEmpty() && indexKey.firstElement().fieldName() == "_id") return true;
    size_t i = 0;
    for (bson::BsonElement e : indexKey) {
        if (i == _paths.size()) break;
        if (e.fieldName() != _paths[i]) return false;
        ++i;
    }
    return i == _paths.size();
}

}  // namespace tessera::placement
