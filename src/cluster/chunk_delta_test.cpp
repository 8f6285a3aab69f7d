#include "cluster/chunk_delta.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <vector>

#include "base/mutex.h"
#include "bson/bson_builder.h"
#include "cluster/catalog_cache.h"
#include "net/running_server.h"

namespace tessera::cluster {
namespace {

using bson::BsonBuilder;
using bson::BsonObj;
using placement::Chunk;
using placement::ChunkVersion;
using placement::CollectionGeneration;
using placement::RoutingTable;
using Table = std::shared_ptr<const RoutingTable>;

CollectionGeneration gen(uint8_t epochByte, uint32_t secs) {
    CollectionGeneration g;
    g.epoch.bytes[11] = epochByte;
    g.timestamp = Timestamp::fromParts(secs, 1);
    return g;
}

placement::ShardKeyPattern pattern() {
    return placement::ShardKeyPattern::parse(bson::fromJson(R"({"a": 1})")).getValue();
}

// A bound of {a: 1}: nullopt is MinKey as a min and MaxKey as a max.
BsonObj bound(std::optional<int> v, bool isMax) {
    BsonBuilder b;
    if (v) {
        b.appendInt32("a", *v);
    } else if (isMax) {
        b.appendMaxKey("a");
    } else {
        b.appendMinKey("a");
    }
    return b.obj();
}

// The chunks of one collection as the config server holds them, with MongoDB's version rules
// for a split, a migration commit (with its control chunk) and a merge.
struct SimChunk {
    std::optional<int> lo, hi;
    std::string shard;
    uint32_t major = 1, minor = 0;
};

struct Sim {
    CollectionGeneration g;
    std::vector<SimChunk> chunks;  // sorted by lo

