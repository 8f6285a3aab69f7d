#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

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

    // Enters the section of `key` (idempotent) and waits until no operation admitted on `key` is
    // in flight. LockTimeout (the section is left again) when they do not drain by `deadline`.
    Status enter(const std::string& key, std::string reason, Clock::time_point deadline);
    // Leaves the section (idempotent) and wakes the waiters.
    void exit(const std::string& key);
    bool isEntered(const std::string& key) const;

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
    bool waitForExit(const std::string& key, Clock::time_point deadline, bool* waited = nullptr,
                     Clock::time_point* exitedAt = nullptr);

    // Admits one operation on `key` if the section is not entered (then the caller must call
    // leave(key) when the operation ends); false when the section is entered (wait and retry).
    bool tryAdmit(const std::string& key);
    void leave(const std::string& key);
    int64_t inFlight(const std::string& key) const;
    int blockedWaiters() const;

  private:
    struct Entry {
        bool entered = false;
        std::string reason;
        int64_t inFlight = 0;
    };
    void maybeErase(const std::string& key);

    mutable std::mutex _mutex;
    std::condition_variable _changed;
    std::map<std::string, Entry, std::less<>> _entries;
    std::map<std::string, Clock::time_point, std::less<>> _lastExit;
    int _blockedWaiters = 0;
};

}  // namespace tessera::shard
