#include "query/planner.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "bson/bson_builder.h"
#include "bson/compare.h"
#include "keystring/keystring.h"
#include "query/planner_bounds.h"

namespace tessera::query {
namespace {

using bson::BsonElement;
using bson::BsonType;
using bson::BsonView;
using namespace planner_detail;

using PredicateMap = std::map<std::string, std::vector<Predicate>>;

struct KeyField {
    std::string path;
    bool descending = false;
    // "hashed": the key holds NumberLong(hashElement(value)) (storage/index_keys.h). Equality
    // and $in become points on the hashes (hashedBounds); anything else gets full bounds; the
    // field never provides a sort.
    bool hashed = false;
};

bool isHashedValue(const BsonElement& e) {
    return e.type() == BsonType::String && e.stringValue() == "hashed";
}

// False when the key pattern has a non-numeric value other than "hashed" (text, 2dsphere...):
// such an index does not order documents by value, so bounds cannot be derived for it.
bool parseKeyPattern(BsonView keyPattern, std::vector<KeyField>* out) {
    bool regular = true;
    for (const BsonElement& e : keyPattern) {
        bool hashed = isHashedValue(e);
        out->push_back({std::string(e.fieldName()), e.isNumber() && e.numberDouble() < 0, hashed});
        if (!e.isNumber() && !hashed) regular = false;
    }
    return regular && !out->empty();
}

std::string_view firstComponent(std::string_view path) { return path.substr(0, path.find('.')); }

struct SortField {
    std::string path;
    int direction;
};

// Nullopt when the sort has a non-numeric direction ({$meta: "textScore"}).
std::optional<std::vector<SortField>> parseSort(BsonView sort) {
    std::vector<SortField> out;
    for (const BsonElement& e : sort) {
        if (!e.isNumber()) return std::nullopt;
        out.push_back({std::string(e.fieldName()), e.numberDouble() < 0 ? -1 : 1});
    }
    return out;
}

bool isSinglePoint(const IntervalList& list) { return list.size() == 1 && isPoint(list[0]); }

struct Candidate {
    const IndexDescription* index = nullptr;
    IndexBounds bounds;
    bool regular = true;
    size_t pointPrefix = 0;    // leading fields bound to points
    bool rangeAfter = false;   // the next field has a restricted range
    bool uniqueExact = false;  // unique index, every field a single point
    bool sortBenefit = false;  // provides a non-empty requested sort
    bool providesSort = false;
    bool forward = true;
    bool provesPresence = false;  // some predicate proves an indexed field exists (sparse)
};

// Bounds of one index field (ascending values) from the predicates on its path.
IntervalList fieldBounds(const std::vector<Predicate>& preds, bool multikey) {
    if (preds.empty()) return {fullInterval()};
    if (!multikey) {
        IntervalList acc = preds[0].bounds;
        for (size_t i = 1; i < preds.size(); ++i) acc = intersect(acc, preds[i].bounds);
        return acc;
    }
    // Multikey: different predicates may be satisfied by different array elements, so bounds
    // cannot be intersected; use the single most selective predicate.
    const Predicate* best = nullptr;
    auto rank = [](const Predicate& p) {
        if (isPointSet(p.bounds)) return std::make_tuple(0, p.bounds.size());
        if (!isFull(p.bounds)) return std::make_tuple(1, p.bounds.size());
        return std::make_tuple(2, size_t{0});
    };
    for (const Predicate& p : preds) {
        if (!best || rank(p) < rank(*best)) best = &p;
    }
    return best->bounds;
}

void computeSort(Candidate& c, const std::vector<KeyField>& fields,
                 const std::optional<std::vector<SortField>>& sort) {
    if (!sort) return;
    if (sort->empty()) {
        c.providesSort = true;
        return;
    }
    // A multikey index holds a document under several keys: its order is not the sort order of
    // the documents on the multikey field.
    if (c.index->multikey || !c.regular) return;
    // A single point on a hashed field does not fix the field's value (nor its order): only
    // regular fields count as fixed.
    std::vector<bool> fixed(fields.size());
    for (size_t i = 0; i < fields.size(); ++i) {
        fixed[i] = !fields[i].hashed && isSinglePoint(c.bounds.fields[i]);
    }
    auto isFixed = [&](const std::string& path) {
        for (size_t i = 0; i < fields.size(); ++i) {
            if (fields[i].path == path && fixed[i]) return true;
        }
        return false;
    };
    std::vector<SortField> rest;
    for (const SortField& s : *sort) {
        if (!isFixed(s.path)) rest.push_back(s);
    }
    size_t j = 0;
    int orientation = 0;  // +1 same direction as the index, -1 reversed
    for (size_t i = 0; i < fields.size() && j < rest.size(); ++i) {
        if (fields[i].hashed) return;  // hash order is not value order
        if (fields[i].path == rest[j].path) {
            int o = rest[j].direction * (fields[i].descending ? -1 : 1);
            if (orientation != 0 && o != orientation) return;
            orientation = o;
            ++j;
        } else if (!fixed[i]) {
            return;
        }
    }
    if (j != rest.size()) return;
    c.providesSort = true;
    c.sortBenefit = true;
    c.forward = orientation >= 0;
}

Candidate evaluate(const IndexDescription& index, const PredicateMap& preds,
                   const std::optional<std::vector<SortField>>& sort) {
    Candidate c;
    c.index = &index;
    std::vector<KeyField> fields;
    c.regular = parseKeyPattern(index.keyPattern, &fields);
    static const std::vector<Predicate> kNone;
    for (size_t i = 0; i < fields.size(); ++i) {
        const KeyField& f = fields[i];
        IntervalList bounds = {fullInterval()};
        bool sharesArrayPrefix = false;
        if (index.multikey) {
            // {x.a, x.b} on an array x: the two predicates may match different elements.
            for (size_t j = 0; j < i; ++j) {
                if (firstComponent(fields[j].path) == firstComponent(f.path)) {
                    sharesArrayPrefix = true;
                }
            }
        }
        auto it = preds.find(f.path);
        const std::vector<Predicate>& fieldPreds = it == preds.end() ? kNone : it->second;
        for (const Predicate& p : fieldPreds) c.provesPresence |= p.excludesMissing;
        if (c.regular && !sharesArrayPrefix) bounds = fieldBounds(fieldPreds, index.multikey);
        if (f.hashed) bounds = hashedBounds(bounds);
        c.bounds.fields.push_back(f.descending ? reverse(bounds) : bounds);
    }
    if (!c.regular) return c;
    while (c.pointPrefix < fields.size() && isPointSet(c.bounds.fields[c.pointPrefix])) {
        ++c.pointPrefix;
    }
    c.rangeAfter = c.pointPrefix < fields.size() && !isFull(c.bounds.fields[c.pointPrefix]);
    c.uniqueExact = index.unique && c.pointPrefix == fields.size() &&
                    std::all_of(c.bounds.fields.begin(), c.bounds.fields.end(),
                                [](const IntervalList& l) { return l.size() <= 1; });
    computeSort(c, fields, sort);
    return c;
}

bool usable(const Candidate& c) {
    if (!c.regular) return false;
    if (c.index->sparse && !c.provesPresence) return false;
    // A sparse index holds only documents with the field: scanning it all still skips the others.
    return !isFull(c.bounds.fields[0]) || c.sortBenefit || c.index->sparse;
}

auto score(const Candidate& c) {
    return std::make_tuple(c.uniqueExact, c.pointPrefix, c.rangeAfter, c.sortBenefit,
                           -static_cast<int>(c.bounds.fields.size()));
}

QueryPlan indexPlan(const Candidate& c) {
    QueryPlan plan;
    plan.collectionScan = false;
    plan.indexName = c.index->name;
    plan.keyPattern = c.index->keyPattern;
    plan.bounds = c.bounds;
    plan.forward = c.forward;
    plan.providesSort = c.providesSort;
    plan.multikey = c.index->multikey;
    plan.summary = "IXSCAN " + keyPatternSummary(c.index->keyPattern);
    return plan;
}

QueryPlan collectionScanPlan(bool forward, bool providesSort) {
    QueryPlan plan;
    plan.collectionScan = true;
    plan.forward = forward;
    plan.providesSort = providesSort;
    plan.summary = "COLLSCAN";
    return plan;
}

}  // namespace

bool isIdHackValue(const BsonElement& e) {
    switch (e.type()) {
        case BsonType::Object:
        case BsonType::Array:
        case BsonType::Regex:
        case BsonType::Null:
        case BsonType::Undefined:
        case BsonType::MinKey:
        case BsonType::MaxKey:
        case BsonType::EOO:
            return false;
        default:
            return true;
    }
}

namespace {

bool isIdKeyPattern(BsonView keyPattern) {
    return keyPattern.nFields() == 1 && keyPattern.firstElement().fieldName() == "_id" &&
           keyPattern.firstElement().isNumber() && keyPattern.firstElement().numberDouble() > 0;
}

Status unknownHint() {
    return Status(ErrorCodes::BadValue, "hint provided does not correspond to an existing index");
}

}  // namespace

std::string keyPatternSummary(BsonView keyPattern) {
    if (keyPattern.isEmpty()) return "{}";
    std::string out = "{ ";
    bool first = true;
    for (const BsonElement& e : keyPattern) {
        if (!first) out += ", ";
        first = false;
        out += std::string(e.fieldName()) + ": ";
        if (e.isNumber() && e.isIntegral()) {
            out += std::to_string(e.numberLong());
        } else if (e.type() == BsonType::String) {
            out += "\"" + std::string(e.stringValue()) + "\"";
        } else {
            out += e.toString(false);
        }
    }
    return out + " }";
}

StatusWith<QueryPlan> planQuery(BsonView filter, BsonView sort, BsonView hint,
                                const std::vector<IndexDescription>& indexes) {
    PredicateMap preds = analyzeFilter(filter);
    std::optional<std::vector<SortField>> sortFields = parseSort(sort);
    bool noSort = sort.isEmpty();

    if (!hint.isEmpty()) {
        BsonElement h = hint.firstElement();
        if (hint.nFields() == 1 && h.fieldName() == "$natural") {
            return collectionScanPlan(!(h.isNumber() && h.numberDouble() < 0), noSort);
        }
        const IndexDescription* chosen = nullptr;
        if (hint.nFields() == 1 && h.type() == BsonType::String) {
            for (const auto& index : indexes) {
                if (index.name == h.stringValue()) chosen = &index;
            }
        }
        if (!chosen) {
            for (const auto& index : indexes) {
                if (bson::compareObjects(index.keyPattern, hint) == 0) chosen = &index;
            }
        }
        if (!chosen) return unknownHint();
        if (!chosen->collationMatches) {
            // Another collation orders strings differently: scan the whole index.
            std::optional<std::vector<SortField>> none;
            if (noSort) none.emplace();
            return indexPlan(evaluate(*chosen, PredicateMap{}, none));
        }
        return indexPlan(evaluate(*chosen, preds, sortFields));
    }

    bool idCollationMatches = true;
    for (const auto& index : indexes) {
        if (isIdKeyPattern(index.keyPattern) && !index.collationMatches) idCollationMatches = false;
    }
    auto isCollatable = [](const BsonElement& e) {
        return e.type() == BsonType::String || e.type() == BsonType::Symbol;
    };
    if (filter.nFields() == 1 && filter.firstElement().fieldName() == "_id" &&
        isIdHackValue(filter.firstElement()) &&
        (idCollationMatches || !isCollatable(filter.firstElement()))) {
        QueryPlan plan;
        plan.collectionScan = false;
        plan.isIdPointLookup = true;
        plan.indexName = "_id_";
        static const bson::BsonObj kIdKeyPattern = bson::fromJson(R"({"_id": 1})");
        plan.keyPattern = kIdKeyPattern;  // a point read by _id is the hottest path: parse once
        for (const auto& index : indexes) {
            if (isIdKeyPattern(index.keyPattern)) {
                plan.indexName = index.name;
                plan.keyPattern = index.keyPattern;
            }
        }
        plan.bounds.fields.push_back({pointInterval(filter.firstElement())});
        plan.providesSort = true;  // at most one document
        plan.summary = "IDHACK";
        return plan;
    }

    std::optional<Candidate> best;
    for (const auto& index : indexes) {
        if (!index.collationMatches) continue;
        Candidate c = evaluate(index, preds, sortFields);
        if (!usable(c)) continue;
        if (!best || score(c) > score(*best) ||
            (score(c) == score(*best) && c.index->name < best->index->name)) {
            best = std::move(c);
        }
    }
    if (!best) return collectionScanPlan(true, noSort);
    return indexPlan(*best);
}

std::vector<KeyRangeSpec> encodeKeyRanges(BsonView keyPattern, const IndexBounds& bounds,
                                          size_t maxRanges) {
    std::vector<bool> descending;
    for (const BsonElement& e : keyPattern) {
        descending.push_back(e.isNumber() && e.numberDouble() < 0);
    }
    size_t n = std::min(bounds.fields.size(), descending.size());
    if (n == 0) return {KeyRangeSpec{}};
    for (size_t i = 0; i < n; ++i) {
        if (bounds.fields[i].empty()) return {};
    }
    maxRanges = std::max<size_t>(maxRanges, 1);

    // Fields [0, depth) take part: leading point fields, then the first non-point field.
    size_t depth = 0;
    while (depth < n && isPointSet(bounds.fields[depth])) ++depth;
    depth = std::min(depth + 1, n);
    auto combinations = [&](size_t d) {
        size_t count = 1;
        for (size_t i = 0; i < d; ++i) {
            count *= bounds.fields[i].size();
            if (count > maxRanges) return maxRanges + 1;
        }
        return count;
    };
    while (depth > 1 && combinations(depth) > maxRanges) --depth;
    std::vector<IntervalList> lists(bounds.fields.begin(), bounds.fields.begin() + depth);
    if (lists[0].size() > maxRanges) {
        Interval hull{lists[0].front().low, lists[0].front().lowInclusive, lists[0].back().high,
                      lists[0].back().highInclusive};
        lists[0] = {hull};
    }

    std::vector<KeyRangeSpec> out;
    std::vector<size_t> pos(depth, 0);
    while (true) {
        std::string prefix;
        for (size_t i = 0; i + 1 < depth; ++i) {
            prefix += keystring::encodeValue(lists[i][pos[i]].low.firstElement(), descending[i]);
        }
        const Interval& last = lists[depth - 1][pos[depth - 1]];
        bool desc = descending[depth - 1];
        std::string lowKey = prefix + keystring::encodeValue(last.low.firstElement(), desc);
        std::string highKey = prefix + keystring::encodeValue(last.high.firstElement(), desc);
        KeyRangeSpec r;
        r.low = last.lowInclusive ? lowKey : keystring::prefixSuccessor(lowKey);
        r.lowInclusive = true;
        r.high = last.highInclusive ? keystring::prefixSuccessor(highKey) : highKey;
        r.highInclusive = false;
        if (r.high.empty() || r.low < r.high) out.push_back(std::move(r));
        // Next combination (last field fastest).
        size_t i = depth;
        while (i > 0) {
            --i;
            if (++pos[i] < lists[i].size()) break;
            pos[i] = 0;
            if (i == 0) return out;
        }
    }
}

}  // namespace tessera::query
