#include "command/exec/pipeline.h"

#include <chrono>

#include "command/exec/agg_stages.h"
#include "command/exec/query_adapters.h"
#include "command/exec/query_executor.h"
#include "command/exec/query_stages.h"
#include "command/exec/scan_stages.h"
#include "command/exec/transform_stages.h"
#include "query/matcher.h"
#include "storage/engine.h"

namespace tessera::command::exec {

using bson::BsonType;

namespace {

constexpr std::string_view kSupported[] = {"$match", "$sort",  "$skip",   "$limit",    "$project",
                                           "$group", "$count", "$unwind", "$collStats"};
constexpr std::string_view kNotYet[] = {"$addFields",
                                        "$set",
                                        "$unset",
                                        "$lookup",
                                        "$out",
                                        "$merge",
                                        "$facet",
                                        "$bucket",
                                        "$bucketAuto",
                                        "$sortByCount",
                                        "$replaceRoot",
                                        "$replaceWith",
                                        "$sample",
                                        "$graphLookup",
                                        "$unionWith",
                                        "$densify",
                                        "$fill",
                                        "$redact",
                                        "$geoNear",
                                        "$indexStats",
                                        "$currentOp",
                                        "$listSessions",
                                        "$changeStream",
                                        "$documents",
                                        "$setWindowFields",
                                        "$planCacheStats",
                                        "$listLocalSessions",
                                        "$search",
                                        "$densify"};

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

StatusWith<bson::BsonObj> collStatsDocument(const PipelineContext& pctx,
                                            const storage::CollectionPtr& coll,
                                            const std::string& ns, const bson::BsonElement& spec) {
    if (spec.type() != BsonType::Object) {
        return Status(5447000,
                      "$collStats must take a nested object but found: " + spec.toString());
    }
    bson::BsonBuilder b;
    b.append("ns", ns);
    b.append("host", pctx.host);
    b.appendDate("localTime", std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count());
    for (auto f : spec.objValue()) {
        std::string_view name = f.fieldName();
        if (name == "storageStats") {
            if (!coll) {
                return Status(ErrorCodes::NamespaceNotFound,
                              "Unable to retrieve storageStats in $collStats stage :: caused by "
                              ":: Collection [" +
                                  ns + "] not found.");
            }
            int64_t scale = 1;
            if (f.type() == BsonType::Object) {
                bson::BsonElement s = f.objValue()["scale"];
                if (s && (!s.isNumber() || s.numberLong() < 1)) {
                    return Status(ErrorCodes::BadValue, "scale has to be > 0");
                }
                if (s) scale = s.numberLong();
            }
            b.startObject("storageStats");
            appendStorageStats(b, *pctx.engine, *coll, scale);
            b.end();
        } else if (name == "count") {
            b.appendNumber("count", coll ? pctx.engine->stats(*coll).count : 0);
        } else if (name == "latencyStats") {
            b.startObject("latencyStats");
            for (auto kind : {"reads", "writes", "commands", "transactions"}) {
                b.startObject(kind).appendInt64("latency", 0).appendInt64("ops", 0).end();
            }
            b.end();
        } else if (name == "queryExecStats") {
            b.startObject("queryExecStats")
                .startObject("collectionScans")
                .appendInt64("total", 0)
                .appendInt64("nonTailable", 0)
                .end()
                .end();
        } else {
            return Status(40415,
                          "BSON field '$collStats." + std::string(name) + "' is an unknown field.");
        }
    }
    return b.obj();
}

class Builder {
  public:
    Builder(const PipelineContext& pctx, storage::CollectionPtr coll, std::string ns)
        : _pctx(pctx), _coll(std::move(coll)), _ns(std::move(ns)) {}

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
            if (name == "$collStats" && !stages.empty()) {
                return Status(40602, "$collStats is only valid as the first stage in a pipeline");
            }
            stages.push_back(st);
        }

