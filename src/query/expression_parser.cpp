// Expression::parse, the operator registry, and the structural nodes (field paths, variables,
// object and array expressions, positional/named operator nodes).
#include "query/expression_internal.h"
#include "query/path.h"

namespace tessera::query {

using bson::BsonElement;
using bson::BsonType;
using namespace expr;

namespace expr {

const Registry& Registry::get() {
    static const Registry* registry = [] {
        auto* r = new Registry();
        registerArithmetic(*r);
        registerLogic(*r);
        registerString(*r);
        registerArray(*r);
        registerDate(*r);
        registerConversion(*r);
        registerObject(*r);
        return r;
    }();
    return *registry;
}

const OpInfo* Registry::find(std::string_view name) const {
    auto it = _ops.find(name);
    return it == _ops.end() ? nullptr : &it->second;
}

void Registry::positional(std::string name, int minArgs, int maxArgs, PositionalFn fn) {
    OpInfo info;
    info.kind = OpInfo::Kind::kPositional;
    info.name = name;
    info.minArgs = minArgs;
    info.maxArgs = maxArgs;
    info.positional = std::move(fn);
    _ops[std::move(name)] = std::move(info);
}

void Registry::named(std::string name, std::vector<std::string> allowed,
                     std::vector<std::string> required, NamedFn fn, int unknownCode,
                     int missingCode) {
    OpInfo info;
    info.kind = OpInfo::Kind::kNamed;
    info.name = name;
    info.allowed = std::move(allowed);
    info.required = std::move(required);
    info.named = std::move(fn);
    info.unknownArgCode = unknownCode;
    info.missingArgCode = missingCode;
    _ops[std::move(name)] = std::move(info);
}

void Registry::custom(std::string name, CustomParseFn fn) {
    OpInfo info;
    info.kind = OpInfo::Kind::kCustom;
    info.name = name;
    info.custom = std::move(fn);
    _ops[std::move(name)] = std::move(info);
}

StatusWith<std::vector<ExprPtr>> parseArgs(const BsonElement& args,
                                           const ExpressionParseContext& ctx) {
    std::vector<ExprPtr> out;
    if (args.type() == BsonType::Array) {
        for (BsonElement e : args.objValue()) {
            ASSIGN_OR_RETURN(auto x, Expression::parse(e, ctx));
            out.push_back(std::move(x));
        }
    } else {
        ASSIGN_OR_RETURN(auto x, Expression::parse(args, ctx));
        out.push_back(std::move(x));
    }
    return out;
}

Status checkArity(std::string_view op, size_t n, int minArgs, int maxArgs) {
    if (minArgs == maxArgs && static_cast<int>(n) != minArgs) {
        return Status(16020, "Expression " + std::string(op) + " takes exactly " +
                                 std::to_string(minArgs) + " arguments. " + std::to_string(n) +
                                 " were passed in.");
    }
    if (static_cast<int>(n) < minArgs || (maxArgs >= 0 && static_cast<int>(n) > maxArgs)) {
        if (maxArgs < 0) {
            return Status(16020, "Expression " + std::string(op) + " takes at least " +
                                     std::to_string(minArgs) + " arguments, but " +
                                     std::to_string(n) + " were passed in.");
        }
        return Status(28667, "Expression " + std::string(op) + " takes at least " +
                                 std::to_string(minArgs) + " arguments, and at most " +
                                 std::to_string(maxArgs) + ", but " + std::to_string(n) +
                                 " were passed in.");
    }
    return Status::OK();
}

Status validateVariableName(std::string_view name) {
    if (name.empty())
        return Status(ErrorCodes::FailedToParse, "empty variable names are not allowed");
    unsigned char c0 = static_cast<unsigned char>(name[0]);
    if (!((c0 >= 'a' && c0 <= 'z') || c0 >= 0x80)) {
        return Status(ErrorCodes::FailedToParse,
                      "'" + std::string(name) +
                          "' starts with an invalid character for a user variable name");
    }
    for (char ch : name) {
        unsigned char c = static_cast<unsigned char>(ch);
        if (!(std::isalnum(c) || c == '_' || c >= 0x80)) {
            return Status(ErrorCodes::FailedToParse,
                          "'" + std::string(name) +
                              "' contains an invalid character for a variable name: '" +
                              std::string(1, ch) + "'");
        }
    }
    return Status::OK();
}

}  // namespace expr

namespace {

Status validateFieldPathParts(const std::vector<std::string>& parts, size_t from) {
    for (size_t i = from; i < parts.size(); ++i) {
        if (parts[i].empty()) {
            return Status(15998, "FieldPath field names may not be empty strings.");
        }
        if (parts[i][0] == '$') {
            return Status(16410,
                          "FieldPath field names may not start with '$'. Consider using "
                          "$getField or $setField.");
        }
    }
    return Status::OK();
}

// "$a.b.c" (relative to $$CURRENT).
class FieldPathExpression final : public Expression {
  public:
    FieldPathExpression(std::string path, std::vector<std::string> parts)
        : _path(std::move(path)), _parts(std::move(parts)) {}
    StatusWith<Value> evaluate(bson::BsonView root, const Variables& vars) const override {
        if (const Value* cur = vars.current()) {
            if (!cur->isObject()) return Value();
            return navigatePath(cur->objectView(), _parts);
        }
        return navigatePath(root, _parts);
    }
    std::string fieldPath() const override { return _path; }

