#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::config::balancer {

// The balancer's policy (ARCHITECTURE.md "Balancer", issue 13 point 1): a pure function from a
// snapshot of the cluster's placement and sizes to the splits and migrations of one round. No
// I/O; the scheduler (not built yet) takes the snapshot, carries out the decision and asks again.
//
// Goals, in order: (1) nothing stays on a draining shard; (2) every range lies in its zone;
// (3) each collection's owned bytes are balanced across the shards that may hold it, to
// `tolerance` (max/min, default 1.10) — not to "3 × chunk size". A chunk larger than the
// collection's chunk size is split; when the chunks are too coarse to reach the tolerance, the
// one that would close the gap is split finer; a chunk that cannot be split (jumbo: one key
// value) is reported instead, as the reason the collection is not balanced. A collection smaller
// than two chunk sizes is exempt from (3).
//
// One round moves each shard in at most one migration (as donor or recipient), so the
// migrations of a round run in parallel on disjoint shard pairs.
//
// The auto-merger: in a collection the round neither moves nor splits, neighbouring chunks on
// the same shard (same zone, none jumbo) are merged while the result stays at most half the
// chunk size (an empty chunk joins any neighbour that stays within the chunk size), so the chunk
// count follows the data down after deletes and hashed pre-splits, and a merged chunk is far
// from the size that splits it again. It never changes a shard's bytes, so it cannot undo
// balance.

struct Chunk {
    // Bounds are opaque to the policy; chunks of a collection are given in shard key order and
    // cover the key space.
    std::string min, max;
    std::string shard;
    int64_t bytes = 0;   // owned bytes in the range (estimated by the shard)
    bool jumbo = false;  // cannot be split (one shard key value)
    std::string zone;    // the zone whose range contains the chunk ("" = none)
};

struct Collection {
    std::string ns;
    std::vector<Chunk> chunks;
    int64_t chunkSizeBytes = int64_t{128} << 20;
    bool noBalance = false;  // sh.disableBalancing: only draining and zones are acted on
    bool autoMerge = true;   // config.collections enableAutoMerge (sh.disableAutoMerger)
};

struct Cluster {
    std::vector<std::string> shards;
    std::set<std::string> draining;
    // zone → shards of that zone
    std::vector<std::pair<std::string, std::set<std::string>>> zones;
    std::vector<Collection> collections;
    double tolerance = 1.10;
    bool autoMerge = true;  // config.settings {_id: "automerge", enabled}
};

enum class Reason { kDraining, kZoneViolation, kChunksImbalance, kTooLarge };
const char* reasonName(Reason r);

struct Split {
    std::string ns;
    size_t chunk = 0;  // index into the collection's chunks: split at its median
    Reason reason = Reason::kTooLarge;
};
struct Migration {
    std::string ns;
    size_t chunk = 0;
    std::string from, to;
    Reason reason = Reason::kChunksImbalance;
};
// Chunks [first, last] (indexes in key order, last > first) become one.
struct Merge {
    std::string ns;
    size_t first = 0, last = 0;
};
// Why a collection is not balanced although nothing is proposed for it (balancerCollectionStatus).
struct Violation {
    std::string ns;
    std::string what;  // "jumboChunks", "zoneViolation", "draining"
    size_t chunk = 0;
};

struct Decision {
    std::vector<Split> splits;
    std::vector<Migration> migrations;
    std::vector<Merge> merges;
    std::vector<Violation> violations;
    bool empty() const { return splits.empty() && migrations.empty() && merges.empty(); }
};

// The round's decision. Splits are proposed for a collection instead of migrations of it (the
// scheduler splits, then asks again with the new chunks).
Decision decide(const Cluster& cluster);

// The shards a chunk of `zone` may live on: its zone's shards ("" = every shard), less the
// draining ones.
std::vector<std::string> eligibleShards(const Cluster& cluster, const std::string& zone);

// max / min of the owned bytes of `coll` over `shards` (an empty shard counts 1 byte, so an
// empty one makes the ratio large); 1 when there is at most one shard.
double imbalance(const Collection& coll, const std::vector<std::string>& shards);

// The balancing window (config.settings {_id: "balancer", activeWindow: {start, stop}}, "HH:MM"
// each, the config server's local time): whether minute-of-day `now` (0..1439) is in
// [start, stop); a window with start > stop wraps midnight, start == stop is always. Malformed
// times → nullopt (the caller then ignores the window, and says so in its log).
std::optional<bool> inActiveWindow(std::string_view start, std::string_view stop, int now);

}  // namespace tessera::config::balancer
