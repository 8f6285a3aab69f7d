#include "router/cluster_write_batch.h"

#include <gtest/gtest.h>

#include <map>

#include "placement/routing_table.h"
#include "placement/test_util.h"

namespace tessera::router {
namespace {

using placement::test::obj;
using Mode = StatementTarget::Mode;

// {x: 1} split at 0 and 100: [MinKey, 0) on s0, [0, 100) on s1, [100, MaxKey) on s2.
std::shared_ptr<const placement::RoutingTable> table3() {
    auto p = placement::test::pattern("{\"x\": 1}");
    auto g = placement::test::gen();
    std::vector<placement::Chunk> chunks;
    std::vector<bson::BsonObj> bounds{p.globalMin(), obj("{\"x\": 0}"), obj("{\"x\": 100}"),
                                      p.globalMax()};
    placement::ChunkVersion v(g, 1, 0);
    for (int i = 0; i < 3; ++i) {
        chunks.push_back({bounds[i], bounds[i + 1], "s" + std::to_string(i), v});
        v = v.incMinor();
    }
    auto t = placement::RoutingTable::make("db.c", p, g, chunks);
    EXPECT_TRUE(t.isOK()) << t.getStatus().toString();
    return t.getValue();
}

StatementTarget target(WriteKind kind, const char* json) {
    static auto t = table3();
    bson::BsonObj stmt = obj(json);
    return targetStatement(*t, kind, stmt);
}

TEST(ClusterWriteTarget, InsertsGoToTheChunkOfTheirKey) {
    auto t = target(WriteKind::kInsert, "{\"_id\": 1, \"x\": 5}");
    EXPECT_EQ(t.mode, Mode::kShards);
    EXPECT_EQ(t.shards, std::vector<ShardId>{"s1"});
    EXPECT_EQ(target(WriteKind::kInsert, "{\"_id\": 1}").shards, std::vector<ShardId>{"s0"});
    auto arr = target(WriteKind::kInsert, "{\"_id\": 1, \"x\": [1]}");
    EXPECT_EQ(arr.mode, Mode::kError);
    EXPECT_EQ(arr.error.code(), 61);
}

TEST(ClusterWriteTarget, UpdatesAndDeletes) {
    auto exact = target(WriteKind::kUpdate, R"({"q": {"x": 150}, "u": {"$set": {"y": 1}}})");
    EXPECT_EQ(exact.mode, Mode::kShards);
    EXPECT_EQ(exact.shards, std::vector<ShardId>{"s2"});

    auto multi = target(WriteKind::kUpdate, R"({"q": {}, "u": {"$set": {"y": 1}}, "multi": true})");
    EXPECT_EQ(multi.mode, Mode::kShards);
    EXPECT_EQ(multi.shards, (std::vector<ShardId>{"s0", "s1", "s2"}));

    auto noKey = target(WriteKind::kUpdate, R"({"q": {"y": 1}, "u": {"$set": {"y": 2}}})");
    EXPECT_EQ(noKey.mode, Mode::kWithoutShardKey);
    EXPECT_EQ(noKey.shards.size(), 3u);

    // `_id` is unique per shard only: a single write by `_id` picks one document (two-phase)
    // instead of being broadcast, where every shard could apply it once.
    auto byId = target(WriteKind::kUpdate, R"({"q": {"_id": 7}, "u": {"$set": {"y": 2}}})");
    EXPECT_EQ(byId.mode, Mode::kWithoutShardKey);
    EXPECT_EQ(byId.shards.size(), 3u);
    auto deleteById = target(WriteKind::kDelete, R"({"q": {"_id": 7}, "limit": 1})");
    EXPECT_EQ(deleteById.mode, Mode::kWithoutShardKey);
    auto deleteManyById = target(WriteKind::kDelete, R"({"q": {"_id": 7}, "limit": 0})");
    EXPECT_EQ(deleteManyById.mode, Mode::kShards);

    auto upsertNoKey =
        target(WriteKind::kUpdate, R"({"q": {"_id": 7}, "u": {"$set": {"y": 2}}, "upsert": true})");
    EXPECT_EQ(upsertNoKey.mode, Mode::kWithoutShardKey);

    auto upsertExact =
        target(WriteKind::kUpdate, R"({"q": {"x": 7}, "u": {"$set": {"y": 2}}, "upsert": true})");
    EXPECT_EQ(upsertExact.mode, Mode::kShards);
    EXPECT_EQ(upsertExact.shards, std::vector<ShardId>{"s1"});

    // A single shard by range is enough for a non-upsert single write.
    auto range = target(WriteKind::kDelete, R"({"q": {"x": {"$gte": 10, "$lt": 20}}, "limit": 1})");
    EXPECT_EQ(range.mode, Mode::kShards);
    EXPECT_EQ(range.shards, std::vector<ShardId>{"s1"});

    auto delMulti = target(WriteKind::kDelete, R"({"q": {"x": {"$gte": 10}}, "limit": 0})");
    EXPECT_EQ(delMulti.mode, Mode::kShards);
    EXPECT_EQ(delMulti.shards, (std::vector<ShardId>{"s1", "s2"}));

    auto delOne = target(WriteKind::kDelete, R"({"q": {"x": {"$gte": 10}}, "limit": 1})");
    EXPECT_EQ(delOne.mode, Mode::kWithoutShardKey);
    EXPECT_EQ(delOne.shards, (std::vector<ShardId>{"s1", "s2"}));
}

TEST(ClusterWriteTarget, ShardKeyChangesGoThroughTheTwoPhaseProtocol) {
    auto setKey = target(WriteKind::kUpdate, R"({"q": {"x": 5}, "u": {"$set": {"x": 500}}})");
    EXPECT_EQ(setKey.mode, Mode::kWithoutShardKey);
    EXPECT_EQ(setKey.shards, std::vector<ShardId>{"s1"});
    // A replacement that keeps the key goes straight to the shard.
    auto keep = target(WriteKind::kUpdate, R"({"q": {"x": 5}, "u": {"x": 5, "a": 1}})");
    EXPECT_EQ(keep.mode, Mode::kShards);
    auto change = target(WriteKind::kUpdate, R"({"q": {"x": 5}, "u": {"x": 6, "a": 1}})");
    EXPECT_EQ(change.mode, Mode::kWithoutShardKey);
    // A non-simple collation is never exact.
    auto coll =
        target(WriteKind::kUpdate,
               R"({"q": {"x": 5}, "u": {"$set": {"y": 1}}, "collation": {"locale": "fr"}})");
    EXPECT_EQ(coll.mode, Mode::kWithoutShardKey);
    EXPECT_EQ(coll.shards.size(), 3u);
}

TEST(ClusterWriteTarget, Helpers) {
    auto p = placement::test::pattern(R"({"a.b": 1})");
    auto u = [](const char* json) {
        static std::vector<bson::BsonObj> keep;
        keep.push_back(obj(json));
        return keep.back()["u"];
    };
    EXPECT_TRUE(updateMayChangeShardKey(p, u(R"({"u": {"$set": {"a": 1}}})")));
    EXPECT_TRUE(updateMayChangeShardKey(p, u(R"({"u": {"$inc": {"a.b": 1}}})")));
    EXPECT_FALSE(updateMayChangeShardKey(p, u(R"({"u": {"$set": {"a.c": 1, "ab": 2}}})")));
    EXPECT_TRUE(updateMayChangeShardKey(p, u(R"({"u": {"z": 1}})")));  // query/update_paths_test
}

std::optional<StatementTarget> on(std::vector<ShardId> shards) {
    StatementTarget t;
    t.shards = std::move(shards);
    return t;
}
std::optional<StatementTarget> twoPhase() {
    StatementTarget t;
    t.mode = Mode::kWithoutShardKey;
    t.shards = {"s0", "s1"};
    return t;
}
std::optional<StatementTarget> failed() {
    StatementTarget t;
    t.mode = Mode::kError;
    t.error = Status(ErrorCodes::ShardKeyNotFound, "array");
    return t;
}

TEST(ClusterWritePlan, OrderedRunsStopAtAnotherShard) {
    std::vector<std::optional<StatementTarget>> ts{on({"s1"}), on({"s1"}), on({"s2"}), on({"s1"})};
    RoundPlan p = planRound(ts, true);
    ASSERT_EQ(p.batches.size(), 1u);
    EXPECT_EQ(p.batches[0].shard, "s1");
    EXPECT_EQ(p.batches[0].indexes, (std::vector<size_t>{0, 1}));
    // Once 0 and 1 are done, 2 runs alone on s2.
    ts[0].reset();
    ts[1].reset();
    p = planRound(ts, true);
    ASSERT_EQ(p.batches.size(), 1u);
    EXPECT_EQ(p.batches[0].indexes, (std::vector<size_t>{2}));
    // A multi-shard statement runs alone, on all its shards.
    ts = {on({"s0", "s1"}), on({"s1"})};
    p = planRound(ts, true);
    ASSERT_EQ(p.batches.size(), 2u);
    EXPECT_EQ(p.batches[0].indexes, std::vector<size_t>{0});
    EXPECT_EQ(p.batches[1].indexes, std::vector<size_t>{0});
    // Errors and two-phase statements are alone too.
    ts = {failed(), on({"s1"})};
    p = planRound(ts, true);
    EXPECT_TRUE(p.batches.empty());
    EXPECT_EQ(p.errors, std::vector<size_t>{0});
    ts = {on({"s1"}), twoPhase(), on({"s1"})};
    p = planRound(ts, true);
    EXPECT_EQ(p.batches[0].indexes, std::vector<size_t>{0});
    EXPECT_TRUE(p.withoutShardKey.empty());
    ts[0].reset();
    p = planRound(ts, true);
    EXPECT_TRUE(p.batches.empty());
    EXPECT_EQ(p.withoutShardKey, std::vector<size_t>{1});
}

TEST(ClusterWritePlan, UnorderedSendsEverythingAtOnce) {
    std::vector<std::optional<StatementTarget>> ts{on({"s1"}), on({"s2"}), std::nullopt,
                                                   failed(),   twoPhase(), on({"s0", "s1"})};
    RoundPlan p = planRound(ts, false);
    ASSERT_EQ(p.batches.size(), 3u);
    EXPECT_EQ(p.batches[0].shard, "s0");
    EXPECT_EQ(p.batches[0].indexes, std::vector<size_t>{5});
    EXPECT_EQ(p.batches[1].shard, "s1");
    EXPECT_EQ(p.batches[1].indexes, (std::vector<size_t>{0, 5}));
    EXPECT_EQ(p.batches[2].indexes, std::vector<size_t>{1});
    EXPECT_EQ(p.errors, std::vector<size_t>{3});
    EXPECT_EQ(p.withoutShardKey, std::vector<size_t>{4});
}

// Sub-batches stay within the limits of one command: an unordered batch is cut into several
// sub-batches of a shard, an ordered run ends where the next statement would not fit.
TEST(ClusterWritePlan, SubBatchesStayWithinTheirLimits) {
    std::vector<std::optional<StatementTarget>> ts(7, on({"s1"}));
    ts[3] = on({"s2"});
    SubBatchLimits byCount;
    byCount.maxStatements = 2;
    RoundPlan p = planRound(ts, false, byCount);
    ASSERT_EQ(p.batches.size(), 4u);
    std::vector<std::vector<size_t>> s1;
    for (const SubBatch& b : p.batches) {
        EXPECT_LE(b.indexes.size(), 2u);
        if (b.shard == "s1") s1.push_back(b.indexes);
    }
    EXPECT_EQ(s1, (std::vector<std::vector<size_t>>{{0, 1}, {2, 4}, {5, 6}}));
    p = planRound(ts, true, byCount);
    ASSERT_EQ(p.batches.size(), 1u);
    EXPECT_EQ(p.batches[0].indexes, (std::vector<size_t>{0, 1}));

    SubBatchLimits byBytes;  // statements here are 0 bytes: overhead only
    byBytes.maxBytes = 2 * SubBatchLimits::kStatementOverheadBytes + 1;
    p = planRound(ts, true, byBytes);
    ASSERT_EQ(p.batches.size(), 1u);
    EXPECT_EQ(p.batches[0].indexes, (std::vector<size_t>{0, 1}));
    byBytes.maxBytes = 1;  // not even one fits: each sub-batch still takes one
    p = planRound(ts, false, byBytes);
    EXPECT_EQ(p.batches.size(), 7u);
}

// A batch is targeted once however many rounds it takes: n statements alternating between two
// shards take n ordered rounds and n targetings in all (it was one targeting of every pending
// statement per round: quadratic).
TEST(ClusterWritePlan, OrderedRoundsTargetEachStatementOnce) {
    class Counting final : public RoundStatements {
      public:
        explicit Counting(size_t n) : done(n, false) {}
        size_t size() const override { return done.size(); }
        size_t bytes(size_t) const override { return 10; }
        const StatementTarget* target(size_t i) override {
            if (done[i]) return nullptr;
            if (!cache.count(i)) {
                ++targetings;
                cache[i] = *on({i % 2 ? "s1" : "s0"});
            }
            return &cache[i];
        }
        std::vector<bool> done;
        std::map<size_t, StatementTarget> cache;
        size_t targetings = 0;
    };
    const size_t n = 1000;
    Counting statements(n);
    size_t first = 0;
    size_t rounds = 0;
    for (;;) {
        while (first < n && statements.done[first]) ++first;
        RoundPlan p = planRound(statements, first, true);
        if (p.batches.empty()) break;
        ++rounds;
        for (const SubBatch& b : p.batches) {
            for (size_t i : b.indexes) statements.done[i] = true;
        }
    }
    EXPECT_EQ(rounds, n);
    EXPECT_EQ(statements.targetings, n);
}

ShardResponse reply(const ShardId& shard, const char* json) {
    return ShardResponse{shard, "h:1", Status::OK(), obj(json)};
}

bson::BsonObj merged(const WriteBatchMerger& m, bool ordered) {
    bson::BsonBuilder b;
    m.appendReply(b, ordered);
    return b.obj();
}

TEST(ClusterWriteMerge, RemapsIndexesAndSums) {
    WriteBatchMerger m(WriteKind::kUpdate);
    auto o1 = m.addResponse({"s0", {1, 4}}, reply("s0", R"({"ok": 1, "n": 2, "nModified": 1,
                                "upserted": [{"index": 1, "_id": 9}]})"),
                            false);
    EXPECT_EQ(o1.completed, (std::vector<size_t>{1, 4}));
    auto o2 = m.addResponse({"s1", {0, 2, 3}},
                            reply("s1", R"({"ok": 1, "n": 1, "nModified": 1, "writeErrors": [
            {"index": 1, "code": 11000, "keyPattern": {"_id": 1}, "errmsg": "dup"}]})"),
                            false);
    EXPECT_TRUE(o2.sawError);
    EXPECT_EQ(o2.completed, (std::vector<size_t>{0, 2, 3}));
    EXPECT_EQ(merged(m, false),
              obj(R"({"n": 3, "nModified": 2, "upserted": [{"index": 4, "_id": 9}],
                  "writeErrors": [{"index": 2, "code": 11000, "keyPattern": {"_id": 1},
                  "errmsg": "dup"}]})"));
}

