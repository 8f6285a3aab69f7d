#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/op_id.h"
#include "base/status.h"
#include "bson/bson_obj.h"
#include "placement/shard_key_pattern.h"
#include "shard/range_ops.h"
#include "storage/read_snapshot.h"
#include "storage/write_observer.h"

namespace tessera::shard {

// The donor's side of one range migration (docs/protocols/migration.md): the snapshot at T the
// recipient clones from, and the `_id`s of the range's documents written since T (MongoDB's
// "transfer mods"), which the recipient pulls until none are left.
//
// Started by `_shardsvrMigrationStart`: registered first (its observer sees every write from
// then on), then the snapshot is opened with Engine::snapshotIncludingInFlight(), so each write
// is either in the snapshot or observed (storage/write_observer.h). A write is observed when the
// version it replaces or the one it writes lies in the range: inserts, updates, deletes, and a
// shard key update that moves a document into or out of it.
class MigrationSource {
  public:
    MigrationSource(std::string id, std::string ns, std::string toShard,
                    placement::ShardKeyPattern pattern, ShardKeyRange range);

    const std::string& id() const { return _id; }
    const std::string& ns() const { return _ns; }
    const std::string& toShard() const { return _toShard; }
    const placement::ShardKeyPattern& pattern() const { return _pattern; }
    const ShardKeyRange& range() const { return _range; }

    void setSnapshot(std::unique_ptr<storage::ReadSnapshot> snapshot);
    storage::ReadSnapshot& snapshot() { return *_snapshot; }

    // From the storage write path (ChangeCapture): records the document's `_id` when either
    // version lies in the range.
    void observe(bson::BsonView before, bson::BsonView after);
    // Takes (removes) up to `max` recorded `_id`s ({_id: value} each), in `_id` key order.
    std::vector<bson::BsonObj> takeChanged(size_t max);
    // Puts taken `_id`s back (a transfer round that stopped at its byte limit).
    void putBack(const std::vector<bson::BsonObj>& ids);
    size_t backlog() const;

    // Progress, for currentOp and the changelog.
    std::atomic<int64_t> docsCloned{0};
    std::atomic<int64_t> bytesCloned{0};
    std::atomic<int64_t> modsTransferred{0};
    std::atomic<bool> cloneDone{false};
    const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
    const int32_t opid = nextOpId();  // currentOp's id

  private:
    const std::string _id, _ns, _toShard;
    const placement::ShardKeyPattern _pattern;
    const ShardKeyRange _range;
    std::unique_ptr<storage::ReadSnapshot> _snapshot;
    mutable Mutex _mutex;
    std::map<std::string, bson::BsonObj> _changed GUARDED_BY(_mutex);  // keystring(_id) → {_id}
};

// The shard's migrations in progress as donor, and the write observer that feeds them. One
// instance per shard (ShardingState), added to every operation's write unit; with no migration
// it costs one atomic load per document write.
class ChangeCapture final : public storage::WriteObserver {
  public:
    // ConflictingOperationInProgress when `ns` already has a migration out of this shard.
    Status add(std::shared_ptr<MigrationSource> source);
    void remove(const std::string& id);
    std::shared_ptr<MigrationSource> get(const std::string& id) const;
    std::vector<std::shared_ptr<MigrationSource>> list() const;

    void onWrite(const storage::CollectionInfo& coll, Op op, bson::BsonView before,
                 bson::BsonView after,
                 std::vector<std::pair<std::string, std::string>>* out) override;

  private:
    std::atomic<int> _count{0};
    mutable SharedMutex _mutex;
    std::vector<std::shared_ptr<MigrationSource>> _sources GUARDED_BY(_mutex);
};

}  // namespace tessera::shard
