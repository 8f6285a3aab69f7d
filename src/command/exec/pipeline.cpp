#include "command/exec/pipeline.h"

#include <chrono>

#include "bson/compare.h"
#include "command/exec/agg_stages.h"
#include "command/exec/coll_stats.h"
#include "command/exec/local_sessions.h"
#include "command/exec/query_adapters.h"
#include "command/exec/query_executor.h"
#include "command/exec/query_stages.h"
#include "command/exec/scan_stages.h"
#include "command/exec/stage_extra.h"
#include "command/exec/stage_subpipeline.h"
#include "command/exec/transform_stages.h"
#include "query/matcher.h"
#include "storage/engine.h"

namespace tessera::command::exec {

using bson::BsonType;

namespace {

constexpr std::string_view kSupported[] = {
    "$match",      "$sort",      "$skip",        "$limit",       "$project",
    "$group",      "$count",     "$unwind",      "$collStats",   "$addFields",
    "$set",        "$unset",     "$lookup",      "$out",         "$merge",
    "$facet",      "$bucket",    "$sortByCount", "$replaceRoot", "$replaceWith",
    "$sample",     "$unionWith", "$indexStats",  "$documents",   "$listLocalSessions",
    "$bucketAuto", "$redact",    "$graphLookup"};
constexpr std::string_view kNotYet[] = {"$densify",
                                        "$fill",
                                        "$geoNear",
                                        "$currentOp",
                                        "$listSessions",
                                        "$changeStream",
                                        "$setWindowFields",
                                        "$planCacheStats",
                                        "$search",
                                        "$searchMeta",
                                        "$changeStreamSplitLargeEvent",
                                        "$listSearchIndexes",
                                        "$shardedDataDistribution",
                                        "$vectorSearch",
                                        "$querySettings",
                                        "$listSampledQueries"};
// Stages that produce the input and must come first.
constexpr std::string_view kFirstOnly[] = {"$collStats", "$indexStats", "$documents",
                                           "$listLocalSessions"};
// Stages that work without a collection ({aggregate: 1}).
constexpr std::string_view kCollectionless[] = {"$documents", "$listLocalSessions"};

template <size_t N>
bool contains(const std::string_view (&list)[N], std::string_view name) {
    for (auto s : list) {
        if (s == name) return true;
    }
    return false;
}

StatusWith<int64_t> positiveIntegerArg(const bson::BsonElement& e, int code,
                                       const std::string& what, bool allowZero) {
    if (!e.isNumber() || !e.isIntegral()) {
        return Status(code, "invalid argument to " + what + " stage: " + e.toString(false) +
                                " is not a valid integer");
    }
    int64_t v = e.numberLong();
    if (v < 0 || (!allowZero && v == 0)) {
        return Status(code, allowZero ? "invalid argument to " + what +
                                            " stage: Cannot skip a negative number of documents"
                                      : "the limit must be positive");
    }
    return v;
}

enum class BuildContext { kTop, kFacet, kLookup, kUnionWith, kView, kMergePipeline };

bool isCollectionlessNs(std::string_view ns) { return ns.ends_with(".$cmd.aggregate"); }

std::string dbOfNs(std::string_view ns) { return std::string(ns.substr(0, ns.find('.'))); }

// A namespace argument of $lookup / $unionWith / $out / $merge: "coll" or {db, coll}.
StatusWith<std::string> targetNamespace(const bson::BsonElement& e, const std::string& db,
                                        std::string_view stage, int typeCode) {
    std::string targetDb = db;
    std::string coll;
    if (e.type() == BsonType::String) {
        coll = std::string(e.stringValue());
    } else if (e.type() == BsonType::Object) {
        for (auto f : e.objValue()) {
            if ((f.fieldName() == "db" || f.fieldName() == "coll") &&
                f.type() != BsonType::String) {
                return Status(ErrorCodes::TypeMismatch, "BSON field '" + std::string(stage) + "." +
                                                            std::string(f.fieldName()) +
                                                            "' is the wrong type '" +
                                                            std::string(bson::typeName(f.type())) +
                                                            "', expected type 'string'");
            }
            if (f.fieldName() == "db") {
                targetDb = std::string(f.stringValue());
            } else if (f.fieldName() == "coll") {
                coll = std::string(f.stringValue());
            } else {
                return Status(40415, "BSON field '" + std::string(stage) + "." +
                                         std::string(f.fieldName()) + "' is an unknown field.");
            }
        }
        if (coll.empty()) {
            return Status(40414, "BSON field '" + std::string(stage) +
                                     ".coll' is missing but a "
                                     "required field");
        }
    } else {
        return Status(typeCode, std::string(stage) +
                                    " only supports a string or object argument, not " +
                                    std::string(bson::typeName(e.type())));
    }
    if (coll.empty() || coll.find('$') != std::string::npos || coll.find('\0') != coll.npos ||
        targetDb.empty()) {
        return Status(ErrorCodes::InvalidNamespace,
                      "Invalid " + std::string(stage) + " namespace: " + targetDb + "." + coll);
    }
    return targetDb + "." + coll;
}

class Builder {
  public:
    Builder(const PipelineContext& pctx, storage::CollectionPtr coll, std::string ns,
            BuildContext context = BuildContext::kTop,
            std::shared_ptr<std::vector<bson::BsonObj>> feed = nullptr)
        : _pctx(pctx),
          _coll(std::move(coll)),
          _ns(std::move(ns)),
          _db(dbOfNs(_ns)),
          _context(context),
          _feed(std::move(feed)) {}

