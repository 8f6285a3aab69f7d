#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "bson/bson_obj.h"
#include "command/exec/agg_expression.h"

namespace tessera::command::exec {

// The aggregation expressions pipeline stages evaluate ($project computed fields, $addFields,
// $group keys and accumulator arguments, $bucket, $replaceRoot, ...). Stages depend on this
// interface only (implemented over the full language of src/query/expression.h). Values use
// AggValue's representation: a one-element document, empty for "missing".
class StageExpression {
  public:
    virtual ~StageExpression() = default;
    // Parses an expression (a field path "$a.b", a constant, {$op: ...}, a document or array of
    // expressions). Errors as the expression language reports them (e.g. 168 for an unknown
    // operator).
    static StatusWith<std::shared_ptr<const StageExpression>> parse(const bson::BsonElement& e);
    // A constant expression.
    static std::shared_ptr<const StageExpression> constant(const bson::BsonElement& e);

    // Evaluates against the document `root` ($$ROOT / $$CURRENT).
    virtual StatusWith<AggValue> evaluate(bson::BsonView root) const = 0;
    virtual bool isConstant() const { return false; }
};

using StageExpressionPtr = std::shared_ptr<const StageExpression>;

}  // namespace tessera::command::exec
