#include "query/planner_bounds.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "bson/bson_builder.h"
#include "bson/compare.h"
#include "bson/element_hash.h"

namespace tessera::query::planner_detail {
namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using bson::BsonView;

BsonObj wrap(const BsonElement& e) {
    BsonBuilder b;
    b.appendElementAs(e, "");
    return b.obj();
}

template <typename F>
BsonObj build(F&& f) {
    BsonBuilder b;
    f(b);
    return b.obj();
}

int cmp(const BsonObj& a, const BsonObj& b) {
    return bson::compareElementValues(a.firstElement(), b.firstElement());
}

// Lower ends: an inclusive end starts before an exclusive one at the same value.
int compareLows(const Interval& a, const Interval& b) {
    int c = cmp(a.low, b.low);
    if (c != 0 || a.lowInclusive == b.lowInclusive) return c;
    return a.lowInclusive ? -1 : 1;
}

// Upper ends: an exclusive end stops before an inclusive one at the same value.
int compareHighs(const Interval& a, const Interval& b) {
    int c = cmp(a.high, b.high);
    if (c != 0 || a.highInclusive == b.highInclusive) return c;
    return a.highInclusive ? 1 : -1;
}

const BsonObj& minKeyObj() {
    static const BsonObj o = build([](BsonBuilder& b) { b.appendMinKey(""); });
    return o;
}
const BsonObj& maxKeyObj() {
    static const BsonObj o = build([](BsonBuilder& b) { b.appendMaxKey(""); });
    return o;
}

Interval between(BsonObj low, bool lowInclusive, BsonObj high, bool highInclusive) {
    return Interval{std::move(low), lowInclusive, std::move(high), highInclusive};
}

IntervalList single(Interval i) { return normalize({std::move(i)}); }

IntervalList nullBounds() {
    // Undefined (rank 0) and null (rank 5) are adjacent in the canonical order.
    return single(between(build([](BsonBuilder& b) { b.appendUndefined(""); }), true,
                          build([](BsonBuilder& b) { b.appendNull(""); }), true));
}

IntervalList stringRange() {
    return single(between(build([](BsonBuilder& b) { b.appendString("", ""); }), true,
                          build([](BsonBuilder& b) { b.appendObject("", BsonView()); }), false));
}

// Bounds for a regex match: strings with the pattern's literal prefix (all strings when there is
// none) plus the regex value itself (a stored regex equal to the query regex matches too).
IntervalList regexBounds(std::string_view pattern, std::string_view options, const BsonObj& self) {
    IntervalList out;
    std::string prefix;
    bool anchored = pattern.size() >= 1 && pattern[0] == '^';
    bool usable = anchored && options.find_first_of("imx") == std::string_view::npos &&
                  pattern.find('|') == std::string_view::npos;
    if (usable) {
        static constexpr std::string_view kSpecial = ".[]()*+?{}|\\^$";
        for (size_t i = 1; i < pattern.size(); ++i) {
            char c = pattern[i];
            if (kSpecial.find(c) != std::string_view::npos) {
                // A quantifier makes the previous literal optional.
                if ((c == '*' || c == '?' || c == '{') && !prefix.empty()) prefix.pop_back();
                break;
            }
            prefix.push_back(c);
        }
    }
    std::string upper = prefix;
    while (!upper.empty() && static_cast<uint8_t>(upper.back()) == 0xff) upper.pop_back();
    if (!upper.empty()) upper.back() = static_cast<char>(static_cast<uint8_t>(upper.back()) + 1);
    if (upper.empty()) {
        IntervalList strings = stringRange();
        strings.front().low = build([&](BsonBuilder& b) { b.appendString("", prefix); });
        out = strings;
    } else {
        out.push_back(between(build([&](BsonBuilder& b) { b.appendString("", prefix); }), true,
                              build([&](BsonBuilder& b) { b.appendString("", upper); }), false));
    }
    if (!self.isEmpty()) out.push_back(pointInterval(self.firstElement()));
    return normalize(std::move(out));
}

BsonObj regexObj(std::string_view pattern, std::string_view options) {
    return build([&](BsonBuilder& b) { b.appendRegex("", pattern, options); });
}

// The lowest and highest values of v's canonical type (for $gt/$lt type bracketing); false when
// the type is not bracketed (the predicate then gets full bounds).
bool typeBracket(const BsonElement& v, BsonObj* low, bool* lowInc, BsonObj* high, bool* highInc) {
    *lowInc = true;
    *highInc = true;
    constexpr double kInf = std::numeric_limits<double>::infinity();
    switch (v.type()) {
        case BsonType::Double:
        case BsonType::Int32:
        case BsonType::Int64:
        case BsonType::Decimal128:
            *low = build([&](BsonBuilder& b) { b.appendDouble("", -kInf); });
            *high = build([&](BsonBuilder& b) { b.appendDouble("", kInf); });
            return true;
        case BsonType::String:
        case BsonType::Symbol: {
            IntervalList s = stringRange();
            *low = s[0].low;
            *high = s[0].high;
            *highInc = false;
            return true;
        }
        case BsonType::Object:
            *low = build([](BsonBuilder& b) { b.appendObject("", BsonView()); });
            *high = build([](BsonBuilder& b) { b.appendArray("", BsonView()); });
            *highInc = false;
            return true;
        case BsonType::BinData:
            *low = build([](BsonBuilder& b) { b.appendBinary("", 0, ""); });
            *high = build([](BsonBuilder& b) { b.appendOid("", bson::ObjectId{}); });
            *highInc = false;
            return true;
        case BsonType::ObjectId: {
            bson::ObjectId max;
            std::fill(std::begin(max.bytes), std::end(max.bytes), 0xff);
            *low = build([](BsonBuilder& b) { b.appendOid("", bson::ObjectId{}); });
            *high = build([&](BsonBuilder& b) { b.appendOid("", max); });
            return true;
        }
        case BsonType::Bool:
            *low = build([](BsonBuilder& b) { b.appendBool("", false); });
            *high = build([](BsonBuilder& b) { b.appendBool("", true); });
            return true;
        case BsonType::Date:
            *low = build(
                [](BsonBuilder& b) { b.appendDate("", std::numeric_limits<int64_t>::min()); });
            *high = build(
                [](BsonBuilder& b) { b.appendDate("", std::numeric_limits<int64_t>::max()); });
            return true;
        case BsonType::Timestamp:
            *low = build([](BsonBuilder& b) { b.appendTimestamp("", 0); });
            *high = build([](BsonBuilder& b) { b.appendTimestamp("", ~uint64_t{0}); });
            return true;
        default:
            return false;
    }
}

bool isNaN(const BsonElement& v) {
    if (v.type() == BsonType::Double) return std::isnan(v.doubleValue());
    if (v.type() == BsonType::Decimal128) return v.decimalValue().isNaN();
    return false;
}

Predicate fromBounds(IntervalList bounds, bool mayExcludeMissing) {
    Predicate p;
    p.bounds = normalize(std::move(bounds));
    p.excludesMissing = mayExcludeMissing && !isFull(p.bounds) && !containsNullish(p.bounds);
    return p;
}

Predicate fullPredicate() { return Predicate{{fullInterval()}, false}; }

// Equality (implicit or $eq). `regexMatches`: a regex operand is a regex match (implicit form)
// rather than equality to a regex value ($eq).
Predicate equalityPredicate(const BsonElement& v, bool regexMatches) {
    switch (v.type()) {
        case BsonType::Null:
            return fromBounds(nullBounds(), false);
        case BsonType::Undefined:
        case BsonType::EOO:
            return fullPredicate();
        case BsonType::Array: {
            BsonView arr = v.objValue();
            if (arr.isEmpty()) return fullPredicate();
            // Matches an element equal to the whole array (key: the array) or this array itself
            // (keys: its elements, the first of which is enough).
            BsonElement first = arr.firstElement();
            return fromBounds({pointInterval(v), pointInterval(first)}, true);
        }
        case BsonType::Regex:
            if (regexMatches) {
                auto re = v.regexValue();
                return fromBounds(regexBounds(re.pattern, re.options, wrap(v)), true);
            }
            return fromBounds({pointInterval(v)}, true);
        default:
            return fromBounds({pointInterval(v)}, true);
    }
}

Predicate comparisonPredicate(std::string_view op, const BsonElement& v) {
    bool gt = op == "$gt" || op == "$gte";
    bool inclusive = op == "$gte" || op == "$lte";
    if (v.type() == BsonType::Null) {
        // {$gte: null} / {$lte: null} mean equality to null; $gt/$lt null match nothing.
        return inclusive ? fromBounds(nullBounds(), false) : fullPredicate();
    }
    if (isNaN(v)) return fromBounds({pointInterval(v)}, true);
    BsonObj low, high;
    bool lowInc, highInc;
    if (!typeBracket(v, &low, &lowInc, &high, &highInc)) return fullPredicate();
    BsonObj self = wrap(v);
    if (gt) return fromBounds({between(self, inclusive, high, highInc)}, true);
    return fromBounds({between(low, lowInc, self, inclusive)}, true);
}

Predicate inPredicate(const BsonElement& v) {
    if (v.type() != BsonType::Array) return fullPredicate();  // the matcher reports the error
    IntervalList all;
    bool excludesMissing = true;
    for (const BsonElement& e : v.objValue()) {
        if (e.type() == BsonType::Object && !e.objValue().isEmpty() &&
            e.objValue().firstElement().fieldName().starts_with("$")) {
            return fullPredicate();  // $in cannot hold operators; let the matcher decide
        }
        Predicate p = equalityPredicate(e, true);
        if (isFull(p.bounds)) return fullPredicate();
        excludesMissing = excludesMissing && p.excludesMissing;
        all.insert(all.end(), p.bounds.begin(), p.bounds.end());
    }
    Predicate p = fromBounds(std::move(all), excludesMissing);
    return p;
}

void analyzeOperators(BsonView ops, std::vector<Predicate>& out) {
    BsonElement regex = ops["$regex"];
    for (const BsonElement& op : ops) {
        std::string_view name = op.fieldName();
        if (name == "$eq") {
            out.push_back(equalityPredicate(op, false));
        } else if (name == "$gt" || name == "$gte" || name == "$lt" || name == "$lte") {
            out.push_back(comparisonPredicate(name, op));
        } else if (name == "$in") {
            out.push_back(inPredicate(op));
        } else if (name == "$exists") {
            Predicate p = fullPredicate();
            p.excludesMissing = op.trueValue();
            out.push_back(std::move(p));
        } else if (name == "$regex" &&
                   (regex.type() == BsonType::String || regex.type() == BsonType::Regex)) {
            std::string_view pattern, options;
            if (regex.type() == BsonType::Regex) {
                pattern = regex.regexValue().pattern;
                options = regex.regexValue().options;
            } else {
                pattern = regex.stringValue();
            }
            BsonElement opt = ops["$options"];
            if (opt.type() == BsonType::String) options = opt.stringValue();
            if (pattern.find('\0') != std::string_view::npos) {
                out.push_back(fullPredicate());
                continue;
            }
            BsonObj self = regexObj(pattern, options);
            out.push_back(fromBounds(regexBounds(pattern, options, self), true));
        } else if (name == "$options") {
            continue;  // read with $regex
        } else if (name == "$elemMatch") {
            Predicate p = fullPredicate();
            p.excludesMissing = true;  // a missing field never matches $elemMatch
            out.push_back(std::move(p));
        } else {
            out.push_back(fullPredicate());  // $ne, $nin, $not, $type, $size, $all, ...
        }
    }
}

void analyzeInto(BsonView filter, std::map<std::string, std::vector<Predicate>>& out, int depth) {
    if (depth > 100) return;
    for (const BsonElement& e : filter) {
        std::string_view name = e.fieldName();
        if (name == "$and") {
            if (e.type() != BsonType::Array) continue;
            for (const BsonElement& clause : e.objValue()) {
                if (clause.type() == BsonType::Object)
                    analyzeInto(clause.objValue(), out, depth + 1);
            }
            continue;
        }
        if (name.starts_with("$")) continue;  // $or, $nor, $expr, $text, $where, $comment, ...
        auto& preds = out[std::string(name)];
        if (e.type() == BsonType::Object && !e.objValue().isEmpty() &&
            e.objValue().firstElement().fieldName().starts_with("$")) {
            analyzeOperators(e.objValue(), preds);
        } else {
            preds.push_back(equalityPredicate(e, true));
        }
    }
}

}  // namespace