    StatusWith<std::unique_ptr<PlanStage>> build(bson::BsonView pipeline, bson::BsonObj hint) {
        std::vector<bson::BsonElement> stages;
        for (auto s : pipeline) {
            if (s.type() != BsonType::Object || s.objValue().nFields() != 1) {
                return Status(40323,
                              "A pipeline stage specification object must contain "
                              "exactly one field.");
            }
            bson::BsonElement st = s.objValue().firstElement();
            std::string_view name = st.fieldName();
            if (contains(kNotYet, name)) {
                return Status(ErrorCodes::NotImplemented,
                              "pipeline stage " + std::string(name) + " is not supported yet");
            }
            if (!contains(kSupported, name)) {
                return Status(40324,
                              "Unrecognized pipeline stage name: '" + std::string(name) + "'");
            }
            stages.push_back(st);
        }
        for (size_t k = 0; k < stages.size(); ++k) {
            TRY_STATUS(checkPosition(stages, k));
        }
        if (isCollectionlessNs(_ns) && !_feed &&
            (stages.empty() || !contains(kCollectionless, stages[0].fieldName()))) {
            return Status(ErrorCodes::InvalidNamespace,
                          "{aggregate: 1} is not valid for '" +
                              (stages.empty() ? std::string("an empty pipeline")
                                              : std::string(stages[0].fieldName())) +
                              "'; a collection is required.");
        }

        size_t i = 0;
        std::unique_ptr<PlanStage> root;
        std::string_view first = stages.empty() ? std::string_view() : stages[0].fieldName();
        if (first == "$documents" && !isCollectionlessNs(_ns)) {
            return Status(ErrorCodes::InvalidNamespace,
                          "$documents' can only be run with {aggregate: 1}");
        }
        if (_feed) {
            root = std::make_unique<BufferSourceStage>(_feed);
        } else if (first == "$collStats") {
            ASSIGN_OR_RETURN(bson::BsonObj doc, collStatsDocument(_pctx, _coll, _ns, stages[0]));
            root =
                std::make_unique<VectorSourceStage>(std::vector<bson::BsonObj>{doc}, "COLLSTATS");
            i = 1;
        } else if (first == "$indexStats") {
            ASSIGN_OR_RETURN(root, indexStats(stages[0]));
            i = 1;
        } else if (first == "$documents") {
            ASSIGN_OR_RETURN(root, documents(stages[0]));
            i = 1;
        } else if (first == "$listLocalSessions") {
            if (stages[0].type() != BsonType::Object) {
                return Status(ErrorCodes::TypeMismatch,
                              "$listLocalSessions must take a nested object but found: " +
                                  stages[0].toString());
            }
            root = std::make_unique<VectorSourceStage>(listLocalSessions(), "LIST_LOCAL_SESSIONS");
            i = 1;
        } else {
            // Leading $match stages (and a following $sort) form the access path's query.
            QuerySpec spec;
            spec.hint = std::move(hint);
            spec.collator = _pctx.collator;
            std::vector<bson::BsonObj> matches;
            for (; i < stages.size() && stages[i].fieldName() == "$match"; ++i) {
                if (stages[i].type() != BsonType::Object) {
                    return Status(15959, "the match filter must be an expression in an object");
                }
                matches.push_back(stages[i].objValue().copy());
            }
            if (matches.size() == 1) {
                spec.filter = matches[0];
            } else if (matches.size() > 1) {
                bson::BsonBuilder b;
                b.startArray("$and");
                for (size_t k = 0; k < matches.size(); ++k) {
                    b.append(std::to_string(k), matches[k]);
                }
                b.end();
                spec.filter = b.obj();
            }
            ASSIGN_OR_RETURN(auto matcher, query::Matcher::parse(spec.filter, _pctx.collator));
            std::optional<SortKeyFunctions> sortFns;
            if (i < stages.size() && stages[i].fieldName() == "$sort") {
                TRY_STATUS(checkSortSpec(stages[i]));
                spec.sort = stages[i].objValue().copy();
                ASSIGN_OR_RETURN(sortFns, makeSortFunctions(spec.sort, _pctx.collator));
                ++i;
            }
            bool sortProvided = false;
            ASSIGN_OR_RETURN(
                root, buildAccessPath(_coll, spec,
                                      std::shared_ptr<const query::Matcher>(std::move(matcher)),
                                      &sortProvided));
            if (sortFns && !sortProvided) {
                int64_t topK = 0;
                if (i < stages.size() && stages[i].fieldName() == "$limit") {
                    ASSIGN_OR_RETURN(topK, positiveIntegerArg(stages[i], 15957, "$limit", false));
                }
                push(root, std::make_unique<SortStage>(std::move(*sortFns), spec.sort, topK));
            }
        }
        for (; i < stages.size(); ++i) {
            TRY_STATUS(addStage(root, stages, i));
        }
        return root;
    }

