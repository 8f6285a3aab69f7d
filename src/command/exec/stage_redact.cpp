// $redact.

#include "command/exec/pipeline_stage_list.h"
#include "command/exec/stage_extra.h"

namespace tessera::command::exec {

using bson::BsonType;

namespace {

// $$KEEP, $$PRUNE and $$DESCEND: in MongoDB they are builtin variables whose values are these
// strings; a $redact expression may return either the variable or the string.
constexpr std::string_view kKeep = "keep";
constexpr std::string_view kPrune = "prune";
constexpr std::string_view kDescend = "descend";

}  // namespace

StatusWith<std::unique_ptr<RedactStage>> RedactStage::parse(const bson::BsonElement& spec) {
    auto vars = std::make_shared<query::Variables>();
    vars->set("KEEP", query::Value::fromString(kKeep));
    vars->set("PRUNE", query::Value::fromString(kPrune));
    vars->set("DESCEND", query::Value::fromString(kDescend));
    std::unique_ptr<RedactStage> stage(new RedactStage());
    bson::BsonBuilder b;
    b.appendElementAs(spec, "$redact");
    stage->_spec = b.obj();
    ASSIGN_OR_RETURN(stage->_expr, AggExpression::parse(stage->_spec.firstElement(), vars));
    return stage;
}

Status RedactStage::redactValue(bson::BsonBuilder& b, std::string_view name,
                                const bson::BsonElement& e, bson::BsonView root) const {
    if (e.type() == BsonType::Object) {
        ASSIGN_OR_RETURN(auto sub, redactObject(e.objValue(), root));
        if (sub) b.append(name, *sub);
        return Status::OK();
    }
    if (e.type() == BsonType::Array) {
        // Arrays are kept (possibly empty); their embedded documents and arrays are redacted,
        // pruned documents are dropped from the array.
        bson::BsonBuilder arr;
        size_t i = 0;
        for (auto x : e.objValue()) {
            size_t before = arr.len();
            std::string key = std::to_string(i);
            TRY_STATUS(redactValue(arr, key, x, root));
            if (arr.len() != before) ++i;
        }
        b.appendArray(name, arr.obj());
        return Status::OK();
    }
    b.appendElementAs(e, name);
    return Status::OK();
}

StatusWith<std::optional<bson::BsonObj>> RedactStage::redactObject(bson::BsonView obj,
                                                                   bson::BsonView root) const {
    query::Variables scope(&_expr->variables());
    query::Value current = query::Value::fromDocument(obj);
    scope.setCurrent(&current);
    ASSIGN_OR_RETURN(AggValue v, _expr->evaluate(root, scope));
    bson::BsonElement r = v.missing() ? bson::BsonElement() : v.element();
    if (r.type() == BsonType::String) {
        if (r.stringValue() == kKeep)
            return std::optional<bson::BsonObj>(bson::BsonObj(obj.copy()));
        if (r.stringValue() == kPrune) return std::optional<bson::BsonObj>();
        if (r.stringValue() == kDescend) {
            bson::BsonBuilder b;
            for (auto f : obj) TRY_STATUS(redactValue(b, f.fieldName(), f, root));
            return std::optional<bson::BsonObj>(b.obj());
        }
    }
    return Status(17053,
                  "$redact's expression should not return anything aside from the variables "
                  "$$KEEP, $$DESCEND, and $$PRUNE, but returned " +
                      (v.missing() ? std::string("MISSING") : r.toString(false)));
}

StatusWith<bool> RedactStage::doNext(ExecContext& ctx, WorkingMember* out) {
    while (true) {
        ASSIGN_OR_RETURN(bool more, _child->next(ctx, out));
        if (!more) return false;
        TRY_STATUS(ctx.checkForInterrupt());
        ASSIGN_OR_RETURN(auto redacted, redactObject(out->doc, out->doc));
        if (!redacted) continue;
        out->doc = std::move(*redacted);
        out->indexKey.clear();
        out->details.reset();
        return true;
    }
}

void RedactStage::appendDetails(bson::BsonBuilder& b, bool) const {
    b.appendElement(_spec.firstElement());
}

namespace {
StatusWith<std::unique_ptr<PlanStage>> parseRedact(const StageParseContext& ctx,
                                                   std::unique_ptr<PlanStage> input) {
    ASSIGN_OR_RETURN(auto stage, RedactStage::parse(ctx.spec()));
    return stack(std::move(input), std::move(stage));
}
}  // namespace

namespace stages {
const StageDescriptor kRedact{"$redact", {.split = StageSplit::kStreaming}, &parseRedact};
}  // namespace stages

}  // namespace tessera::command::exec
