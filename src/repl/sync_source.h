#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "base/mutex.h"
#include "base/status.h"
#include "storage/engine.h"
#include "storage/synced_copy.h"

namespace tessera::repl {

// The serving side of initial sync (README.md, "Initial sync"): consistent copies of this
// member's database (storage::createCheckpoint) that a member too far behind the group's log
// reads, file by file, through the internal commands _replSyncStart, _replSyncRead and
// _replSyncEnd. A copy is removed when its reader ends it, when it was not read for
// kIdleLimit, and when this process starts again (storage::installSyncedCopy).
class SyncSource {
  public:
    static constexpr auto kIdleLimit = std::chrono::minutes(10);
    static constexpr size_t kMaxCopies = 2;             // served at once (each pins its files)
    static constexpr uint64_t kMaxReadBytes = 8 << 20;  // one _replSyncRead's share of a file

    // `dbpath` empty: no copy is served (start() fails).
    SyncSource(storage::Engine& engine, std::filesystem::path dbpath);
    ~SyncSource();  // removes the copies still served

    struct Copy {
        std::string id;
        storage::Checkpoint checkpoint;
    };
    // A new copy; ExceededMemoryLimit when kMaxCopies are served already (each keeps the
    // table files it links on disk).
    StatusWith<Copy> start();
    // Up to `length` (≤ kMaxReadBytes) bytes of `file` of copy `id` from `offset` (fewer at its
    // end). NoSuchKey for an unknown copy or a file it does not list.
    StatusWith<std::string> read(const std::string& id, const std::string& file, uint64_t offset,
                                 uint64_t length);
    void end(const std::string& id);

  private:
    struct Served {
        storage::Checkpoint checkpoint;
        std::chrono::steady_clock::time_point lastUse;
    };
    void removeIdle() REQUIRES(_mutex);
    std::filesystem::path dirOf(const std::string& id) const;

    storage::Engine& _engine;
    const std::filesystem::path _dir;  // dbpath/initial-sync-source
    Mutex _mutex;
    std::map<std::string, Served> _served GUARDED_BY(_mutex);
    uint64_t _next GUARDED_BY(_mutex) = 0;
};

}  // namespace tessera::repl