    std::pair<uint32_t, uint32_t> maxVersion(const std::string* shard = nullptr) const {
        std::pair<uint32_t, uint32_t> best{0, 0};
        for (const auto& c : chunks) {
            if (shard && c.shard != *shard) continue;
            best = std::max(best, std::make_pair(c.major, c.minor));
        }
        return best;
    }
    // config::computeSplit's rule: from the collection version, the major bumped when the owner's
    // version is the collection version; each child gets the next minor.
    bool split(size_t i, std::mt19937& rng) {
        SimChunk c = chunks[i];
        int lo = c.lo.value_or(-100000), hi = c.hi.value_or(100000);
        if (hi - lo < 2) return false;
        int point = lo + 1 + static_cast<int>(rng() % static_cast<uint32_t>(hi - lo - 1));
        auto coll = maxVersion();
        auto next = coll;
        if (maxVersion(&c.shard) == coll) next = {coll.first + 1, 0};
        SimChunk left = c, right = c;
        left.hi = point;
        right.lo = point;
        left.major = right.major = next.first;
        left.minor = next.second + 1;
        right.minor = next.second + 2;
        chunks[i] = left;
        chunks.insert(chunks.begin() + static_cast<long>(i) + 1, right);
        return true;
    }
    // config::computeMoveCommit's rule (not linkable from tessera_cluster_test): the moved chunk
    // gets (collection major + 1)|0 on the recipient; the donor's remaining chunk with the lowest
    // min, if any, becomes the control chunk at (major + 1)|1.
    void move(size_t i, const std::string& to) {
        auto coll = maxVersion();
        const std::string donor = chunks[i].shard;
        chunks[i].shard = to;
        chunks[i].major = coll.first + 1;
        chunks[i].minor = 0;
        for (auto& c : chunks) {
            if (&c != &chunks[i] && c.shard == donor) {
                c.major = coll.first + 1;
                c.minor = 1;
                break;  // sorted: the first is the lowest min
            }
        }
    }
    // config::computeMerge's rule: (collection major + 1)|0.
    bool merge(size_t i) {
        if (i + 1 >= chunks.size() || chunks[i].shard != chunks[i + 1].shard) return false;
        auto coll = maxVersion();
        chunks[i].hi = chunks[i + 1].hi;
        chunks[i].major = coll.first + 1;
        chunks[i].minor = 0;
        chunks.erase(chunks.begin() + static_cast<long>(i) + 1);
        return true;
    }
    Table table() const {
        std::vector<Chunk> out;
        for (const auto& c : chunks) {
            out.push_back({bound(c.lo, false), bound(c.hi, true), c.shard,
                           ChunkVersion(g, c.major, c.minor)});
        }
        auto t = RoutingTable::make("db.c", pattern(), g, std::move(out));
        EXPECT_TRUE(t.isOK()) << t.getStatus().toString();
        return t.getValue();
    }
};

// Chunks [MinKey, b0), [b0, b1), ... on shards[i % n] with versions 1|0, 1|1, ...
Sim initial(const CollectionGeneration& g, int numChunks, std::vector<std::string> shards) {
    Sim sim{g, {}};
    for (int i = 0; i < numChunks; ++i) {
        SimChunk c;
        if (i > 0) c.lo = i * 100;
        if (i + 1 < numChunks) c.hi = (i + 1) * 100;
        c.shard = shards[static_cast<size_t>(i) % shards.size()];
        c.minor = static_cast<uint32_t>(i);
        sim.chunks.push_back(c);
    }
    return sim;
}

std::optional<std::vector<Chunk>> delta(const RoutingTable& table, const ChunkVersion& since) {
    BsonBuilder b;
    b.append("ok", 0.0).appendInt32("code", 13388);
    appendChangedChunks(table, since, b);
    return parseChangedChunks(b.obj(), table.generation());
}

bool hasField(const RoutingTable& table, const ChunkVersion& since) {
    BsonBuilder b;
    appendChangedChunks(table, since, b);
    return !b.obj()[kChangedChunksField].eoo();
}

// Chunk-for-chunk equality (bounds, shard, version).
void expectSameChunks(const RoutingTable& actual, const RoutingTable& expected) {
    ASSERT_EQ(actual.numChunks(), expected.numChunks());
    for (size_t i = 0; i < actual.numChunks(); ++i) {
        const Chunk& a = actual.chunkMap().chunk(i);
        const Chunk& e = expected.chunkMap().chunk(i);
        EXPECT_EQ(a.min.toJson(), e.min.toJson()) << i;
        EXPECT_EQ(a.max.toJson(), e.max.toJson()) << i;
        EXPECT_EQ(a.shard, e.shard) << i;
        EXPECT_EQ(a.version, e.version) << i;
    }
}

TEST(ChunkDelta, RoundTripCarriesExactlyTheNewerChunks) {
    auto g = gen(1, 100);
    Sim sim = initial(g, 4, {"s0", "s1"});  // 1|0..1|3
    Table before = sim.table();
    sim.move(0, "s1");  // [MinKey, 100) -> s1 at 2|0, control [200, 300) on s0 at 2|1
    Table after = sim.table();

    const ChunkVersion since = before.get()->shardVersion("s1");  // 1|3
    auto chunks = delta(*after, since);
    ASSERT_TRUE(chunks.has_value());
    ASSERT_EQ(chunks->size(), 2u);
    for (const Chunk& c : *chunks) {
        EXPECT_TRUE(since.isOlderThan(c.version)) << c.version.toString();
        const Chunk& inTable = after->findChunk(c.min);
        EXPECT_EQ(c.min.toJson(), inTable.min.toJson());
        EXPECT_EQ(c.max.toJson(), inTable.max.toJson());
        EXPECT_EQ(c.shard, inTable.shard);
        EXPECT_EQ(c.version, inTable.version);
    }
    auto updated = before->makeUpdated(*chunks);
    ASSERT_TRUE(updated.isOK()) << updated.getStatus().toString();
    expectSameChunks(*updated.getValue(), *after);

    // Absent or malformed field: nullopt.
    EXPECT_FALSE(parseChangedChunks(bson::fromJson(R"({"ok": 0})"), g).has_value());
    EXPECT_FALSE(
        parseChangedChunks(bson::fromJson(R"({"tesseraChangedChunks": [1]})"), g).has_value());
    EXPECT_FALSE(parseChangedChunks(bson::fromJson(R"({"tesseraChangedChunks": [{"min": {}}]})"), g)
                     .has_value());
    EXPECT_FALSE(
        parseChangedChunks(bson::fromJson(R"({"tesseraChangedChunks": {}})"), g).has_value());
}

TEST(ChunkDelta, NothingForAnotherGenerationOrANotOlderVersion) {
    auto g = gen(1, 100);
    Sim sim = initial(g, 4, {"s0", "s1"});
    Table table = sim.table();
    const ChunkVersion coll = table->collectionVersion();  // 1|3
    EXPECT_TRUE(hasField(*table, ChunkVersion(g, 1, 0)));
    EXPECT_FALSE(hasField(*table, ChunkVersion(gen(2, 100), 1, 0)));
    EXPECT_FALSE(hasField(*table, ChunkVersion(gen(1, 200), 1, 0)));
    EXPECT_FALSE(hasField(*table, ChunkVersion::unsharded()));
    EXPECT_FALSE(hasField(*table, coll));
    EXPECT_FALSE(hasField(*table, coll.incMinor()));
    EXPECT_FALSE(hasField(*table, coll.incMajor()));
}

TEST(ChunkDelta, NothingWhenTooManyChunksChanged) {
    auto g = gen(1, 100);
    const int n = static_cast<int>(kMaxChangedChunks) + 1;
    Table table = initial(g, n, {"s0"}).table();  // versions 1|0 .. 1|64
    // 0|0 (a shard that owned nothing): every chunk changed.
    EXPECT_FALSE(hasField(*table, ChunkVersion(g, 0, 0)));
    // 1|0: 64 chunks changed, exactly the bound.
    auto chunks = delta(*table, ChunkVersion(g, 1, 0));
    ASSERT_TRUE(chunks.has_value());
    EXPECT_EQ(chunks->size(), kMaxChangedChunks);
}

// Simulates a collection's placement history and checks the contract of chunk_delta.h: a router
// at an older snapshot O that sent shard s the version O.shardVersion(s) and got the delta of the
// shard's newer snapshot N catches up to exactly N.
TEST(ChunkDelta, PropertyDeltaBringsAnOlderTableToTheNewer) {
    std::mt19937 rng(20261129);
    const std::vector<std::string> shards = {"s0", "s1", "s2", "s3"};
    auto g = gen(3, 300);
    Sim sim = initial(g, 40, {"s0", "s1"});
    std::vector<Table> snapshots = {sim.table()};
    constexpr int kSteps = 300;
    while (static_cast<int>(snapshots.size()) <= kSteps) {
        size_t i = rng() % sim.chunks.size();
        uint32_t op = rng() % 20;
        bool changed;
        if (op < 8) {
            changed = sim.split(i, rng);
        } else if (op < 16) {
            std::string to = shards[rng() % shards.size()];
            changed = to != sim.chunks[i].shard;
            if (changed) sim.move(i, to);
        } else if (op < 19) {
            changed = sim.merge(i);
        } else {
            // Drain the chunk's shard one migration at a time (its version ends at 0|0).
            const std::string from = sim.chunks[i].shard;
            for (size_t k = 0; k < sim.chunks.size(); ++k) {
                if (sim.chunks[k].shard != from) continue;
                std::string to = shards[rng() % shards.size()];
                if (to == from) to = shards[(rng() % 3 + 1 + (from.back() - '0')) % 4];
                sim.move(k, to);
                snapshots.push_back(sim.table());
            }
            changed = false;
        }
        if (changed) snapshots.push_back(sim.table());
    }

    int applied = 0, omitted = 0, emptied = 0;
    for (int pair = 0; pair < 1500; ++pair) {
        size_t o = rng() % (snapshots.size() - 1);
        size_t maxGap = std::min<size_t>(snapshots.size() - 1 - o, pair % 3 == 0 ? 300 : 25);
        size_t n = o + 1 + rng() % maxGap;
        const RoutingTable& older = *snapshots[o];
        const RoutingTable& newer = *snapshots[n];
        for (const std::string& s : shards) {
            const ChunkVersion since = older.shardVersion(s);
            if (since == newer.shardVersion(s)) continue;
            size_t newerChunks = 0;
            for (size_t k = 0; k < newer.numChunks(); ++k) {
                if (since.isOlderThan(newer.chunkMap().chunk(k).version)) ++newerChunks;
            }
            auto chunks = delta(newer, since);
            if (newerChunks > kMaxChangedChunks) {
                EXPECT_FALSE(chunks.has_value()) << o << " -> " << n << " " << s;
                ++omitted;
                continue;
            }
            ASSERT_TRUE(chunks.has_value()) << o << " -> " << n << " " << s;
            EXPECT_EQ(chunks->size(), newerChunks);
            auto updated = older.makeUpdated(*chunks);
            ASSERT_TRUE(updated.isOK())
                << o << " -> " << n << " " << s << ": " << updated.getStatus().toString();
            SCOPED_TRACE(testing::Message() << o << " -> " << n << " shard " << s);
            expectSameChunks(*updated.getValue(), newer);
            EXPECT_EQ(updated.getValue()->shardVersion(s), newer.shardVersion(s));
            EXPECT_EQ(updated.getValue()->collectionVersion(), newer.collectionVersion());
            if (!newer.shardVersion(s).isSet()) ++emptied;
            ++applied;
        }
    }
    // The walk exercised both outcomes and shards that donated their last chunk.
    EXPECT_GT(applied, 500);
    EXPECT_GT(omitted, 20);
    EXPECT_GT(emptied, 5);
}

// ---- CatalogCache::applyChangedChunks, with a cache filled from a fake config server ----------

const placement::Uuid kUuid = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

// Answers the `find`s CatalogCache sends on config.databases / collections / chunks for one
// sharded collection "db.c" whose chunks are `table`'s (the filter is ignored: the first load
// is a full one, and these tests make no later refresh).
class FakeConfigHandler : public net::RequestHandler {
  public:
    bson::BsonObj handleRequest(const net::Request& request, net::ClientContext&) override {
        MutexLock lock(mutex);
        std::string coll(request.msg->body["find"].stringValue());
        ++finds[coll];
        bson::BsonArrayBuilder batch;
        if (coll == "databases") {
            BsonBuilder d;
            d.append("_id", "db").append("primary", "s0");
            placement::DatabaseVersion(kUuid, Timestamp::fromParts(5, 1), 1)
                .appendToBson(d, "version");
            batch.append(d.obj());
        } else if (coll == "collections") {
            const CollectionGeneration& g = table->generation();
            BsonBuilder c;
            c.append("_id", "db.c").append("lastmodEpoch", g.epoch).appendDate("lastmod", 1000);
            c.appendTimestamp("timestamp", g.timestamp.value);
            c.appendBinary("uuid", 4,
                           std::string_view(reinterpret_cast<const char*>(kUuid.data()), 16));
            c.append("key", bson::fromJson(R"({"a": 1})")).appendBool("unique", false);
            batch.append(c.obj());
        } else if (coll == "chunks") {
            BsonBuilder all;  // appendChangedChunks writes config.chunks-shaped documents
            appendChangedChunks(*table, ChunkVersion(table->generation(), 0, 0), all);
            BsonObj docs = all.obj();
            for (const auto& e : docs[kChangedChunksField].objValue()) batch.appendElement(e);
        }
        BsonBuilder reply;
        reply.startObject("cursor").appendInt64("id", 0).append("ns", "config." + coll);
        reply.appendArray("firstBatch", batch.arr()).end();
        reply.append("ok", 1.0);
        return reply.obj();
    }
    Mutex mutex;
    Table table;
    std::map<std::string, int> finds;
};

class ApplyChangedChunksTest : public ::testing::Test {
  protected:
    void SetUp() override {
        sim = initial(gen(4, 400), 4, {"s0", "s1"});
        config.table = sim.table();
        _server = std::make_unique<net::test::RunningServer>(config);
        registry = std::make_unique<ShardRegistry>(client, _server->host());
        cache = std::make_unique<CatalogCache>(client, *registry);
        auto info = cache->getCollectionRoutingInfo("db.c");
        ASSERT_TRUE(info.isOK()) << info.getStatus().toString();
        ASSERT_TRUE(info.getValue().isSharded());
        expectSameChunks(*info.getValue().table, *config.table);
    }
    void TearDown() override {
        cache.reset();
        registry.reset();
        _server.reset();
    }
    Table cached() {
        auto info = cache->cachedCollectionRoutingInfo("db.c");
        return info ? info->table : nullptr;
    }
    int finds() {
        MutexLock lock(config.mutex);
        int total = 0;
        for (const auto& [coll, n] : config.finds) total += n;
        return total;
    }