TEST(ClusterWriteMerge, StaleStatementsAreRetriedNotReported) {
    WriteBatchMerger m(WriteKind::kInsert);
    // Command-level StaleConfig: nothing ran.
    auto all = m.addResponse({"s0", {0, 1}},
                             reply("s0", R"({"ok": 0, "code": 13388, "errmsg": "stale"})"), true);
    EXPECT_TRUE(all.sawStale);
    EXPECT_EQ(all.stale, (std::vector<size_t>{0, 1}));
    // Ordered: a stale item stops the shard; it and everything after it are retried.
    auto item = m.addResponse({"s1", {2, 3, 4}}, reply("s1", R"({"ok": 1, "n": 1, "writeErrors": [
            {"index": 1, "code": 13388, "errmsg": "stale"}]})"),
                              true);
    EXPECT_EQ(item.completed, std::vector<size_t>{2});
    EXPECT_EQ(item.stale, (std::vector<size_t>{3, 4}));
    // Unordered: only the stale item.
    auto un = m.addResponse({"s1", {5, 6, 7}}, reply("s1", R"({"ok": 1, "n": 2, "writeErrors": [
            {"index": 1, "code": 249, "errmsg": "stale db"}]})"),
                            false);
    EXPECT_EQ(un.completed, (std::vector<size_t>{5, 7}));
    EXPECT_EQ(un.stale, std::vector<size_t>{6});
    EXPECT_EQ(merged(m, false), obj(R"({"n": 3})"));
    // Exhausted retries: the stale error is final.
    auto fin = m.addResponse(
        {"s0", {0}}, reply("s0", R"({"ok": 0, "code": 13388, "errmsg": "stale"})"), true, true);
    EXPECT_TRUE(fin.stale.empty());
    EXPECT_EQ(merged(m, true),
              obj(R"({"n": 3, "writeErrors": [{"index": 0, "code": 13388, "errmsg": "stale"}]})"));
}

