#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "bson/bson_obj.h"

namespace tessera::query {

// A dotted field path ("a.b.0.c") split into its components. Components that are all digits
// ("0", "12") may also index arrays (MongoDB's "array offset" components).
// "a.b.0" -> {"a", "b", "0"}; empty parts are kept ("a..b" -> {"a", "", "b"}) so that callers can
// reject them with their own error.
std::vector<std::string> splitDottedPath(std::string_view dotted);

class FieldPath {
  public:
    FieldPath() = default;
    explicit FieldPath(std::string_view dotted);

    const std::string& dotted() const { return _dotted; }
    size_t numParts() const { return _parts.size(); }
    const std::string& part(size_t i) const { return _parts[i]; }
    bool isNumericPart(size_t i) const { return _numeric[i]; }
    bool empty() const { return _parts.empty(); }

  private:
    std::string _dotted;
    std::vector<std::string> _parts;
    std::vector<bool> _numeric;
};

// True when `s` is non-empty and only ASCII digits (an array index path component).
bool isAllDigits(std::string_view s);

// What a traversal yields when the path ends at an array (the "leaf" array).
enum class LeafArrayBehavior {
    // Each element of the leaf array, then the array itself (equality, comparisons, $in, $type,
    // $exists, $regex, ...): {a: [1, 2]} yields 1, 2 and [1, 2] for path "a".
    kTraverse,
    // Only the array itself ($size, $elemMatch: they look at arrays as a whole).
    kNoTraversal,
    // Each element, but not the array itself.
    kTraverseOmitArray,
};

// One value reached by a path.
struct PathValue {
    // The value; eoo() when the path is missing on this branch (see visitPath).
    bson::BsonElement element;
    // Field name (decimal index) of the element of the OUTERMOST array that was implicitly
    // traversed to reach `element`; empty when no array was implicitly traversed. This is what
    // MongoDB records as MatchDetails::elemMatchKey for the positional `$` operator.
    std::string_view arrayOffset;
};

// Visitor for visitPath: return true to stop the traversal early.
using PathVisitor = std::function<bool(const PathValue&)>;

// MongoDB's matcher path semantics (BSONElementIterator), the one primitive every query component
// uses to read a dotted path with implicit array traversal:
//
//  1. Descend through embedded documents component by component. If a component is missing, or
//     a non-document non-array value is reached before the last component, yield ONE missing
//     (eoo) value: {a: 5} and {} both yield "missing" for "a.b".
//  2. If the last component is reached and is not an array, yield it.
//  3. If an array is reached at the last component, yield per `leaf` (see LeafArrayBehavior).
//     Nested arrays are not expanded further: {a: [[1]]} yields [1] and [[1]] for "a".
//  4. If an array is reached before the last component (say "a" of "a.b"), then for each element:
//       - a document: continue the rest of the path ("b") inside it (recursively, rules 1-4);
//         its values report this element's index as arrayOffset (unless an outer array did);
//       - if the next component is numeric and equals the element's index ("a.0.b"): the
//         element itself when the index is the last component, else the rest of the path after
//         the index inside it (documents, and nested arrays, which are then traversed);
//       - anything else (scalars, nested arrays) is skipped.
//     No missing value and no array is yielded for the array itself in this case: {a: [1, 2]}
//     yields nothing for "a.b", {a: [{c: 1}]} yields one missing value (from the subdocument).
//
// Returns true if the visitor stopped the traversal.
bool visitPath(bson::BsonView doc, const FieldPath& path, LeafArrayBehavior leaf,
               const PathVisitor& visitor);

// Convenience: all values visitPath yields (missing values included as eoo elements).
std::vector<PathValue> collectPathValues(bson::BsonView doc, const FieldPath& path,
                                         LeafArrayBehavior leaf = LeafArrayBehavior::kTraverse);

// MongoDB's dotted_path_support::extractAllElementsAlongPath: the values at `path`, expanding
// arrays at every level (non-document array elements are skipped when more path remains; numeric
// components index arrays). Missing branches contribute nothing. With expandTrailingArray a
// leaf array contributes its elements instead of itself. Used by distinct.
void extractAllElementsAlongPath(bson::BsonView doc, const FieldPath& path,
                                 bool expandTrailingArray, std::vector<bson::BsonElement>* out);

// The single element at `path` following documents only (no array traversal, numeric components
// are plain field names); eoo when absent. MongoDB's getFieldDotted without arrays.
bson::BsonElement getFieldDottedNoArrays(bson::BsonView doc, const FieldPath& path);

}  // namespace tessera::query
