#include "router/pipeline_split.h"

#include <algorithm>
#include <limits>

#include "bson/bson_builder.h"
#include "command/exec/pipeline_stage_registry.h"

namespace tessera::router {
namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

using command::exec::StageSplit;

// How the stage registry says a pipeline splits at `name` (unknown stages: on the merger, where
// the builder refuses them).
StageSplit splitOf(std::string_view name) {
    const command::exec::StageDescriptor* d = command::exec::findStage(name);
    return d ? d->constraints.split : StageSplit::kOnMerger;
}

bool isStreaming(std::string_view name) { return splitOf(name) == StageSplit::kStreaming; }

std::string_view stageName(const BsonObj& stage) { return stage.firstElement().fieldName(); }

BsonObj stageOf(std::string_view name, bson::BsonView spec) {
    BsonBuilder b;
    b.appendObject(name, spec);
    return b.obj();
}

BsonObj limitStage(int64_t n) {
    BsonBuilder b;
    b.appendInt64("$limit", n);
    return b.obj();
}

// The shard and router halves of a $group, or nullopt when an accumulator cannot be merged.
struct GroupSplit {
    BsonObj shardGroup;
    BsonObj mergeGroup;
    std::vector<BsonObj> post;  // router stages after the merging $group
};

std::optional<GroupSplit> splitGroup(bson::BsonView spec) {
    BsonBuilder shard, merge, set;
    std::vector<std::string> temps;
    bool hasId = false;
    for (BsonElement f : spec) {
        std::string_view name = f.fieldName();
        if (name == "_id") {
            hasId = true;
            shard.appendElement(f);
            merge.append("_id", "$_id");
            continue;
        }
        if (f.type() != BsonType::Object || f.objValue().nFields() != 1) return std::nullopt;
        BsonElement acc = f.objValue().firstElement();
        std::string op(acc.fieldName());
        std::string path = "$" + std::string(name);
        if (op == "$sum" || op == "$min" || op == "$max" || op == "$first" || op == "$last" ||
            op == "$mergeObjects") {
            shard.appendElement(f);
            merge.startObject(name).append(op, path).end();
        } else if (op == "$count") {
            shard.startObject(name).appendInt32("$sum", 1).end();
            merge.startObject(name).append("$sum", path).end();
        } else if (op == "$push" || op == "$addToSet") {
            shard.appendElement(f);
            merge.startObject(name).append("$push", path).end();
            // [[a, b], [c]] → [a, b, c] ($push) or their union ($addToSet).
            set.startObject(name).startObject("$reduce");
            set.append("input", path);
            set.appendArray("initialValue", bson::BsonArrayBuilder().arr());
            set.startObject("in")
                .startArray(op == "$push" ? "$concatArrays" : "$setUnion")
                .append("0", "$$value")
                .append("1", "$$this")
                .end()
                .end();
            set.end().end();
        } else if (op == "$avg") {
            // sum of the numeric values and their count; the router divides.
            std::string cnt = "__tessera_avg_count_" + std::string(name);
            temps.push_back(cnt);
            shard.startObject(name).appendElementAs(acc, "$sum").end();
            shard.startObject(cnt).startObject("$sum").startArray("$cond");
            shard.startObject("0").startArray("$isNumber").appendElementAs(acc, "0").end().end();
            shard.appendInt32("1", 1).appendInt32("2", 0).end().end().end();
            merge.startObject(name).append("$sum", path).end();
            merge.startObject(cnt).append("$sum", "$" + cnt).end();
            set.startObject(name).startArray("$cond");
            set.startObject("0").startArray("$eq").append("0", "$" + cnt).appendInt32("1", 0);
            set.end().end();
            set.appendNull("1");
            set.startObject("2").startArray("$divide").append("0", path).append("1", "$" + cnt);
            set.end().end();
            set.end().end();
        } else {
            return std::nullopt;
        }
    }
    if (!hasId) return std::nullopt;  // the builder reports 15955
    GroupSplit out;
    out.shardGroup = stageOf("$group", shard.obj());
    out.mergeGroup = stageOf("$group", merge.obj());
    BsonObj setSpec = set.obj();
    if (!setSpec.isEmpty()) out.post.push_back(stageOf("$set", setSpec));
    if (!temps.empty()) {
        BsonBuilder u;
        u.startArray("$unset");
        for (size_t i = 0; i < temps.size(); ++i) u.append(std::to_string(i), temps[i]);
        u.end();
        out.post.push_back(u.obj());
    }
    return out;
}

}  // namespace

SkipLimitRun skipLimitRun(const std::vector<BsonObj>& stages, size_t from) {
    SkipLimitRun run;
    int64_t offset = 0;
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    size_t i = from;
    for (; i < stages.size(); ++i) {
        std::string_view name = stageName(stages[i]);
        BsonElement v = stages[i].firstElement();
        if (name == "$skip" && v.isNumber()) {
            int64_t n = std::max<int64_t>(0, v.numberLong());
            offset = n > kMax - offset ? kMax : offset + n;
        } else if (name == "$limit" && v.isNumber()) {
            int64_t n = std::max<int64_t>(0, v.numberLong());
            int64_t b = n > kMax - offset ? kMax : offset + n;
            run.bound = run.bound ? std::min(*run.bound, b) : b;
        } else {
            break;
        }
    }
    run.end = i;
    return run;
}

