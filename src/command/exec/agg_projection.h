#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "command/exec/stage_expression.h"

namespace tessera::command::exec {

// Aggregation's document reshaping ($project, $addFields/$set, $unset), MongoDB's
// InclusionNode / ExclusionNode / AddFieldsProjectionExecutor:
//  - inclusion ({a: 1, "b.c": true, d: <expr>}): included fields in input order, then computed
//    fields in specification order; _id included unless {_id: 0}; arrays along a path are
//    traversed (non-documents dropped);
//  - exclusion ({a: 0, "b.c": false}): everything but the named paths (non-documents in arrays
//    kept);
//  - add fields ({a: <expr>, "b.c": <expr>}): existing fields replaced in place, new ones
//    appended; a value that evaluates to missing ($$REMOVE) removes the field.
// {a: {b: ...}} is the same as {"a.b": ...} unless the object is an expression ({$op: ...}).
class AggProjection {
  public:
    enum class Kind { kInclusion, kExclusion, kAddFields };

    // $project. Errors: 51272 (empty), 31253 / 31254 (inclusion/exclusion mixed), 31252
    // (expression in an exclusion), 31250 (path collision), 51270 (empty sub-projection), 16410
    // ($-prefixed field), 40352 (empty field name), and expression parse errors.
    static StatusWith<std::unique_ptr<AggProjection>> parseProject(bson::BsonView spec);
    // $addFields / $set (every value is an expression).
    static StatusWith<std::unique_ptr<AggProjection>> parseAddFields(bson::BsonView spec,
                                                                     std::string_view stage);
    // $unset: a path or a list of paths (31002, 31119, 31120).
    static StatusWith<std::unique_ptr<AggProjection>> parseUnset(const bson::BsonElement& spec);
    // An add-fields projection that sets `path` to a constant (for $lookup's `as`).
    static std::unique_ptr<AggProjection> setter(std::string_view path);

    ~AggProjection();

    Kind kind() const { return _kind; }
    StatusWith<bson::BsonObj> apply(bson::BsonView doc) const;
    // For setter(): applies with `value` (missing when eoo) as the value of the path.
    bson::BsonObj applySet(bson::BsonView doc, const bson::BsonElement& value) const;

    struct Node;

  private:
    AggProjection();
    Kind _kind = Kind::kInclusion;
    std::unique_ptr<Node> _root;
};

// `path` ("a.b.c") set to `value` in `doc` through documents (intermediate non-documents are
// replaced by documents; arrays are NOT traversed). Used by $unwind.
bson::BsonObj setNestedField(bson::BsonView doc, std::string_view path,
                             const bson::BsonElement& value);
// The value at `path` through documents only (arrays not traversed); eoo when missing.
bson::BsonElement getNestedField(bson::BsonView doc, std::string_view path);

}  // namespace tessera::command::exec
