#include "command/exec/agg_expression.h"

namespace tessera::command::exec {

AggValue AggValue::of(const bson::BsonElement& e) {
    return fromValue(query::Value::fromElement(e));
}

AggValue AggValue::null() { return fromValue(query::Value::null()); }

StatusWith<std::shared_ptr<const AggExpression>> AggExpression::parse(const bson::BsonElement& e) {
    return parse(e, nullptr);
}

StatusWith<std::shared_ptr<const AggExpression>> AggExpression::parse(
    const bson::BsonElement& e, std::shared_ptr<const query::Variables> vars) {
    if (!vars) vars = std::make_shared<const query::Variables>();
    query::ExpressionParseContext pctx;
    pctx.defineAll(*vars);
    ASSIGN_OR_RETURN(auto expr, query::Expression::parse(e, pctx));
    return std::shared_ptr<const AggExpression>(
        std::make_shared<AggExpression>(std::move(expr), std::move(vars)));
}

StatusWith<AggValue> AggExpression::evaluate(bson::BsonView doc) const {
    return evaluate(doc, *_vars);
}

StatusWith<AggValue> AggExpression::evaluate(bson::BsonView doc,
                                             const query::Variables& vars) const {
    ASSIGN_OR_RETURN(query::Value v, _expr->evaluate(doc, vars));
    return AggValue::fromValue(v);
}

}  // namespace tessera::command::exec
