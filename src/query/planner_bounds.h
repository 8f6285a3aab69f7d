#pragma once

#include <map>
#include <string>
#include <vector>

#include "query/planner.h"

// Planner internals: interval algebra and the analysis of a filter into per-path predicates.
// Intervals here are in ASCENDING value order (compareElementValues); the planner reverses them
// for descending key-pattern fields.
namespace tessera::query::planner_detail {

using IntervalList = std::vector<Interval>;

Interval makeInterval(const bson::BsonElement& low, bool lowInclusive,
                      const bson::BsonElement& high, bool highInclusive);
Interval pointInterval(const bson::BsonElement& v);
Interval fullInterval();  // [MinKey, MaxKey]

bool isEmpty(const Interval& i);
bool isPoint(const Interval& i);
bool isFull(const IntervalList& list);
// Every interval is a point (true for an empty list).
bool isPointSet(const IntervalList& list);
// Some interval contains null or undefined.
bool containsNullish(const IntervalList& list);

// Sorted, empty intervals dropped, overlapping/adjacent ones merged.
IntervalList normalize(IntervalList list);
IntervalList intersect(const IntervalList& a, const IntervalList& b);
// Index order for a descending field: reversed list, each interval's ends swapped.
IntervalList reverse(const IntervalList& list);

// Value bounds of a hashed index field (ascending) -> bounds on the hashed values: the points of
// NumberLong(hashElement(v)) for every value v the bounds allow, sorted and deduplicated, when the
// bounds are a set of points (also the null/undefined interval equality to null yields); the
// full interval otherwise (a hash does not preserve order, so a range gives no bounds). A
// non-integral number also yields the hashes of the integers other numeric types equal to it
// squash to (doubles truncate, decimals round half to even). Empty stays empty.
IntervalList hashedBounds(const IntervalList& values);

// What one predicate of the filter says about one path.
struct Predicate {
    IntervalList bounds;           // ascending, normalized; a superset of the matching keys
    bool excludesMissing = false;  // a document matching it has the field (non-null value)
};

// Predicates by path, from top-level fields and top-level $and. Parts the planner does not
// understand ($or, $nor, $expr, $not, $elemMatch, ...) contribute nothing or full bounds.
std::map<std::string, std::vector<Predicate>> analyzeFilter(bson::BsonView filter);

}  // namespace tessera::query::planner_detail