TEST(ClusterWriteMerge, OrderedErrorsSkipTheRest) {
    WriteBatchMerger m(WriteKind::kDelete);
    auto o = m.addResponse({"s0", {3, 4, 5}}, reply("s0", R"({"ok": 1, "n": 1, "writeErrors": [
            {"index": 1, "code": 2, "errmsg": "bad"}]})"),
                           true);
    EXPECT_EQ(o.completed, (std::vector<size_t>{3, 4}));
    EXPECT_EQ(o.skipped, std::vector<size_t>{5});
    // A command error fails the first statement only when ordered.
    auto c = m.addResponse({"s1", {6, 7}},
                           reply("s1", R"({"ok": 0, "code": 26, "codeName": "NamespaceNotFound",
                                 "errmsg": "gone", "$clusterTime": {}})"),
                           false);
    EXPECT_EQ(c.completed, (std::vector<size_t>{6, 7}));
    auto net = m.addResponse(
        {"s2", {8, 9}},
        ShardResponse{"s2", "h:2", Status(ErrorCodes::HostUnreachable, "down"), bson::BsonObj()},
        true);
    EXPECT_EQ(net.completed, std::vector<size_t>{8});
    EXPECT_EQ(net.skipped, std::vector<size_t>{9});
    EXPECT_EQ(merged(m, false), obj(R"({"n": 1, "writeErrors": [
        {"index": 4, "code": 2, "errmsg": "bad"},
        {"index": 6, "code": 26, "errmsg": "gone"},
        {"index": 7, "code": 26, "errmsg": "gone"},
        {"index": 8, "code": 6, "errmsg": "down"}]})"));
    EXPECT_EQ(merged(m, true), obj(R"({"n": 1, "writeErrors": [
        {"index": 4, "code": 2, "errmsg": "bad"}]})"));
    EXPECT_EQ(m.firstErrorIndex(), std::optional<size_t>(4));
}

