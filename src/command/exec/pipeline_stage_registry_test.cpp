#include "command/exec/pipeline_stage_registry.h"

#include <gtest/gtest.h>

#include <set>

#include "bson/bson_builder.h"

namespace tessera::command::exec {
namespace {

// The stages the README's Aggregation row lists as supported.
const std::vector<std::string> kDocumented = {
    "$match",       "$project",     "$addFields", "$set",
    "$unset",       "$group",       "$sort",      "$limit",
    "$skip",        "$count",       "$unwind",    "$replaceRoot",
    "$replaceWith", "$sortByCount", "$facet",     "$bucket",
    "$bucketAuto",  "$redact",      "$lookup",    "$graphLookup",
    "$unionWith",   "$sample",      "$out",       "$merge",
    "$collStats",   "$indexStats",  "$documents", "$listLocalSessions",
    "$currentOp"};

TEST(PipelineStageRegistry, EveryDocumentedStageHasItsOwnParser) {
    for (const std::string& name : kDocumented) {
        const StageDescriptor* d = findStage(name);
        ASSERT_NE(d, nullptr) << name;
        EXPECT_EQ(d->name, name);
        EXPECT_NE(d->parse, nullptr) << name;
    }
}

TEST(PipelineStageRegistry, KnownButUnsupportedStagesHaveNoParserAndUnknownOnesNoDescriptor) {
    for (std::string_view name : {"$setWindowFields", "$densify", "$changeStream", "$geoNear"}) {
        const StageDescriptor* d = findStage(name);
        ASSERT_NE(d, nullptr) << name;
        EXPECT_EQ(d->parse, nullptr) << name;
    }
    EXPECT_EQ(findStage("$frobnicate"), nullptr);
    EXPECT_EQ(findStage("match"), nullptr);
}

TEST(PipelineStageRegistry, ConstraintsSayWhereAStageMayAppearAndHowItSplits) {
    std::set<std::string> streaming;
    for (const std::string& name : kDocumented) {
        if (findStage(name)->constraints.split == StageSplit::kStreaming) streaming.insert(name);
    }
    EXPECT_EQ(streaming,
              (std::set<std::string>{"$match", "$project", "$addFields", "$set", "$unset",
                                     "$replaceRoot", "$replaceWith", "$unwind", "$redact"}));
    EXPECT_EQ(findStage("$sort")->constraints.split, StageSplit::kSortMerge);
    EXPECT_EQ(findStage("$limit")->constraints.split, StageSplit::kSkipLimit);
    EXPECT_EQ(findStage("$group")->constraints.split, StageSplit::kAccumulate);
    EXPECT_EQ(findStage("$lookup")->constraints.split, StageSplit::kOnMerger);
    EXPECT_TRUE(findStage("$out")->constraints.writes);
    EXPECT_TRUE(findStage("$merge")->constraints.writes);
    EXPECT_FALSE(findStage("$merge")->constraints.allowedInFacet);
    EXPECT_TRUE(findStage("$collStats")->constraints.firstOnly);
    EXPECT_FALSE(findStage("$collStats")->constraints.collectionless);
    EXPECT_TRUE(findStage("$documents")->constraints.collectionless);
    EXPECT_TRUE(findStage("$unionWith")->constraints.readsOtherCollections);
    EXPECT_TRUE(findStage("$graphLookup")->constraints.readsOtherCollections);
}

TEST(PipelineStageRegistry, TheBuilderEnforcesTheConstraints) {
    PipelineContext pctx;
    auto status = [&](const char* json, const char* ns = "db.c") {
        bson::BsonObj p = bson::fromJson(json);
        return validatePipeline(pctx, ns, p, /*forView=*/false).code();
    };
    EXPECT_EQ(status(R"([{"$match": {}}, {"$collStats": {}}])"), 40602);
    EXPECT_EQ(status(R"([{"$out": "x"}, {"$match": {}}])"), 40601);
    EXPECT_EQ(status(R"([{"$facet": {"a": [{"$facet": {}}]}}])"), 40600);
    EXPECT_EQ(status(R"([{"$densify": {}}])"), static_cast<int>(ErrorCodes::NotImplemented));
    EXPECT_EQ(status(R"([{"$frobnicate": {}}])"), 40324);
    EXPECT_EQ(status(R"([{"$match": {}}])", "db.$cmd.aggregate"),
              static_cast<int>(ErrorCodes::InvalidNamespace));
    bson::BsonObj view = bson::fromJson(R"([{"$out": "x"}])");
    EXPECT_EQ(validatePipeline(pctx, "db.c", view, /*forView=*/true).code(),
              static_cast<int>(ErrorCodes::OptionNotSupportedOnView));
}

}  // namespace
}  // namespace tessera::command::exec
