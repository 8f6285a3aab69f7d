#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "bson/bson_obj.h"
#include "command/command.h"
#include "placement/shard_key_pattern.h"
#include "shard/range_ops.h"
#include "storage/engine.h"
#include "storage/write_observer.h"

namespace tessera::shard {

class ChunkOwnershipFilter;

// One shard key range of a sharded collection whose stored documents the shard counts apart
// (README.md "Exact counts"): a range being received (kIncoming: cloned, not owned until the
// commit) or one donated (kOutgoing: recorded inside the donor's critical section, not owned once
// the commit is known, until the range deleter purged it).
struct TrackedRange {
    enum class Kind { kIncoming, kOutgoing };
    std::string ns;
    std::string uuid;  // of the collection incarnation (storage::CollectionInfo::uuid)
    Kind kind = Kind::kIncoming;
    std::string migrationId;
    std::shared_ptr<const placement::ShardKeyPattern> pattern;  // the collection's shard key
    ShardKeyRange range;
    int64_t docs = 0;
    int64_t bytes = 0;

    // {ns, uuid, kind, migrationId, key: pattern, min, max, docs, bytes}
    bson::BsonObj toBson() const;
    static StatusWith<TrackedRange> parse(bson::BsonView doc);
    std::string recordKey() const;  // side record key: "rng:" ns \0 encodedMin
};

// The shard's tracked ranges, persisted as storage side records (Engine::sideRecords: the
// descriptor under "rng:", its counts under "rnc:"), and the owned totals computed from them:
//   owned(ns) = stored(ns) - sum of the tracked ranges of ns the placement owns none of.
//
// Invariants:
//  1. Every stored document of a sharded collection the shard does not own lies in a tracked
//     range (documents arrive unowned only through a migration's clone, and become unowned only
//     through a commit that took their range away, recorded before it); so a tracked range's
//     counts are exact while it is not owned.
//  2. Only the internal writes of this class's `write` change documents in a tracked range
//     that is not owned (user writes never touch what the shard does not own), and they hold
//     the class's mutex: the counts and storage's collection counts change together for a
//     reader (`ownedTotals` takes the same mutex).
//  3. Tracked ranges of one collection never overlap: a new one is added only after the
//     overlapping ones were purged (ConflictingOperationInProgress otherwise).
class TrackedRanges {
  public:
    explicit TrackedRanges(storage::Engine& engine) : _engine(engine) {}

    // Reads the persisted ranges (each stores its collection's shard key pattern).
    Status load();
    // Forgets the ranges of a dropped collection (`ns`; every collection of `db.` when ns ends
    // with a dot).
    Status dropNamespace(const std::string& ns);

    // Adds (persists) a range; ConflictingOperationInProgress when it overlaps a tracked one.
    Status add(const TrackedRange& range);
    // Removes (persists) the range of `ns` starting at `encodedMin`, if tracked.
    Status remove(const std::string& ns, const std::string& encodedMin);
    std::optional<TrackedRange> find(const std::string& ns, const std::string& encodedMin) const;
    // All ranges (of `ns` when not empty).
    std::vector<TrackedRange> list(const std::string& ns = {}) const;

    // Runs `fn` — internal writes (a clone's batches, catch-up, range deletion) through writers
    // opened with the given write unit — under the mutex. The unit's observer adjusts the
    // tracked range holding each document written (or removed) and writes its new counts in the
    // same storage batch.
    Status write(const std::function<Status(const storage::WriteUnit&)>& fn);

    // owned = stored - unowned tracked ranges, or nullopt when a tracked range of the collection
    // is partly owned (a scan must tell).
    std::optional<command::OwnershipFilter::Totals> ownedTotals(
        const storage::CollectionInfo& coll, const ChunkOwnershipFilter& filter) const;

  private:
    class CountingObserver;

    storage::Engine& _engine;
    mutable Mutex _mutex;
    std::vector<TrackedRange> _ranges GUARDED_BY(_mutex);
};

}  // namespace tessera::shard