StatusWith<SplitPipeline> splitPipeline(const std::vector<BsonObj>& stages) {
    for (const BsonObj& st : stages) {
        if (st.nFields() != 1) {
            return Status(40323,
                          "A pipeline stage specification object must contain exactly one field.");
        }
    }
    SplitPipeline out;
    size_t i = 0;
    while (i < stages.size() && isStreaming(stageName(stages[i]))) {
        out.shardPart.push_back(stages[i++]);
    }
    if (i == stages.size()) return out;

    std::string_view name = stageName(stages[i]);
    BsonElement spec = stages[i].firstElement();
    StageSplit split = splitOf(name);
    if (split == StageSplit::kSortMerge && spec.type() == BsonType::Object) {
        out.shardPart.push_back(stages[i]);
        out.mergeSort = spec.objValue().copy();
        ++i;
        SkipLimitRun run = skipLimitRun(stages, i);
        if (run.bound) out.shardPart.push_back(limitStage(*run.bound));
    } else if (split == StageSplit::kSkipLimit) {
        SkipLimitRun run = skipLimitRun(stages, i);
        if (run.bound) out.shardPart.push_back(limitStage(*run.bound));
    } else if (split != StageSplit::kAccumulate) {
        // kOnMerger: this stage and everything after it run on the router.
    } else if (name == "$group" && spec.type() == BsonType::Object) {
        if (auto g = splitGroup(spec.objValue())) {
            out.shardPart.push_back(g->shardGroup);
            out.mergePart.push_back(g->mergeGroup);
            for (auto& p : g->post) out.mergePart.push_back(p);
            ++i;
        }
    } else if (name == "$count" && spec.type() == BsonType::String) {
        std::string field(spec.stringValue());
        out.shardPart.push_back(stages[i]);
        BsonBuilder g;
        g.startObject("$group").appendNull("_id").startObject(field).append("$sum", "$" + field);
        g.end().end();
        out.mergePart.push_back(g.obj());
        BsonBuilder p;
        p.startObject("$project").appendInt32("_id", 0).appendInt32(field, 1).end();
        out.mergePart.push_back(p.obj());
        ++i;
    } else if (name == "$sortByCount") {
        BsonBuilder g;
        g.startObject("$group").appendElementAs(spec, "_id");
        g.startObject("count").appendInt32("$sum", 1).end().end();
        out.shardPart.push_back(g.obj());
        BsonBuilder m;
        m.startObject("$group").append("_id", "$_id");
        m.startObject("count").append("$sum", "$count").end().end();
        out.mergePart.push_back(m.obj());
        BsonBuilder s;
        s.startObject("$sort").appendInt32("count", -1).end();
        out.mergePart.push_back(s.obj());
        ++i;
    }
    for (; i < stages.size(); ++i) out.mergePart.push_back(stages[i]);
    return out;
}

BsonObj SplitPipeline::toBson() const {
    BsonBuilder b;
    b.startArray("shardsPart");
    for (size_t i = 0; i < shardPart.size(); ++i) b.append(std::to_string(i), shardPart[i]);
    b.end();
    b.startArray("mergerPart");
    size_t k = 0;
    if (!mergeSort.isEmpty()) {
        BsonBuilder m;
        m.startObject("$mergeCursors").append("sort", mergeSort).end();
        b.append(std::to_string(k++), m.obj());
    } else {
        BsonBuilder m;
        m.startObject("$mergeCursors").end();
        b.append(std::to_string(k++), m.obj());
    }
    for (const BsonObj& st : mergePart) b.append(std::to_string(k++), st);
    b.end();
    return b.obj();
}

StatusWith<std::vector<BsonObj>> pipelineStages(const BsonElement& pipeline) {
    if (pipeline.type() != BsonType::Array) {
        return Status(ErrorCodes::TypeMismatch, "'pipeline' option must be specified as an array");
    }
    std::vector<BsonObj> out;
    for (BsonElement e : pipeline.objValue()) {
        if (e.type() != BsonType::Object) {
            return Status(ErrorCodes::TypeMismatch,
                          "Each element of the 'pipeline' array must be an object");
        }
        out.push_back(e.objValue().copy());
    }
    return out;
}

bool pipelineTouchesOtherCollections(const std::vector<BsonObj>& stages) {
    for (const BsonObj& st : stages) {
        std::string_view name = stageName(st);
        const command::exec::StageDescriptor* d = command::exec::findStage(name);
        if (d && (d->constraints.readsOtherCollections || d->constraints.writes)) return true;
        if (name == "$facet" && st.firstElement().type() == BsonType::Object) {
            for (BsonElement sub : st.firstElement().objValue()) {
                if (sub.type() != BsonType::Array) continue;
                auto inner = pipelineStages(sub);
                if (inner.isOK() && pipelineTouchesOtherCollections(inner.getValue())) {
                    return true;
                }
            }
        }
    }
    return false;
}

}  // namespace tessera::router
