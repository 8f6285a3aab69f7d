#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "query/match_details.h"
#include "query/match_expression.h"

namespace tessera::query {

class Variables;

// A parsed query filter (the `filter` of find/count/delete, the `q` of update). Semantics follow
// MongoDB's matcher exactly: implicit array traversal (see path.h), null matching missing,
// comparisons within one canonical type only, etc. Immutable once parsed; matches() may be called
// concurrently from several threads.
//
// Supported: implicit equality, $eq $ne $gt $gte $lt $lte $in $nin $and $or $nor $not $exists
// $type $all $elemMatch $size $regex/$options (and regex literals) $mod $comment $alwaysTrue
// $alwaysFalse $expr (aggregation expressions, query/expression.h). Rejected with BadValue (2):
// $where, $text, $jsonSchema, geo operators, bit-test operators, unknown operators.
class Matcher {
  public:
    // Parses `filter` (copied; the view need not outlive the call). Errors use MongoDB's codes
    // and messages: "unknown operator: $foo", "unknown top level operator: $foo", "$in needs an
    // array", "$and/$or/$nor must be a nonempty array", ... (mostly BadValue, 2).
    static StatusWith<std::unique_ptr<Matcher>> parse(bson::BsonView filter);
    // The same with a collation: string comparisons ($eq, $ne, $gt/$gte/$lt/$lte, $in/$nin,
    // implicit equality, also inside $elemMatch/$not/$or...) use `collator` (kept alive by the
    // Matcher); $regex stays binary, as in MongoDB. nullptr means binary comparison.
    static StatusWith<std::unique_ptr<Matcher>> parse(
        bson::BsonView filter, std::shared_ptr<const bson::StringComparator> collator);
    // The same with the command's `let` variables, visible to `$expr` as "$$name" (see
    // Variables::fromLet in query/expression.h). `let` may be null; it is kept alive by the
    // Matcher.
    static StatusWith<std::unique_ptr<Matcher>> parse(
        bson::BsonView filter, std::shared_ptr<const bson::StringComparator> collator,
        std::shared_ptr<const Variables> let);

    // Whether `doc` matches. `details`, when given, receives the elemMatchKey (the array index
    // that matched) for the positional `$` operator of projections and updates.
    bool matches(bson::BsonView doc, MatchDetails* details = nullptr) const;

    // The parsed tree, for planners (read-only). Never null: an empty filter is an empty $and.
    const MatchExpression* root() const { return _root.get(); }
    // The filter as given (owned copy); the tree's values point into it.
    const bson::BsonObj& filter() const { return _filter; }

    // The top-level equality predicates of a filter, as MongoDB uses to seed the document an
    // upsert inserts: `{a: 1, "b.c": 2, $and: [{d: 3}], e: {$eq: 4}, f: {$in: [5]}, g: {$gt: 1}}`
    // yields `{a: 1, "b.c": 2, d: 3, e: 4, f: 5}` (keys are dotted paths, in filter order).
    // Predicates under $or/$nor/$not/$elemMatch and non-equalities are ignored. Fails with
    // NotSingleValueField (54) when one path is matched twice or a path and its prefix are both
    // matched ("cannot infer query fields to set, path 'a' is matched twice"), and with the
    // parse error if `filter` is invalid.
    static StatusWith<bson::BsonObj> collectEqualities(bson::BsonView filter);

    // The collation the matcher compares strings by (nullptr: binary).
    const bson::StringComparator* collator() const { return _collator.get(); }

  private:
    Matcher() = default;
    bson::BsonObj _filter;
    std::shared_ptr<const bson::StringComparator> _collator;
    std::unique_ptr<MatchExpression> _root;
};

// Parses a filter into an expression tree whose values point into `filter`: the caller keeps the
// bytes alive for the tree's lifetime (Matcher does this for you).
StatusWith<std::unique_ptr<MatchExpression>> parseMatchExpression(bson::BsonView filter);
// The same with `let` variables for `$expr` (may be null).
StatusWith<std::unique_ptr<MatchExpression>> parseMatchExpression(
    bson::BsonView filter, std::shared_ptr<const Variables> let);

// The BSON type for a $type alias ("double", "string", ..., "decimal", "minKey", "maxKey");
// false for unknown names. "number" is handled separately by callers.
bool typeFromAlias(std::string_view alias, bson::BsonType* out);

}  // namespace tessera::query