  private:
    std::string _path;
    std::vector<std::string> _parts;
};

// "$$name" or "$$name.a.b".
class VariableExpression final : public Expression {
  public:
    VariableExpression(std::string name, std::vector<std::string> rest)
        : _name(std::move(name)), _rest(std::move(rest)) {}
    StatusWith<Value> evaluate(bson::BsonView root, const Variables& vars) const override {
        Value base;
        if (_name == "ROOT") {
            if (_rest.empty()) return Value::fromDocument(root);
            return navigatePath(root, _rest);
        } else if (_name == "CURRENT") {
            if (const Value* cur = vars.current()) {
                base = *cur;
            } else {
                if (_rest.empty()) return Value::fromDocument(root);
                return navigatePath(root, _rest);
            }
        } else if (_name == "NOW") {
            base = Value::fromDate(vars.nowMillis());
        } else if (_name == "CLUSTER_TIME") {
            bson::BsonBuilder b;
            b.appendTimestamp("", vars.clusterTime());
            base = Value::fromHolder(b.obj());
        } else if (_name == "REMOVE") {
            return Value();
        } else {
            const Value* v = vars.get(_name);
            if (!v) return Status(17276, "Use of undefined variable: " + _name);
            base = *v;
        }
        return navigatePath(base, _rest);
    }

  private:
    std::string _name;
    std::vector<std::string> _rest;
};

class ObjectExpression final : public Expression {
  public:
    std::vector<std::pair<std::string, ExprPtr>> fields;
    StatusWith<Value> evaluate(bson::BsonView root, const Variables& vars) const override {
        bson::BsonBuilder b;
        b.startObject("");
        for (const auto& [name, e] : fields) {
            ASSIGN_OR_RETURN(Value v, e->evaluate(root, vars));
            v.appendTo(b, name);
            TRY_STATUS(checkValueBytes("an object expression", b.len()));
        }
        b.end();
        return Value::fromHolder(b.obj());
    }
};

class ArrayExpression final : public Expression {
  public:
    std::vector<ExprPtr> items;
    StatusWith<Value> evaluate(bson::BsonView root, const Variables& vars) const override {
        bson::BsonArrayBuilder arr;
        for (const auto& e : items) {
            ASSIGN_OR_RETURN(Value v, e->evaluate(root, vars));
            v.appendTo(arr);  // missing -> null, as MongoDB
            TRY_STATUS(checkValueBytes("an array expression", arr.len()));
        }
        return Value::fromArray(arr.arr());
    }
};

class PositionalExpression final : public Expression {
  public:
    PositionalExpression(const OpInfo* info, std::vector<ExprPtr> args)
        : _info(info), _args(std::move(args)) {}
    StatusWith<Value> evaluate(bson::BsonView root, const Variables& vars) const override {
        std::vector<Value> values;
        values.reserve(_args.size());
        for (const auto& a : _args) {
            ASSIGN_OR_RETURN(Value v, a->evaluate(root, vars));
            values.push_back(std::move(v));
        }
        ASSIGN_OR_RETURN(Value out, _info->positional(values, vars));
        TRY_STATUS(checkValueBytes(_info->name, out.holder().size()));
        return out;
    }

