#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"

namespace tessera::config {

// Serializes DDL per namespace, as MongoDB's DDL lock manager does: an operation on a collection
// (shardCollection, split, merge, moveRange, drop) holds its database shared and the collection
// exclusively; an operation on a whole database (create, drop, movePrimary) holds the database
// exclusively. Operations on different namespaces run in parallel.
//
// Invariants:
//  1. Locks are taken database first, then collection, and an operation never asks for a lock it
//     already holds, so two operations cannot wait for each other. Databases and collections are
//     separate names (a namespace without a dot is refused before any lock: InvalidNamespace), and
//     a request for a name the calling thread — an operation runs on one thread — already holds
//     is a bug: an invariant failure in debug builds, LockFailed (107) in release builds, never
//     a wait on itself.
//  2. A waiting exclusive request blocks new shared requests of the same name (no starvation of
//     dropDatabase by a stream of collection DDL).
//  3. Waiting blocks only the calling DDL thread (the control lane, src/net), never a worker
//     that serves catalog reads: a lock holder's progress never depends on a waiter's thread.
class DdlLockManager {
  public:
    enum class Mode { kShared, kExclusive };
    using Clock = std::chrono::steady_clock;
    static constexpr std::chrono::minutes kDefaultTimeout{5};

    // Releases its locks (reverse order) when destroyed. Movable.
    class Guard {
      public:
        Guard() = default;
        Guard(Guard&& other) noexcept;
        Guard& operator=(Guard&& other) noexcept;
        Guard(const Guard&) = delete;
        Guard& operator=(const Guard&) = delete;
        ~Guard() { release(); }
        void release();

      private:
        friend class DdlLockManager;
        struct Held {
            std::string name;
            Mode mode;
            std::string reason;
        };
        DdlLockManager* _manager = nullptr;
        std::vector<Held> _held;
    };

    // The database `db`, exclusively. LockBusy (46) naming the holder's reason after `timeout`.
    StatusWith<Guard> lockDatabase(const std::string& db, const std::string& reason,
                                   Clock::duration timeout = kDefaultTimeout);
    // The database of `ns` shared, then `ns` exclusively. InvalidNamespace (73) unless ns is
    // "db.coll".
    StatusWith<Guard> lockCollection(const std::string& ns, const std::string& reason,
                                     Clock::duration timeout = kDefaultTimeout);

    // What is held now, for currentOp-style diagnostics and tests: "name mode reason".
    std::vector<std::string> describeHeld() const;
    // How many requests wait for the database `db`'s lock now (diagnostics and tests).
    int databaseWaiters(const std::string& db) const;

  private:
    struct LockState {
        int shared = 0;
        bool exclusive = false;
        int exclusiveWaiters = 0;
        int waiters = 0;                   // every waiting acquire (they hold references)
        std::vector<std::string> reasons;  // of the holders
        std::vector<std::thread::id> holders;
        bool unused() const { return shared == 0 && !exclusive && waiters == 0; }
    };
    Status acquire(const std::string& name, Mode mode, const std::string& reason,
                   Clock::time_point deadline) EXCLUDES(_mutex);
    void releaseOne(const std::string& name, Mode mode, const std::string& reason) EXCLUDES(_mutex);

    mutable Mutex _mutex;
    CondVar _released;
    std::map<std::string, LockState> _locks GUARDED_BY(_mutex);  // entries erased when free
};

}  // namespace tessera::config
