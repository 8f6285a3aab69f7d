#include "command/exec/agg_stages.h"

#include <algorithm>
#include <random>

#include "bson/compare.h"
#include "command/exec/pipeline_stage_list.h"
#include "command/exec/query_adapters.h"
#include "command/exec/transform_stages.h"

namespace tessera::command::exec {

using bson::BsonType;

namespace {

struct AggValueLess {
    bool operator()(const AggValue& a, const AggValue& b) const {
        return bson::compareElementValues(a.element(), b.element()) < 0;
    }
};

}  // namespace

StatusWith<AccumulatorSpec> parseAccumulatorField(const bson::BsonElement& f) {
    std::string_view name = f.fieldName();
    if (name.starts_with("$")) {
        return Status(40236,
                      "The field name '" + std::string(name) + "' cannot be an operator name");
    }
    if (name.find('.') != std::string_view::npos) {
        return Status(40235, "The field name '" + std::string(name) + "' cannot contain '.'");
    }
    if (f.type() != BsonType::Object || f.objValue().nFields() != 1) {
        return Status(40238, "The field '" + std::string(name) + "' must specify one accumulator");
    }
    bson::BsonElement acc = f.objValue().firstElement();
    if (!query::Accumulator::isAccumulator(acc.fieldName())) {
        return Status(15952, "unknown group operator '" + std::string(acc.fieldName()) + "'");
    }
    AccumulatorSpec a{std::string(name), std::string(acc.fieldName()), nullptr};
    if (a.op == "$count") {
        if (acc.type() != BsonType::Object || !acc.objValue().isEmpty()) {
            return Status(ErrorCodes::TypeMismatch, "$count takes no arguments, i.e. $count:{}");
        }
    } else {
        ASSIGN_OR_RETURN(a.arg, StageExpression::parse(acc));
    }
    return a;
}

Status GroupStage::parseAccumulators(GroupStage* stage, bson::BsonView spec, bool allowId) {
    for (auto f : spec) {
        if (f.fieldName() == "_id" && allowId) {
            ASSIGN_OR_RETURN(stage->_id, StageExpression::parse(f));
            continue;
        }
        ASSIGN_OR_RETURN(AccumulatorSpec a, parseAccumulatorField(f));
        stage->_accs.push_back(std::move(a));
    }
    return Status::OK();
}

StatusWith<std::unique_ptr<GroupStage>> GroupStage::parse(const bson::BsonElement& spec) {
    if (spec.type() != BsonType::Object) {
        return Status(15947, "a group's fields must be specified in an object");
    }
    std::unique_ptr<GroupStage> stage(new GroupStage());
    stage->_spec = spec.objValue().copy();
    TRY_STATUS(parseAccumulators(stage.get(), stage->_spec, true));
    if (!stage->_id) {
        return Status(15955, "a group specification must include an _id");
    }
    return stage;
}

StatusWith<std::unique_ptr<GroupStage>> GroupStage::make(StageExpressionPtr id, bson::BsonView accs,
                                                         bson::BsonObj specForExplain,
                                                         std::string name) {
    std::unique_ptr<GroupStage> stage(new GroupStage(std::move(name)));
    stage->_spec = std::move(specForExplain);
    stage->_id = std::move(id);
    TRY_STATUS(parseAccumulators(stage.get(), accs, false));
    return stage;
}

Status GroupStage::load(ExecContext& ctx) {
    std::map<AggValue, size_t, AggValueLess> index;
    size_t bytes = 0;
    WorkingMember m;
    while (true) {
        ASSIGN_OR_RETURN(bool more, _child->next(ctx, &m));
        if (!more) break;
        TRY_STATUS(ctx.checkForInterrupt());
        ASSIGN_OR_RETURN(AggValue key, _id->evaluate(m.doc));
        if (key.missing()) key = AggValue::null();
        auto it = index.find(key);
        bool newGroup = false;
        if (it == index.end()) {
            it = index.emplace(key, _groups.size()).first;
            Group fresh{key, {}};
            fresh.accs.reserve(_accs.size());
            for (const AccumulatorSpec& spec : _accs) {
                ASSIGN_OR_RETURN(auto acc, query::Accumulator::make(spec.op));
                bytes += acc->memoryUsage();
                fresh.accs.push_back(std::move(acc));
            }
            bytes += key.holder.size() + sizeof(Group);
            _groups.push_back(std::move(fresh));
            newGroup = true;
        }
        Group& g = _groups[it->second];
        for (size_t i = 0; i < _accs.size(); ++i) {
            const AccumulatorSpec& spec = _accs[i];
            query::Accumulator& acc = *g.accs[i];
            query::Value v;  // missing: $count ignores its input
            if (spec.arg) {
                ASSIGN_OR_RETURN(AggValue av, spec.arg->evaluate(m.doc));
                v = av.toValue();
            }
            size_t before = acc.memoryUsage();
            TRY_STATUS(acc.process(v));
            size_t after = acc.memoryUsage();
            if (after > before) bytes += after - before;
            // Accumulators holding a single value ($first, $min, ...) report a fixed size:
            // count the value they keep once per group.
            if (newGroup && after == before) bytes += v.holder().size();
        }
        if (bytes > kMaxBlockingMemoryBytes) {
            return Status(ErrorCodes::QueryExceededMemoryLimitNoDiskUseAllowed,
                          "Exceeded memory limit for $group, but didn't allow external sort. "
                          "Pass allowDiskUse:true to opt in.");
        }
    }
    return Status::OK();
}

StatusWith<bool> GroupStage::doNext(ExecContext& ctx, WorkingMember* out) {
    if (!_loaded) {
        TRY_STATUS(load(ctx));
        _loaded = true;
    }
    if (_pos >= _groups.size()) return false;
    Group& g = _groups[_pos++];
    bson::BsonBuilder b;
    b.appendElementAs(g.key.element(), "_id");
    for (size_t i = 0; i < _accs.size(); ++i) {
        query::Value v = g.accs[i]->finish();
        if (v.missing()) v = query::Value::null();
        v.appendTo(b, _accs[i].field);
    }
    out->recordKey.clear();
    out->indexKey.clear();
    out->doc = b.obj();
    out->hasDoc = true;
    out->details.reset();
    return true;
}

void GroupStage::appendDetails(bson::BsonBuilder& b, bool) const { b.append("groupSpec", _spec); }

StatusWith<bool> CountStage::doNext(ExecContext& ctx, WorkingMember* out) {
    if (_done) return false;
    _done = true;
    int64_t n = 0;
    WorkingMember m;
    while (true) {
        ASSIGN_OR_RETURN(bool more, _child->next(ctx, &m));
        if (!more) break;
        ++n;
    }
    if (n == 0) return false;
    bson::BsonBuilder b;
    b.appendNumber(_field, n);
    *out = WorkingMember();
    out->doc = b.obj();
    out->hasDoc = true;
    return true;
}

StatusWith<std::unique_ptr<UnwindStage>> UnwindStage::parse(const bson::BsonElement& spec) {
    std::unique_ptr<UnwindStage> stage(new UnwindStage());
    bson::BsonElement path = spec;
    if (spec.type() == BsonType::Object) {
        path = spec.objValue()["path"];
        for (auto f : spec.objValue()) {
            if (f.fieldName() == "path") continue;
            if (f.fieldName() == "includeArrayIndex" && f.type() == BsonType::String) {
                stage->_includeArrayIndex = std::string(f.stringValue());
            } else if (f.fieldName() == "preserveNullAndEmptyArrays") {
                stage->_preserveNullAndEmpty = f.trueValue();
            } else {
                return Status(28811, "unrecognized option to $unwind stage");
            }
        }
    } else if (spec.type() != BsonType::String) {
        return Status(15981,
                      "expected either a string or an object as specification for $unwind "
                      "stage, got " +
                          std::string(bson::typeName(spec.type())));
    }
    if (path.type() != BsonType::String || !path.stringValue().starts_with("$")) {
        return Status(28818, "path option to $unwind stage should be prefixed with a '$'");
    }
    stage->_path = std::string(path.stringValue().substr(1));
    if (stage->_path.empty()) {
        return Status(28818, "path option to $unwind stage should be prefixed with a '$'");
    }
    if (!stage->_includeArrayIndex.empty() && stage->_includeArrayIndex[0] == '$') {
        return Status(28822,
                      "includeArrayIndex option to $unwind stage should not be prefixed with a "
                      "'$': " +
                          stage->_includeArrayIndex);
    }
    return stage;
}

StatusWith<bool> UnwindStage::doNext(ExecContext& ctx, WorkingMember* out) {
    while (true) {
        if (_pendingPos < _pending.size()) {
            *out = WorkingMember();
            out->doc = std::move(_pending[_pendingPos++]);
            out->hasDoc = true;
            return true;
        }
        _pending.clear();
        _pendingPos = 0;
        ASSIGN_OR_RETURN(bool more, _child->next(ctx, &_current));
        if (!more) return false;
        bson::BsonObj doc = _current.doc;
        bson::BsonElement v = getNestedField(doc, _path);
        // The document with `_path` replaced by `e` (removed when e is missing).
        auto rebuild = [&](const bson::BsonElement& e, std::optional<int64_t> idx) {
            bson::BsonObj d = v.eoo() ? doc : setNestedField(doc, _path, e);
            if (!_includeArrayIndex.empty()) {
                bson::BsonBuilder ib;
                if (idx) {
                    ib.appendInt64("", *idx);
                } else {
                    ib.appendNull("");
                }
                bson::BsonObj holder = ib.obj();
                d = setNestedField(d, _includeArrayIndex, holder.firstElement());
            }
            _pending.push_back(std::move(d));
        };
        if (v.type() == BsonType::Array) {
            int64_t i = 0;
            for (auto e : v.objValue()) rebuild(e, i++);
            // An empty array is kept (without the field) when preserving.
            if (i == 0 && _preserveNullAndEmpty) rebuild(bson::BsonElement(), std::nullopt);
        } else if (v.eoo() || v.isNull()) {
            if (_preserveNullAndEmpty) rebuild(v, std::nullopt);
        } else {
            rebuild(v, std::nullopt);
        }
    }
}

StatusWith<bool> AggProjectionStage::doNext(ExecContext& ctx, WorkingMember* out) {
    ASSIGN_OR_RETURN(bool more, _child->next(ctx, out));
    if (!more) return false;
    ASSIGN_OR_RETURN(bson::BsonObj doc, _proj->apply(out->doc));
    out->doc = std::move(doc);
    out->indexKey.clear();
    return true;
}

void AggProjectionStage::appendDetails(bson::BsonBuilder& b, bool) const {
    b.append(_stageName, _spec);
}

StatusWith<bool> ReplaceRootStage::doNext(ExecContext& ctx, WorkingMember* out) {
    ASSIGN_OR_RETURN(bool more, _child->next(ctx, out));
    if (!more) return false;
    ASSIGN_OR_RETURN(AggValue v, _expr->evaluate(out->doc));
    if (v.missing() || v.element().type() != BsonType::Object) {
        return Status(40228,
                      "'newRoot' expression must evaluate to an object, but resulting value "
                      "was: " +
                          (v.missing() ? std::string("MISSING") : v.element().toString(false)) +
                          ". Type of resulting value: '" +
                          (v.missing() ? std::string("missing")
                                       : std::string(bson::typeName(v.element().type()))) +
                          "'. Input document: " + out->doc.toJson());
    }
    out->doc = v.element().objValue().copy();
    out->recordKey.clear();
    out->indexKey.clear();
    return true;
}

void ReplaceRootStage::appendDetails(bson::BsonBuilder& b, bool) const {
    b.append("newRoot", _spec);
}

StatusWith<bool> SampleStage::doNext(ExecContext& ctx, WorkingMember* out) {
    if (!_loaded) {
        thread_local std::mt19937_64 rng{std::random_device{}()};
        WorkingMember m;
        int64_t seen = 0;
        size_t bytes = 0;
        while (true) {
            ASSIGN_OR_RETURN(bool more, _child->next(ctx, &m));
            if (!more) break;
            TRY_STATUS(ctx.checkForInterrupt());
            ++seen;
            if (static_cast<int64_t>(_docs.size()) < _size) {
                bytes += m.doc.size();
                _docs.push_back(m.doc);
            } else {
                std::uniform_int_distribution<int64_t> pick(0, seen - 1);
                int64_t j = pick(rng);
                if (j < _size) _docs[j] = m.doc;
            }
            if (bytes > kMaxBlockingMemoryBytes) {
                return Status(ErrorCodes::QueryExceededMemoryLimitNoDiskUseAllowed,
                              "Exceeded memory limit for $sample, but didn't allow external "
                              "sort. Pass allowDiskUse:true to opt in.");
            }
        }
        std::shuffle(_docs.begin(), _docs.end(), rng);
        _loaded = true;
    }
    if (_pos >= _docs.size()) return false;
    *out = WorkingMember();
    out->doc = std::move(_docs[_pos++]);
    out->hasDoc = true;
    return true;
}

void SampleStage::appendDetails(bson::BsonBuilder& b, bool) const { b.appendInt64("size", _size); }

namespace {

class BucketKeyExpression final : public StageExpression {
  public:
    BucketKeyExpression(StageExpressionPtr groupBy, std::vector<bson::BsonObj> boundaries,
                        std::optional<bson::BsonObj> def)
        : _groupBy(std::move(groupBy)), _bounds(std::move(boundaries)), _default(std::move(def)) {}

