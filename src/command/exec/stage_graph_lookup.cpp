// $graphLookup.

#include <map>
#include <set>

#include "bson/compare.h"
#include "bson/validate.h"
#include "command/exec/pipeline_stage_list.h"
#include "command/exec/stage_extra.h"
#include "query/matcher.h"

namespace tessera::command::exec {

using bson::BsonType;

namespace {

struct ValueLess {
    bool operator()(const AggValue& a, const AggValue& b) const {
        return bson::compareElementValues(a.element(), b.element()) < 0;
    }
};

void visitPath(const bson::BsonElement& e, const std::vector<std::string_view>& parts, size_t i,
               std::vector<AggValue>& out) {
    if (i == parts.size()) {
        if (e.type() == BsonType::Array) {
            for (auto x : e.objValue()) out.push_back(AggValue::of(x));
        } else {
            out.push_back(AggValue::of(e));
        }
        return;
    }
    if (e.type() == BsonType::Object) {
        bson::BsonElement next = e.objValue().getField(parts[i]);
        if (!next.eoo()) visitPath(next, parts, i + 1, out);
    } else if (e.type() == BsonType::Array) {
        for (auto x : e.objValue()) {
            if (x.type() == BsonType::Object) visitPath(x, parts, i, out);
        }
    }
}

std::vector<std::string_view> splitPath(std::string_view path) {
    std::vector<std::string_view> parts;
    size_t start = 0;
    while (true) {
        size_t dot = path.find('.', start);
        parts.push_back(path.substr(start, dot == path.npos ? path.npos : dot - start));
        if (dot == path.npos) break;
        start = dot + 1;
    }
    return parts;
}

Status checkFieldPath(std::string_view path) {
    for (auto p : splitPath(path)) {
        if (p.empty()) return Status(15998, "FieldPath field names may not be empty strings.");
        if (p[0] == '$') {
            return Status(16410,
                          "FieldPath field names may not start with '$'. Consider using "
                          "$getField or $setField.");
        }
    }
    return Status::OK();
}

}  // namespace

std::vector<AggValue> valuesAtPath(bson::BsonView doc, std::string_view path) {
    std::vector<AggValue> out;
    auto parts = splitPath(path);
    bson::BsonElement first = doc.getField(parts[0]);
    if (!first.eoo()) visitPath(first, parts, 1, out);
    return out;
}

StatusWith<GraphLookupStage::Spec> GraphLookupStage::parseSpec(const bson::BsonElement& st,
                                                               const std::string& db) {
    if (st.type() != BsonType::Object) {
        return Status(ErrorCodes::FailedToParse,
                      "the $graphLookup stage specification must be an object, but found " +
                          std::string(bson::typeName(st.type())));
    }
    Spec spec;
    spec.specForExplain = st.objValue().copy();
    bool haveFrom = false;
    for (auto f : spec.specForExplain) {
        std::string_view n = f.fieldName();
        if (n == "startWith") {
            ASSIGN_OR_RETURN(spec.startWith, StageExpression::parse(f));
            continue;
        }
        if (n == "maxDepth") {
            if (!f.isNumber()) {
                return Status(40100, "maxDepth must be numeric, found type: " +
                                         std::string(bson::typeName(f.type())));
            }
            int64_t d = f.numberLong();
            if (d < 0 || f.numberDouble() < 0) {
                return Status(
                    40101, "maxDepth requires a nonnegative argument, found: " + f.toString(false));
            }
            if (!f.isIntegral()) {
                return Status(40102, "maxDepth could not be represented as a long long: " +
                                         f.toString(false));
            }
            spec.maxDepth = d;
            continue;
        }
        if (n == "restrictSearchWithMatch") {
            if (f.type() != BsonType::Object) {
                return Status(40185, "restrictSearchWithMatch must be an object, found " +
                                         std::string(bson::typeName(f.type())));
            }
            auto m = query::Matcher::parse(f.objValue());
            if (!m.isOK()) {
                return Status(m.getStatus().code(),
                              "Failed to parse 'restrictSearchWithMatch' option to $graphLookup "
                              ":: caused by :: " +
                                  m.getStatus().reason());
            }
            spec.restrictSearchWithMatch = f.objValue().copy();
            continue;
        }
        if (n == "from" || n == "as" || n == "connectFromField" || n == "connectToField" ||
            n == "depthField") {
            if (f.type() != BsonType::String) {
                if (n == "from") {
                    return Status(ErrorCodes::FailedToParse,
                                  "$graphLookup 'from' field must be a string, but found " +
                                      std::string(bson::typeName(f.type())));
                }
                return Status(40103, "expected string as argument for " + std::string(n) +
                                         ", found: " + std::string(bson::typeName(f.type())));
            }
            std::string v(f.stringValue());
            if (n == "from") {
                if (v.empty() || v.find('$') != v.npos || v.find('\0') != v.npos) {
                    return Status(ErrorCodes::InvalidNamespace,
                                  "invalid $graphLookup namespace: " + db + "." + v);
                }
                spec.fromNs = db + "." + v;
                haveFrom = true;
            } else if (n == "as") {
                spec.as = v;
            } else if (n == "connectFromField") {
                spec.connectFromField = v;
            } else if (n == "connectToField") {
                spec.connectToField = v;
            } else {
                TRY_STATUS(checkFieldPath(v));
                spec.depthField = v;
            }
            continue;
        }
        return Status(40104, "Unknown argument to $graphLookup: " + std::string(n));
    }
    if (!haveFrom || spec.as.empty() || !spec.startWith || spec.connectFromField.empty() ||
        spec.connectToField.empty()) {
        return Status(40105,
                      "$graphLookup requires 'from', 'as', 'startWith', 'connectFromField', and "
                      "'connectToField' to be specified.");
    }
    TRY_STATUS(checkFieldPath(spec.as));
    TRY_STATUS(checkFieldPath(spec.connectFromField));
    TRY_STATUS(checkFieldPath(spec.connectToField));
    return spec;
}

StatusWith<std::vector<bson::BsonObj>> GraphLookupStage::query(
    ExecContext& ctx, const std::vector<AggValue>& values) {
    // {$match: {$and: [restrictSearchWithMatch, {connectToField: {$in: values}},
    //                  {connectToField: {$exists: true}} when null is looked for]}}
    bool matchNull = false;
    bson::BsonBuilder m;
    m.startObject("$match").startArray("$and");
    int k = 0;
    if (!_spec.restrictSearchWithMatch.isEmpty()) {
        m.append(std::to_string(k++), _spec.restrictSearchWithMatch);
    }
    m.startObject(std::to_string(k++)).startObject(_spec.connectToField).startArray("$in");
    int i = 0;
    for (const auto& v : values) {
        matchNull = matchNull || v.element().type() == BsonType::Null ||
                    v.element().type() == BsonType::Undefined;
        m.appendElementAs(v.element(), std::to_string(i++));
    }
    m.end().end().end();
    if (matchNull) {
        m.startObject(std::to_string(k++))
            .startObject(_spec.connectToField)
            .append("$exists", true)
            .end()
            .end();
    }
    m.end().end();
    bson::BsonArrayBuilder pipeline;
    pipeline.append(m.obj());
    ASSIGN_OR_RETURN(std::unique_ptr<PlanStage> root, _factory(pipeline.arr()));
    ExecContext sub;
    sub.opCtx = ctx.opCtx;
    sub.snapshot = ctx.snapshot;
    sub.collection = _foreign;
    std::vector<bson::BsonObj> docs;
    WorkingMember wm;
    while (true) {
        ASSIGN_OR_RETURN(bool got, root->next(sub, &wm));
        if (!got) break;
        TRY_STATUS(ctx.checkForInterrupt());
        docs.push_back(wm.doc);
    }
    _stats.docsExamined += root->stats().docsExamined;
    return docs;
}

StatusWith<bool> GraphLookupStage::doNext(ExecContext& ctx, WorkingMember* out) {
    ASSIGN_OR_RETURN(bool more, _child->next(ctx, out));
    if (!more) return false;
    ASSIGN_OR_RETURN(AggValue start, _spec.startWith->evaluate(out->doc));
    std::set<AggValue, ValueLess> frontier;
    if (!start.missing()) {
        if (start.element().type() == BsonType::Array) {
            for (auto e : start.element().objValue()) frontier.insert(AggValue::of(e));
        } else {
            frontier.insert(start);
        }
    }
    std::set<AggValue, ValueLess> queried;
    std::map<AggValue, size_t, ValueLess> visited;  // _id -> position in `found`
    std::vector<bson::BsonObj> found;
    size_t bytes = 0;
    int64_t depth = 0;
    bool again = false;
    do {
        again = false;
        std::vector<AggValue> values;
        for (const auto& v : frontier) {
            if (queried.insert(v).second) values.push_back(v);
        }
        std::set<AggValue, ValueLess> next;
        if (!values.empty()) {
            ASSIGN_OR_RETURN(auto docs, query(ctx, values));
            for (auto& doc : docs) {
                bson::BsonElement id = doc.getField("_id");
                if (id.eoo()) {
                    return Status(40271, "Documents in the '" + _spec.fromNs +
                                             "' namespace must contain an _id for "
                                             "de-duplication in $graphLookup");
                }
                AggValue idv = AggValue::of(id);
                if (visited.count(idv)) continue;
                again = true;
                for (auto& v : valuesAtPath(doc, _spec.connectFromField)) next.insert(v);
                if (_depthSetter) {
                    bson::BsonBuilder d;
                    d.appendInt64("", depth);
                    bson::BsonObj h = d.obj();
                    doc = _depthSetter->applySet(doc, h.firstElement());
                }
                bytes += doc.size() + idv.holder.size();
                if (bytes > kMaxBlockingMemoryBytes) {
                    return Status(40099, "$graphLookup reached maximum memory consumption");
                }
                visited.emplace(std::move(idv), found.size());
                found.push_back(std::move(doc));
            }
        }
        frontier = std::move(next);
        ++depth;
    } while (again && (!_spec.maxDepth || depth <= *_spec.maxDepth));

    bson::BsonArrayBuilder arr;
    for (const auto& d : found) arr.append(d);
    if (arr.len() > bson::kMaxUserDocumentSize) {
        return Status(ErrorCodes::BSONObjectTooLarge,
                      "$graphLookup result of " + _spec.fromNs + " exceeds 16793600 bytes");
    }
    bson::BsonBuilder holder;
    holder.appendArray("", arr.arr());
    bson::BsonObj h = holder.obj();
    out->doc = _setter->applySet(out->doc, h.firstElement());
    out->indexKey.clear();
    return true;
}

void GraphLookupStage::appendDetails(bson::BsonBuilder& b, bool) const {
    b.append("$graphLookup", _spec.specForExplain);
}

namespace {
// Runs on the merging node (like $lookup): the `from` collection is read through a sub-pipeline.
StatusWith<std::unique_ptr<PlanStage>> parseGraphLookup(const StageParseContext& ctx,
                                                        std::unique_ptr<PlanStage> input) {
    ASSIGN_OR_RETURN(auto spec, GraphLookupStage::parseSpec(ctx.spec(), ctx.db));
    ASSIGN_OR_RETURN(auto resolved,
                     resolveNamespace(*ctx.pctx.engine, spec.fromNs, ctx.pctx.transaction));
    SubPipelineFactory factory = subPipelineFactory(ctx.pctx, resolved, BuildContext::kLookup);
    return stack(std::move(input), std::make_unique<GraphLookupStage>(
                                       std::move(spec), resolved.coll, std::move(factory)));
}
}  // namespace

namespace stages {
const StageDescriptor kGraphLookup{
    "$graphLookup", {.readsOtherCollections = true}, &parseGraphLookup};
}  // namespace stages

}  // namespace tessera::command::exec
