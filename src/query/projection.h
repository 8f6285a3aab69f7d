#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "query/match_details.h"
#include "query/matcher.h"

namespace tessera::query {

// A find projection (MongoDB 4.4+ semantics), parsed once and applied to each result document.
//
//  - Inclusion ({a: 1, "b.c": true}) keeps only the named paths (plus _id unless {_id: 0});
//    exclusion ({a: 0}) drops them. Mixing is an error (31254 "Cannot do exclusion on field x in
//    inclusion projection", 31253 "Cannot do inclusion on field x in exclusion projection"),
//    except for _id. {a: {b: 1}} is the same as {"a.b": 1}.
//  - Dotted paths traverse arrays: {"a.b": 1} on {a: [{b: 1, c: 2}, 5]} gives {a: [{b: 1}]}
//    (inclusion drops non-document array elements; exclusion keeps them).
//  - {a: {$slice: n}} / {a: {$slice: [skip, limit]}}: keeps part of an array; on its own it
//    does not make the projection an inclusion (other fields stay).
//  - {a: {$elemMatch: {...}}}: the first matching element of array a (top-level fields only,
//    31275); counts as an inclusion.
//  - {"a.$": 1}: positional; keeps the element of the first array on the path at the index the
//    query's match recorded (MatchDetails::elemMatchKey). One per projection (31276).
//  - Literal values ({a: "x"}, {a: null}, {a: [1, 2]}, {a: {$literal: v}}) set the field to
//    that value and count as inclusions. Aggregation expressions are NOT supported: a string
//    starting with '$' (a field path) or an object whose first key is another $-operator is
//    rejected with BadValue (2). {$meta: ...} is rejected too.
class Projection {
  public:
    static StatusWith<std::unique_ptr<Projection>> parse(bson::BsonView spec);
    ~Projection();

    // Applies the projection. `details` is the elemMatchKey from matching the query (needed only
    // for positional projections; without it they fail with 51246, like MongoDB when the query
    // did not match an array element).
    StatusWith<bson::BsonObj> apply(bson::BsonView doc,
                                    const MatchDetails* details = nullptr) const;

    bool isInclusion() const { return _inclusion; }
    bool requiresMatchDetails() const { return _hasPositional; }

    struct Node;

  private:
    Projection() = default;
    bson::BsonObj _spec;
    std::unique_ptr<Node> _root;
    bool _inclusion = false;
    bool _hasPositional = false;
};

}  // namespace tessera::query
