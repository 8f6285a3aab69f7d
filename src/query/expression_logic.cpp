// Comparison ($eq ... $cmp), boolean ($and $or $not), conditional ($cond $ifNull $switch) and
// scoping operators ($literal $let $map $filter $reduce).
#include "query/expression_internal.h"

namespace tessera::query::expr {

using bson::BsonElement;
using bson::BsonType;

namespace {

PositionalFn comparison(int which) {
    // 0 eq, 1 ne, 2 gt, 3 gte, 4 lt, 5 lte, 6 cmp
    return [which](const std::vector<Value>& args, const Variables&) -> StatusWith<Value> {
        // Missing compares as if it were... MongoDB: missing < null in expressions.
        int c = compareValues(args[0], args[1]);
        switch (which) {
            case 0:
                return Value::fromBool(c == 0);
            case 1:
                return Value::fromBool(c != 0);
            case 2:
                return Value::fromBool(c > 0);
            case 3:
                return Value::fromBool(c >= 0);
            case 4:
                return Value::fromBool(c < 0);
            case 5:
                return Value::fromBool(c <= 0);
            default:
                return Value::fromInt32(c < 0 ? -1 : (c > 0 ? 1 : 0));
        }
    };
}

class AndOrExpression final : public Expression {
  public:
    AndOrExpression(bool isAnd, std::vector<ExprPtr> args) : _and(isAnd), _args(std::move(args)) {}
    StatusWith<Value> evaluate(bson::BsonView root, const Variables& vars) const override {
        for (const auto& a : _args) {
            ASSIGN_OR_RETURN(Value v, a->evaluate(root, vars));
            if (v.truthy() != _and) return Value::fromBool(!_and);
        }
        return Value::fromBool(_and);
    }