        size_t i = 0;
        std::unique_ptr<PlanStage> root;
        if (!stages.empty() && stages[0].fieldName() == "$collStats") {
            ASSIGN_OR_RETURN(bson::BsonObj doc, collStatsDocument(_pctx, _coll, _ns, stages[0]));
            root =
                std::make_unique<VectorSourceStage>(std::vector<bson::BsonObj>{doc}, "COLLSTATS");
            i = 1;
        } else {
            // Leading $match stages (and a following $sort) form the access path's query.
            QuerySpec spec;
            spec.hint = std::move(hint);
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
            ASSIGN_OR_RETURN(auto matcher, query::Matcher::parse(spec.filter));
            std::optional<SortKeyFunctions> sortFns;
            if (i < stages.size() && stages[i].fieldName() == "$sort") {
                TRY_STATUS(checkSortSpec(stages[i]));
                spec.sort = stages[i].objValue().copy();
                ASSIGN_OR_RETURN(sortFns, makeSortFunctions(spec.sort));
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

    static Status checkSortSpec(const bson::BsonElement& e) {
        if (e.type() != BsonType::Object) {
            return Status(15973, "the $sort key specification must be an object");
        }
        if (e.objValue().isEmpty()) {
            return Status(15976, "$sort stage must have at least one sort key");
        }
        return Status::OK();
    }

    Status addStage(std::unique_ptr<PlanStage>& root, const std::vector<bson::BsonElement>& stages,
                    size_t i) {
        const bson::BsonElement& st = stages[i];
        std::string_view name = st.fieldName();
        if (name == "$match") {
            if (st.type() != BsonType::Object) {
                return Status(15959, "the match filter must be an expression in an object");
            }
            ASSIGN_OR_RETURN(auto matcher, query::Matcher::parse(st.objValue()));
            push(root, std::make_unique<FilterStage>(
                           std::shared_ptr<const query::Matcher>(std::move(matcher))));
        } else if (name == "$sort") {
            TRY_STATUS(checkSortSpec(st));
            bson::BsonObj pattern = st.objValue().copy();
            ASSIGN_OR_RETURN(auto fns, makeSortFunctions(pattern));
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
            if (st.objValue().isEmpty()) {
                return Status(51272, "projection specification must have at least one field");
            }
            bson::BsonObj spec = st.objValue().copy();
            ASSIGN_OR_RETURN(auto fn, makeProjection(spec));
            push(root, std::make_unique<ProjectionStage>(std::move(fn), spec, "PROJECTION"));
        } else if (name == "$group") {
            ASSIGN_OR_RETURN(auto group, GroupStage::parse(st));
            push(root, std::move(group));
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
        } else {
            return Status(40324, "Unrecognized pipeline stage name: '" + std::string(name) + "'");
        }
        return Status::OK();
    }

    const PipelineContext& _pctx;
    storage::CollectionPtr _coll;
    std::string _ns;
};

}  // namespace

void appendStorageStats(bson::BsonBuilder& b, storage::Engine& engine,
                        const storage::CollectionInfo& coll, int64_t scale) {
    storage::CollectionStats stats = engine.stats(coll);
    int64_t totalIndexSize = 0;
    for (const auto& [name, size] : stats.indexSizes) totalIndexSize += size;
    b.appendNumber("size", stats.dataSize / scale);
    b.appendNumber("count", stats.count);
    b.appendNumber("avgObjSize", stats.count > 0 ? stats.dataSize / stats.count : 0);
    b.appendNumber("storageSize", stats.storageSize / scale);
    b.appendNumber("freeStorageSize", 0);
    b.append("capped", coll.options["capped"].trueValue());
    b.appendNumber("nindexes", static_cast<int64_t>(coll.indexes.size()));
    b.appendNumber("totalIndexSize", totalIndexSize / scale);
    b.appendNumber("totalSize", (stats.storageSize + totalIndexSize) / scale);
    b.startObject("indexSizes");
    for (const auto& [name, size] : stats.indexSizes) b.appendNumber(name, size / scale);
    b.end();
    b.appendNumber("scaleFactor", scale);
}

StatusWith<std::unique_ptr<PlanExecutor>> buildPipelineExecutor(
    const PipelineContext& pctx, std::unique_ptr<storage::ReadSnapshot> snapshot,
    storage::CollectionPtr coll, std::string ns, bson::BsonView pipeline, bson::BsonObj hint) {
    Builder builder(pctx, coll, ns);
    ASSIGN_OR_RETURN(auto root, builder.build(pipeline, std::move(hint)));
    return std::make_unique<PlanExecutor>(std::move(snapshot), std::move(coll), std::move(root),
                                          std::move(ns));
}

}  // namespace tessera::command::exec
