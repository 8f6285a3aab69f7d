#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"

namespace tessera::query {

// The query planner: a pure function from (filter, sort, hint, index catalog) to one plan. It never
// touches storage. The matcher re-checks every fetched document, so bounds are always a SUPERSET of
// the matching documents' keys; the planner's job is only to make that superset small.
//
// Assumptions about index key generation (storage must keep them):
//  1. A document missing an indexed field is indexed with null for it (a non-sparse index holds
//     every document). The planner's null bounds also cover undefined, so storing missing as
//     undefined (MongoDB's encoding for an empty array) is fine too.
//  2. An array value yields one key per element (multikey); a nested array element is indexed as
//     the array itself. An empty array's key is unspecified: `{a: []}` gets full bounds.
//  3. A sparse index holds a document only if at least one indexed field exists.
//  4. Index keys are keystring::Builder encodings of the values in key-pattern order, each
//     component descending when its key-pattern value is negative; the entry may be followed by
//     any suffix (record key). A "hashed" component is NumberLong(bson::hashElement(value)),
//     missing hashed as null.

struct IndexDescription {
    std::string name;
    bson::BsonObj keyPattern;  // {a: 1, b: -1}; non-numeric values ("hashed", "text") are special
    bool unique = false;
    bool sparse = false;
    bool multikey = false;
    // Whether the index's collation is the query's (both simple, or the same collation). The
    // caller passes a filter whose strings are in the query collation's key space (see
    // collationKeyFilter in query/collator.h) when that collation is not simple. An index with
    // another collation is never chosen automatically; when hinted it gets full bounds and does
    // not provide a sort (its key order is not the query's string order). Nor is IDHACK used for
    // a string _id when the _id index has another collation.
    bool collationMatches = true;
};

// One interval of values, in INDEX order: for a descending key-pattern field `low` holds the larger
// value (the one met first by a forward scan). Endpoints are one-field documents {"": v}.
struct Interval {
    bson::BsonObj low;
    bool lowInclusive = true;
    bson::BsonObj high;
    bool highInclusive = true;
};

struct IndexBounds {
    // Per key-pattern field, in key-pattern order: a union of disjoint intervals, in index order.
    // An empty union means no key can match. [MinKey, MaxKey] (reversed when descending) is the
    // full range.
    std::vector<std::vector<Interval>> fields;
};

struct QueryPlan {
    bool collectionScan = true;  // true: scan all documents (forward tells the direction)
    std::string indexName;
    bson::BsonObj keyPattern;
    IndexBounds bounds;
    bool forward = true;           // scan the index (or collection, for $natural) in this order
    bool providesSort = false;     // scan order satisfies the sort (true when there is no sort)
    bool isIdPointLookup = false;  // {_id: <scalar>} exactly: fetch by _id (bounds hold the point)
    bool multikey = false;         // the index is multikey: a record may come back several times
    std::string summary;           // for explain: "IXSCAN { a: 1 }" / "COLLSCAN" / "IDHACK"
};

// Whether {_id: e} is an exact lookup in the `_id` index (IDHACK): not a document, array,
// regex, null, undefined, MinKey or MaxKey.
bool isIdHackValue(const bson::BsonElement& e);

// Chooses a plan.
//  - filter: the find/update/delete filter. Analysed: top-level fields and (nested) top-level
//    $and; implicit equality and $eq, $gt/$gte/$lt/$lte (type-bracketed), $in, $exists, regex
//    prefixes (/^abc/, {$regex: "^abc"}). Everything else yields full bounds for its field.
//  - sort: {} or {a: 1, b: -1}.
//  - hint: {} for none; a document whose single element is a string names an index (e.g.
//    {"": "a_1"} or {hint: "a_1"}); {$natural: 1|-1} forces a collection scan; any other document
//    is a key pattern. An unknown hint is BadValue "hint provided does not correspond to an
//    existing index".
// Without a hint: {_id: scalar} -> IDHACK; otherwise the index with the most leading fields bound
// to points, then a bounded range on the next field, then one providing the sort; COLLSCAN when no
// index has a bound leading field nor provides the sort. Sparse indexes are used only when a
// predicate proves that the document has an indexed field; text/geo indexes only when hinted.
// A "hashed" field ({a: "hashed"}, {x: 1, a: "hashed"}) gets bounds on NumberLong hashes: the
// hash of each value of an equality/$in (planner_detail::hashedBounds), full bounds for anything
// else; it never provides a sort (nor do the fields after it), so such an index is chosen
// automatically only when a leading field is bound. The FETCH + filter always re-check the
// document (hashes collide; a hashed index never covers).
StatusWith<QueryPlan> planQuery(bson::BsonView filter, bson::BsonView sort, bson::BsonView hint,
                                const std::vector<IndexDescription>& indexes);

// A range of encoded index keys; mirrors storage::KeyRange (the command layer converts).
// An empty `low` means from the start, an empty `high` to the end.
struct KeyRangeSpec {
    std::string low;
    bool lowInclusive = true;
    std::string high;
    bool highInclusive = true;
};

// Encodes bounds into key ranges of the index (keystring, directions from the key pattern), in
// ascending key order, disjoint — a backward scan visits them in reverse order. One range per
// combination of the leading point fields and the intervals of the first non-point field; fields
// after that one are left to the matcher (ranges are key PREFIXES: low is inclusive, high is
// exclusive and is the prefix successor when the bound was inclusive, so any suffix after the
// encoded fields — more fields, a record key — is handled). Above `maxRanges` combinations the
// trailing fields are dropped, and finally the first field's union is widened to its hull.
// No ranges means nothing matches.
std::vector<KeyRangeSpec> encodeKeyRanges(bson::BsonView keyPattern, const IndexBounds& bounds,
                                          size_t maxRanges = 200);

// "{ a: 1, b: -1 }", as explain prints key patterns.
std::string keyPatternSummary(bson::BsonView keyPattern);

}  // namespace tessera::query