  private:
    static void push(std::unique_ptr<PlanStage>& root, std::unique_ptr<PlanStage> stage) {
        stage->setChild(std::move(root));
        root = std::move(stage);
    }

    Status checkPosition(const std::vector<bson::BsonElement>& stages, size_t k) const {
        std::string name(stages[k].fieldName());
        if (contains(kFirstOnly, name) && (k != 0 || _feed)) {
            return Status(40602, name + " is only valid as the first stage in a pipeline");
        }
        bool writes = name == "$out" || name == "$merge";
        if (_context == BuildContext::kFacet &&
            (writes || name == "$facet" || name == "$collStats" || name == "$indexStats" ||
             name == "$documents" || name == "$listLocalSessions")) {
            return Status(40600, name + " is not allowed to be used within a $facet stage");
        }
        if (!writes) return Status::OK();
        switch (_context) {
            case BuildContext::kLookup:
                return Status(51047, name + " is not allowed within a $lookup's sub-pipeline");
            case BuildContext::kUnionWith:
                return Status(31441, name + " is not allowed within a $unionWith's sub-pipeline");
            case BuildContext::kView:
                return Status(ErrorCodes::OptionNotSupportedOnView,
                              name + " cannot be used in a view definition");
            case BuildContext::kMergePipeline:
                return Status(ErrorCodes::InvalidOptions,
                              name + " is not allowed in a $merge pipeline");
            default:
                break;
        }
        if (k + 1 != stages.size()) {
            return Status(40601, name + " can only be the final stage in the pipeline");
        }
        return Status::OK();
    }

    static Status checkSortSpec(const bson::BsonElement& e) {
        if (e.type() != BsonType::Object) {
            return Status(15973, "the $sort key specification must be an object");
        }
        if (e.objValue().isEmpty()) {
            return Status(15976, "$sort stage must have at least one sort key");
        }
        return Status::OK();
    }

    StatusWith<std::unique_ptr<PlanStage>> indexStats(const bson::BsonElement& spec) {
        if (spec.type() != BsonType::Object) {
            return Status(28803, "The $indexStats stage specification must be an empty object");
        }
        std::vector<bson::BsonObj> docs;
        if (_coll) {
            int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
            for (const auto& ix : _coll->indexes) {
                bson::BsonBuilder b;
                b.append("name", ix.name);
                b.append("key", ix.keyPattern);
                b.append("host", _pctx.host);
                b.startObject("accesses").appendInt64("ops", 0).appendDate("since", now).end();
                b.append("spec", ix.spec);
                docs.push_back(b.obj());
            }
        }
        return std::unique_ptr<PlanStage>(
            std::make_unique<VectorSourceStage>(std::move(docs), "INDEX_STATS"));
    }

    StatusWith<std::unique_ptr<PlanStage>> documents(const bson::BsonElement& spec) {
        ASSIGN_OR_RETURN(auto expr, StageExpression::parse(spec));
        ASSIGN_OR_RETURN(AggValue v, expr->evaluate(bson::BsonObj()));
        if (v.missing() || v.element().type() != BsonType::Array) {
            return Status(5858203, "an array is expected");
        }
        std::vector<bson::BsonObj> docs;
        for (auto e : v.element().objValue()) {
            if (e.type() != BsonType::Object) {
                return Status(ErrorCodes::TypeMismatch,
                              "$documents: each element must be an object, found " +
                                  std::string(bson::typeName(e.type())));
            }
            docs.push_back(e.objValue().copy());
        }
        return std::unique_ptr<PlanStage>(
            std::make_unique<VectorSourceStage>(std::move(docs), "DOCUMENTS"));
    }

    // A factory of sub-pipelines over `resolved` (a view's stages go first).
    SubPipelineFactory subFactory(const ResolvedNamespace& resolved, BuildContext context) const {
        PipelineContext pctx = _pctx;
        storage::CollectionPtr coll = resolved.coll;
        std::string ns = resolved.ns;
        std::vector<bson::BsonObj> viewStages = resolved.pipeline;
        return [pctx, coll, ns, viewStages,
                context](bson::BsonView pipeline) -> StatusWith<std::unique_ptr<PlanStage>> {
            bson::BsonObj full;
            if (viewStages.empty()) {
                full = bson::BsonObj(pipeline.copy());
            } else {
                std::vector<bson::BsonObj> all = viewStages;
                for (auto s : pipeline) all.push_back(s.objValue().copy());
                full = pipelineArray(all);
            }
            Builder b(pctx, coll, ns, context);
            return b.build(full, bson::BsonObj());
        };
    }

