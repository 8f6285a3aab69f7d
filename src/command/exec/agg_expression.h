#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson_builder.h"
#include "bson/bson_obj.h"
#include "query/expression.h"

namespace tessera::command::exec {

// A value computed by an aggregation expression: a one-element document {"": v}, or an empty
// document for "missing". Owning, so values can outlive the input document. Same representation
// as query::Value (see toValue/fromValue).
struct AggValue {
    bson::BsonObj holder;
    bool missing() const { return holder.isEmpty(); }
    bson::BsonElement element() const { return holder.firstElement(); }
    static AggValue of(const bson::BsonElement& e);
    static AggValue null();
    static AggValue fromValue(const query::Value& v) { return AggValue{v.holder()}; }
    query::Value toValue() const { return query::Value::fromHolder(holder); }
};

// An aggregation expression for pipeline stages: a thin adapter over the full expression language
// of src/query/expression.h (all operators, `$$` variables, MongoDB's error codes).
//
// Variables: parse(e) knows only the system variables; parse(e, vars) also accepts the user
// variables defined in `vars` (a command's `let`, see query::Variables::fromLet) and evaluates
// with them. $$NOW is fixed when `vars` was made (parse time for parse(e)).
class AggExpression {
  public:
    static StatusWith<std::shared_ptr<const AggExpression>> parse(const bson::BsonElement& e);
    static StatusWith<std::shared_ptr<const AggExpression>> parse(
        const bson::BsonElement& e, std::shared_ptr<const query::Variables> vars);

    AggExpression(std::unique_ptr<query::Expression> expr,
                  std::shared_ptr<const query::Variables> vars)
        : _expr(std::move(expr)), _vars(std::move(vars)) {}

    // Evaluates against `doc` ($$ROOT / $$CURRENT). Errors carry MongoDB's codes (e.g. 16554).
    StatusWith<AggValue> evaluate(bson::BsonView doc) const;
    // The same with extra variables (their parent chain must include the ones given to parse).
    StatusWith<AggValue> evaluate(bson::BsonView doc, const query::Variables& vars) const;
    // True for constants (a $group _id that is a constant puts everything in one group).
    bool isConstant() const { return _expr->isConstant(); }
    const query::Expression& expression() const { return *_expr; }
    const query::Variables& variables() const { return *_vars; }

  private:
    std::unique_ptr<query::Expression> _expr;
    std::shared_ptr<const query::Variables> _vars;
};

}  // namespace tessera::command::exec
