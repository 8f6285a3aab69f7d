#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "storage/engine.h"

// The files of a replica set member's initial sync (src/repl/README.md, "Initial sync"): a
// healthy member serves a consistent copy of its database's files (a RocksDB checkpoint: hard
// links to its immutable table files); a member whose log is too far behind receives such a copy
// next to its database, and the copy replaces the database before the engine opens again.
namespace tessera::storage {

// Folders of a dbpath that are not the engine's: checkpoints this member serves to others, and a
// copy it receives.
inline constexpr std::string_view kSyncSourceDir = "initial-sync-source";
inline constexpr std::string_view kSyncedCopyDir = "initial-sync";
// Written (and synced) into kSyncedCopyDir once every file of the copy is there.
inline constexpr std::string_view kSyncedCopyComplete = "COMPLETE";

struct CheckpointFile {
    std::string name;  // a plain file name inside the checkpoint's folder
    uint64_t size = 0;
};

struct Checkpoint {
    uint64_t logIndex = 0;  // the copy has applied the group's log at least this far
    std::vector<CheckpointFile> files;
};

// Writes a consistent copy of `engine`'s database into `dir` (which must not exist yet; on the
// same file system as the database, so that table files are hard links).
StatusWith<Checkpoint> createCheckpoint(Engine& engine, const std::filesystem::path& dir);

// Marks the copy received into dbpath/initial-sync complete (its files written and synced by the
// caller): from here on it replaces the database at the next open.
Status markSyncedCopyComplete(const std::filesystem::path& dbpath);

// Before the engine opens `dbpath`: when a complete copy waits in dbpath/initial-sync, it
// replaces the database (every file of dbpath but the folders `keep`, kSyncSourceDir and
// kSyncedCopyDir) and its folder goes. A copy without kSyncedCopyComplete (a download cut
// short) is deleted. Safe to run again after a crash at any point. Returns whether a copy was
// installed.
StatusWith<bool> installSyncedCopy(const std::filesystem::path& dbpath,
                                   const std::vector<std::string>& keep);

}  // namespace tessera::storage