    StatusWith<std::unique_ptr<PlanStage>> lookup(const bson::BsonElement& st) {
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
                    return Status(ErrorCodes::FailedToParse,
                                  "$lookup argument '" + std::string(n) + ": " + f.toString(false) +
                                      "' must be a string, found type: " +
                                      std::string(bson::typeName(f.type())));
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
            return Status(ErrorCodes::FailedToParse,
                          "$lookup with 'let' must also specify 'pipeline'");
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
            resolved.ns = _db + ".$cmd.aggregate";
        } else {
            ASSIGN_OR_RETURN(spec.fromNs,
                             targetNamespace(from, _db, "$lookup.from",
                                             static_cast<int>(ErrorCodes::FailedToParse)));
            ASSIGN_OR_RETURN(resolved, resolveNamespace(*_pctx.engine, spec.fromNs));
        }
        if (!let.eoo()) {
            ASSIGN_OR_RETURN(spec.let, parseLet(let));
        }
        if (!pipeline.eoo()) spec.pipeline = pipeline.objValue().copy();
        SubPipelineFactory factory = subFactory(resolved, BuildContext::kLookup);
        // Parse the sub-pipeline once now, so that its errors do not depend on the data.
        {
            std::map<std::string, bson::BsonObj> nulls;
            for (const auto& [name, e] : spec.let) nulls[name] = AggValue::null().holder;
            bson::BsonObj probe = spec.pipeline.isEmpty()
                                      ? bson::BsonObj(bson::BsonBuilder().obj())
                                      : substituteVariables(spec.pipeline, true, nulls);
            TRY_STATUS(factory(probe).getStatus());
        }
        return std::unique_ptr<PlanStage>(
            std::make_unique<LookupStage>(std::move(spec), resolved.coll, std::move(factory)));
    }

