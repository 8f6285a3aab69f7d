#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/hlc.h"
#include "base/mutex.h"
#include "base/status.h"

namespace tessera::storage {

// How the reads of one operation wait for a prepared transaction's decision, and the first
// conflict they met — explicit state the operation owns (command::OperationContext) and binds
// to every snapshot it reads through (Engine::snapshot, ReadSnapshot::bindPrepareReads), not a
// property of the thread. A read that may not wait (an io thread running a request inline),
// that waited past the policy's deadline, or — with restartIfCommittedAfterRead — that met a
// transaction which committed after the read's timestamp, stops: the cursor ends, the lookup
// finds nothing, and conflict() says why. The command layer turns it into the command's Status
// (InlineWouldBlock: run again on the pool; MaxTimeMSExpired; ExceededTimeLimit;
// ReadMetLaterCommit: run the read again from the start at a later timestamp). Without a bound
// policy (background threads) a read waits for the decision however long it takes: the
// coordinator always decides in the end.
//
// Why restartIfCommittedAfterRead: a cross-shard commit is acknowledged once decided, before
// every participant has heard it; a read that began after the acknowledgement, on a participant
// still holding its part prepared, has a read timestamp between that part's prepare and its
// commit timestamp (the greatest prepare timestamp of all participants). It waits for the
// decision and then, read again at a later latest timestamp, sees the commit — as the reader of
// a MongoDB primary does after a prepare conflict. A read that keeps its timestamp sees the
// version before the transaction (a consistent snapshot all the same).
//
// Thread-safe: conflicts may be noted by any thread reading for the operation.
class PrepareReads {
  public:
    using Clock = std::chrono::steady_clock;
    struct Policy {
        bool mayWait = true;                        // false: never wait (InlineWouldBlock)
        std::optional<Clock::time_point> deadline;  // none: as long as it takes
        bool deadlineIsMaxTime = false;             // MaxTimeMSExpired, else ExceededTimeLimit
        bool restartIfCommittedAfterRead = false;   // ReadMetLaterCommit (above)

        // An io thread's: never wait.
        static Policy noWait() {
            Policy p;
            p.mayWait = false;
            return p;
        }
    };

    PrepareReads() = default;
    explicit PrepareReads(Policy policy) : _policy(policy) {}

    // A new operation reads on (a cursor's getMore, a transaction's next statement): its policy,
    // and no conflict yet.
    void reset(Policy policy) EXCLUDES(_mutex);
    Policy policy() const EXCLUDES(_mutex);
    // The first conflict noted (OK: none).
    Status conflict() const EXCLUDES(_mutex);
    // Whether one was noted: one atomic load (checked after every document of a plan).
    bool conflicted() const { return _conflicted.load(std::memory_order_acquire); }
    void noteConflict(Status conflict) EXCLUDES(_mutex);

  private:
    std::atomic<bool> _conflicted{false};
    mutable Mutex _mutex;
    Policy _policy GUARDED_BY(_mutex);
    Status _conflict GUARDED_BY(_mutex) = Status::OK();
};

// The versions a prepared transaction will write if it commits, by column family id: user key
// (without timestamp) -> value ("" removes the key), sorted by key.
using PreparedVersions = std::map<uint32_t, std::vector<std::pair<std::string, std::string>>>;

// One prepared transaction as readers see it: its prepare timestamp, the versions it wrote
// (record and index keys) and, once decided, its outcome. Immutable but for the decision.
class PreparedTransaction {
  public:
    PreparedTransaction(Timestamp prepareTs, PreparedVersions versions,
                        std::shared_ptr<std::atomic<size_t>> waitingCounter)
        : _prepareTs(prepareTs),
          _versions(std::move(versions)),
          _waiting(std::move(waitingCounter)) {}

    Timestamp prepareTs() const { return _prepareTs; }
    const PreparedVersions& versions() const { return _versions; }
    // The version of `userKey` in column family `cfId` it wrote, or null.
    const std::string* versionOf(uint32_t cfId, std::string_view userKey) const;

    // Waits until decided, as `policy` allows: the commit timestamp, nullopt when it aborted,
    // or the conflict (PrepareReads) when the policy does not allow the wait.
    StatusWith<std::optional<Timestamp>> awaitDecision(const PrepareReads::Policy& policy) const;
    // awaitDecision() for a reader at `readTs`: the commit timestamp if the reader sees the
    // transaction's versions, nullopt if it aborted or committed after `readTs` — which with
    // restartIfCommittedAfterRead is the conflict ReadMetLaterCommit instead.
    StatusWith<std::optional<Timestamp>> awaitDecisionFor(Timestamp readTs,
                                                          const PrepareReads::Policy& policy) const;
    // Its versions are written (commitTs) or dropped (nullopt): waiting readers go on.
    void decide(std::optional<Timestamp> commitTs);
    // Waits until decided, at most until `deadline`; whether it is.
    bool waitDecidedUntil(std::chrono::steady_clock::time_point deadline) const;