Interval makeInterval(const BsonElement& low, bool lowInclusive, const BsonElement& high,
                      bool highInclusive) {
    return between(wrap(low), lowInclusive, wrap(high), highInclusive);
}

Interval pointInterval(const BsonElement& v) {
    BsonObj o = wrap(v);
    return between(o, true, o, true);
}

Interval fullInterval() { return between(minKeyObj(), true, maxKeyObj(), true); }

bool isEmpty(const Interval& i) {
    int c = cmp(i.low, i.high);
    return c > 0 || (c == 0 && !(i.lowInclusive && i.highInclusive));
}

bool isPoint(const Interval& i) {
    return i.lowInclusive && i.highInclusive && cmp(i.low, i.high) == 0;
}

bool isFull(const IntervalList& list) {
    if (list.size() != 1) return false;
    const Interval& i = list[0];
    BsonType lo = i.low.firstElement().type(), hi = i.high.firstElement().type();
    // Either orientation (ascending or reversed for a descending field).
    return i.lowInclusive && i.highInclusive &&
           ((lo == BsonType::MinKey && hi == BsonType::MaxKey) ||
            (lo == BsonType::MaxKey && hi == BsonType::MinKey));
}

bool isPointSet(const IntervalList& list) {
    return std::all_of(list.begin(), list.end(), [](const Interval& i) { return isPoint(i); });
}

