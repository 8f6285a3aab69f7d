#include "query/sort.h"

#include <algorithm>

#include "bson/bson_builder.h"
#include "bson/compare.h"

namespace tessera::query {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using bson::BsonView;

namespace {

// Candidate sort values. `null`/`undefined` stand in for missing branches and empty arrays.
struct KeyValues {
    std::vector<BsonElement> values;
    bool sawNull = false;
    bool sawUndefined = false;
};

void collectKeyValues(BsonView obj, const FieldPath& path, size_t i, KeyValues* out) {
    const size_t n = path.numParts();
    BsonElement e = obj.getField(path.part(i));
    if (e.eoo()) {
        out->sawNull = true;
        return;
    }
    if (i + 1 == n) {
        if (e.isArray()) {
            if (e.objValue().isEmpty()) {
                out->sawUndefined = true;
                return;
            }
            for (BsonElement x : e.objValue()) out->values.push_back(x);
        } else {
            out->values.push_back(e);
        }
        return;
    }
    if (e.isObject()) {
        collectKeyValues(e.objValue(), path, i + 1, out);
        return;
    }
    if (e.isArray()) {
        BsonView arr = e.objValue();
        if (path.isNumericPart(i + 1)) {
            BsonElement indexed = arr.getField(path.part(i + 1));
            if (!indexed.eoo()) {
                if (i + 2 == n) {
                    if (indexed.isArray()) {
                        for (BsonElement x : indexed.objValue()) out->values.push_back(x);
                        if (indexed.objValue().isEmpty()) out->sawUndefined = true;
                    } else {
                        out->values.push_back(indexed);
                    }
                } else if (indexed.isObject()) {
                    collectKeyValues(indexed.objValue(), path, i + 2, out);
                } else {
                    out->sawNull = true;
                }
                return;
            }
        }
        if (arr.isEmpty()) {
            out->sawNull = true;
            return;
        }
        for (BsonElement x : arr) {
            if (x.isObject()) {
                collectKeyValues(x.objValue(), path, i + 1, out);
            } else {
                out->sawNull = true;
            }
        }
        return;
    }
    out->sawNull = true;  // a scalar where the path continues
}

}  // namespace

StatusWith<SortPattern> SortPattern::parse(BsonView spec) {
    SortPattern p;
    for (BsonElement e : spec) {
        if (e.fieldName().empty()) return Status(ErrorCodes::BadValue, "empty sort field name");
        Field f{FieldPath(e.fieldName()), true};
        if (e.isNumber()) {
            double d = e.numberDouble();
            if (d == 1) {
                f.ascending = true;
            } else if (d == -1) {
                f.ascending = false;
            } else {
                return Status(
                    15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)");
            }
        } else if (e.isObject() && e.objValue().hasField("$meta")) {
            return Status(
                ErrorCodes::BadValue,
                "$meta sort by " + e.objValue()["$meta"].toString(false) + " is not supported");
        } else {
            return Status(15974, "Illegal key in $sort specification: " + e.toString());
        }
        p._fields.push_back(std::move(f));
    }
    return p;
}

BsonObj SortPattern::sortKey(BsonView doc) const {
    static const BsonObj kSentinels = [] {
        BsonBuilder b;
        b.appendNull("");
        b.appendUndefined("");
        return b.obj();
    }();
    auto it = kSentinels.begin();
    const BsonElement kNull = *it++;
    const BsonElement kUndefined = *it;

    BsonBuilder b;
    for (const auto& f : _fields) {
        KeyValues kv;
        collectKeyValues(doc, f.path, 0, &kv);
        if (kv.sawNull) kv.values.push_back(kNull);
        if (kv.sawUndefined) kv.values.push_back(kUndefined);
        if (kv.values.empty()) kv.values.push_back(kNull);
        const BsonElement* best = &kv.values.front();
        for (const auto& v : kv.values) {
            int c = bson::compareElementValues(v, *best, _collator.get());
            if (f.ascending ? c < 0 : c > 0) best = &v;
        }
        b.appendElementAs(*best, "");
    }
    return b.obj();
}

int SortPattern::compareKeys(BsonView a, BsonView b) const {
    auto ia = a.begin(), ib = b.begin();
    for (const auto& f : _fields) {
        if (ia == a.end() || ib == b.end()) break;
        int c = bson::compareElementValues(*ia, *ib, _collator.get());
        if (c != 0) return f.ascending ? c : -c;
        ++ia;
        ++ib;
    }
    return 0;
}

int SortPattern::compare(BsonView a, BsonView b) const {
    return compareKeys(sortKey(a), sortKey(b));
}

void SortPattern::sort(std::vector<BsonObj>* docs) const {
    std::vector<std::pair<BsonObj, size_t>> keyed;
    keyed.reserve(docs->size());
    for (size_t i = 0; i < docs->size(); ++i) keyed.emplace_back(sortKey((*docs)[i]), i);
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
        return compareKeys(x.first, y.first) < 0;
    });
    std::vector<BsonObj> out;
    out.reserve(docs->size());
    for (auto& k : keyed) out.push_back(std::move((*docs)[k.second]));
    *docs = std::move(out);
}

bool TopKSorter::less(const Entry& a, const Entry& b) const {
    int c = _pattern.compareKeys(a.key, b.key);
    if (c != 0) return c < 0;
    return a.seq < b.seq;
}

void TopKSorter::add(BsonObj doc) {
    Entry e{_pattern.sortKey(doc), std::move(doc), _seq++};
    auto cmp = [this](const Entry& x, const Entry& y) { return less(x, y); };
    if (_limit == 0 || _heap.size() < _limit) {
        _heap.push_back(std::move(e));
        if (_limit != 0) std::push_heap(_heap.begin(), _heap.end(), cmp);
        return;
    }
    // Full: replace the largest kept entry if the new one sorts before it.
    if (!less(e, _heap.front())) return;
    std::pop_heap(_heap.begin(), _heap.end(), cmp);
    _heap.back() = std::move(e);
    std::push_heap(_heap.begin(), _heap.end(), cmp);
}

std::vector<BsonObj> TopKSorter::finish() {
    auto cmp = [this](const Entry& x, const Entry& y) { return less(x, y); };
    std::sort(_heap.begin(), _heap.end(), cmp);
    std::vector<BsonObj> out;
    out.reserve(_heap.size());
    for (auto& e : _heap) out.push_back(std::move(e.doc));
    _heap.clear();
    return out;
}

}  // namespace tessera::query
