#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson_builder.h"
#include "bson/bson_obj.h"

namespace tessera::command::exec {

// A value computed by an aggregation expression: a one-element document {"": v}, or an empty
// document for "missing". Owning, so values can outlive the input document.
struct AggValue {
    bson::BsonObj holder;
    bool missing() const { return holder.isEmpty(); }
    bson::BsonElement element() const { return holder.firstElement(); }
    static AggValue of(const bson::BsonElement& e);
    static AggValue null();
};

// The subset of the aggregation expression language the first pipeline stages need: constants,
// field paths ("$a.b", with arrays along the path mapped element-wise as MongoDB does), "$$ROOT"
// / "$$CURRENT", {$literal: v}, and documents/arrays of expressions. Other operators fail to
// parse with InvalidPipelineOperator (168) "Unrecognized expression '$op'" until the full
// expression language lands in src/query.
class AggExpression {
  public:
    static StatusWith<std::shared_ptr<const AggExpression>> parse(const bson::BsonElement& e);
    virtual ~AggExpression() = default;
    virtual AggValue evaluate(bson::BsonView doc) const = 0;
    // True for constants (a $group _id that is a constant puts everything in one group).
    virtual bool isConstant() const { return false; }
};

}  // namespace tessera::command::exec
