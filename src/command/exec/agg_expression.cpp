#include "command/exec/agg_expression.h"

#include "query/path.h"

namespace tessera::command::exec {

using bson::BsonType;

AggValue AggValue::of(const bson::BsonElement& e) {
    if (e.eoo()) return AggValue{};
    bson::BsonBuilder b;
    b.appendElementAs(e, "");
    return AggValue{b.obj()};
}

AggValue AggValue::null() {
    bson::BsonBuilder b;
    b.appendNull("");
    return AggValue{b.obj()};
}

namespace {

class ConstantExpression final : public AggExpression {
  public:
    explicit ConstantExpression(AggValue v) : _v(std::move(v)) {}
    AggValue evaluate(bson::BsonView) const override { return _v; }
    bool isConstant() const override { return true; }

  private:
    AggValue _v;
};

class RootExpression final : public AggExpression {
  public:
    AggValue evaluate(bson::BsonView doc) const override {
        bson::BsonBuilder b;
        b.append("", doc);
        return AggValue{b.obj()};
    }
};

// Aggregation field path semantics (ExpressionFieldPath): descend through documents; at an
// array, apply the rest of the path to each element and collect the results (missing results
// are dropped; nested arrays recurse).
void appendPathValues(const bson::BsonElement& e, const std::vector<std::string>& parts, size_t i,
                      bson::BsonArrayBuilder& out);

bson::BsonElement lookupPath(bson::BsonView doc, const std::vector<std::string>& parts, size_t i,
                             bson::BsonObj* holder) {
    bson::BsonElement e = doc[parts[i]];
    for (++i; i <= parts.size(); ++i) {
        if (e.eoo() || i == parts.size()) return e;
        if (e.type() == BsonType::Object) {
            e = e.objValue()[parts[i]];
        } else if (e.type() == BsonType::Array) {
            bson::BsonArrayBuilder arr;
            for (auto elem : e.objValue()) appendPathValues(elem, parts, i, arr);
            bson::BsonBuilder b;
            b.appendArray("", arr.arr());
            *holder = b.obj();
            return holder->firstElement();
        } else {
            return bson::BsonElement();
        }
    }
    return e;
}

void appendPathValues(const bson::BsonElement& e, const std::vector<std::string>& parts, size_t i,
                      bson::BsonArrayBuilder& out) {
    if (e.type() == BsonType::Object) {
        bson::BsonObj holder;
        bson::BsonElement v = lookupPath(e.objValue(), parts, i, &holder);
        if (!v.eoo()) out.appendElement(v);
    } else if (e.type() == BsonType::Array) {
        bson::BsonArrayBuilder inner;
        for (auto elem : e.objValue()) appendPathValues(elem, parts, i, inner);
        out.appendArray(inner.arr());
    }
}

class FieldPathExpression final : public AggExpression {
  public:
    explicit FieldPathExpression(std::vector<std::string> parts) : _parts(std::move(parts)) {}
    AggValue evaluate(bson::BsonView doc) const override {
        bson::BsonObj holder;
        bson::BsonElement e = lookupPath(doc, _parts, 0, &holder);
        return AggValue::of(e);
    }

  private:
    std::vector<std::string> _parts;
};

class ObjectExpression final : public AggExpression {
  public:
    std::vector<std::pair<std::string, std::shared_ptr<const AggExpression>>> fields;
    AggValue evaluate(bson::BsonView doc) const override {
        bson::BsonBuilder b;
        b.startObject("");
        for (const auto& [name, expr] : fields) {
            AggValue v = expr->evaluate(doc);
            if (!v.missing()) b.appendElementAs(v.element(), name);
        }
        b.end();
        return AggValue{b.obj()};
    }
};

class ArrayExpression final : public AggExpression {
  public:
    std::vector<std::shared_ptr<const AggExpression>> items;
    AggValue evaluate(bson::BsonView doc) const override {
        bson::BsonArrayBuilder arr;
        for (const auto& item : items) {
            AggValue v = item->evaluate(doc);
            if (v.missing()) {
                arr.appendNull();
            } else {
                arr.appendElement(v.element());
            }
        }
        bson::BsonBuilder b;
        b.appendArray("", arr.arr());
        return AggValue{b.obj()};
    }
};

}  // namespace

StatusWith<std::shared_ptr<const AggExpression>> AggExpression::parse(const bson::BsonElement& e) {
    if (e.type() == BsonType::String) {
        std::string_view s = e.stringValue();
        if (s.starts_with("$$")) {
            if (s == "$$ROOT" || s == "$$CURRENT") return {std::make_shared<RootExpression>()};
            return Status(17276, "Use of undefined variable: " + std::string(s.substr(2)));
        }
        if (s.starts_with("$")) {
            std::string_view path = s.substr(1);
            if (path.empty()) {
                return Status(16872, "'$' by itself is not a valid FieldPath");
            }
            std::vector<std::string> parts;
            size_t start = 0;
            while (true) {
                size_t dot = path.find('.', start);
                std::string part(path.substr(
                    start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
                if (part.empty()) {
                    return Status(15998, "FieldPath field names may not be empty strings.");
                }
                parts.push_back(std::move(part));
                if (dot == std::string_view::npos) break;
                start = dot + 1;
            }
            return {std::make_shared<FieldPathExpression>(std::move(parts))};
        }
    }
    if (e.type() == BsonType::Object) {
        bson::BsonView obj = e.objValue();
        auto first = obj.firstElement();
        if (!first.eoo() && first.fieldName().starts_with("$")) {
            if (first.fieldName() == "$literal" && obj.nFields() == 1) {
                return {std::make_shared<ConstantExpression>(AggValue::of(first))};
            }
            return Status(ErrorCodes::InvalidPipelineOperator,
                          "Unrecognized expression '" + std::string(first.fieldName()) + "'");
        }
        auto out = std::make_shared<ObjectExpression>();
        for (auto f : obj) {
            ASSIGN_OR_RETURN(auto sub, parse(f));
            out->fields.emplace_back(std::string(f.fieldName()), std::move(sub));
        }
        return {std::shared_ptr<const AggExpression>(std::move(out))};
    }
    if (e.type() == BsonType::Array) {
        auto out = std::make_shared<ArrayExpression>();
        for (auto f : e.objValue()) {
            ASSIGN_OR_RETURN(auto sub, parse(f));
            out->items.push_back(std::move(sub));
        }
        return {std::shared_ptr<const AggExpression>(std::move(out))};
    }
    return {std::make_shared<ConstantExpression>(AggValue::of(e))};
}

}  // namespace tessera::command::exec