  private:
    const Timestamp _prepareTs;
    const PreparedVersions _versions;
    std::shared_ptr<std::atomic<size_t>> _waiting;
    mutable Mutex _mutex;
    mutable CondVar _decidedCv;
    bool _decided GUARDED_BY(_mutex) = false;
    std::optional<Timestamp> _commitTs GUARDED_BY(_mutex);
};

// The prepared transactions a reader at one timestamp must reckon with: those prepared at or
// before it and undecided when the reader chose its timestamp. Any other transaction either
// commits above the reader's timestamp (prepared later) or is in every state the reader's
// RocksDB view can show (decided before). A reader that meets one of their keys waits for the
// decision and, if the commit timestamp is at or below its own, reads the transaction's version
// — from here, not from its RocksDB view, which may predate the commit.
//
// A reader's waits follow the PrepareReads bound to the set (none bound: it waits as long as it
// takes); a conflict is noted there and the read stops.
class PreparedSet {
  public:
    PreparedSet(std::vector<std::shared_ptr<const PreparedTransaction>> txns,
                std::shared_ptr<PrepareReads> reads)
        : _txns(std::move(txns)), _reads(std::move(reads)) {}

    // One prepared version met by a reader, in key order of its column family.
    struct Version {
        std::string_view userKey;
        std::string_view value;
        const PreparedTransaction* txn;
    };
    // The prepared versions of column family `cfId` with keys in [lower, upper) (no upper
    // bound when empty), sorted by key; several transactions never wrote one key (claims).
    std::vector<Version> versionsIn(uint32_t cfId, std::string_view lower,
                                    std::string_view upper) const;
    // The prepared version of exactly `userKey`, if any.
    std::optional<Version> versionOf(uint32_t cfId, std::string_view userKey) const;

    // What a reader at `readTs` makes of `v` (waits for the decision).
    enum class Seen {
        kCommitted,  // at or below readTs (*commitTs): *value is its version (empty: removed)
        kHidden,     // aborted, or committed later: the reader's own view decides
        kConflict,   // the bound PrepareReads does not allow the wait (noted there): stop
    };
    Seen resolve(const Version& v, Timestamp readTs, std::string_view* value,
                 Timestamp* commitTs = nullptr) const;

    // The operation whose reads these are from now on (a cursor's getMore, a transaction's
    // next statement). The set is used by one operation at a time.
    void bind(std::shared_ptr<PrepareReads> reads) const { _reads = std::move(reads); }

  private:
    std::vector<std::shared_ptr<const PreparedTransaction>> _txns;
    mutable std::shared_ptr<PrepareReads> _reads;  // null: wait as long as it takes
};

// The transactions of one engine that are prepared (two-phase commit, first phase done) and not
// yet committed or aborted. The rule that keeps a cross-shard commit atomic for readers: a read
// at a timestamp >= a prepared transaction's prepare timestamp that meets one of its keys — a
// record, or an index key, so that a scan sees its inserts as well — waits until it is decided
// (its commit timestamp, >= the prepare timestamp, may be <= the read's: the read must see all
// of it or none of it). A read below every prepare timestamp goes on: whatever the decision, the
// commit timestamp is above it; a read that meets none of its keys goes on too (as WiredTiger's
// prepared updates hold only the readers that find them).
//
// `prepare` draws the prepare timestamp from the clock and registers it under one mutex, and a
// reader captures the set after it chose its read timestamp: a reader whose timestamp is >= P
// chose it after P was drawn, hence after P was registered, so it cannot miss the transaction.
// Thread-safe; `any()` is one relaxed load.
class PreparedTransactions {
  public:
    // Registers transaction `txnId`, which will write `versions`, as prepared at a fresh
    // timestamp of `clock`, returned.
    Timestamp prepare(uint64_t txnId, HybridLogicalClock& clock, PreparedVersions versions);
    // Registers a transaction prepared before a restart at its recorded timestamp.
    void restore(uint64_t txnId, Timestamp prepareTs, PreparedVersions versions);
    // The transaction is decided and its commit (at `commitTs`; nullopt: aborted) written:
    // readers waiting go on.
    void finish(uint64_t txnId, std::optional<Timestamp> commitTs);
    // Waits until none of transactions `txnIds` is prepared any more; false at `deadline`.
    bool awaitDecided(const std::vector<uint64_t>& txnIds,
                      std::chrono::steady_clock::time_point deadline) const;
    // The undecided transactions prepared at or before `readTs`, their waits bound to `reads`;
    // null when there are none.
    std::shared_ptr<const PreparedSet> capture(Timestamp readTs,
                                               std::shared_ptr<PrepareReads> reads) const;
    bool any() const { return _count.load(std::memory_order_relaxed) > 0; }
    size_t count() const { return _count.load(); }
    // Reads waiting for a decision now.
    size_t waiting() const { return _waiting->load(); }

  private:
    mutable Mutex _mutex;
    std::map<uint64_t, std::shared_ptr<PreparedTransaction>> _byTxn GUARDED_BY(_mutex);
    std::atomic<size_t> _count{0};
    std::shared_ptr<std::atomic<size_t>> _waiting = std::make_shared<std::atomic<size_t>>(0);
};

}  // namespace tessera::storage
