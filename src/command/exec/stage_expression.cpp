#include "command/exec/stage_expression.h"

#include "query/expression.h"

namespace tessera::command::exec {

namespace {

// The full aggregation expression language (src/query/expression.h).
class QueryExpressionAdapter final : public StageExpression {
  public:
    explicit QueryExpressionAdapter(std::unique_ptr<query::Expression> e)
        : _e(std::move(e)), _vars(std::make_shared<query::Variables>()) {}
    StatusWith<AggValue> evaluate(bson::BsonView root) const override {
        ASSIGN_OR_RETURN(query::Value v, _e->evaluate(root, *_vars));
        return AggValue{v.holder()};
    }
    bool isConstant() const override { return _e->isConstant(); }

  private:
    std::unique_ptr<query::Expression> _e;
    // $$NOW / $$CLUSTER_TIME are fixed when the pipeline is parsed. Variables bound by `let`
    // ($lookup, $merge, the command) are substituted into the specification before parsing.
    std::shared_ptr<query::Variables> _vars;
};

class ConstantStageExpression final : public StageExpression {
  public:
    explicit ConstantStageExpression(AggValue v) : _v(std::move(v)) {}
    StatusWith<AggValue> evaluate(bson::BsonView) const override { return _v; }
    bool isConstant() const override { return true; }

  private:
    AggValue _v;
};

}  // namespace

StatusWith<std::shared_ptr<const StageExpression>> StageExpression::parse(
    const bson::BsonElement& e) {
    query::ExpressionParseContext ctx;
    ASSIGN_OR_RETURN(auto expr, query::Expression::parse(e, ctx));
    return {std::make_shared<QueryExpressionAdapter>(std::move(expr))};
}

std::shared_ptr<const StageExpression> StageExpression::constant(const bson::BsonElement& e) {
    return std::make_shared<ConstantStageExpression>(AggValue::of(e));
}

}  // namespace tessera::command::exec