  private:
    const OpInfo* _info;
    std::vector<ExprPtr> _args;
};

class NamedExpression final : public Expression {
  public:
    explicit NamedExpression(const OpInfo* info) : _info(info) {}
    std::vector<std::pair<std::string, ExprPtr>> args;
    StatusWith<Value> evaluate(bson::BsonView root, const Variables& vars) const override {
        NamedValues values;
        for (const auto& [name, e] : args) {
            ASSIGN_OR_RETURN(Value v, e->evaluate(root, vars));
            values.add(name, std::move(v));
        }
        ASSIGN_OR_RETURN(Value out, _info->named(values, vars));
        TRY_STATUS(checkValueBytes(_info->name, out.holder().size()));
        return out;
    }

  private:
    const OpInfo* _info;
};

StatusWith<ExprPtr> parseOperator(std::string_view op, const BsonElement& args,
                                  const ExpressionParseContext& ctx) {
    const OpInfo* info = Registry::get().find(op);
    if (!info) {
        return Status(ErrorCodes::InvalidPipelineOperator,
                      "Unrecognized expression '" + std::string(op) + "'");
    }
    switch (info->kind) {
        case OpInfo::Kind::kCustom:
            return info->custom(args, ctx);
        case OpInfo::Kind::kPositional: {
            ASSIGN_OR_RETURN(auto children, parseArgs(args, ctx));
            TRY_STATUS(checkArity(op, children.size(), info->minArgs, info->maxArgs));
            return ExprPtr(std::make_unique<PositionalExpression>(info, std::move(children)));
        }
        case OpInfo::Kind::kNamed: {
            if (args.type() != BsonType::Object) {
                return Status(info->unknownArgCode, std::string(op) +
                                                        " expects an object of named arguments "
                                                        "but found type " +
                                                        std::string(bson::typeName(args.type())));
            }
            auto node = std::make_unique<NamedExpression>(info);
            for (BsonElement e : args.objValue()) {
                std::string name(e.fieldName());
                bool ok = false;
                for (const auto& a : info->allowed) ok = ok || a == name;
                if (!ok) {
                    return Status(info->unknownArgCode,
                                  std::string(op) + " found an unknown argument: " + name);
                }
                ASSIGN_OR_RETURN(auto x, Expression::parse(e, ctx));
                node->args.emplace_back(std::move(name), std::move(x));
            }
            for (const auto& req : info->required) {
                bool found = false;
                for (const auto& [n, x] : node->args) found = found || n == req;
                if (!found) {
                    return Status(info->missingArgCode,
                                  std::string(op) + " requires '" + req + "' parameter");
                }
            }
            return ExprPtr(std::move(node));
        }
    }
    return Status(ErrorCodes::InternalError, "unreachable");
}

}  // namespace

StatusWith<std::unique_ptr<Expression>> Expression::parseObject(bson::BsonView obj,
                                                                const ExpressionParseContext& ctx) {
    auto node = std::make_unique<ObjectExpression>();
    for (BsonElement e : obj) {
        std::string_view name = e.fieldName();
        if (name.empty()) {
            return Status(16410, "FieldPath field names may not be empty strings.");
        }
        if (name[0] == '$') {
            return Status(16404, "Field names within an object may not start with '$': " +
                                     std::string(name) + " in " + obj.toJson());
        }
        if (name.find('.') != std::string_view::npos) {
            return Status(16412, "FieldPath field names may not contain '.'.");
        }
        for (const auto& [n, x] : node->fields) {
            if (n == name) {
                return Status(16406,
                              "duplicate field name specified in object literal: " + obj.toJson());
            }
        }
        ASSIGN_OR_RETURN(auto x, parse(e, ctx));
        node->fields.emplace_back(std::string(name), std::move(x));
    }
    return std::unique_ptr<Expression>(std::move(node));
}

StatusWith<std::unique_ptr<Expression>> Expression::parse(BsonElement value,
                                                          const ExpressionParseContext& ctx) {
    switch (value.type()) {
        case BsonType::String: {
            std::string_view s = value.stringValue();
            if (s.size() >= 2 && s[0] == '$' && s[1] == '$') {
                auto parts = splitDottedPath(s.substr(2));
                std::string name = parts[0];
                if (name.empty()) return Status(16869, "empty variable names are not allowed");
                parts.erase(parts.begin());
                TRY_STATUS(validateFieldPathParts(parts, 0));
                static const char* kSystem[] = {"ROOT", "CURRENT", "NOW", "CLUSTER_TIME", "REMOVE"};
                bool system = false;
                for (const char* k : kSystem) system = system || name == k;
                if (!system) {
                    if (name == "SEARCH_META" || name == "USER_ROLES" || name == "SEARCH_SCORE") {
                        return Status(ErrorCodes::FailedToParse,
                                      "Builtin variable '$$" + name + "' is not available");
                    }
                    if (!ctx.isDefined(name) && !ctx.allowUndefinedVariables) {
                        return Status(17276, "Use of undefined variable: " + name);
                    }
                }
                return ExprPtr(std::make_unique<VariableExpression>(name, std::move(parts)));
            }
            if (!s.empty() && s[0] == '$') {
                if (s.size() == 1) {
                    return Status(16872, "'$' by itself is not a valid FieldPath");
                }
                auto parts = splitDottedPath(s.substr(1));
                TRY_STATUS(validateFieldPathParts(parts, 0));
                return ExprPtr(std::make_unique<FieldPathExpression>(std::string(s.substr(1)),
                                                                     std::move(parts)));
            }
            return ExprPtr(std::make_unique<ConstantExpression>(Value::fromElement(value)));
        }
        case BsonType::Object: {
            bson::BsonView obj = value.objValue();
            if (obj.isEmpty()) {
                return ExprPtr(std::make_unique<ConstantExpression>(Value::fromElement(value)));
            }
            BsonElement first = obj.firstElement();
            if (!first.fieldName().empty() && first.fieldName()[0] == '$') {
                if (obj.nFields() != 1) {
                    return Status(15983,
                                  "an expression specification must contain exactly one field, "
                                  "the name of the expression. Found " +
                                      std::to_string(obj.nFields()) + " fields in " + obj.toJson() +
                                      ", while parsing object " + obj.toJson());
                }
                return parseOperator(first.fieldName(), first, ctx);
            }
            return parseObject(obj, ctx);
        }
        case BsonType::Array: {
            auto node = std::make_unique<ArrayExpression>();
            bool allConst = true;
            for (BsonElement e : value.objValue()) {
                ASSIGN_OR_RETURN(auto x, parse(e, ctx));
                allConst = allConst && x->isConstant();
                node->items.push_back(std::move(x));
            }
            return ExprPtr(std::move(node));
        }
        default:
            return ExprPtr(std::make_unique<ConstantExpression>(Value::fromElement(value)));
    }
}

}  // namespace tessera::query
