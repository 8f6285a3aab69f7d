// The balancer's policy, without a network: unit cases for each goal, and a property test that
// runs the policy round after round over random clusters (splits halve a chunk, migrations move
// it) until it proposes nothing, checking each round's shape and the end state.

#include "config/balancer_policy.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace tessera::config::balancer {
namespace {

Chunk chunk(std::string shard, int64_t bytes, bool jumbo = false, std::string zone = "") {
    static int n = 0;
    ++n;
    return Chunk{
        "k" + std::to_string(n), "k" + std::to_string(n + 1), std::move(shard), bytes, jumbo,
        std::move(zone)};
}

Collection collection(std::vector<Chunk> chunks, int64_t chunkSize = 100) {
    Collection c;
    c.ns = "db.c";
    c.chunks = std::move(chunks);
    c.chunkSizeBytes = chunkSize;
    return c;
}

std::map<std::string, int64_t> perShard(const Collection& c) {
    std::map<std::string, int64_t> m;
    for (const Chunk& ch : c.chunks) m[ch.shard] += ch.bytes;
    return m;
}

// Applies a decision the way the scheduler does: migrations, then splits at the median (here:
// half the bytes each), then merges.
void apply(Cluster& cluster, const Decision& d) {
    for (const Migration& m : d.migrations) {
        for (Collection& c : cluster.collections) {
            if (c.ns == m.ns) c.chunks[m.chunk].shard = m.to;
        }
    }
    std::vector<Split> splits = d.splits;
    std::sort(splits.begin(), splits.end(),
              [](const Split& a, const Split& b) { return a.chunk > b.chunk; });
    for (const Split& s : splits) {
        for (Collection& c : cluster.collections) {
            if (c.ns != s.ns) continue;
            Chunk left = c.chunks[s.chunk];
            Chunk right = left;
            left.bytes = left.bytes / 2;
            right.bytes -= left.bytes;
            left.max = right.min = left.min + "|";
            c.chunks[s.chunk] = left;
            c.chunks.insert(c.chunks.begin() + static_cast<std::ptrdiff_t>(s.chunk) + 1, right);
        }
    }
    std::vector<Merge> merges = d.merges;
    std::sort(merges.begin(), merges.end(),
              [](const Merge& a, const Merge& b) { return a.first > b.first; });
    for (const Merge& m : merges) {
        for (Collection& c : cluster.collections) {
            if (c.ns != m.ns) continue;
            Chunk merged = c.chunks[m.first];
            merged.max = c.chunks[m.last].max;
            for (size_t i = m.first + 1; i <= m.last; ++i) merged.bytes += c.chunks[i].bytes;
            c.chunks.erase(c.chunks.begin() + static_cast<std::ptrdiff_t>(m.first),
                           c.chunks.begin() + static_cast<std::ptrdiff_t>(m.last) + 1);
            c.chunks.insert(c.chunks.begin() + static_cast<std::ptrdiff_t>(m.first), merged);
        }
    }
}

TEST(BalancerPolicyTest, ActiveWindowIncludesStartExcludesStopAndWrapsMidnight) {
    EXPECT_EQ(inActiveWindow("01:00", "05:30", 60), true);
    EXPECT_EQ(inActiveWindow("01:00", "05:30", 5 * 60 + 30), false);
    EXPECT_EQ(inActiveWindow("01:00", "05:30", 59), false);
    EXPECT_EQ(inActiveWindow("23:00", "6:00", 23 * 60 + 30), true);
    EXPECT_EQ(inActiveWindow("23:00", "6:00", 3 * 60), true);
    EXPECT_EQ(inActiveWindow("23:00", "6:00", 12 * 60), false);
    EXPECT_EQ(inActiveWindow("08:00", "08:00", 0), true);
    for (const char* bad : {"", "8", "24:00", "12:60", "1:2", "ab:cd", "123:00"}) {
        EXPECT_FALSE(inActiveWindow(bad, "05:00", 0).has_value()) << bad;
    }
}

TEST(BalancerPolicyTest, BalancesBytesToTheToleranceNotToThreeChunks) {
    // 2 shards, 640 vs 384 units with chunks of 64: MongoDB's 3 × chunk size threshold stops here
    // (62.5 % / 37.5 %); the policy keeps going to max/min <= 1.10.
    std::vector<Chunk> chunks;
    for (int i = 0; i < 10; ++i) chunks.push_back(chunk("s0", 64));
    for (int i = 0; i < 6; ++i) chunks.push_back(chunk("s1", 64));
    Cluster cluster{{"s0", "s1"}, {}, {}, {collection(chunks, 100)}, 1.10};
    for (int round = 0; round < 100; ++round) {
        Decision d = decide(cluster);
        if (d.empty()) break;
        apply(cluster, d);
    }
    EXPECT_LE(imbalance(cluster.collections[0], {"s0", "s1"}), 1.10);
}

// Under steady inserts some chunk is always above the chunk size: a round splits it and still
// moves the others (a policy that waited for no pending split never migrated under load).
TEST(BalancerPolicyTest, ARoundSplitsATooLargeChunkAndStillMovesOthers) {
    std::vector<Chunk> chunks;
    chunks.push_back(chunk("s0", 150));  // too large: split
    for (int i = 0; i < 8; ++i) chunks.push_back(chunk("s0", 60));
    Cluster cluster{{"s0", "s1"}, {}, {}, {collection(chunks, 100)}, 1.10};
    Decision d = decide(cluster);
    ASSERT_EQ(d.splits.size(), 1u);
    EXPECT_EQ(d.splits[0].chunk, 0u);
    ASSERT_EQ(d.migrations.size(), 1u);
    EXPECT_NE(d.migrations[0].chunk, 0u);  // never the chunk being split
    EXPECT_EQ(d.migrations[0].to, "s1");
}

TEST(BalancerPolicyTest, ANewShardFillsAndADrainingOneEmpties) {
    std::vector<Chunk> chunks;
    for (int i = 0; i < 12; ++i) chunks.push_back(chunk(i % 2 ? "s0" : "s1", 50));
    Cluster cluster{{"s0", "s1", "s2"}, {"s1"}, {}, {collection(chunks)}, 1.10};
    for (int round = 0; round < 100; ++round) {
        Decision d = decide(cluster);
        if (d.empty()) break;
        for (const Migration& m : d.migrations) EXPECT_NE(m.to, "s1");
        apply(cluster, d);
    }
    auto bytes = perShard(cluster.collections[0]);
    EXPECT_EQ(bytes["s1"], 0);
    EXPECT_LE(imbalance(cluster.collections[0], {"s0", "s2"}), 1.10);
}

TEST(BalancerPolicyTest, AJumboChunkIsReportedNotSplit) {
    // One key value holds most of the data (the seed's {status: 1} case).
    Cluster cluster{{"s0", "s1"},
                    {},
                    {},
                    {collection({chunk("s0", 650, /*jumbo=*/true), chunk("s0", 100),
                                 chunk("s0", 100), chunk("s1", 150)})},
                    1.10};
    for (int round = 0; round < 50; ++round) {
        Decision d = decide(cluster);
        for (const Split& s : d.splits) EXPECT_FALSE(cluster.collections[0].chunks[s.chunk].jumbo);
        if (d.empty()) {
            ASSERT_FALSE(d.violations.empty());
            EXPECT_EQ(d.violations[0].what, "jumboChunks");
            return;
        }
        apply(cluster, d);
    }
    FAIL() << "the policy kept proposing work";
}

TEST(BalancerPolicyTest, ChunksMoveIntoTheirZoneAndNeverOut) {
    Cluster cluster{{"s0", "s1", "s2"},
                    {},
                    {{"EU", {"s2"}}},
                    {collection({chunk("s0", 60, false, "EU"), chunk("s1", 60, false, "EU"),
                                 chunk("s0", 60), chunk("s1", 60), chunk("s0", 60)})},
                    1.10};
    for (int round = 0; round < 100; ++round) {
        Decision d = decide(cluster);
        if (d.empty()) break;
        for (const Migration& m : d.migrations) {
            const Chunk& c = cluster.collections[0].chunks[m.chunk];
            if (!c.zone.empty()) {
                EXPECT_EQ(m.to, "s2");
            }
        }
        apply(cluster, d);
    }
    for (const Chunk& c : cluster.collections[0].chunks) {
        if (!c.zone.empty()) {
            EXPECT_EQ(c.shard, "s2");
        }
    }
}

TEST(BalancerPolicyTest, SmallCollectionsAreExempt) {
    Cluster cluster{{"s0", "s1"}, {}, {}, {collection({chunk("s0", 150)}, 100)}, 1.10};
    Decision d = decide(cluster);
    // Too large a chunk is split, but after that nothing moves: 150 < 2 × 100.
    ASSERT_EQ(d.splits.size(), 1u);
    apply(cluster, d);
    EXPECT_TRUE(decide(cluster).migrations.empty());
}

// The auto-merger: after deletes, neighbours on one shard become one chunk of at most half the
// chunk size (an empty one joins a bigger neighbour); nothing crosses a shard, a zone or a jumbo
// chunk, and a collection being moved or split is left alone.
TEST(BalancerPolicyTest, SmallNeighboursOnOneShardAreMerged) {
    Cluster cluster{{"s0", "s1"},
                    {},
                    {},
                    {collection({chunk("s0", 10), chunk("s0", 20), chunk("s0", 15), chunk("s0", 30),
                                 chunk("s1", 5), chunk("s1", 0), chunk("s1", 90), chunk("s0", 1),
                                 chunk("s0", 1, true), chunk("s0", 1)},
                                100)},
                    1.10};
    Decision d = decide(cluster);
    EXPECT_TRUE(d.migrations.empty());
    EXPECT_TRUE(d.splits.empty());
    // [10, 20, 15] = 45 ≤ 50; then 30; [5, 0, 90]: 5 + 0 ≤ 50, the empty one lets nothing more
    // in (5 + 90 > 50); the jumbo one stays alone, and so do its neighbours.
    ASSERT_EQ(d.merges.size(), 2u);
    EXPECT_EQ(d.merges[0].first, 0u);
    EXPECT_EQ(d.merges[0].last, 2u);
    EXPECT_EQ(d.merges[1].first, 4u);
    EXPECT_EQ(d.merges[1].last, 5u);
    auto before = perShard(cluster.collections[0]);
    apply(cluster, d);
    EXPECT_EQ(perShard(cluster.collections[0]), before);
    EXPECT_EQ(cluster.collections[0].chunks.size(), 7u);
    EXPECT_TRUE(decide(cluster).empty());

    // Off cluster-wide or for the collection: nothing merged.
    Cluster off = cluster;
    off.collections[0].chunks.push_back(chunk("s0", 0));
    off.autoMerge = false;
    EXPECT_TRUE(decide(off).merges.empty());
    off.autoMerge = true;
    off.collections[0].autoMerge = false;
    EXPECT_TRUE(decide(off).merges.empty());

    // A collection the round moves is not merged in that round.
    Cluster moving{{"s0", "s1"},
                   {},
                   {},
                   {collection({chunk("s0", 90), chunk("s0", 90), chunk("s0", 90), chunk("s0", 1),
                                chunk("s0", 1), chunk("s1", 1)},
                               100)},
                   1.10};
    Decision m = decide(moving);
    EXPECT_FALSE(m.migrations.empty());
    EXPECT_TRUE(m.merges.empty());
}

// Random clusters until the policy proposes nothing: each round moves a shard at most once and
// never onto a draining shard or out of a zone, only non-jumbo chunks are split; at the end the
// draining shards are empty, no chunk is above the chunk size unless jumbo, and each balanced
// collection is within the tolerance — or a jumbo chunk is named as the reason.
TEST(BalancerPolicyTest, PropertyRoundsConvergeOverRandomClusters) {
    std::mt19937 rng(12345);
    for (int iteration = 0; iteration < 300; ++iteration) {
        Cluster cluster;
        int nShards = 2 + static_cast<int>(rng() % 4);
        for (int s = 0; s < nShards; ++s) cluster.shards.push_back("s" + std::to_string(s));
        if (rng() % 3 == 0) cluster.draining.insert(cluster.shards[rng() % nShards]);
        int nColls = 1 + static_cast<int>(rng() % 3);
        for (int c = 0; c < nColls; ++c) {
            Collection coll;
            coll.ns = "db.c" + std::to_string(c);
            coll.chunkSizeBytes = 100;
            int nChunks = 1 + static_cast<int>(rng() % 15);
            for (int k = 0; k < nChunks; ++k) {
                std::string shard = cluster.shards[rng() % (iteration % 4 == 0 ? 1 : nShards)];
                coll.chunks.push_back(
                    chunk(shard, static_cast<int64_t>(rng() % 300), rng() % 10 == 0));
            }
            cluster.collections.push_back(std::move(coll));
        }
        Decision last;
        int rounds = 0;
        for (; rounds < 5000; ++rounds) {
            last = decide(cluster);
            if (last.empty()) break;
            std::map<std::string, int> uses;
            for (const Migration& m : last.migrations) {
                ++uses[m.from];
                ++uses[m.to];
                EXPECT_FALSE(cluster.draining.count(m.to)) << "onto a draining shard";
                for (const Collection& c : cluster.collections) {
                    if (c.ns == m.ns) {
                        EXPECT_EQ(c.chunks[m.chunk].shard, m.from);
                    }
                }
            }
            for (const auto& [shard, n] : uses) {
                EXPECT_LE(n, 1) << "shard " << shard << " in two migrations of one round";
            }
            for (const Split& s : last.splits) {
                for (const Collection& c : cluster.collections) {
                    if (c.ns == s.ns) {
                        EXPECT_FALSE(c.chunks[s.chunk].jumbo);
                    }
                }
            }
            std::vector<std::map<std::string, int64_t>> bytesBefore;
            for (const Collection& c : cluster.collections) bytesBefore.push_back(perShard(c));
            apply(cluster, last);
            for (size_t k = 0; k < cluster.collections.size(); ++k) {
                const Collection& c = cluster.collections[k];
                bool moved = std::any_of(last.migrations.begin(), last.migrations.end(),
                                         [&](const Migration& m) { return m.ns == c.ns; });
                if (!moved) {
                    EXPECT_EQ(perShard(c), bytesBefore[k]) << "a split or merge changed bytes";
                }
            }
        }
        ASSERT_LT(rounds, 5000) << "no convergence in iteration " << iteration;
        for (const Collection& c : cluster.collections) {
            for (size_t i = 1; i < c.chunks.size(); ++i) {
                const Chunk& a = c.chunks[i - 1];
                const Chunk& b = c.chunks[i];
                EXPECT_FALSE(a.shard == b.shard && a.zone == b.zone && !a.jumbo && !b.jumbo &&
                             a.bytes + b.bytes <= c.chunkSizeBytes / 2)
                    << c.ns << ": neighbours " << i - 1 << " and " << i << " left unmerged";
            }
        }
        std::vector<std::string> eligible = eligibleShards(cluster, "");
        for (const Collection& c : cluster.collections) {
            int64_t total = 0;
            bool jumboBig = false;
            for (const Chunk& ch : c.chunks) {
                total += ch.bytes;
                if (cluster.draining.count(ch.shard)) {
                    ADD_FAILURE() << "a chunk stayed on draining " << ch.shard;
                }
                if (ch.bytes > c.chunkSizeBytes) {
                    EXPECT_TRUE(ch.jumbo) << "an oversized chunk was not split";
                    jumboBig = true;
                }
                jumboBig = jumboBig || ch.jumbo;
            }
            if (total < 2 * c.chunkSizeBytes) continue;
            if (imbalance(c, eligible) <= cluster.tolerance) continue;
            bool named = std::any_of(
                last.violations.begin(), last.violations.end(),
                [&](const Violation& v) { return v.ns == c.ns && v.what == "jumboChunks"; });
            EXPECT_TRUE(jumboBig && named)
                << c.ns << " left at " << imbalance(c, eligible) << " without a jumbo reason";
        }
    }
}

}  // namespace
}  // namespace tessera::config::balancer
