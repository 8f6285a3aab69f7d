#include <gtest/gtest.h>

#include "bson/bson_builder.h"
#include "command/command.h"
#include "command/exec/agg_stages.h"
#include "command/exec/plan_executor.h"
#include "command/exec/query_adapters.h"
#include "command/exec/query_stages.h"
#include "command/exec/scan_stages.h"
#include "command/exec/transform_stages.h"

namespace tessera::command::exec {
namespace {

std::unique_ptr<PlanStage> source(std::vector<std::string> jsons) {
    std::vector<bson::BsonObj> docs;
    for (const auto& j : jsons) docs.push_back(bson::fromJson(j));
    return std::make_unique<VectorSourceStage>(std::move(docs));
}

std::unique_ptr<PlanStage> on(std::unique_ptr<PlanStage> stage, std::unique_ptr<PlanStage> child) {
    stage->setChild(std::move(child));
    return stage;
}

StatusWith<std::vector<std::string>> drain(std::unique_ptr<PlanStage> root,
                                           const OperationContext* opCtx = nullptr) {
    OperationContext local;
    PlanExecutor exec(nullptr, nullptr, std::move(root), "db.c");
    std::vector<std::string> out;
    while (true) {
        ASSIGN_OR_RETURN(auto doc, exec.nextDoc(opCtx ? *opCtx : local));
        if (!doc) break;
        out.push_back(doc->toJson());
    }
    return out;
}

std::string js(std::string_view j) { return bson::fromJson(j).toJson(); }

std::unique_ptr<PlanStage> sortBy(std::string_view spec, int64_t limit = 0,
                                  size_t memLimit = kMaxBlockingMemoryBytes) {
    bson::BsonObj pattern = bson::fromJson(spec);
    auto fns = makeSortFunctions(pattern);
    EXPECT_TRUE(fns.isOK());
    return std::make_unique<SortStage>(std::move(fns.getValue()), pattern, limit, memLimit);
}

TEST(SortStageTest, FullSortWithArraysAndMissing) {
    auto out = drain(
        on(sortBy(R"({"a": 1})"), source({R"({"_id": 1, "a": 5})", R"({"_id": 2, "a": [9, 0]})",
                                          R"({"_id": 3})", R"({"_id": 4, "a": 3})"})));
    ASSERT_TRUE(out.isOK());
    // Missing sorts as null (first); an array sorts by its smallest element ascending.
    std::vector<std::string> expect = {js(R"({"_id": 3})"), js(R"({"_id": 2, "a": [9, 0]})"),
                                       js(R"({"_id": 4, "a": 3})"), js(R"({"_id": 1, "a": 5})")};
    EXPECT_EQ(out.getValue(), expect);
    auto desc = drain(on(sortBy(R"({"a": -1})"),
                         source({R"({"_id": 1, "a": 5})", R"({"_id": 2, "a": [9, 0]})"})));
    EXPECT_EQ(desc.getValue()[0], js(R"({"_id": 2, "a": [9, 0]})"));
}

TEST(SortStageTest, TopKKeepsBestAndIsStable) {
    std::vector<std::string> in;
    for (int i = 0; i < 100; ++i) {
        in.push_back("{\"_id\": " + std::to_string(i) + ", \"k\": " + std::to_string(i % 7) + "}");
    }
    auto out = drain(on(sortBy(R"({"k": 1})", 3), source(in)));
    ASSERT_TRUE(out.isOK());
    std::vector<std::string> expect = {js(R"({"_id": 0, "k": 0})"), js(R"({"_id": 7, "k": 0})"),
                                       js(R"({"_id": 14, "k": 0})")};
    EXPECT_EQ(out.getValue(), expect);
}

TEST(SortStageTest, MemoryLimit) {
    std::vector<std::string> in(50, R"({"a": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"})");
    auto out = drain(on(sortBy(R"({"a": 1})", 0, 1000), source(in)));
    ASSERT_FALSE(out.isOK());
    EXPECT_EQ(out.getStatus().code(), 292);
    EXPECT_EQ(out.getStatus().codeName(), "QueryExceededMemoryLimitNoDiskUseAllowed");
    // Top-k keeps only k documents, so it stays under the same limit.
    EXPECT_TRUE(drain(on(sortBy(R"({"a": 1})", 2, 1000), source(in))).isOK());
}

TEST(SortStageTest, BadSortSpec) {
    EXPECT_EQ(makeSortFunctions(bson::fromJson(R"({"a": 2})")).getStatus().code(), 15975);
    EXPECT_EQ(makeSortFunctions(bson::fromJson(R"({"": 1})")).getStatus().code(), 2);
}

TEST(StagesTest, FilterSkipLimit) {
    auto matcher = query::Matcher::parse(bson::fromJson(R"({"a": {"$gt": 1}})"));
    ASSERT_TRUE(matcher.isOK());
    std::shared_ptr<const query::Matcher> m(std::move(matcher.getValue()));
    auto root = on(
        std::make_unique<LimitStage>(2),
        on(std::make_unique<SkipStage>(1),
           on(std::make_unique<FilterStage>(m), source({R"({"a": 1})", R"({"a": 2})", R"({"a": 3})",
                                                        R"({"a": 4})", R"({"a": 5})"}))));
    auto out = drain(std::move(root));
    ASSERT_TRUE(out.isOK());
    std::vector<std::string> expect = {js(R"({"a": 3})"), js(R"({"a": 4})")};
    EXPECT_EQ(out.getValue(), expect);
}

TEST(StagesTest, InterruptWhenDeadlinePassed) {
    std::vector<std::string> in(1000, R"({"a": 1})");
    auto matcher = query::Matcher::parse(bson::fromJson(R"({"a": 2})"));
    std::shared_ptr<const query::Matcher> m(std::move(matcher.getValue()));
    OperationContext opCtx;
    opCtx.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    auto out = drain(on(std::make_unique<FilterStage>(m), source(in)), &opCtx);
    ASSERT_FALSE(out.isOK());
    EXPECT_EQ(out.getStatus().code(), 50);
}

TEST(StagesTest, ProjectionInclusionExclusion) {
    auto inc = makeProjection(bson::fromJson(R"({"a": 1})"));
    ASSERT_TRUE(inc.isOK());
    auto out = inc.getValue()(bson::fromJson(R"({"_id": 1, "a": 2, "b": 3})"), {});
    EXPECT_EQ(out.getValue().toJson(), js(R"({"_id": 1, "a": 2})"));
    auto exc = makeProjection(bson::fromJson(R"({"a": 0, "_id": 0})"));
    out = exc.getValue()(bson::fromJson(R"({"_id": 1, "a": 2, "b": 3})"), {});
    EXPECT_EQ(out.getValue().toJson(), js(R"({"b": 3})"));
}

TEST(GroupStageTest, ParseErrors) {
    auto spec = [](std::string_view j) {
        return GroupStage::parse(
            bson::fromJson(std::string("{\"g\": ") + std::string(j) + "}").firstElement());
    };
    EXPECT_EQ(spec(R"({"n": {"$sum": 1}})").getStatus().code(), 15955);
    EXPECT_EQ(spec(R"({"_id": 1, "n": {"$bogus": 1}})").getStatus().code(), 15952);
    EXPECT_EQ(spec(R"({"_id": 1, "n": 1})").getStatus().code(), 40238);
    EXPECT_EQ(spec("1").getStatus().code(), 15947);
    EXPECT_TRUE(spec(R"({"_id": "$a", "n": {"$sum": 1}})").isOK());
}

TEST(GroupStageTest, SumTypesAndNestedPaths) {
    auto bson = bson::fromJson(R"({"g": {"_id": "$k.x", "s": {"$sum": "$v"}, "n": {"$sum": 1}}})");
    auto g = GroupStage::parse(bson.firstElement());
    ASSERT_TRUE(g.isOK());
    auto out = drain(
        on(std::move(g.getValue()), source({R"({"k": {"x": 1}, "v": 2147483647})",
                                            R"({"k": {"x": 1}, "v": 1})", R"({"v": "str"})"})));
    ASSERT_TRUE(out.isOK());
    ASSERT_EQ(out.getValue().size(), 2u);
    // int32 overflow promotes to int64; a missing group key is null; strings are ignored.
    EXPECT_EQ(out.getValue()[0], js(R"({"_id": 1, "s": {"$numberLong": "2147483648"}, "n": 2})"));
    EXPECT_EQ(out.getValue()[1], js(R"({"_id": null, "s": 0, "n": 1})"));
}

TEST(UnwindStageTest, UnwindsArrays) {
    auto spec = bson::fromJson(R"({"u": {"path": "$a", "includeArrayIndex": "i"}})");
    auto u = UnwindStage::parse(spec.firstElement());
    ASSERT_TRUE(u.isOK());
    auto out = drain(on(
        std::move(u.getValue()),
        source({R"({"_id": 1, "a": [1, 2]})", R"({"_id": 2, "a": []})", R"({"_id": 3, "a": 7})"})));
    ASSERT_TRUE(out.isOK());
    ASSERT_EQ(out.getValue().size(), 3u);
    EXPECT_EQ(out.getValue()[1], js(R"({"_id": 1, "a": 2, "i": {"$numberLong": "1"}})"));
}

}  // namespace
}  // namespace tessera::command::exec