    StatusWith<std::unique_ptr<PlanStage>> unionWith(const bson::BsonElement& st) {
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
                return Status(40414,
                              "BSON field '$unionWith.coll' is missing but a required field");
            }
        } else if (st.type() != BsonType::String) {
            return Status(ErrorCodes::FailedToParse,
                          "the $unionWith stage specification must be an object or string, but "
                          "found " +
                              std::string(bson::typeName(st.type())));
        }
        ASSIGN_OR_RETURN(
            std::string ns,
            targetNamespace(coll, _db, "$unionWith", static_cast<int>(ErrorCodes::TypeMismatch)));
        ASSIGN_OR_RETURN(ResolvedNamespace resolved, resolveNamespace(*_pctx.engine, ns));
        SubPipelineFactory factory = subFactory(resolved, BuildContext::kUnionWith);
        bson::BsonObj stages =
            pipeline.eoo() ? bson::BsonBuilder().obj() : pipeline.objValue().copy();
        ASSIGN_OR_RETURN(auto other, factory(stages));
        return std::unique_ptr<PlanStage>(std::make_unique<UnionWithStage>(
            std::move(other), resolved.coll,
            st.type() == BsonType::Object ? st.objValue().copy() : bson::BsonObj()));
    }

    StatusWith<std::unique_ptr<PlanStage>> facet(const bson::BsonElement& st) {
        if (st.type() != BsonType::Object || st.objValue().isEmpty()) {
            return Status(40169,
                          "the $facet specification must be a non-empty object, but found: " +
                              st.toString(false));
        }
        auto input = std::make_shared<std::vector<bson::BsonObj>>();
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
            Builder b(_pctx, _coll, _ns, BuildContext::kFacet, input);
            ASSIGN_OR_RETURN(auto root, b.build(f.objValue(), bson::BsonObj()));
            facets.push_back(FacetStage::Facet{std::string(name), std::move(root)});
        }
        return std::unique_ptr<PlanStage>(
            std::make_unique<FacetStage>(std::move(facets), input, st.objValue().copy()));
    }

    StatusWith<std::unique_ptr<PlanStage>> bucket(const bson::BsonElement& st) {
        if (st.type() != BsonType::Object) {
            return Status(40201, "Argument to $bucket stage must be an object, but found type: " +
                                     std::string(bson::typeName(st.type())) + ".");
        }
        bson::BsonElement groupBy, boundaries, def, output;
        for (auto f : st.objValue()) {
            std::string_view n = f.fieldName();
            if (n == "groupBy") {
                groupBy = f;
            } else if (n == "boundaries") {
                boundaries = f;
            } else if (n == "default") {
                def = f;
            } else if (n == "output") {
                output = f;
            } else {
                return Status(40197, "Unrecognized option to $bucket: " + std::string(n) + ".");
            }
        }
        if (groupBy.eoo() || boundaries.eoo()) {
            return Status(40198, "$bucket requires 'groupBy' and 'boundaries' to be specified.");
        }
        bool groupByOk =
            (groupBy.type() == BsonType::String && groupBy.stringValue().starts_with("$")) ||
            groupBy.type() == BsonType::Object;
        if (!groupByOk) {
            return Status(40202,
                          "The $bucket 'groupBy' field must be defined as a $-prefixed path or an "
                          "expression, but found: " +
                              groupBy.toString(false) + ".");
        }
        if (boundaries.type() != BsonType::Array) {
            return Status(40200,
                          "The $bucket 'boundaries' field must be an array, but found type: " +
                              std::string(bson::typeName(boundaries.type())) + ".");
        }
        std::vector<bson::BsonObj> bounds;
        for (auto e : boundaries.objValue()) {
            ASSIGN_OR_RETURN(auto expr, StageExpression::parse(e));
            if (!expr->isConstant()) {
                return Status(40191,
                              "The $bucket 'boundaries' field must be an array of constant "
                              "values, but found value: " +
                                  e.toString(false) + ".");
            }
            ASSIGN_OR_RETURN(AggValue v, expr->evaluate(bson::BsonObj()));
            bounds.push_back(v.holder);
        }
        if (bounds.size() < 2) {
            return Status(40192,
                          "The $bucket 'boundaries' field must have at least 2 values, but found " +
                              std::to_string(bounds.size()) + " value(s).");
        }
        for (size_t k = 1; k < bounds.size(); ++k) {
            bson::BsonElement a = bounds[k - 1].firstElement();
            bson::BsonElement b = bounds[k].firstElement();
            if (bson::canonicalTypeOrder(a.type()) != bson::canonicalTypeOrder(b.type())) {
                return Status(40193,
                              "All values in the the 'boundaries' option to $bucket must have "
                              "the same type. Found conflicting types " +
                                  std::string(bson::typeName(a.type())) + " and " +
                                  std::string(bson::typeName(b.type())) + ".");
            }
            if (bson::compareElementValues(a, b) >= 0) {
                return Status(40194,
                              "The 'boundaries' option to $bucket must be sorted in ascending "
                              "order, but elements " +
                                  std::to_string(k - 1) + " and " + std::to_string(k) +
                                  " are not in ascending order (" + a.toString(false) +
                                  " is not less than " + b.toString(false) + ").");
            }
        }
        std::optional<bson::BsonObj> defaultValue;
        if (!def.eoo()) {
            ASSIGN_OR_RETURN(auto expr, StageExpression::parse(def));
            if (!expr->isConstant()) {
                return Status(40195, "The $bucket 'default' field must be a constant, but found: " +
                                         def.toString(false) + ".");
            }
            ASSIGN_OR_RETURN(AggValue v, expr->evaluate(bson::BsonObj()));
            bson::BsonElement d = v.element();
            bool below = bson::compareElementValues(d, bounds.front().firstElement()) < 0;
            bool above = bson::compareElementValues(d, bounds.back().firstElement()) >= 0;
            if (bson::canonicalTypeOrder(d.type()) ==
                    bson::canonicalTypeOrder(bounds.front().firstElement().type()) &&
                !below && !above) {
                return Status(40199,
                              "The $bucket 'default' field must be less than the lowest boundary "
                              "or greater than or equal to the highest boundary.");
            }
            defaultValue = v.holder;
        }
        bson::BsonObj outputSpec;
        if (!output.eoo()) {
            if (output.type() != BsonType::Object) {
                return Status(40196,
                              "The $bucket 'output' field must be an object, but found "
                              "type: " +
                                  std::string(bson::typeName(output.type())) + ".");
            }
            outputSpec = output.objValue().copy();
        } else {
            static const bson::BsonObj kCountOutput = bson::fromJson(R"({"count": {"$sum": 1}})");
            outputSpec = kCountOutput;
        }
        ASSIGN_OR_RETURN(auto groupExpr, StageExpression::parse(groupBy));
        ASSIGN_OR_RETURN(auto key, makeBucketKey(groupExpr, bounds, defaultValue));
        ASSIGN_OR_RETURN(auto group,
                         GroupStage::make(key, outputSpec, st.objValue().copy(), "BUCKET"));
        std::unique_ptr<PlanStage> root = std::move(group);
        static const bson::BsonObj kIdAscending = bson::fromJson(R"({"_id": 1})");
        bson::BsonObj sortPattern = kIdAscending;
        ASSIGN_OR_RETURN(auto fns, makeSortFunctions(sortPattern));
        auto sort = std::make_unique<SortStage>(std::move(fns), sortPattern, 0);
        sort->setChild(std::move(root));
        return std::unique_ptr<PlanStage>(std::move(sort));
    }

    StatusWith<std::unique_ptr<PlanStage>> merge(const bson::BsonElement& st) {
        MergeStage::Spec spec;
        bson::BsonElement into, let;
        if (st.type() == BsonType::String) {
            into = st;
        } else if (st.type() == BsonType::Object) {
            spec.specForExplain = st.objValue().copy();
            for (auto f : st.objValue()) {
                std::string_view n = f.fieldName();
                if (n == "into") {
                    into = f;
                } else if (n == "on") {
                    if (f.type() == BsonType::String) {
                        spec.on.emplace_back(f.stringValue());
                    } else if (f.type() == BsonType::Array) {
                        for (auto e : f.objValue()) {
                            if (e.type() != BsonType::String) {
                                return Status(51134,
                                              "Array elements of the 'on' field of $merge must "
                                              "be strings, but found " +
                                                  std::string(bson::typeName(e.type())));
                            }
                            spec.on.emplace_back(e.stringValue());
                        }
                        if (spec.on.empty()) {
                            return Status(51187,
                                          "If explicitly specifying $merge 'on', must include at "
                                          "least one field");
                        }
                    } else {
                        return Status(51186,
                                      "$merge 'on' field must be either a string or an array of "
                                      "strings, but found " +
                                          std::string(bson::typeName(f.type())));
                    }
                } else if (n == "whenMatched") {
                    if (f.type() == BsonType::Array) {
                        spec.whenMatched = "pipeline";
                        spec.whenMatchedPipeline = f.objValue().copy();
                    } else if (f.type() == BsonType::String &&
                               (f.stringValue() == "replace" || f.stringValue() == "keepExisting" ||
                                f.stringValue() == "merge" || f.stringValue() == "fail")) {
                        spec.whenMatched = std::string(f.stringValue());
                    } else if (f.type() == BsonType::String) {
                        return Status(ErrorCodes::BadValue,
                                      "Enumeration value '" + std::string(f.stringValue()) +
                                          "' for field '$merge.whenMatched' is not a valid value.");
                    } else {
                        return Status(51191,
                                      "$merge 'whenMatched' field must be either a string or "
                                      "an array, but found " +
                                          std::string(bson::typeName(f.type())));
                    }
                } else if (n == "whenNotMatched") {
                    if (f.type() != BsonType::String) {
                        return Status(ErrorCodes::TypeMismatch,
                                      "BSON field '$merge.whenNotMatched' is the wrong type '" +
                                          std::string(bson::typeName(f.type())) +
                                          "', expected type 'string'");
                    }
                    std::string_view v = f.stringValue();
                    if (v != "insert" && v != "discard" && v != "fail") {
                        return Status(ErrorCodes::BadValue,
                                      "Enumeration value '" + std::string(v) +
                                          "' for field '$merge.whenNotMatched' is not a valid "
                                          "value.");
                    }
                    spec.whenNotMatched = std::string(v);
                } else if (n == "let") {
                    let = f;
                } else if (n == "targetCollectionVersion") {
                    continue;
                } else {
                    return Status(
                        40415, "BSON field '$merge." + std::string(n) + "' is an unknown field.");
                }
            }
            if (into.eoo()) {
                return Status(40414, "BSON field '$merge.into' is missing but a required field");
            }
        } else {
            return Status(51182, "$merge only supports a string or object argument, not " +
                                     std::string(bson::typeName(st.type())));
        }
        ASSIGN_OR_RETURN(spec.targetNs, targetNamespace(into, _db, "$merge.into", 51178));
        if (spec.on.empty()) spec.on.push_back("_id");
        if (!let.eoo()) {
            if (spec.whenMatched != "pipeline") {
                return Status(51199, "Cannot use 'let' variables with 'whenMatched: " +
                                         spec.whenMatched + "' mode");
            }
            ASSIGN_OR_RETURN(spec.let, parseLet(let));
        }
        if (spec.whenMatched == "pipeline" && spec.whenNotMatched == "fail") {
            // Allowed, as MongoDB.
        }
        PipelineContext pctx = _pctx;
        std::string ns = _ns;
        auto factory = [pctx, ns](bson::BsonView pipeline,
                                  std::shared_ptr<std::vector<bson::BsonObj>> input)
            -> StatusWith<std::unique_ptr<PlanStage>> {
            Builder b(pctx, nullptr, ns, BuildContext::kMergePipeline, std::move(input));
            return b.build(pipeline, bson::BsonObj());
        };
        if (spec.whenMatched == "pipeline") {
            std::map<std::string, bson::BsonObj> nulls;
            nulls["new"] = AggValue::null().holder;
            for (const auto& [name, e] : spec.let) nulls[name] = AggValue::null().holder;
            TRY_STATUS(factory(substituteVariables(spec.whenMatchedPipeline, true, nulls),
                               std::make_shared<std::vector<bson::BsonObj>>())
                           .getStatus());
        }
        return std::unique_ptr<PlanStage>(
            std::make_unique<MergeStage>(_pctx.engine, std::move(spec), std::move(factory)));
    }

    Status addStage(std::unique_ptr<PlanStage>& root, const std::vector<bson::BsonElement>& stages,
                    size_t i) {
        const bson::BsonElement& st = stages[i];
        std::string_view name = st.fieldName();
        if (name == "$match") {
            if (st.type() != BsonType::Object) {
                return Status(15959, "the match filter must be an expression in an object");
            }
            ASSIGN_OR_RETURN(auto matcher, query::Matcher::parse(st.objValue(), _pctx.collator));
            push(root, std::make_unique<FilterStage>(
                           std::shared_ptr<const query::Matcher>(std::move(matcher))));
        } else if (name == "$sort") {
            TRY_STATUS(checkSortSpec(st));
            bson::BsonObj pattern = st.objValue().copy();
            ASSIGN_OR_RETURN(auto fns, makeSortFunctions(pattern, _pctx.collator));
            int64_t topK = 0;
            if (i + 1 < stages.size() && stages[i + 1].fieldName() == "$limit") {
                ASSIGN_OR_RETURN(topK, positiveIntegerArg(stages[i + 1], 15957, "$limit", false));
            }
            push(root, std::make_unique<SortStage>(std::move(fns), pattern, topK));
        } else if (name == "$skip") {
            ASSIGN_OR_RETURN(int64_t n, positiveIntegerArg(st, 15956, "$skip", true));
            push(root, std::make_unique<SkipStage>(n));
        } else if (name == "$limit") {
            ASSIGN_OR_RETURN(int64_t n, positiveIntegerArg(st, 15957, "$limit", false));
            push(root, std::make_unique<LimitStage>(n));
        } else if (name == "$project") {
            if (st.type() != BsonType::Object) {
                return Status(15969, "$project specification must be an object");
            }
            bson::BsonObj spec = st.objValue().copy();
            ASSIGN_OR_RETURN(auto proj, AggProjection::parseProject(spec));
            push(root, std::make_unique<AggProjectionStage>(std::move(proj), "transformBy", spec));
        } else if (name == "$addFields" || name == "$set") {
            if (st.type() != BsonType::Object) {
                return Status(40272, std::string(name) +
                                         " specification stage must be an object, got " +
                                         std::string(bson::typeName(st.type())));
            }
            bson::BsonObj spec = st.objValue().copy();
            ASSIGN_OR_RETURN(auto proj, AggProjection::parseAddFields(spec, name));
            push(root, std::make_unique<AggProjectionStage>(std::move(proj), "transformBy", spec));
        } else if (name == "$unset") {
            ASSIGN_OR_RETURN(auto proj, AggProjection::parseUnset(st));
            bson::BsonBuilder sb;
            sb.appendElementAs(st, "$unset");
            push(root,
                 std::make_unique<AggProjectionStage>(std::move(proj), "transformBy", sb.obj()));
        } else if (name == "$replaceRoot" || name == "$replaceWith") {
            bson::BsonElement newRoot = st;
            if (name == "$replaceRoot") {
                if (st.type() != BsonType::Object) {
                    return Status(40229,
                                  "expected an object as specification for $replaceRoot stage, "
                                  "got " +
                                      std::string(bson::typeName(st.type())));
                }
                newRoot = bson::BsonElement();
                for (auto f : st.objValue()) {
                    if (f.fieldName() != "newRoot") {
                        return Status(40415, "BSON field '$replaceRoot." +
                                                 std::string(f.fieldName()) +
                                                 "' is an unknown field.");
                    }
                    newRoot = f;
                }
                if (newRoot.eoo()) {
                    return Status(40414,
                                  "BSON field '$replaceRoot.newRoot' is missing but a required "
                                  "field");
                }
            }
            ASSIGN_OR_RETURN(auto expr, StageExpression::parse(newRoot));
            bson::BsonBuilder sb;
            sb.appendElementAs(newRoot, "newRoot");
            push(root, std::make_unique<ReplaceRootStage>(std::move(expr), sb.obj()));
        } else if (name == "$group") {
            ASSIGN_OR_RETURN(auto group, GroupStage::parse(st));
            push(root, std::move(group));
        } else if (name == "$sortByCount") {
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
            ASSIGN_OR_RETURN(auto group,
                             GroupStage::make(key, bson::fromJson(R"({"count": {"$sum": 1}})"),
                                              sb.obj(), "SORT_BY_COUNT"));
            push(root, std::move(group));
            bson::BsonObj pattern = bson::fromJson(R"({"count": -1})");
            ASSIGN_OR_RETURN(auto fns, makeSortFunctions(pattern));
            push(root, std::make_unique<SortStage>(std::move(fns), pattern, 0));
        } else if (name == "$bucket") {
            ASSIGN_OR_RETURN(auto b, bucket(st));
            auto* sort = b.get();
            // `b` is SORT over GROUP: attach our input below the GROUP.
            sort->child()->setChild(std::move(root));
            root = std::move(b);
        } else if (name == "$bucketAuto") {
            ASSIGN_OR_RETURN(auto stage, BucketAutoStage::parse(st));
            push(root, std::move(stage));
        } else if (name == "$redact") {
            ASSIGN_OR_RETURN(auto stage, RedactStage::parse(st));
            push(root, std::move(stage));
        } else if (name == "$graphLookup") {
            ASSIGN_OR_RETURN(auto spec, GraphLookupStage::parseSpec(st, _db));
            ASSIGN_OR_RETURN(auto resolved, resolveNamespace(*_pctx.engine, spec.fromNs));
            SubPipelineFactory factory = subFactory(resolved, BuildContext::kLookup);
            push(root, std::make_unique<GraphLookupStage>(std::move(spec), resolved.coll,
                                                          std::move(factory)));
        } else if (name == "$count") {
            if (st.type() != BsonType::String) {
                return Status(40156, "the count field must be a non-empty string");
            }
            std::string_view f = st.stringValue();
            if (f.empty()) return Status(40157, "the count field must be a non-empty string");
            if (f[0] == '$') return Status(40158, "the count field cannot be a $-prefixed path");
            if (f.find('.') != std::string_view::npos) {
                return Status(40160, "the count field cannot contain '.'");
            }
            push(root, std::make_unique<CountStage>(std::string(f)));
        } else if (name == "$unwind") {
            ASSIGN_OR_RETURN(auto unwind, UnwindStage::parse(st));
            push(root, std::move(unwind));
        } else if (name == "$sample") {
            if (st.type() != BsonType::Object) {
                return Status(28745, "the $sample stage specification must be an object");
            }
            std::optional<int64_t> size;
            for (auto f : st.objValue()) {
                if (f.fieldName() != "size") {
                    return Status(28748,
                                  "unrecognized option to $sample: " + std::string(f.fieldName()));
                }
                if (!f.isNumber()) {
                    return Status(28746, "size argument to $sample must be a number");
                }
                if (f.numberDouble() < 0) {
                    return Status(28747, "size argument to $sample must not be negative");
                }
                size = f.numberLong();
            }
            if (!size) return Status(28749, "$sample stage must specify a size");
            push(root, std::make_unique<SampleStage>(*size));
        } else if (name == "$lookup") {
            ASSIGN_OR_RETURN(auto stage, lookup(st));
            push(root, std::move(stage));
        } else if (name == "$unionWith") {
            ASSIGN_OR_RETURN(auto stage, unionWith(st));
            push(root, std::move(stage));
        } else if (name == "$facet") {
            ASSIGN_OR_RETURN(auto stage, facet(st));
            push(root, std::move(stage));
        } else if (name == "$out") {
            ASSIGN_OR_RETURN(std::string target, targetNamespace(st, _db, "$out", 16990));
            bson::BsonBuilder sb;
            sb.appendElementAs(st, "$out");
            push(root, std::make_unique<OutStage>(_pctx.engine, target, sb.obj()));
        } else if (name == "$merge") {
            ASSIGN_OR_RETURN(auto stage, merge(st));
            push(root, std::move(stage));
        } else {
            return Status(40324, "Unrecognized pipeline stage name: '" + std::string(name) + "'");
        }
        return Status::OK();
    }

    const PipelineContext& _pctx;
    storage::CollectionPtr _coll;
    std::string _ns;
    std::string _db;
    BuildContext _context;
    std::shared_ptr<std::vector<bson::BsonObj>> _feed;
};

}  // namespace