TEST(ClusterWriteMerge, BroadcastErrorsAreReportedOnceAndWriteConcernKept) {
    WriteBatchMerger m(WriteKind::kUpdate);
    m.addResponse({"s0", {0}}, reply("s0", R"({"ok": 1, "n": 0, "nModified": 0, "writeErrors": [
            {"index": 0, "code": 2, "errmsg": "a"}], "writeConcernError": {"code": 64,
            "errmsg": "timeout"}})"),
                  false);
    m.addResponse({"s1", {0}}, reply("s1", R"({"ok": 1, "n": 0, "nModified": 0, "writeErrors": [
            {"index": 0, "code": 2, "errmsg": "b"}]})"),
                  false);
    EXPECT_EQ(merged(m, false), obj(R"({"n": 0, "nModified": 0, "writeErrors": [
        {"index": 0, "code": 2, "errmsg": "a"}],
        "writeConcernError": {"code": 64, "errmsg": "timeout"}})"));
}

TEST(ClusterWriteSubCommand, KeepsGenericFieldsAndReplacesStatements) {
    bson::BsonObj body = obj(R"({"insert": "c", "documents": [{"a": 1}], "ordered": false,
        "$db": "db", "lsid": {"id": 1}, "txnNumber": 5, "writeConcern": {"w": 1},
        "shardVersion": {"e": 1}, "bypassDocumentValidation": true})");
    bson::BsonObj s1 = obj(R"({"_id": 1})");
    bson::BsonObj s2 = obj(R"({"_id": 2})");
    // A retryable write's sub-command carries the client's indexes of its statements.
    EXPECT_EQ(buildSubCommand(body, "documents", {s1, s2}, true, {1, 3}),
              obj(R"({"insert": "c", "documents": [{"_id": 1}, {"_id": 2}], "ordered": true,
                  "lsid": {"id": 1}, "txnNumber": 5, "writeConcern": {"w": 1},
                  "bypassDocumentValidation": true, "stmtIds": [1, 3]})"));
    EXPECT_EQ(buildSubCommand(body, "documents", {s1}, false),
              obj(R"({"insert": "c", "documents": [{"_id": 1}], "ordered": false,
                  "lsid": {"id": 1}, "txnNumber": 5, "writeConcern": {"w": 1},
                  "bypassDocumentValidation": true, "stmtIds": [0]})"));
    // A body with ids of its own (the router's bulkWrite per-op commands) maps through them.
    bson::BsonObj op = obj(R"({"insert": "c", "lsid": {"id": 1}, "txnNumber": 5,
        "stmtIds": [7]})");
    EXPECT_EQ(buildSubCommand(op, "documents", {s1}, true, {0}),
              obj(R"({"insert": "c", "documents": [{"_id": 1}], "ordered": true,
                  "lsid": {"id": 1}, "txnNumber": 5, "stmtIds": [7]})"));
    // Not a retryable write: no ids.
    bson::BsonObj plain = obj(R"({"insert": "c", "documents": [], "writeConcern": {"w": 1}})");
    EXPECT_EQ(buildSubCommand(plain, "documents", {s1}, true, {4}),
              obj(R"({"insert": "c", "documents": [{"_id": 1}], "ordered": true,
                  "writeConcern": {"w": 1}})"));
}

}  // namespace
}  // namespace tessera::router
