#include "router/pipeline_split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "command/command.h"
#include "command/exec/plan_executor.h"
#include "router/cluster_find.h"

namespace tessera::router {
namespace {

using bson::BsonObj;
using bson::fromJson;

// Shell-style JSON ({a: 'x'}) → strict JSON for bson::fromJson.
BsonObj j(std::string_view relaxed) {
    std::string s(relaxed);
    std::replace(s.begin(), s.end(), '\'', '"');
    static const std::regex key(R"(([{,]\s*)([$A-Za-z_][\w$.]*)\s*:)");
    return bson::fromJson(std::regex_replace(s, key, "$1\"$2\":"));
}

std::vector<BsonObj> stagesOf(std::string_view json) {
    BsonObj arr = j(std::string("{p: ") + std::string(json) + "}");
    auto st = pipelineStages(arr["p"]);
    EXPECT_TRUE(st.isOK());
    return st.getValue();
}

std::string toJson(const std::vector<BsonObj>& stages) {
    std::string s = "[";
    for (size_t i = 0; i < stages.size(); ++i) s += (i ? ", " : "") + stages[i].toJson();
    return s + "]";
}

TEST(PipelineSplitTest, StreamingPrefixRunsOnShards) {
    auto split = splitPipeline(stagesOf("[{$match: {a: 1}}, {$project: {a: 1}}, {$unwind: '$a'}]"));
    ASSERT_TRUE(split.isOK());
    EXPECT_EQ(split.getValue().shardPart.size(), 3u);
    EXPECT_TRUE(split.getValue().mergePart.empty());
    EXPECT_TRUE(split.getValue().mergeSort.isEmpty());
}

TEST(PipelineSplitTest, SortSkipLimit) {
    auto split = splitPipeline(stagesOf(
        "[{$match: {a: 1}}, {$sort: {b: -1}}, {$skip: 5}, {$limit: 10}, {$project: {b: 1}}]"));
    ASSERT_TRUE(split.isOK());
    const SplitPipeline& s = split.getValue();
    EXPECT_EQ(toJson(s.shardPart),
              R"([{ "$match" : { "a" : 1 } }, { "$sort" : { "b" : -1 } }, { "$limit" : 15 }])");
    EXPECT_EQ(toJson(s.mergePart),
              R"([{ "$skip" : 5 }, { "$limit" : 10 }, { "$project" : { "b" : 1 } }])");
    EXPECT_EQ(s.mergeSort.toJson(), R"({ "b" : -1 })");
}

TEST(PipelineSplitTest, SkipLimitRunBound) {
    auto st = stagesOf("[{$limit: 10}, {$skip: 3}, {$limit: 4}, {$skip: 100}]");
    SkipLimitRun run = skipLimitRun(st, 0);
    ASSERT_TRUE(run.bound.has_value());
    EXPECT_EQ(*run.bound, 7);  // min(10, 3 + 4)
    EXPECT_EQ(run.end, 4u);
    EXPECT_FALSE(skipLimitRun(stagesOf("[{$skip: 3}]"), 0).bound.has_value());
}

TEST(PipelineSplitTest, SkipWithoutLimitGivesShardsEverything) {
    auto split = splitPipeline(stagesOf("[{$skip: 3}, {$match: {a: 1}}]"));
    ASSERT_TRUE(split.isOK());
    EXPECT_TRUE(split.getValue().shardPart.empty());
    EXPECT_EQ(split.getValue().mergePart.size(), 2u);
}

TEST(PipelineSplitTest, GroupSplitsIntoPartialAndMerge) {
    auto split = splitPipeline(
        stagesOf("[{$group: {_id: '$k', s: {$sum: '$v'}, a: {$avg: '$v'}, c: {$count: {}}}}]"));
    ASSERT_TRUE(split.isOK());
    const SplitPipeline& s = split.getValue();
    ASSERT_EQ(s.shardPart.size(), 1u);
    EXPECT_EQ(s.shardPart[0].firstElement().fieldName(), "$group");
    ASSERT_GE(s.mergePart.size(), 1u);
    EXPECT_EQ(
        s.mergePart[0].toJson(),
        R"({ "$group" : { "_id" : "$_id", "s" : { "$sum" : "$s" }, "a" : { "$sum" : "$a" }, )"
        R"("__tessera_avg_count_a" : { "$sum" : "$__tessera_avg_count_a" }, "c" : { "$sum" : "$c" } } })");
}

TEST(PipelineSplitTest, UnmergeableGroupRunsOnRouter) {
    auto split =
        splitPipeline(stagesOf("[{$match: {}}, {$group: {_id: 1, d: {$stdDevPop: '$v'}}}]"));
    ASSERT_TRUE(split.isOK());
    EXPECT_EQ(split.getValue().shardPart.size(), 1u);
    EXPECT_EQ(split.getValue().mergePart.size(), 1u);
}

TEST(PipelineSplitTest, OtherCollectionStagesAreDetected) {
    EXPECT_TRUE(pipelineTouchesOtherCollections(
        stagesOf("[{$facet: {x: [{$lookup: {from: 'o', as: 'y', pipeline: []}}]}}]")));
    EXPECT_FALSE(pipelineTouchesOtherCollections(stagesOf("[{$match: {}}, {$group: {_id: 1}}]")));
}

TEST(PipelineSplitTest, RejectsMultiFieldStage) {
    EXPECT_EQ(splitPipeline(stagesOf("[{$match: {}, $limit: 1}]")).getStatus().code(), 40323);
}

// ---- The split is equivalent to the whole pipeline: run the shard part over each "shard's"
// documents, merge, run the merge part, compare with the whole pipeline over all documents.

std::unique_ptr<command::exec::PlanStage> source(std::vector<BsonObj> docs, BsonObj sort = {}) {
    std::vector<RemoteCursor> cs(1);
    cs[0].shard = "s";
    cs[0].ns = "db.c";
    cs[0].buffer.assign(docs.begin(), docs.end());
    return std::make_unique<RemoteMergeStage>(std::move(cs), std::move(sort), nullptr, nullptr);
}

std::vector<BsonObj> runStages(std::unique_ptr<command::exec::PlanStage> root) {
    command::exec::PlanExecutor exec(nullptr, nullptr, std::move(root), "db.c");
    command::OperationContext opCtx;
    std::vector<BsonObj> out;
    while (true) {
        auto d = exec.nextDoc(opCtx);
        EXPECT_TRUE(d.isOK()) << d.getStatus().reason();
        if (!d.isOK() || !d.getValue()) break;
        out.push_back(*d.getValue());
    }
    return out;
}

std::vector<BsonObj> runPipeline(std::vector<BsonObj> docs, const std::vector<BsonObj>& stages) {
    auto root = reads::buildMergePipeline(source(std::move(docs)), stages, "db.c", nullptr, false);
    EXPECT_TRUE(root.isOK()) << root.getStatus().reason();
    return runStages(std::move(root.getValue()));
}

std::vector<BsonObj> runSplit(const std::vector<std::vector<BsonObj>>& shards,
                              const std::vector<BsonObj>& stages) {
    auto split = splitPipeline(stages);
    EXPECT_TRUE(split.isOK());
    std::vector<RemoteCursor> cs;
    for (const auto& docs : shards) {
        RemoteCursor c;
        c.shard = "s" + std::to_string(cs.size());
        c.ns = "db.c";
        for (BsonObj& d : runPipeline(docs, split.getValue().shardPart)) c.buffer.push_back(d);
        cs.push_back(std::move(c));
    }
    auto merge = std::make_unique<RemoteMergeStage>(std::move(cs), split.getValue().mergeSort,
                                                    nullptr, nullptr);
    auto root = reads::buildMergePipeline(std::move(merge), split.getValue().mergePart, "db.c",
                                          nullptr, false);
    EXPECT_TRUE(root.isOK()) << root.getStatus().reason();
    return runStages(std::move(root.getValue()));
}

std::vector<std::string> sortedJson(const std::vector<BsonObj>& docs) {
    std::vector<std::string> out;
    for (const auto& d : docs) out.push_back(d.toJson());
    std::sort(out.begin(), out.end());
    return out;
}

class SplitEquivalenceTest : public ::testing::Test {
  protected:
    void SetUp() override {
        for (int i = 0; i < 40; ++i) {
            std::string doc = "{_id: " + std::to_string(i) + ", k: " + std::to_string(i % 3) +
                              ", v: " + std::to_string(i * 7 % 11) + ", t: ['x" +
                              std::to_string(i % 4) + "']}";
            BsonObj d = j(doc);
            all.push_back(d);
            shards[i % 3 == 0 ? 0 : (i % 2)].push_back(d);
        }
    }
    void expectSame(std::string_view pipeline, bool ordered) {
        auto stages = stagesOf(pipeline);
        auto whole = runPipeline(all, stages);
        auto split = runSplit(shards, stages);
        EXPECT_FALSE(whole.empty()) << pipeline;
        if (ordered) {
            EXPECT_EQ(toJson(whole), toJson(split)) << pipeline;
        } else {
            EXPECT_EQ(sortedJson(whole), sortedJson(split)) << pipeline;
        }
    }
    std::vector<BsonObj> all;
    std::vector<std::vector<BsonObj>> shards{{}, {}};
};

TEST_F(SplitEquivalenceTest, SortSkipLimit) {
    expectSame("[{$match: {v: {$gt: 2}}}, {$sort: {v: 1, _id: -1}}, {$skip: 4}, {$limit: 9}]",
               true);
}

TEST_F(SplitEquivalenceTest, GroupAccumulators) {
    expectSame(
        "[{$group: {_id: '$k', s: {$sum: '$v'}, a: {$avg: '$v'}, mn: {$min: '$v'}, mx: {$max: "
        "'$v'}, c: {$count: {}}, n: {$sum: 1}}}, {$sort: {_id: 1}}]",
        true);
}

TEST_F(SplitEquivalenceTest, GroupPushAddToSet) {
    expectSame(
        "[{$group: {_id: '$k', p: {$push: '$v'}, u: {$addToSet: '$v'}}}, {$project: {_id: 1, np: "
        "{$size: '$p'}, nu: {$size: '$u'}, sp: {$sum: '$p'}}}]",
        false);
}

TEST_F(SplitEquivalenceTest, CountAndSortByCount) {
    expectSame("[{$match: {k: 1}}, {$count: 'n'}]", true);
    expectSame("[{$unwind: '$t'}, {$sortByCount: '$t'}, {$sort: {_id: 1}}]", true);
}

TEST_F(SplitEquivalenceTest, CountOfNothingIsNoDocument) {
    EXPECT_TRUE(runSplit(shards, stagesOf("[{$match: {k: 9}}, {$count: 'n'}]")).empty());
}

TEST(CountArithmeticTest, SkipAndLimitApplyToTheSum) {
    EXPECT_EQ(reads::applyCountSkipLimit(10, 0, 0), 10);
    EXPECT_EQ(reads::applyCountSkipLimit(10, 3, 0), 7);
    EXPECT_EQ(reads::applyCountSkipLimit(10, 3, 5), 5);
    EXPECT_EQ(reads::applyCountSkipLimit(10, 8, 5), 2);
    EXPECT_EQ(reads::applyCountSkipLimit(10, 20, 5), 0);
    EXPECT_EQ(reads::applyCountSkipLimit(10, 0, -4), 4);
}

}  // namespace
}  // namespace tessera::router