StatusWith<std::unique_ptr<PlanExecutor>> buildPipelineExecutor(
    const PipelineContext& pctx, std::unique_ptr<storage::ReadSnapshot> snapshot,
    storage::CollectionPtr coll, std::string ns, bson::BsonView pipeline, bson::BsonObj hint) {
    Builder builder(pctx, coll, ns);
    ASSIGN_OR_RETURN(auto root, builder.build(pipeline, std::move(hint)));
    return std::make_unique<PlanExecutor>(std::move(snapshot), std::move(coll), std::move(root),
                                          std::move(ns));
}

StatusWith<std::unique_ptr<PlanStage>> buildPipelineStages(const PipelineContext& pctx,
                                                           storage::CollectionPtr coll,
                                                           std::string ns, bson::BsonView pipeline,
                                                           bson::BsonObj hint) {
    Builder builder(pctx, std::move(coll), std::move(ns));
    return builder.build(pipeline, std::move(hint));
}

Status validatePipeline(const PipelineContext& pctx, const std::string& ns, bson::BsonView pipeline,
                        bool forView) {
    Builder builder(pctx, nullptr, ns, forView ? BuildContext::kView : BuildContext::kTop);
    return builder.build(pipeline, bson::BsonObj()).getStatus();
}

}  // namespace tessera::command::exec
