#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "repl/group.h"

namespace tessera::net {
class RemoteClient;
}  // namespace tessera::net

namespace tessera::repl {

// What a member's initial sync has done so far (rs.status()'s initialSyncStatus).
struct InitialSyncProgress {
    std::string source;        // the member it copies from ("" before one answered)
    LogIndex neededIndex = 0;  // the snapshot the group sent: the copy must reach it
    LogIndex copyIndex = 0;    // the copy's log index
    size_t files = 0;
    size_t filesCopied = 0;
    uint64_t totalBytes = 0;
    uint64_t bytesCopied = 0;
    int attempts = 0;
    std::string lastError;
    std::chrono::system_clock::time_point startedAt;
};

// The receiving side of initial sync (README.md, "Initial sync"): a member whose log lacks
// entries the group no longer keeps — its data wiped, or it was away while the others compacted
// their logs — copies a healthy member's database (SyncSource) into dbpath/initial-sync, which
// replaces its own database when the process starts again (storage::installSyncedCopy), and
// then follows the log from the copy's index on.
class InitialSync {
  public:
    struct Options {
        std::filesystem::path dbpath;
        std::string self;                  // this member, never its own source
        std::vector<std::string> members;  // sources to try after the snapshot's own
        std::chrono::milliseconds retryDelay{1000};
        std::chrono::seconds giveUpAfter{600};
    };
    explicit InitialSync(Options options);

    // Copies a database that has applied the log at least to `needed`, trying `preferred` (the
    // member that took the snapshot) first, then Options::members and `members` (the group's
    // configuration as last heard), again and again until giveUpAfter or stop(). OK once the
    // complete copy is on disk.
    Status run(LogIndex needed, std::string_view preferred,
               const std::vector<std::string>& members = {});
    void stop() { _stopping.store(true); }

    // nullopt when no sync runs.
    std::optional<InitialSyncProgress> progress() const;

  private:
    Status copyFrom(const std::string& source, LogIndex needed);
    Status copyFile(net::RemoteClient& client, const std::string& source, const std::string& id,
                    const std::string& name, uint64_t size, const std::filesystem::path& to);
    template <typename F>
    void update(F&& f) {
        MutexLock lk(_mutex);
        if (_progress) f(*_progress);
    }

    const Options _options;
    std::atomic<bool> _stopping{false};
    mutable Mutex _mutex;
    std::optional<InitialSyncProgress> _progress GUARDED_BY(_mutex);
};

}  // namespace tessera::repl