bool containsNullish(const IntervalList& list) {
    static const BsonObj kNull = build([](BsonBuilder& b) { b.appendNull(""); });
    static const BsonObj kUndefined = build([](BsonBuilder& b) { b.appendUndefined(""); });
    for (const Interval& i : list) {
        for (const BsonObj* v : {&kNull, &kUndefined}) {
            int lo = cmp(i.low, *v), hi = cmp(*v, i.high);
            bool aboveLow = lo < 0 || (lo == 0 && i.lowInclusive);
            bool belowHigh = hi < 0 || (hi == 0 && i.highInclusive);
            if (aboveLow && belowHigh) return true;
        }
    }
    return false;
}

IntervalList normalize(IntervalList list) {
    list.erase(
        std::remove_if(list.begin(), list.end(), [](const Interval& i) { return isEmpty(i); }),
        list.end());
    std::sort(list.begin(), list.end(),
              [](const Interval& a, const Interval& b) { return compareLows(a, b) < 0; });
    IntervalList out;
    for (Interval& i : list) {
        if (!out.empty()) {
            Interval& cur = out.back();
            int c = cmp(i.low, cur.high);
            bool touches = c < 0 || (c == 0 && (i.lowInclusive || cur.highInclusive));
            if (touches) {
                if (compareHighs(i, cur) > 0) {
                    cur.high = i.high;
                    cur.highInclusive = i.highInclusive;
                }
                continue;
            }
        }
        out.push_back(std::move(i));
    }
    return out;
}

