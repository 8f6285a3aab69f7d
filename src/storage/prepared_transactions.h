#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/hlc.h"

namespace tessera::storage {

// Thrown by a read that would have to wait for a prepared transaction's decision where it may
// not wait (PrepareWaitScope), or that waited past its scope's deadline. The command layer turns
// the first into "run this on the pool", the others into MaxTimeMSExpired or ExceededTimeLimit.
class PrepareConflict : public std::runtime_error {
  public:
    enum class Kind {
        kWouldBlock,  // the thread may not wait (PrepareWaitScope())
        kDeadline,    // the operation's maxTimeMS passed while waiting
        kTooLong,     // the command layer's own bound passed while waiting
        // Inside a LatestReadScope: the transaction committed after the read's timestamp, so the
        // read (at the engine's latest timestamp when it began) would miss a commit that may
        // have been acknowledged to a client before it began; the command runs again.
        kCommittedAfterRead,
    };
    PrepareConflict(std::string what, Kind kind)
        : std::runtime_error(std::move(what)), _kind(kind) {}
    Kind kind() const { return _kind; }

  private:
    Kind _kind;
};

// While alive on a thread, bounds how reads on that thread wait for a prepared transaction's
// decision: not at all (the default constructor: an io thread running a request inline must not
// block on a decision that another request on the same thread may carry; the read throws
// PrepareConflict instead), or until `deadline` (a command's maxTimeMS, or the command layer's
// own bound; then PrepareConflict kDeadline or kTooLong as `isMaxTime` says). Outside any scope
// (background threads) a read waits for the decision however long it takes: the coordinator
// always decides in the end. Scopes nest; the innermost applies.
class PrepareWaitScope {
  public:
    using Clock = std::chrono::steady_clock;
    PrepareWaitScope() : _previous(tlsLimit) { tlsLimit = Limit{false, std::nullopt, false}; }
    PrepareWaitScope(Clock::time_point deadline, bool isMaxTime) : _previous(tlsLimit) {
        tlsLimit = Limit{true, deadline, isMaxTime};
    }
    ~PrepareWaitScope() { tlsLimit = _previous; }
    PrepareWaitScope(const PrepareWaitScope&) = delete;
    PrepareWaitScope& operator=(const PrepareWaitScope&) = delete;

    struct Limit {
        bool mayWait = true;
        std::optional<Clock::time_point> deadline;
        bool isMaxTime = false;
    };
    static const Limit& current() { return tlsLimit; }

  private:
    static thread_local Limit tlsLimit;
    Limit _previous;
};

// While alive on a thread, the reads on it are a command's reads at the engine's latest
// timestamp (no transaction, no client-chosen time) that the command layer runs again when they
// throw PrepareConflict kCommittedAfterRead: a prepared transaction they met committed after
// their read timestamp. Why: a cross-shard commit is acknowledged once decided, before every
// participant has heard it; a read that began after the acknowledgement, on a participant still
// holding its part prepared, has a read timestamp between that part's prepare and its commit
// timestamp (the greatest prepare timestamp of all participants). It waits for the decision,
// and then, read again at a later latest timestamp, sees the commit — as the reader of a
// MongoDB primary does after a prepare conflict. Outside the scope such a read keeps its
// timestamp and sees the version before the transaction (a consistent snapshot all the same).
class LatestReadScope {
  public:
    LatestReadScope() : _previous(tlsActive) { tlsActive = true; }
    ~LatestReadScope() { tlsActive = _previous; }
    LatestReadScope(const LatestReadScope&) = delete;
    LatestReadScope& operator=(const LatestReadScope&) = delete;
    static bool active() { return tlsActive; }

  private:
    static thread_local bool tlsActive;
    bool _previous;
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

    // Blocks until decided (bounded by the thread's PrepareWaitScope, else PrepareConflict);
    // returns the commit timestamp, or nullopt when it aborted.
    std::optional<Timestamp> awaitDecision() const;
    // awaitDecision() for a reader at `readTs`: the commit timestamp if the reader sees the
    // transaction's versions, nullopt if it aborted or committed after `readTs` — which inside a
    // LatestReadScope throws PrepareConflict kCommittedAfterRead instead.
    std::optional<Timestamp> awaitDecisionFor(Timestamp readTs) const;
    // Its versions are written (commitTs) or dropped (nullopt): waiting readers go on.
    void decide(std::optional<Timestamp> commitTs);
    // Waits until decided, at most until `deadline`; whether it is.
    bool waitDecidedUntil(std::chrono::steady_clock::time_point deadline) const;

  private:
    const Timestamp _prepareTs;
    const PreparedVersions _versions;
    std::shared_ptr<std::atomic<size_t>> _waiting;
    mutable std::mutex _mutex;
    mutable std::condition_variable _decidedCv;
    bool _decided = false;
    std::optional<Timestamp> _commitTs;
};

// The prepared transactions a reader at one timestamp must reckon with: those prepared at or
// before it and undecided when the reader chose its timestamp. Any other transaction either
// commits above the reader's timestamp (prepared later) or is in every state the reader's
// RocksDB view can show (decided before). A reader that meets one of their keys waits for the
// decision and, if the commit timestamp is at or below its own, reads the transaction's version
// — from here, not from its RocksDB view, which may predate the commit.
class PreparedSet {
  public:
    explicit PreparedSet(std::vector<std::shared_ptr<const PreparedTransaction>> txns)
        : _txns(std::move(txns)) {}

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

    // What a reader at `readTs` makes of `v` (waits for the decision): its value when it
    // committed at or below readTs (empty: the key was removed), nullopt when the reader's own
    // view decides (aborted, or committed later).
    static std::optional<std::string_view> resolve(const Version& v, Timestamp readTs);

  private:
    std::vector<std::shared_ptr<const PreparedTransaction>> _txns;
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
    // The undecided transactions prepared at or before `readTs`; null when there are none.
    std::shared_ptr<const PreparedSet> capture(Timestamp readTs) const;
    bool any() const { return _count.load(std::memory_order_relaxed) > 0; }
    size_t count() const { return _count.load(); }
    // Reads waiting for a decision now.
    size_t waiting() const { return _waiting->load(); }

  private:
    mutable std::mutex _mutex;
    std::map<uint64_t, std::shared_ptr<PreparedTransaction>> _byTxn;
    std::atomic<size_t> _count{0};
    std::shared_ptr<std::atomic<size_t>> _waiting = std::make_shared<std::atomic<size_t>>(0);
};

}  // namespace tessera::storage