  private:
    bool _and;
    std::vector<ExprPtr> _args;
};

CustomParseFn andOr(bool isAnd) {
    return
        [isAnd](const BsonElement& args, const ExpressionParseContext& ctx) -> StatusWith<ExprPtr> {
            ASSIGN_OR_RETURN(auto children, parseArgs(args, ctx));
            return ExprPtr(std::make_unique<AndOrExpression>(isAnd, std::move(children)));
        };
}

class CondExpression final : public Expression {
  public:
    ExprPtr ifE, thenE, elseE;
    StatusWith<Value> evaluate(bson::BsonView root, const Variables& vars) const override {
        ASSIGN_OR_RETURN(Value c, ifE->evaluate(root, vars));
        return (c.truthy() ? thenE : elseE)->evaluate(root, vars);
    }
};

StatusWith<ExprPtr> parseCond(const BsonElement& args, const ExpressionParseContext& ctx) {
    auto node = std::make_unique<CondExpression>();
    if (args.type() == BsonType::Object) {
        for (BsonElement e : args.objValue()) {
            std::string_view n = e.fieldName();
            ExprPtr* slot = n == "if"     ? &node->ifE
                            : n == "then" ? &node->thenE
                            : n == "else" ? &node->elseE
                                          : nullptr;
            if (!slot) return Status(17083, "Unrecognized parameter to $cond: " + std::string(n));
            ASSIGN_OR_RETURN(*slot, Expression::parse(e, ctx));
        }
        if (!node->ifE) return Status(17080, "Missing 'if' parameter to $cond");
        if (!node->thenE) return Status(17081, "Missing 'then' parameter to $cond");
        if (!node->elseE) return Status(17082, "Missing 'else' parameter to $cond");
        return ExprPtr(std::move(node));
    }
    ASSIGN_OR_RETURN(auto children, parseArgs(args, ctx));
    TRY_STATUS(checkArity("$cond", children.size(), 3, 3));
    node->ifE = std::move(children[0]);
    node->thenE = std::move(children[1]);
    node->elseE = std::move(children[2]);
    return ExprPtr(std::move(node));
}

class IfNullExpression final : public Expression {
  public:
    std::vector<ExprPtr> args;
    StatusWith<Value> evaluate(bson::BsonView root, const Variables& vars) const override {
        for (size_t i = 0; i + 1 < args.size(); ++i) {
            ASSIGN_OR_RETURN(Value v, args[i]->evaluate(root, vars));
            if (!v.nullish()) return v;
        }
        return args.back()->evaluate(root, vars);
    }
};

StatusWith<ExprPtr> parseIfNull(const BsonElement& args, const ExpressionParseContext& ctx) {
    auto node = std::make_unique<IfNullExpression>();
    ASSIGN_OR_RETURN(node->args, parseArgs(args, ctx));
    if (node->args.size() < 2) {
        return Status(1257300, "$ifNull needs at least two arguments, had: " +
                                   std::to_string(node->args.size()));
    }
    return ExprPtr(std::move(node));
}

class SwitchExpression final : public Expression {
  public:
    std::vector<std::pair<ExprPtr, ExprPtr>> branches;
    ExprPtr def;
    StatusWith<Value> evaluate(bson::BsonView root, const Variables& vars) const override {
        for (const auto& [c, t] : branches) {
            ASSIGN_OR_RETURN(Value v, c->evaluate(root, vars));
            if (v.truthy()) return t->evaluate(root, vars);
        }
        if (!def) {
            return Status(40066,
                          "$switch could not find a matching branch for an input, and no default "
                          "was specified.");
        }
        return def->evaluate(root, vars);
    }
};

StatusWith<ExprPtr> parseSwitch(const BsonElement& args, const ExpressionParseContext& ctx) {
    if (args.type() != BsonType::Object) {
        return Status(40060, "$switch requires an object as an argument, found: " +
                                 std::string(bson::typeName(args.type())));
    }
    auto node = std::make_unique<SwitchExpression>();
    for (BsonElement e : args.objValue()) {
        std::string_view n = e.fieldName();
        if (n == "branches") {
            if (e.type() != BsonType::Array) {
                return Status(40061, "$switch expected an array for 'branches', found: " +
                                         std::string(bson::typeName(e.type())));
            }
            for (BsonElement b : e.objValue()) {
                if (b.type() != BsonType::Object) {
                    return Status(40062, "$switch expected each branch to be an object, found: " +
                                             std::string(bson::typeName(b.type())));
                }
                ExprPtr c, t;
                for (BsonElement f : b.objValue()) {
                    if (f.fieldName() == "case") {
                        ASSIGN_OR_RETURN(c, Expression::parse(f, ctx));
                    } else if (f.fieldName() == "then") {
                        ASSIGN_OR_RETURN(t, Expression::parse(f, ctx));
                    } else {
                        return Status(40063, "$switch found an unknown argument to a branch: " +
                                                 std::string(f.fieldName()));
                    }
                }
                if (!c)
                    return Status(40064, "$switch requires each branch have a 'case' expression");
                if (!t)
                    return Status(40065, "$switch requires each branch have a 'then' expression.");
                node->branches.emplace_back(std::move(c), std::move(t));
            }
        } else if (n == "default") {
            ASSIGN_OR_RETURN(node->def, Expression::parse(e, ctx));
        } else {
            return Status(40067, "$switch found an unknown argument: " + std::string(n));
        }
    }
    if (node->branches.empty()) return Status(40068, "$switch requires at least one branch.");
    return ExprPtr(std::move(node));
}

StatusWith<ExprPtr> parseLiteral(const BsonElement& args, const ExpressionParseContext&) {
    return ExprPtr(std::make_unique<ConstantExpression>(Value::fromElement(args)));
}

// ---- $let ----
class LetExpression final : public Expression {
  public:
    std::vector<std::pair<std::string, ExprPtr>> vars;
    ExprPtr in;
    StatusWith<Value> evaluate(bson::BsonView root, const Variables& parent) const override {
        Variables scope(&parent);
        // All initializers see the outer scope only.
        std::vector<Value> values;
        for (const auto& [n, e] : vars) {
            ASSIGN_OR_RETURN(Value v, e->evaluate(root, parent));
            values.push_back(std::move(v));
        }
        for (size_t i = 0; i < vars.size(); ++i) scope.set(vars[i].first, std::move(values[i]));
        return in->evaluate(root, scope);
    }
};

StatusWith<ExprPtr> parseLet(const BsonElement& args, const ExpressionParseContext& ctx) {
    if (args.type() != BsonType::Object) {
        return Status(16874, "$let only supports an object as its argument");
    }
    auto node = std::make_unique<LetExpression>();
    BsonElement varsE, inE;
    for (BsonElement e : args.objValue()) {
        if (e.fieldName() == "vars") {
            varsE = e;
        } else if (e.fieldName() == "in") {
            inE = e;
        } else {
            return Status(16875, "Unrecognized parameter to $let: " + std::string(e.fieldName()));
        }
    }
    if (varsE.eoo()) return Status(16876, "Missing 'vars' parameter to $let");
    if (inE.eoo()) return Status(16877, "Missing 'in' parameter to $let");
    if (varsE.type() != BsonType::Object) {
        return Status(ErrorCodes::TypeMismatch, "invalid parameter: expected an object (vars)");
    }
    ExpressionParseContext inner(&ctx);
    for (BsonElement v : varsE.objValue()) {
        TRY_STATUS(validateVariableName(v.fieldName()));
        ASSIGN_OR_RETURN(auto x, Expression::parse(v, ctx));
        node->vars.emplace_back(std::string(v.fieldName()), std::move(x));
        inner.define(std::string(v.fieldName()));
    }
    ASSIGN_OR_RETURN(node->in, Expression::parse(inE, inner));
    return ExprPtr(std::move(node));
}

// ---- $map / $filter ----
class MapFilterExpression final : public Expression {
  public:
    bool isFilter = false;
    std::string as;
    ExprPtr input, body, limit;
    StatusWith<Value> evaluate(bson::BsonView root, const Variables& parent) const override {
        ASSIGN_OR_RETURN(Value in, input->evaluate(root, parent));
        if (in.nullish()) return Value::null();
        if (!in.isArray()) {
            if (isFilter) {
                return Status(28651, "input to $filter must be an array not " + typeNameOf(in));
            }
            return Status(16883, "input to $map must be an array not " + typeNameOf(in));
        }
        int64_t max = -1;
        if (limit) {
            ASSIGN_OR_RETURN(Value l, limit->evaluate(root, parent));
            if (!l.nullish()) {
                if (!integralValue(l, &max) || max > INT32_MAX || max < INT32_MIN) {
                    return Status(327391,
                                  "$filter: limit must be represented as a 32-bit integral "
                                  "value: " +
                                      l.toString());
                }
                if (max < 1) {
                    return Status(327392, "$filter: limit must be greater than 0: " + l.toString());
                }
            }
        }
        Variables scope(&parent);
        bson::BsonArrayBuilder out;
        for (BsonElement e : in.arrayView()) {
            if (max >= 0 && static_cast<int64_t>(out.count()) >= max) break;
            scope.set(as, Value::fromElement(e));
            ASSIGN_OR_RETURN(Value r, body->evaluate(root, scope));
            if (isFilter) {
                if (r.truthy()) out.appendElement(e);
            } else {
                r.appendTo(out);
                TRY_STATUS(checkValueBytes("$map", out.len()));
            }
        }
        return Value::fromArray(out.arr());
    }
};

CustomParseFn parseMapFilter(bool isFilter) {
    return [isFilter](const BsonElement& args,
                      const ExpressionParseContext& ctx) -> StatusWith<ExprPtr> {
        std::string op = isFilter ? "$filter" : "$map";
        if (args.type() != BsonType::Object) {
            return Status(isFilter ? 28646 : 16878,
                          op + " only supports an object as its argument");
        }
        auto node = std::make_unique<MapFilterExpression>();
        node->isFilter = isFilter;
        BsonElement inputE, asE, bodyE, limitE;
        for (BsonElement e : args.objValue()) {
            std::string_view n = e.fieldName();
            if (n == "input") {
                inputE = e;
            } else if (n == "as") {
                asE = e;
            } else if (n == (isFilter ? "cond" : "in")) {
                bodyE = e;
            } else if (isFilter && n == "limit") {
                limitE = e;
            } else {
                return Status(isFilter ? 28647 : 16879,
                              "Unrecognized parameter to " + op + ": " + std::string(n));
            }
        }
        if (inputE.eoo()) {
            return Status(isFilter ? 28648 : 16880, "Missing 'input' parameter to " + op);
        }
        if (bodyE.eoo()) {
            return Status(
                isFilter ? 28650 : 16882,
                std::string("Missing '") + (isFilter ? "cond" : "in") + "' parameter to " + op);
        }
        node->as = "this";
        if (!asE.eoo()) {
            if (asE.type() != BsonType::String) {
                return Status(ErrorCodes::FailedToParse, op + " 'as' must be a string");
            }
            node->as = std::string(asE.stringValue());
            TRY_STATUS(validateVariableName(node->as));
        }
        ASSIGN_OR_RETURN(node->input, Expression::parse(inputE, ctx));
        if (!limitE.eoo()) {
            ASSIGN_OR_RETURN(node->limit, Expression::parse(limitE, ctx));
        }
        ExpressionParseContext inner(&ctx);
        inner.define(node->as);
        ASSIGN_OR_RETURN(node->body, Expression::parse(bodyE, inner));
        return ExprPtr(std::move(node));
    };
}

// ---- $reduce ----
class ReduceExpression final : public Expression {
  public:
    ExprPtr input, initial, in;
    StatusWith<Value> evaluate(bson::BsonView root, const Variables& parent) const override {
        ASSIGN_OR_RETURN(Value arr, input->evaluate(root, parent));
        if (arr.nullish()) return Value::null();
        if (!arr.isArray()) {
            return Status(40080, "$reduce requires an array as input, found: " + typeNameOf(arr));
        }
        ASSIGN_OR_RETURN(Value acc, initial->evaluate(root, parent));
        for (BsonElement e : arr.arrayView()) {
            Variables scope(&parent);
            scope.set("value", acc);
            scope.set("this", Value::fromElement(e));
            ASSIGN_OR_RETURN(acc, in->evaluate(root, scope));
        }
        return acc;
    }
};

StatusWith<ExprPtr> parseReduce(const BsonElement& args, const ExpressionParseContext& ctx) {
    if (args.type() != BsonType::Object) {
        return Status(40075, "$reduce requires an object as an argument, found: " +
                                 std::string(bson::typeName(args.type())));
    }
    auto node = std::make_unique<ReduceExpression>();
    ExpressionParseContext inner(&ctx);
    inner.define("value");
    inner.define("this");
    for (BsonElement e : args.objValue()) {
        std::string_view n = e.fieldName();
        if (n == "input") {
            ASSIGN_OR_RETURN(node->input, Expression::parse(e, ctx));
        } else if (n == "initialValue") {
            ASSIGN_OR_RETURN(node->initial, Expression::parse(e, ctx));
        } else if (n == "in") {
            ASSIGN_OR_RETURN(node->in, Expression::parse(e, inner));
        } else {
            return Status(40076, "$reduce found an unknown argument: " + std::string(n));
        }
    }
    if (!node->input) return Status(40077, "$reduce requires 'input' to be specified");
    if (!node->initial) return Status(40078, "$reduce requires 'initialValue' to be specified");
    if (!node->in) return Status(40079, "$reduce requires 'in' to be specified");
    return ExprPtr(std::move(node));
}

StatusWith<Value> notFn(const std::vector<Value>& args, const Variables&) {
    return Value::fromBool(!args[0].truthy());
}

}  // namespace

void registerLogic(Registry& r) {
    const char* names[] = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$cmp"};
    for (int i = 0; i < 7; ++i) r.positional(names[i], 2, 2, comparison(i));
    r.custom("$and", andOr(true));
    r.custom("$or", andOr(false));
    r.positional("$not", 1, 1, notFn);
    r.custom("$cond", parseCond);
    r.custom("$ifNull", parseIfNull);
    r.custom("$switch", parseSwitch);
    r.custom("$literal", parseLiteral);
    r.custom("$const", parseLiteral);
    r.custom("$let", parseLet);
    r.custom("$map", parseMapFilter(false));
    r.custom("$filter", parseMapFilter(true));
    r.custom("$reduce", parseReduce);
}

}  // namespace tessera::query::expr