IntervalList intersect(const IntervalList& a, const IntervalList& b) {
    IntervalList out;
    for (const Interval& x : a) {
        for (const Interval& y : b) {
            Interval r;
            const Interval& lo = compareLows(x, y) >= 0 ? x : y;
            const Interval& hi = compareHighs(x, y) <= 0 ? x : y;
            r.low = lo.low;
            r.lowInclusive = lo.lowInclusive;
            r.high = hi.high;
            r.highInclusive = hi.highInclusive;
            if (!isEmpty(r)) out.push_back(std::move(r));
        }
    }
    return normalize(std::move(out));
}

IntervalList reverse(const IntervalList& list) {
    IntervalList out;
    for (auto it = list.rbegin(); it != list.rend(); ++it) {
        out.push_back(between(it->high, it->highInclusive, it->low, it->lowInclusive));
    }
    return out;
}

std::map<std::string, std::vector<Predicate>> analyzeFilter(BsonView filter) {
    std::map<std::string, std::vector<Predicate>> out;
    analyzeInto(filter, out, 0);
    return out;
}

namespace {

BsonObj int64Obj(int64_t v) {
    return build([v](BsonBuilder& b) { b.appendInt64("", v); });
}

bool isNullishType(BsonType t) { return t == BsonType::Null || t == BsonType::Undefined; }

// The hashes of every value that compares equal to `v` (see hashedBounds).
void addPointHashes(const BsonElement& v, std::vector<int64_t>* out) {
    out->push_back(bson::hashElement(v));
    if (v.type() != BsonType::Double && v.type() != BsonType::Decimal128) return;
    long double x = v.type() == BsonType::Double ? static_cast<long double>(v.doubleValue())
                                                 : v.decimalValue().toLongDouble();
    if (std::isnan(x)) return;  // every NaN squashes to 0, as v itself did
    constexpr long double kTwo63 = 9223372036854775808.0L;
    for (long double r : {std::trunc(x), std::nearbyint(x)}) {
        if (r >= kTwo63) {
            // Clamped to INT64_MAX, or INT64_MIN for the double 2^63 (MongoDB's overflow).
            out->push_back(bson::hashElement(int64Obj(INT64_MAX).firstElement()));
            out->push_back(bson::hashElement(int64Obj(INT64_MIN).firstElement()));
        } else if (r < -kTwo63) {
            out->push_back(bson::hashElement(int64Obj(INT64_MIN).firstElement()));
        } else {
            out->push_back(bson::hashElement(int64Obj(static_cast<int64_t>(r)).firstElement()));
        }
    }
}

}  // namespace

IntervalList hashedBounds(const IntervalList& values) {
    std::vector<int64_t> hashes;
    for (const Interval& i : values) {
        if (isPoint(i)) {
            addPointHashes(i.low.firstElement(), &hashes);
        } else if (isNullishType(i.low.firstElement().type()) &&
                   isNullishType(i.high.firstElement().type())) {
            // [undefined, null]: nothing else lies between them in the canonical order.
            static const BsonObj kNull = build([](BsonBuilder& b) { b.appendNull(""); });
            static const BsonObj kUndefined = build([](BsonBuilder& b) { b.appendUndefined(""); });
            hashes.push_back(bson::hashElement(kNull.firstElement()));
            hashes.push_back(bson::hashElement(kUndefined.firstElement()));
        } else {
            return {fullInterval()};
        }
    }
    std::sort(hashes.begin(), hashes.end());
    hashes.erase(std::unique(hashes.begin(), hashes.end()), hashes.end());
    IntervalList out;
    for (int64_t h : hashes) out.push_back(pointInterval(int64Obj(h).firstElement()));
    return out;
}

}  // namespace tessera::query::planner_detail
