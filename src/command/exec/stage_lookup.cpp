// $lookup, $unionWith, $facet and the variable binding of sub-pipelines.

#include <cctype>

#include "bson/bson_builder.h"
#include "bson/compare.h"
#include "bson/validate.h"
#include "command/exec/pipeline_stage_list.h"
#include "command/exec/stage_subpipeline.h"

namespace tessera::command::exec {

using bson::BsonType;

namespace {

void substituteValue(bson::BsonBuilder& b, std::string_view name, const bson::BsonElement& e,
                     const std::map<std::string, bson::BsonObj>& vars);

void substituteInto(bson::BsonBuilder& b, bson::BsonView obj, bool isArray,
                    const std::map<std::string, bson::BsonObj>& vars) {
    for (auto e : obj) substituteValue(b, e.fieldName(), e, vars);
    (void)isArray;
}

void substituteValue(bson::BsonBuilder& b, std::string_view name, const bson::BsonElement& e,
                     const std::map<std::string, bson::BsonObj>& vars) {
    if (e.type() == BsonType::String && e.stringValue().starts_with("$$")) {
        std::string_view ref = e.stringValue().substr(2);
        size_t dot = ref.find('.');
        std::string var(ref.substr(0, dot));
        auto it = vars.find(var);
        if (it == vars.end()) {
            b.appendElement(e);
            return;
        }
        bson::BsonElement v = it->second.firstElement();
        if (dot != std::string_view::npos) {
            // The path inside the variable's value (aggregation field path semantics).
            bson::BsonBuilder wrap;
            wrap.appendElementAs(v, "v");
            bson::BsonObj doc = wrap.obj();
            bson::BsonBuilder pathB;
            pathB.append("", "$v." + std::string(ref.substr(dot + 1)));
            bson::BsonObj pathHolder = pathB.obj();
            auto expr = StageExpression::parse(pathHolder.firstElement());
            AggValue value;
            if (expr.isOK()) {
                auto r = expr.getValue()->evaluate(doc);
                if (r.isOK()) value = r.getValue();
            }
            if (value.missing()) {
                b.append(name, "$$REMOVE");
            } else {
                b.startObject(name).appendElementAs(value.element(), "$literal").end();
            }
            return;
        }
        b.startObject(name).appendElementAs(v, "$literal").end();
        return;
    }
    if (e.type() == BsonType::Object) {
        bson::BsonView obj = e.objValue();
        if (obj.nFields() == 1 && obj.firstElement().fieldName() == "$literal") {
            b.appendElement(e);
            return;
        }
        b.startObject(name);
        substituteInto(b, obj, false, vars);
        b.end();
        return;
    }
    if (e.type() == BsonType::Array) {
        b.startArray(name);
        substituteInto(b, e.objValue(), true, vars);
        b.end();
        return;
    }
    b.appendElement(e);
}

bson::BsonObj nullHolder() {
    bson::BsonBuilder b;
    b.appendNull("");
    return b.obj();
}

void appendValuesForLookup(const bson::BsonElement& v, std::vector<bson::BsonObj>& out) {
    auto push = [&out](const bson::BsonElement& e) {
        bson::BsonBuilder b;
        b.appendElementAs(e, "");
        out.push_back(b.obj());
    };
    if (v.eoo() || v.type() == BsonType::Undefined) {
        out.push_back(nullHolder());
    } else if (v.type() == BsonType::Array) {
        for (auto e : v.objValue()) push(e);
    } else {
        push(v);
    }
}

// The local values of `path` (aggregation semantics: arrays along the path are traversed).
StatusWith<std::vector<bson::BsonObj>> localValues(bson::BsonView doc, const std::string& path) {
    bson::BsonBuilder pb;
    pb.append("", "$" + path);
    bson::BsonObj holder = pb.obj();
    ASSIGN_OR_RETURN(auto expr, StageExpression::parse(holder.firstElement()));
    ASSIGN_OR_RETURN(AggValue v, expr->evaluate(doc));
    std::vector<bson::BsonObj> out;
    appendValuesForLookup(v.missing() ? bson::BsonElement() : v.element(), out);
    return out;
}

}  // namespace

bson::BsonObj substituteVariables(bson::BsonView value, bool isArray,
                                  const std::map<std::string, bson::BsonObj>& vars) {
    bson::BsonBuilder b;
    substituteInto(b, value, isArray, vars);
    return b.obj();
}

StatusWith<std::map<std::string, bson::BsonObj>> evaluateLet(
    const std::vector<std::pair<std::string, StageExpressionPtr>>& let, bson::BsonView doc) {
    std::map<std::string, bson::BsonObj> vars;
    for (const auto& [name, expr] : let) {
        ASSIGN_OR_RETURN(AggValue v, expr->evaluate(doc));
        if (v.missing()) {
            vars[name] = AggValue::null().holder;  // MongoDB binds missing as null in $lookup
        } else {
            vars[name] = v.holder;
        }
    }
    return vars;
}

StatusWith<std::vector<std::pair<std::string, StageExpressionPtr>>> parseLet(
    const bson::BsonElement& let) {
    std::vector<std::pair<std::string, StageExpressionPtr>> out;
    if (let.eoo()) return out;
    if (let.type() != BsonType::Object) {
        return Status(ErrorCodes::FailedToParse, "let must be an object");
    }
    for (auto f : let.objValue()) {
        std::string_view name = f.fieldName();
        if (name.empty()) return Status(16866, "empty variable names are not allowed");
        unsigned char c0 = static_cast<unsigned char>(name[0]);
        if (!((c0 >= 'a' && c0 <= 'z') || c0 >= 0x80)) {
            return Status(16867, "'" + std::string(name) +
                                     "' starts with an invalid character for a user variable "
                                     "name");
        }
        for (unsigned char c : name) {
            if (!(std::isalnum(c) || c == '_' || c >= 0x80)) {
                return Status(16868, "'" + std::string(name) +
                                         "' contains an invalid character for a variable name: '" +
                                         std::string(1, static_cast<char>(c)) + "'");
            }
        }
        ASSIGN_OR_RETURN(auto expr, StageExpression::parse(f));
        out.emplace_back(std::string(name), std::move(expr));
    }
    return out;
}

StatusWith<bool> LookupStage::doNext(ExecContext& ctx, WorkingMember* out) {
    ASSIGN_OR_RETURN(bool more, _child->next(ctx, out));
    if (!more) return false;
    bson::BsonArrayBuilder pipeline;
    if (!_spec.localField.empty()) {
        ASSIGN_OR_RETURN(auto values, localValues(out->doc, _spec.localField));
        bool anyRegex = false;
        for (const auto& v : values)
            anyRegex = anyRegex || v.firstElement().type() == BsonType::Regex;
        bson::BsonBuilder match;
        match.startObject("$match");
        if (!anyRegex) {
            match.startObject(_spec.foreignField).startArray("$in");
            size_t i = 0;
            for (const auto& v : values)
                match.appendElementAs(v.firstElement(), std::to_string(i++));
            match.end().end();
        } else {
            match.startArray("$or");
            size_t i = 0;
            for (const auto& v : values) {
                match.startObject(std::to_string(i++))
                    .startObject(_spec.foreignField)
                    .appendElementAs(v.firstElement(), "$eq")
                    .end()
                    .end();
            }
            match.end();
        }
        match.end();
        pipeline.append(match.obj());
    }
    if (!_spec.pipeline.isEmpty()) {
        bson::BsonObj stages = _spec.pipeline;
        if (!_spec.let.empty()) {
            ASSIGN_OR_RETURN(auto vars, evaluateLet(_spec.let, out->doc));
            stages = substituteVariables(_spec.pipeline, true, vars);
        }
        for (auto s : stages) pipeline.appendElement(s);
    }
    bson::BsonObj pipelineObj = pipeline.arr();
    ASSIGN_OR_RETURN(std::unique_ptr<PlanStage> root, _factory(pipelineObj));
    ExecContext sub;
    sub.opCtx = ctx.opCtx;
    sub.snapshot = ctx.snapshot;
    sub.collection = _foreign;
    bson::BsonArrayBuilder results;
    WorkingMember m;
    while (true) {
        ASSIGN_OR_RETURN(bool got, root->next(sub, &m));
        if (!got) break;
        TRY_STATUS(ctx.checkForInterrupt());
        results.append(m.doc);
        if (results.len() > bson::kMaxUserDocumentSize) {
            return Status(ErrorCodes::BSONObjectTooLarge,
                          "Total size of documents in " + _spec.fromNs +
                              " matching pipeline's $lookup stage exceeds 16793600 bytes");
        }
    }
    _stats.docsExamined += root->stats().docsExamined;
    bson::BsonBuilder holder;
    holder.appendArray("", results.arr());
    bson::BsonObj h = holder.obj();
    out->doc = _setter->applySet(out->doc, h.firstElement());
    out->indexKey.clear();
    return true;
}

void LookupStage::appendDetails(bson::BsonBuilder& b, bool) const {
    b.append("$lookup", _spec.specForExplain);
}

StatusWith<bool> UnionWithStage::doNext(ExecContext& ctx, WorkingMember* out) {
    if (!_childDone) {
        ASSIGN_OR_RETURN(bool more, _child->next(ctx, out));
        if (more) return true;
        _childDone = true;
    }
    ExecContext sub;
    sub.opCtx = ctx.opCtx;
    sub.snapshot = ctx.snapshot;
    sub.collection = _otherColl;
    ASSIGN_OR_RETURN(bool more, _other->next(sub, out));
    TRY_STATUS(ctx.checkForInterrupt());
    return more;
}

void UnionWithStage::appendDetails(bson::BsonBuilder& b, bool) const {
    b.append("$unionWith", _spec);
}

StatusWith<bool> FacetStage::doNext(ExecContext& ctx, WorkingMember* out) {
    if (_done) return false;
    _done = true;
    WorkingMember m;
    size_t bytes = 0;
    while (true) {
        ASSIGN_OR_RETURN(bool more, _child->next(ctx, &m));
        if (!more) break;
        TRY_STATUS(ctx.checkForInterrupt());
        bytes += m.doc.size();
        if (bytes > kMaxBlockingMemoryBytes) {
            return Status(ErrorCodes::QueryExceededMemoryLimitNoDiskUseAllowed,
                          "Exceeded memory limit for $facet, but didn't allow external sort. "
                          "Pass allowDiskUse:true to opt in.");
        }
        _input->push_back(m.doc);
    }
    bson::BsonBuilder b;
    for (auto& facet : _facets) {
        bson::BsonArrayBuilder arr;
        while (true) {
            ASSIGN_OR_RETURN(bool more, facet.root->next(ctx, &m));
            if (!more) break;
            arr.append(m.doc);
            if (arr.len() + b.len() > bson::kMaxUserDocumentSize) {
                return Status(ErrorCodes::BSONObjectTooLarge,
                              "document constructed by $facet is " +
                                  std::to_string(arr.len() + b.len()) +
                                  " bytes, which exceeds the limit of 16777216 bytes");
            }
        }
        b.appendArray(facet.name, arr.arr());
    }
    *out = WorkingMember();
    out->doc = b.obj();
    out->hasDoc = true;
    return true;
}

void FacetStage::appendDetails(bson::BsonBuilder& b, bool) const { b.append("$facet", _spec); }

// ---- Parsers.

namespace {

using bson::BsonType;

StatusWith<std::unique_ptr<PlanStage>> parseLookup(const StageParseContext& ctx,
                                                   std::unique_ptr<PlanStage> input) {
    const bson::BsonElement& st = ctx.spec();
    if (st.type() != BsonType::Object) {
        return Status(ErrorCodes::FailedToParse,
                      "the $lookup specification must be an Object, but found " +
                          std::string(bson::typeName(st.type())));
    }
    LookupStage::Spec spec;
    spec.specForExplain = st.objValue().copy();
    bson::BsonElement from, let, pipeline;
    bool hasLocal = false, hasForeign = false;
    for (auto f : spec.specForExplain) {
        std::string_view n = f.fieldName();
        auto needString = [&](std::string* out) -> Status {
            if (f.type() != BsonType::String) {
                return Status(
                    ErrorCodes::FailedToParse,
                    "$lookup argument '" + std::string(n) + ": " + f.toString(false) +
                        "' must be a string, found type: " + std::string(bson::typeName(f.type())));
            }
            *out = std::string(f.stringValue());
            return Status::OK();
        };
        if (n == "from") {
            from = f;
        } else if (n == "as") {
            TRY_STATUS(needString(&spec.as));
        } else if (n == "localField") {
            TRY_STATUS(needString(&spec.localField));
            hasLocal = true;
        } else if (n == "foreignField") {
            TRY_STATUS(needString(&spec.foreignField));
            hasForeign = true;
        } else if (n == "let") {
            if (f.type() != BsonType::Object) {
                return Status(ErrorCodes::FailedToParse,
                              "$lookup argument 'let' must be an object, is type " +
                                  std::string(bson::typeName(f.type())));
            }
            let = f;
        } else if (n == "pipeline") {
            if (f.type() != BsonType::Array) {
                return Status(ErrorCodes::FailedToParse,
                              "$lookup argument 'pipeline' must be an array, is type " +
                                  std::string(bson::typeName(f.type())));
            }
            pipeline = f;
        } else {
            return Status(ErrorCodes::FailedToParse,
                          "unknown argument to $lookup: " + std::string(n));
        }
    }
    if (spec.as.empty()) {
        return Status(ErrorCodes::FailedToParse, "must specify 'as' field for a $lookup");
    }
    if (hasLocal != hasForeign || (!hasLocal && pipeline.eoo())) {
        return Status(ErrorCodes::FailedToParse,
                      "$lookup requires either 'pipeline' or both 'localField' and "
                      "'foreignField' to be specified");
    }
    if (!let.eoo() && pipeline.eoo()) {
        return Status(ErrorCodes::FailedToParse, "$lookup with 'let' must also specify 'pipeline'");
    }
    if (spec.as[0] == '$') {
        return Status(16410, "FieldPath field names may not start with '$'.");
    }
    if (hasLocal && (spec.localField.empty() || spec.foreignField.empty())) {
        return Status(40352, "FieldPath cannot be constructed with empty string");
    }
    ResolvedNamespace resolved;
    if (from.eoo()) {
        bool startsWithDocuments = false;
        if (!pipeline.eoo()) {
            bson::BsonElement s0 = pipeline.objValue().firstElement();
            startsWithDocuments = s0.type() == BsonType::Object &&
                                  s0.objValue().firstElement().fieldName() == "$documents";
        }
        if (!startsWithDocuments) {
            return Status(ErrorCodes::FailedToParse, "must specify 'from' field for a $lookup");
        }
        resolved.ns = ctx.db + ".$cmd.aggregate";
    } else {
        ASSIGN_OR_RETURN(spec.fromNs, targetNamespace(from, ctx.db, "$lookup.from",
                                                      static_cast<int>(ErrorCodes::FailedToParse)));
        ASSIGN_OR_RETURN(resolved,
                         resolveNamespace(*ctx.pctx.engine, spec.fromNs, ctx.pctx.transaction));
    }
    if (!let.eoo()) {
        ASSIGN_OR_RETURN(spec.let, parseLet(let));
    }
    if (!pipeline.eoo()) spec.pipeline = pipeline.objValue().copy();
    SubPipelineFactory factory = subPipelineFactory(ctx.pctx, resolved, BuildContext::kLookup);
    // Parse the sub-pipeline once now, so that its errors do not depend on the data.
    {
        std::map<std::string, bson::BsonObj> nulls;
        for (const auto& [name, e] : spec.let) nulls[name] = AggValue::null().holder;
        bson::BsonObj probe = spec.pipeline.isEmpty()
                                  ? bson::BsonObj(bson::BsonBuilder().obj())
                                  : substituteVariables(spec.pipeline, true, nulls);
        TRY_STATUS(factory(probe).getStatus());
    }
    return stack(std::move(input),
                 std::make_unique<LookupStage>(std::move(spec), resolved.coll, std::move(factory)));
}

StatusWith<std::unique_ptr<PlanStage>> parseUnionWith(const StageParseContext& ctx,
                                                      std::unique_ptr<PlanStage> input) {
    const bson::BsonElement& st = ctx.spec();
    bson::BsonElement coll = st;
    bson::BsonElement pipeline;
    if (st.type() == BsonType::Object) {
        coll = bson::BsonElement();
        for (auto f : st.objValue()) {
            if (f.fieldName() == "coll") {
                coll = f;
            } else if (f.fieldName() == "pipeline") {
                if (f.type() != BsonType::Array) {
                    return Status(ErrorCodes::TypeMismatch,
                                  "BSON field '$unionWith.pipeline' is the wrong type '" +
                                      std::string(bson::typeName(f.type())) +
                                      "', expected type 'array'");
                }
                pipeline = f;
            } else {
                return Status(40415, "BSON field '$unionWith." + std::string(f.fieldName()) +
                                         "' is an unknown field.");
            }
        }
        if (coll.eoo()) {
            return Status(40414, "BSON field '$unionWith.coll' is missing but a required field");
        }
    } else if (st.type() != BsonType::String) {
        return Status(ErrorCodes::FailedToParse,
                      "the $unionWith stage specification must be an object or string, but "
                      "found " +
                          std::string(bson::typeName(st.type())));
    }
    ASSIGN_OR_RETURN(std::string ns, targetNamespace(coll, ctx.db, "$unionWith",
                                                     static_cast<int>(ErrorCodes::TypeMismatch)));
    ASSIGN_OR_RETURN(ResolvedNamespace resolved,
                     resolveNamespace(*ctx.pctx.engine, ns, ctx.pctx.transaction));
    SubPipelineFactory factory = subPipelineFactory(ctx.pctx, resolved, BuildContext::kUnionWith);
    bson::BsonObj stages = pipeline.eoo() ? bson::BsonBuilder().obj() : pipeline.objValue().copy();
    ASSIGN_OR_RETURN(auto other, factory(stages));
    return stack(std::move(input),
                 std::make_unique<UnionWithStage>(
                     std::move(other), resolved.coll,
                     st.type() == BsonType::Object ? st.objValue().copy() : bson::BsonObj()));
}

StatusWith<std::unique_ptr<PlanStage>> parseFacet(const StageParseContext& ctx,
                                                  std::unique_ptr<PlanStage> input) {
    const bson::BsonElement& st = ctx.spec();
    if (st.type() != BsonType::Object || st.objValue().isEmpty()) {
        return Status(40169, "the $facet specification must be a non-empty object, but found: " +
                                 st.toString(false));
    }
    auto feed = std::make_shared<std::vector<bson::BsonObj>>();
    std::vector<FacetStage::Facet> facets;
    for (auto f : st.objValue()) {
        std::string_view name = f.fieldName();
        if (name.empty() || name[0] == '$' || name.find('.') != std::string_view::npos) {
            return Status(40173,
                          "$facet pipeline names must not be empty, start with '$' or "
                          "contain '.': " +
                              std::string(name));
        }
        if (f.type() != BsonType::Array) {
            return Status(40170, "arguments to $facet must be arrays, " + std::string(name) +
                                     " is type " + std::string(bson::typeName(f.type())));
        }
        ASSIGN_OR_RETURN(auto root, buildSubPipeline(ctx.pctx, ctx.coll, ctx.ns,
                                                     BuildContext::kFacet, feed, f.objValue()));
        facets.push_back(FacetStage::Facet{std::string(name), std::move(root)});
    }
    return stack(std::move(input),
                 std::make_unique<FacetStage>(std::move(facets), feed, st.objValue().copy()));
}

}  // namespace

namespace stages {
const StageDescriptor kLookup{"$lookup", {.readsOtherCollections = true}, &parseLookup};
const StageDescriptor kUnionWith{"$unionWith", {.readsOtherCollections = true}, &parseUnionWith};
const StageDescriptor kFacet{"$facet", {.allowedInFacet = false}, &parseFacet};
}  // namespace stages

}  // namespace tessera::command::exec
