#include "query/path.h"

namespace tessera::query {

using bson::BsonElement;
using bson::BsonType;
using bson::BsonView;

std::vector<std::string> splitDottedPath(std::string_view dotted) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
        size_t dot = dotted.find('.', start);
        parts.emplace_back(dotted.substr(
            start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
        if (dot == std::string_view::npos) break;
        start = dot + 1;
    }
    return parts;
}

FieldPath::FieldPath(std::string_view dotted) : _dotted(dotted), _parts(splitDottedPath(dotted)) {
    for (const std::string& part : _parts) _numeric.push_back(isAllDigits(part));
}

bool isAllDigits(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
    }
    return true;
}

namespace {

class Traversal {
  public:
    Traversal(const FieldPath& path, LeafArrayBehavior leaf, const PathVisitor& visitor)
        : _path(path), _leaf(leaf), _visitor(visitor) {}

    // Starts at component `start` inside document `obj`. `inherited` is the array offset of an
    // enclosing implicit traversal (outermost wins).
    bool visitObject(BsonView obj, size_t start, std::string_view inherited) {
        const size_t n = _path.numParts();
        BsonView cur = obj;
        for (size_t i = start; i < n; ++i) {
            BsonElement e = cur.getField(_path.part(i));
            if (e.eoo()) return yield(BsonElement(), inherited);
            if (i + 1 == n) {
                if (e.isArray()) return visitLeafArray(e, inherited);
                return yield(e, inherited);
            }
            if (e.isObject()) {
                cur = e.objValue();
                continue;
            }
            if (e.isArray()) return visitArray(e, i + 1, inherited);
            return yield(BsonElement(), inherited);
        }
        return false;  // unreachable for non-empty paths
    }

  private:
    bool yield(BsonElement e, std::string_view offset) { return _visitor(PathValue{e, offset}); }

    bool visitLeafArray(BsonElement arr, std::string_view inherited) {
        if (_leaf != LeafArrayBehavior::kNoTraversal) {
            for (BsonElement x : arr.objValue()) {
                if (yield(x, inherited.empty() ? x.fieldName() : inherited)) return true;
            }
            if (_leaf == LeafArrayBehavior::kTraverseOmitArray) return false;
        }
        return yield(arr, inherited);
    }

    // `arr` was reached with components [rest, n) still to resolve (rest < n).
    bool visitArray(BsonElement arr, size_t rest, std::string_view inherited) {
        const size_t n = _path.numParts();
        const bool numeric = _path.isNumericPart(rest);
        for (BsonElement x : arr.objValue()) {
            const bool offsetMatch = numeric && x.fieldName() == _path.part(rest);
            if (x.isObject()) {
                std::string_view off = inherited.empty() ? x.fieldName() : inherited;
                if (visitObject(x.objValue(), rest, off)) return true;
                if (offsetMatch) {
                    if (rest + 1 == n) {
                        if (yield(x, inherited)) return true;
                    } else if (visitObject(x.objValue(), rest + 1, inherited)) {
                        return true;
                    }
                }
            } else if (offsetMatch) {
                if (rest + 1 == n) {
                    if (yield(x, inherited)) return true;
                } else if (x.isArray()) {
                    if (visitArray(x, rest + 1, inherited)) return true;
                }
            }
        }
        return false;
    }

    const FieldPath& _path;
    LeafArrayBehavior _leaf;
    const PathVisitor& _visitor;
};

void extractAlong(BsonView obj, const FieldPath& path, size_t start, bool expandTrailing,
                  std::vector<BsonElement>* out) {
    const size_t n = path.numParts();
    BsonElement e = obj.getField(path.part(start));
    if (e.eoo()) return;
    if (start + 1 == n) {
        if (expandTrailing && e.isArray()) {
            for (BsonElement x : e.objValue()) out->push_back(x);
        } else {
            out->push_back(e);
        }
        return;
    }
    if (e.isObject()) {
        extractAlong(e.objValue(), path, start + 1, expandTrailing, out);
    } else if (e.isArray()) {
        const size_t next = start + 1;
        if (path.isNumericPart(next)) {
            BsonElement indexed = e.objValue().getField(path.part(next));
            if (!indexed.eoo()) {
                if (next + 1 == n) {
                    out->push_back(indexed);
                } else if (indexed.isObject()) {
                    extractAlong(indexed.objValue(), path, next + 1, expandTrailing, out);
                }
            }
        }
        for (BsonElement x : e.objValue()) {
            if (x.isObject()) extractAlong(x.objValue(), path, next, expandTrailing, out);
        }
    }
}

}  // namespace

bool visitPath(BsonView doc, const FieldPath& path, LeafArrayBehavior leaf,
               const PathVisitor& visitor) {
    if (path.empty()) return false;
    Traversal t(path, leaf, visitor);
    return t.visitObject(doc, 0, {});
}

std::vector<PathValue> collectPathValues(BsonView doc, const FieldPath& path,
                                         LeafArrayBehavior leaf) {
    std::vector<PathValue> out;
    visitPath(doc, path, leaf, [&](const PathValue& v) {
        out.push_back(v);
        return false;
    });
    return out;
}

void extractAllElementsAlongPath(BsonView doc, const FieldPath& path, bool expandTrailingArray,
                                 std::vector<BsonElement>* out) {
    if (path.empty()) return;
    extractAlong(doc, path, 0, expandTrailingArray, out);
}

BsonElement getFieldDottedNoArrays(BsonView doc, const FieldPath& path) {
    BsonView cur = doc;
    for (size_t i = 0; i < path.numParts(); ++i) {
        BsonElement e = cur.getField(path.part(i));
        if (e.eoo() || i + 1 == path.numParts()) return e;
        if (!e.isObject()) return BsonElement();
        cur = e.objValue();
    }
    return BsonElement();
}

}  // namespace tessera::query
