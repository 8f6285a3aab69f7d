#include "config/balancer_policy.h"

#include <algorithm>
#include <climits>
#include <map>
#include <optional>

namespace tessera::config::balancer {
namespace {

// The shards busy in this round (a shard takes part in one migration at a time).
class Busy {
  public:
    bool free(const std::string& a, const std::string& b) const {
        return !_busy.count(a) && !_busy.count(b);
    }
    void take(const std::string& a, const std::string& b) {
        _busy.insert(a);
        _busy.insert(b);
    }

  private:
    std::set<std::string> _busy;
};

std::map<std::string, int64_t> bytesPerShard(const Collection& coll,
                                             const std::vector<std::string>& shards) {
    std::map<std::string, int64_t> bytes;
    for (const std::string& s : shards) bytes[s] = 0;
    for (const Chunk& c : coll.chunks) {
        auto it = bytes.find(c.shard);
        if (it != bytes.end()) it->second += c.bytes;
    }
    return bytes;
}

int64_t totalBytes(const Collection& coll) {
    int64_t t = 0;
    for (const Chunk& c : coll.chunks) t += c.bytes;
    return t;
}

// The least loaded shard of `candidates` that is free this round (and not `except`).
std::optional<std::string> leastLoaded(const std::map<std::string, int64_t>& bytes,
                                       const std::vector<std::string>& candidates, const Busy& busy,
                                       const std::string& except) {
    std::optional<std::string> best;
    for (const std::string& s : candidates) {
        if (s == except || !busy.free(s, s)) continue;
        auto it = bytes.find(s);
        int64_t b = it == bytes.end() ? 0 : it->second;
        if (!best || b < bytes.at(*best)) best = s;
    }
    return best;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

const char* reasonName(Reason r) {
    switch (r) {
        case Reason::kDraining:
            return "draining";
        case Reason::kZoneViolation:
            return "zoneViolation";
        case Reason::kChunksImbalance:
            return "chunksImbalance";
        case Reason::kTooLarge:
            return "tooLarge";
    }
    return "unknown";
}

std::vector<std::string> eligibleShards(const Cluster& cluster, const std::string& zone) {
    std::vector<std::string> out;
    const std::set<std::string>* zoneShards = nullptr;
    if (!zone.empty()) {
        for (const auto& [name, shards] : cluster.zones) {
            if (name == zone) zoneShards = &shards;
        }
    }
    for (const std::string& s : cluster.shards) {
        if (cluster.draining.count(s)) continue;
        if (!zone.empty() && (!zoneShards || !zoneShards->count(s))) continue;
        out.push_back(s);
    }
    return out;
}

double imbalance(const Collection& coll, const std::vector<std::string>& shards) {
    if (shards.size() <= 1) return 1.0;
    auto bytes = bytesPerShard(coll, shards);
    int64_t mx = 0, mn = INT64_MAX;
    for (const auto& [s, b] : bytes) {
        mx = std::max(mx, b);
        mn = std::min(mn, b);
    }
    return static_cast<double>(std::max<int64_t>(mx, 1)) /
           static_cast<double>(std::max<int64_t>(mn, 1));
}

namespace {

// Draining, zones, splits and byte balance for one collection (the goal order of the header).
void decideCollection(const Cluster& cluster, const Collection& coll, Busy& busy, Decision& d) {
    const std::vector<std::string> all = eligibleShards(cluster, "");
    auto bytes = bytesPerShard(coll, cluster.shards);
    bool acted = false;

    // (1) Draining, (2) zones: a chunk on a shard it may not stay on moves to the least
    // loaded shard it may live on.
    for (size_t i = 0; i < coll.chunks.size(); ++i) {
        const Chunk& c = coll.chunks[i];
        std::vector<std::string> allowed = eligibleShards(cluster, c.zone);
        bool draining = cluster.draining.count(c.shard) > 0;
        bool outOfZone = !c.zone.empty() && !contains(allowed, c.shard) && !draining;
        if (!draining && !outOfZone) continue;
        acted = true;
        auto to = leastLoaded(bytes, allowed, busy, c.shard);
        if (allowed.empty()) {
            d.violations.push_back({coll.ns, draining ? "draining" : "zoneViolation", i});
            continue;
        }
        if (!to || !busy.free(c.shard, *to)) continue;  // next round
        busy.take(c.shard, *to);
        d.migrations.push_back(
            {coll.ns, i, c.shard, *to, draining ? Reason::kDraining : Reason::kZoneViolation});
        bytes[c.shard] -= c.bytes;
        bytes[*to] += c.bytes;
    }
    if (acted || coll.noBalance) return;

    // Splits, whatever the number of shards: a chunk above the chunk size is split (the
    // scheduler asks again after). The same round still moves other chunks: under steady
    // inserts some chunk is always above the chunk size, and waiting for none starved every
    // migration (found by the churn test).
    std::set<size_t> splitting;
    for (size_t i = 0; i < coll.chunks.size(); ++i) {
        const Chunk& c = coll.chunks[i];
        if (c.bytes <= coll.chunkSizeBytes) continue;
        if (c.jumbo) {
            d.violations.push_back({coll.ns, "jumboChunks", i});
            continue;
        }
        d.splits.push_back({coll.ns, i, Reason::kTooLarge});
        splitting.insert(i);
    }
    if (all.size() < 2) return;

    // (3) Bytes: exempt below two chunk sizes.
    if (totalBytes(coll) < 2 * coll.chunkSizeBytes) return;
    if (imbalance(coll, all) <= cluster.tolerance) return;
    // Pair by pair, as long as free shards are left: the most loaded free shard gives the
    // chunk that best closes the gap to the least loaded free one — the largest movable chunk
    // not bigger than half the gap; if every chunk is bigger, the smallest such chunk is
    // split finer (or reported when jumbo) and the collection waits for the next round.
    std::set<size_t> moving = splitting;  // a chunk being split is not moved in this round
    for (;;) {
        std::string from, to;
        int64_t fromBytes = -1, toBytes = INT64_MAX;
        for (const std::string& s : all) {
            if (busy.free(s, s) && bytes[s] > fromBytes) {
                fromBytes = bytes[s];
                from = s;
            }
        }
        for (const std::string& s : all) {
            if (s != from && busy.free(s, s) && bytes[s] < toBytes) {
                toBytes = bytes[s];
                to = s;
            }
        }
        if (from.empty() || to.empty()) break;
        double ratio = static_cast<double>(std::max<int64_t>(fromBytes, 1)) /
                       static_cast<double>(std::max<int64_t>(toBytes, 1));
        if (ratio <= cluster.tolerance) break;
        int64_t half = (fromBytes - toBytes) / 2;
        std::optional<size_t> best, smallestTooBig;
        for (size_t i = 0; i < coll.chunks.size(); ++i) {
            const Chunk& c = coll.chunks[i];
            if (c.shard != from || c.bytes <= 0 || moving.count(i)) continue;
            if (!c.zone.empty() && !contains(eligibleShards(cluster, c.zone), to)) continue;
            if (c.bytes <= half) {
                if (!best || c.bytes > coll.chunks[*best].bytes) best = i;
            } else if (c.bytes >= 2 &&  // a chunk of one byte cannot get smaller
                       (!smallestTooBig || c.bytes < coll.chunks[*smallestTooBig].bytes)) {
                smallestTooBig = i;
            }
        }
        if (best) {
            busy.take(from, to);
            moving.insert(*best);
            bytes[from] -= coll.chunks[*best].bytes;
            bytes[to] += coll.chunks[*best].bytes;
            d.migrations.push_back({coll.ns, *best, from, to, Reason::kChunksImbalance});
            continue;
        }
        if (smallestTooBig) {
            if (coll.chunks[*smallestTooBig].jumbo) {
                d.violations.push_back({coll.ns, "jumboChunks", *smallestTooBig});
            } else {
                d.splits.push_back({coll.ns, *smallestTooBig, Reason::kChunksImbalance});
            }
        }
        break;
    }
}

// The auto-merger's proposals for one collection (see the header): greedy runs of neighbours.
void proposeMerges(const Collection& coll, Decision& d) {
    const int64_t half = coll.chunkSizeBytes / 2;
    auto joins = [&](const Chunk& prev, const Chunk& next, int64_t sum) {
        if (prev.shard != next.shard || prev.zone != next.zone || prev.jumbo || next.jumbo) {
            return false;
        }
        if (sum + next.bytes <= half) return true;
        return (sum == 0 || next.bytes == 0) && sum + next.bytes <= coll.chunkSizeBytes;
    };
    size_t first = 0;
    int64_t sum = coll.chunks.empty() ? 0 : coll.chunks[0].bytes;
    for (size_t i = 1; i <= coll.chunks.size(); ++i) {
        if (i < coll.chunks.size() && joins(coll.chunks[i - 1], coll.chunks[i], sum)) {
            sum += coll.chunks[i].bytes;
            continue;
        }
        if (i - 1 > first) d.merges.push_back({coll.ns, first, i - 1});
        first = i;
        sum = i < coll.chunks.size() ? coll.chunks[i].bytes : 0;
    }
}

}  // namespace

Decision decide(const Cluster& cluster) {
    Decision d;
    Busy busy;
    for (const Collection& coll : cluster.collections) {
        const size_t splits = d.splits.size(), migrations = d.migrations.size();
        decideCollection(cluster, coll, busy, d);
        // Only a collection the round leaves alone is merged: its chunk indexes stay valid and
        // the merge cannot race the round's own splits and moves.
        if (cluster.autoMerge && coll.autoMerge && d.splits.size() == splits &&
            d.migrations.size() == migrations) {
            proposeMerges(coll, d);
        }
    }
    return d;
}

namespace {

std::optional<int> minuteOfDay(std::string_view hhmm) {
    size_t colon = hhmm.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon > 2 || hhmm.size() - colon != 3) {
        return std::nullopt;
    }
    int h = 0, m = 0;
    for (char ch : hhmm.substr(0, colon)) {
        if (ch < '0' || ch > '9') return std::nullopt;
        h = h * 10 + (ch - '0');
    }
    for (char ch : hhmm.substr(colon + 1)) {
        if (ch < '0' || ch > '9') return std::nullopt;
        m = m * 10 + (ch - '0');
    }
    if (h > 23 || m > 59) return std::nullopt;
    return h * 60 + m;
}

}  // namespace

std::optional<bool> inActiveWindow(std::string_view start, std::string_view stop, int now) {
    auto a = minuteOfDay(start);
    auto b = minuteOfDay(stop);
    if (!a || !b) return std::nullopt;
    if (*a == *b) return true;
    if (*a < *b) return now >= *a && now < *b;
    return now >= *a || now < *b;  // wraps midnight
}

}  // namespace tessera::config::balancer
