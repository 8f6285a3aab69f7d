#include "query/expression_match.h"

namespace tessera::query {

namespace {

class ExprMatchExpression final : public LogicalMatchExpression {
  public:
    ExprMatchExpression(bson::BsonObj spec, std::unique_ptr<Expression> expr,
                        std::shared_ptr<const Variables> vars)
        : LogicalMatchExpression(MatchType::kAnd),
          _spec(std::move(spec)),
          _expr(std::move(expr)),
          _vars(std::move(vars)) {}
    bool matches(bson::BsonView doc, MatchDetails*) const override {
        auto r = evaluateTruthy(*_expr, doc, *_vars);
        return r.isOK() && r.getValue();
    }
    bool matchesSingleElement(const bson::BsonElement& e, MatchDetails*) const override {
        return e.isObject() && matches(e.objValue(), nullptr);
    }
    const Expression* expression() const { return _expr.get(); }

  private:
    bson::BsonObj _spec;
    std::unique_ptr<Expression> _expr;
    std::shared_ptr<const Variables> _vars;
};

}  // namespace

StatusWith<std::unique_ptr<MatchExpression>> makeExprMatchExpression(
    const bson::BsonElement& expr, std::shared_ptr<const Variables> let) {
    ExpressionParseContext pctx;
    if (!let) let = std::make_shared<const Variables>();
    pctx.defineAll(*let);
    ASSIGN_OR_RETURN(auto parsed, Expression::parse(expr, pctx));
    bson::BsonBuilder b;
    b.appendElement(expr);
    return std::unique_ptr<MatchExpression>(
        std::make_unique<ExprMatchExpression>(b.obj(), std::move(parsed), std::move(let)));
}

const Expression* exprOfMatchExpression(const MatchExpression* e) {
    auto* x = dynamic_cast<const ExprMatchExpression*>(e);
    return x ? x->expression() : nullptr;
}

}  // namespace tessera::query