    StatusWith<AggValue> evaluate(bson::BsonView root) const override {
        ASSIGN_OR_RETURN(AggValue v, _groupBy->evaluate(root));
        bson::BsonElement e = v.missing() ? AggValue::null().element() : v.element();
        AggValue nullHolder;
        if (v.missing()) nullHolder = AggValue::null();
        bson::BsonElement val = v.missing() ? nullHolder.element() : e;
        for (size_t i = 0; i + 1 < _bounds.size(); ++i) {
            if (bson::compareElementValues(val, _bounds[i].firstElement()) >= 0 &&
                bson::compareElementValues(val, _bounds[i + 1].firstElement()) < 0) {
                return AggValue{_bounds[i]};
            }
        }
        if (_default) return AggValue{*_default};
        return Status(40066,
                      "$switch could not find a matching branch for an input, and no default "
                      "was specified.");
    }

  private:
    StageExpressionPtr _groupBy;
    std::vector<bson::BsonObj> _bounds;  // each {"": boundary}
    std::optional<bson::BsonObj> _default;
};

}  // namespace

StatusWith<StageExpressionPtr> makeBucketKey(StageExpressionPtr groupBy,
                                             std::vector<bson::BsonObj> boundaries,
                                             std::optional<bson::BsonObj> defaultValue) {
    return {std::make_shared<BucketKeyExpression>(std::move(groupBy), std::move(boundaries),
                                                  std::move(defaultValue))};
}

StatusWith<bool> BufferSourceStage::doNext(ExecContext&, WorkingMember* out) {
    if (_pos >= _docs->size()) return false;
    *out = WorkingMember();
    out->doc = (*_docs)[_pos++];
    out->hasDoc = true;
    return true;
}

// ---- Pipeline stages.

namespace {

using bson::BsonType;

StatusWith<std::unique_ptr<PlanStage>> parseProject(const StageParseContext& ctx,
                                                    std::unique_ptr<PlanStage> input) {
    const bson::BsonElement& st = ctx.spec();
    if (st.type() != BsonType::Object) {
        return Status(15969, "$project specification must be an object");
    }
    bson::BsonObj spec = st.objValue().copy();
    ASSIGN_OR_RETURN(auto proj, AggProjection::parseProject(spec));
    return stack(std::move(input),
                 std::make_unique<AggProjectionStage>(std::move(proj), "transformBy", spec));
}

// $addFields and its alias $set.
StatusWith<std::unique_ptr<PlanStage>> parseAddFields(const StageParseContext& ctx,
                                                      std::unique_ptr<PlanStage> input) {
    const bson::BsonElement& st = ctx.spec();
    std::string_view name = st.fieldName();
    if (st.type() != BsonType::Object) {
        return Status(40272, std::string(name) + " specification stage must be an object, got " +
                                 std::string(bson::typeName(st.type())));
    }
    bson::BsonObj spec = st.objValue().copy();
    ASSIGN_OR_RETURN(auto proj, AggProjection::parseAddFields(spec, name));
    return stack(std::move(input),
                 std::make_unique<AggProjectionStage>(std::move(proj), "transformBy", spec));
}

StatusWith<std::unique_ptr<PlanStage>> parseUnset(const StageParseContext& ctx,
                                                  std::unique_ptr<PlanStage> input) {
    ASSIGN_OR_RETURN(auto proj, AggProjection::parseUnset(ctx.spec()));
    bson::BsonBuilder sb;
    sb.appendElementAs(ctx.spec(), "$unset");
    return stack(std::move(input),
                 std::make_unique<AggProjectionStage>(std::move(proj), "transformBy", sb.obj()));
}

// $replaceRoot {newRoot: expr} and $replaceWith expr.
StatusWith<std::unique_ptr<PlanStage>> parseReplaceRoot(const StageParseContext& ctx,
                                                        std::unique_ptr<PlanStage> input) {
    const bson::BsonElement& st = ctx.spec();
    bson::BsonElement newRoot = st;
    if (st.fieldName() == "$replaceRoot") {
        if (st.type() != BsonType::Object) {
            return Status(40229,
                          "expected an object as specification for $replaceRoot stage, got " +
                              std::string(bson::typeName(st.type())));
        }
        newRoot = bson::BsonElement();
        for (auto f : st.objValue()) {
            if (f.fieldName() != "newRoot") {
                return Status(40415, "BSON field '$replaceRoot." + std::string(f.fieldName()) +
                                         "' is an unknown field.");
            }
            newRoot = f;
        }
        if (newRoot.eoo()) {
            return Status(40414,
                          "BSON field '$replaceRoot.newRoot' is missing but a required field");
        }
    }
    ASSIGN_OR_RETURN(auto expr, StageExpression::parse(newRoot));
    bson::BsonBuilder sb;
    sb.appendElementAs(newRoot, "newRoot");
    return stack(std::move(input), std::make_unique<ReplaceRootStage>(std::move(expr), sb.obj()));
}

StatusWith<std::unique_ptr<PlanStage>> parseGroup(const StageParseContext& ctx,
                                                  std::unique_ptr<PlanStage> input) {
    ASSIGN_OR_RETURN(auto group, GroupStage::parse(ctx.spec()));
    return stack(std::move(input), std::move(group));
}

// $sortByCount expr = $group {_id: expr, count: {$sum: 1}} + $sort {count: -1}.
StatusWith<std::unique_ptr<PlanStage>> parseSortByCount(const StageParseContext& ctx,
                                                        std::unique_ptr<PlanStage> input) {
    const bson::BsonElement& st = ctx.spec();
    bool ok = (st.type() == BsonType::String && st.stringValue().starts_with("$")) ||
              (st.type() == BsonType::Object && !st.objValue().isEmpty() &&
               st.objValue().firstElement().fieldName().starts_with("$"));
    if (!ok) {
        return Status(40148,
                      "the sortByCount field must be defined as a $-prefixed path or an "
                      "expression");
    }
    ASSIGN_OR_RETURN(auto key, StageExpression::parse(st));
    bson::BsonBuilder sb;
    sb.appendElementAs(st, "$sortByCount");
    static const bson::BsonObj kCountOne = bson::fromJson(R"({"count": {"$sum": 1}})");
    ASSIGN_OR_RETURN(auto group, GroupStage::make(key, kCountOne, sb.obj(), "SORT_BY_COUNT"));
    static const bson::BsonObj kCountDescending = bson::fromJson(R"({"count": -1})");
    ASSIGN_OR_RETURN(auto fns, makeSortFunctions(kCountDescending));
    return stack(stack(std::move(input), std::move(group)),
                 std::make_unique<SortStage>(std::move(fns), kCountDescending, 0));
}

StatusWith<std::unique_ptr<PlanStage>> parseCount(const StageParseContext& ctx,
                                                  std::unique_ptr<PlanStage> input) {
    const bson::BsonElement& st = ctx.spec();
    if (st.type() != BsonType::String) {
        return Status(40156, "the count field must be a non-empty string");
    }
    std::string_view f = st.stringValue();
    if (f.empty()) return Status(40157, "the count field must be a non-empty string");
    if (f[0] == '$') return Status(40158, "the count field cannot be a $-prefixed path");
    if (f.find('.') != std::string_view::npos) {
        return Status(40160, "the count field cannot contain '.'");
    }
    return stack(std::move(input), std::make_unique<CountStage>(std::string(f)));
}

StatusWith<std::unique_ptr<PlanStage>> parseUnwind(const StageParseContext& ctx,
                                                   std::unique_ptr<PlanStage> input) {
    ASSIGN_OR_RETURN(auto unwind, UnwindStage::parse(ctx.spec()));
    return stack(std::move(input), std::move(unwind));
}

StatusWith<std::unique_ptr<PlanStage>> parseSample(const StageParseContext& ctx,
                                                   std::unique_ptr<PlanStage> input) {
    const bson::BsonElement& st = ctx.spec();
    if (st.type() != BsonType::Object) {
        return Status(28745, "the $sample stage specification must be an object");
    }
    std::optional<int64_t> size;
    for (auto f : st.objValue()) {
        if (f.fieldName() != "size") {
            return Status(28748, "unrecognized option to $sample: " + std::string(f.fieldName()));
        }
        if (!f.isNumber()) return Status(28746, "size argument to $sample must be a number");
        if (f.numberDouble() < 0) {
            return Status(28747, "size argument to $sample must not be negative");
        }
        size = f.numberLong();
    }
    if (!size) return Status(28749, "$sample stage must specify a size");
    return stack(std::move(input), std::make_unique<SampleStage>(*size));
}

constexpr StageConstraints kStreaming{.split = StageSplit::kStreaming};
constexpr StageConstraints kAccumulating{.split = StageSplit::kAccumulate};

}  // namespace

namespace stages {
const StageDescriptor kProject{"$project", kStreaming, &parseProject};
const StageDescriptor kAddFields{"$addFields", kStreaming, &parseAddFields};
const StageDescriptor kSet{"$set", kStreaming, &parseAddFields};
const StageDescriptor kUnset{"$unset", kStreaming, &parseUnset};
const StageDescriptor kReplaceRoot{"$replaceRoot", kStreaming, &parseReplaceRoot};
const StageDescriptor kReplaceWith{"$replaceWith", kStreaming, &parseReplaceRoot};
const StageDescriptor kUnwind{"$unwind", kStreaming, &parseUnwind};
const StageDescriptor kGroup{"$group", kAccumulating, &parseGroup};
const StageDescriptor kSortByCount{"$sortByCount", kAccumulating, &parseSortByCount};
const StageDescriptor kCount{"$count", kAccumulating, &parseCount};
const StageDescriptor kSample{"$sample", {}, &parseSample};
}  // namespace stages

}  // namespace tessera::command::exec
