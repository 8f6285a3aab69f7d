#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "base/status.h"

namespace tessera::shard {

// Critical sections of a shard (a migration's per collection, movePrimary's per database) and the
// versioned operations in flight under each key. Keys are opaque strings ("coll:<ns>",
// "db:<db>", see keys below).
//
// Contract:
//  - while a key is entered, operations that must be checked against it wait (waitForExit) and
//    then re-check their version (the placement may have changed meanwhile);
//  - enter() returns once every operation that passed its check before the entry has finished
//    (leave()), so nothing writes under the old placement while the data is being copied.
// Thread-safe.
class CriticalSections {
  public:
    using Clock = std::chrono::steady_clock;

    static std::string collectionKey(std::string_view ns) { return "coll:" + std::string(ns); }
    static std::string databaseKey(std::string_view db) { return "db:" + std::string(db); }

    // What an entered section holds back. kWrites: a migration's catch-up (reads of the
    // collection continue, writes wait); kAll: everything versioned (DDL, a migration's commit).
    enum class Block { kWrites, kAll };

    // Enters the section of `key` (idempotent; entering kAll while kWrites is entered upgrades
    // it, kWrites never downgrades kAll) and waits until no operation it blocks that was admitted
    // on `key` is in flight (with `drainReads` false, kAll waits only for writes: the reads in
    // flight read a state no write can change any more). LockTimeout (the section is left again
    // when this call entered it) when they do not drain by `deadline`.
    Status enter(const std::string& key, std::string reason, Clock::time_point deadline,
                 Block block = Block::kAll, bool drainReads = true);
    // Leaves the section (idempotent) and wakes the waiters.
    void exit(const std::string& key);
    bool isEntered(const std::string& key) const;
    // Whether an operation of that kind must wait for the section of `key` now.
    bool blocks(const std::string& key, bool isWrite) const;
    // The kind of the entered section (nullopt: not entered).
    std::optional<Block> entered(const std::string& key) const;
    // When the entered section of `key` was entered (nullopt: not entered), for currentOp.
    std::optional<Clock::time_point> enteredAt(const std::string& key) const;

    // At most this many operations block in waitForExit at once (over all keys); more return
    // false at once (their routers back off and retry). Waiters hold worker threads; the
    // commands that end a critical section (its exit, the recipient's range reads, placement
    // refreshes) run on the control lane (src/net) and never need one, so the bound only keeps
    // a few of a shard's 32 workers (src/cli/serve.cpp) for other namespaces.
    static constexpr int kMaxBlockedWaiters = 24;

    // Waits until `key` is not entered. Returns false when the deadline passed first (or too
    // many operations are waiting already, see kMaxBlockedWaiters); sets
    // `*waited` when it had to wait, and then `*exitedAt` to the time of the exit (so that the
    // operations it releases can share one placement refresh that started after it).
    // `isWrite` false: a read waits only for a kAll section.
    bool waitForExit(const std::string& key, Clock::time_point deadline, bool* waited = nullptr,
                     Clock::time_point* exitedAt = nullptr, bool isWrite = true);

    // Admits one operation on `key` if the section does not block its kind (then the caller must
    // call leave(key, isWrite) when the operation ends); false when it does (wait and retry).
    bool tryAdmit(const std::string& key, bool isWrite = true);
    void leave(const std::string& key, bool isWrite = true);
    int64_t inFlight(const std::string& key) const;
    int blockedWaiters() const;

  private:
    struct Entry {
        bool entered = false;
        Clock::time_point enteredAt;
        Block block = Block::kAll;
        std::string reason;
        int64_t readsInFlight = 0;
        int64_t writesInFlight = 0;
        bool blocks(bool isWrite) const { return entered && (isWrite || block == Block::kAll); }
    };
    void maybeErase(const std::string& key) REQUIRES(_mutex);

    mutable Mutex _mutex;
    CondVar _changed;
    std::map<std::string, Entry, std::less<>> _entries GUARDED_BY(_mutex);
    std::map<std::string, Clock::time_point, std::less<>> _lastExit GUARDED_BY(_mutex);
    int _blockedWaiters GUARDED_BY(_mutex) = 0;
};

}  // namespace tessera::shard
