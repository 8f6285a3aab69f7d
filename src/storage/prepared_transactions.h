#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

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

// The transactions of one engine that are prepared (two-phase commit, first phase done) and not
// yet committed or aborted, with their prepare timestamps. The rule that keeps a cross-shard
// commit atomic for readers: a read at a timestamp >= some prepared transaction's prepare
// timestamp waits until that transaction is decided and its commit written (its commit
// timestamp, >= the prepare timestamp, may be <= the read's: the read must see all of it or
// none of it). A read below every prepare timestamp goes on: whatever the decision, the commit
// timestamp is above it.
//
// `prepare` draws the prepare timestamp from the clock and registers it under one mutex, and a
// reader checks after it chose its read timestamp: a reader whose timestamp is >= P chose it
// after P was drawn, hence after P was registered, so it cannot miss the transaction.
//
// Granularity is the whole engine, not the documents the transaction wrote: a read waits for
// every prepared transaction at or below its timestamp (one round trip of the coordinator).
// Thread-safe; `any()` is one relaxed load.
class PreparedTransactions {
  public:
    // Registers transaction `txnId` as prepared at a fresh timestamp of `clock`, returned.
    Timestamp prepare(uint64_t txnId, HybridLogicalClock& clock);
    // Registers a transaction prepared before a restart at its recorded timestamp.
    void restore(uint64_t txnId, Timestamp prepareTs);
    // The transaction is decided and its commit (if any) written: readers waiting go on.
    void finish(uint64_t txnId);
    // Waits until no prepared transaction has a prepare timestamp <= `readTs`. Throws
    // PrepareConflict where the thread's PrepareWaitScope forbids waiting or its deadline passes.
    void waitForDecisions(Timestamp readTs);
    bool any() const { return _count.load(std::memory_order_relaxed) > 0; }
    size_t count() const { return _count.load(); }
    // Reads waiting for a decision now.
    size_t waiting() const { return _waiting.load(); }

  private:
    bool blockingLocked(Timestamp readTs) const;

    mutable std::mutex _mutex;
    std::condition_variable _decided;
    std::map<uint64_t, Timestamp> _byTxn;
    std::atomic<size_t> _count{0};
    std::atomic<size_t> _waiting{0};
};

}  // namespace tessera::storage