    Sim sim;
    FakeConfigHandler config;
    net::RemoteClient client;
    std::unique_ptr<ShardRegistry> registry;
    std::unique_ptr<CatalogCache> cache;
    std::unique_ptr<net::test::RunningServer> _server;
};

TEST_F(ApplyChangedChunksTest, InstallsTheDeltaWithoutTheConfigServer) {
    Table before = cached();
    ASSERT_TRUE(before);
    sim.move(1, "s0");  // s1 donates [100, 200); its control chunk [300, MaxKey) is bumped
    Table after = sim.table();
    const int findsBefore = finds();
    auto stats = cache->stats();

    auto chunks = delta(*after, before->shardVersion("s1"));
    ASSERT_TRUE(chunks.has_value());
    EXPECT_TRUE(cache->applyChangedChunks("db.c", "s1", after->shardVersion("s1"), *chunks));
    Table now = cached();
    ASSERT_TRUE(now);
    expectSameChunks(*now, *after);
    EXPECT_EQ(cache->stats().changedChunksApplied, stats.changedChunksApplied + 1);
    EXPECT_EQ(cache->stats().fullCollectionRefreshes, stats.fullCollectionRefreshes);
    EXPECT_EQ(cache->stats().incrementalCollectionRefreshes, stats.incrementalCollectionRefreshes);
    EXPECT_EQ(finds(), findsBefore);
    // The lookup serves the new table, still without the config server.
    auto info = cache->getCollectionRoutingInfo("db.c");
    ASSERT_TRUE(info.isOK());
    EXPECT_EQ(info.getValue().table, now);
    EXPECT_EQ(finds(), findsBefore);

    // A version the cache already holds: nothing to do, nothing changed.
    EXPECT_TRUE(cache->applyChangedChunks("db.c", "s1", before->shardVersion("s1"), {}));
    EXPECT_EQ(cached(), now);
    EXPECT_EQ(cache->stats().changedChunksApplied, stats.changedChunksApplied + 1);
}

TEST_F(ApplyChangedChunksTest, RefusesWhatDoesNotGiveTheWantedVersion) {
    Table before = cached();
    ASSERT_TRUE(before);
    sim.move(1, "s0");
    Table after = sim.table();
    auto chunks = *delta(*after, before->shardVersion("s1"));
    const ChunkVersion wanted = after->shardVersion("s1");

    // The delta does not reach the wanted version.
    EXPECT_FALSE(cache->applyChangedChunks("db.c", "s1", wanted.incMajor(), chunks));
    // Another generation.
    EXPECT_FALSE(cache->applyChangedChunks("db.c", "s1", ChunkVersion(gen(9, 900), 5, 0), chunks));
    // Inconsistent chunks (a gap once applied): the caller refreshes.
    auto partial = chunks;
    partial.pop_back();
    partial.push_back({bound(1000, false), bound(std::nullopt, true), "s1", wanted});
    EXPECT_FALSE(cache->applyChangedChunks("db.c", "s1", wanted, partial));
    // Not cached.
    EXPECT_FALSE(cache->applyChangedChunks("db.other", "s1", wanted, chunks));
    EXPECT_EQ(cached(), before);
    EXPECT_EQ(cache->stats().changedChunksApplied, 0);

    // Marked stale: a refresh is due anyway.
    cache->onStaleShardVersion("db.c", wanted);
    EXPECT_FALSE(cache->applyChangedChunks("db.c", "s1", wanted, chunks));
    EXPECT_EQ(cache->stats().changedChunksApplied, 0);
}

}  // namespace
}  // namespace tessera::cluster
