// $bucket: its parser (the stage itself is a GroupStage over bucket keys and a SortStage).

#include "bson/compare.h"
#include "command/exec/agg_stages.h"
#include "command/exec/pipeline_stage_list.h"
#include "command/exec/query_adapters.h"
#include "command/exec/transform_stages.h"

namespace tessera::command::exec {

namespace {

using bson::BsonType;

// {$bucket: {groupBy, boundaries, default?, output?}} = a GROUP by bucket then a sort by _id.
StatusWith<std::unique_ptr<PlanStage>> parseBucket(const StageParseContext& ctx,
                                                   std::unique_ptr<PlanStage> input) {
    const bson::BsonElement& st = ctx.spec();
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
        return Status(40200, "The $bucket 'boundaries' field must be an array, but found type: " +
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
    ASSIGN_OR_RETURN(auto group, GroupStage::make(key, outputSpec, st.objValue().copy(), "BUCKET"));
    static const bson::BsonObj kIdAscending = bson::fromJson(R"({"_id": 1})");
    ASSIGN_OR_RETURN(auto fns, makeSortFunctions(kIdAscending));
    return stack(stack(std::move(input), std::move(group)),
                 std::make_unique<SortStage>(std::move(fns), kIdAscending, 0));
}

}  // namespace

namespace stages {
const StageDescriptor kBucket{"$bucket", {}, &parseBucket};
}  // namespace stages

}  // namespace tessera::command::exec
