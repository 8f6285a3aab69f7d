// The files of an initial sync (synced_copy.h): a RocksDB checkpoint served by a healthy member,
// and the received copy put in place of a member's database before its engine opens.
#include <fcntl.h>
#include <rocksdb/utilities/checkpoint.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <system_error>

#include "base/error_codes.h"
#include "storage/rocks_engine.h"
#include "storage/synced_copy.h"

namespace tessera::storage {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kOldRemoved = "OLD-REMOVED";  // step 1 of the swap is done

Status fsError(const std::string& what, const std::error_code& ec) {
    return Status(ErrorCodes::InternalError, what + ": " + ec.message());
}

// Makes the entries of `dir` (creations, renames, removals) durable.
Status syncDirectory(const fs::path& dir) {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0) return Status(ErrorCodes::InternalError, "cannot open " + dir.string());
    int rv = ::fsync(fd);
    ::close(fd);
    if (rv != 0) return Status(ErrorCodes::InternalError, "cannot sync " + dir.string());
    return Status::OK();
}

Status writeMarker(const fs::path& file) {
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return Status(ErrorCodes::InternalError, "cannot create " + file.string());
    int rv = ::fsync(fd);
    ::close(fd);
    if (rv != 0) return Status(ErrorCodes::InternalError, "cannot sync " + file.string());
    return syncDirectory(file.parent_path());
}

}  // namespace

StatusWith<uint64_t> RocksEngine::createCheckpoint(const std::string& dir) {
    // Read first: the copy, taken after, has applied at least this far.
    ASSIGN_OR_RETURN(uint64_t logIndex, committedLogIndex());
    rocksdb::Checkpoint* raw = nullptr;
    TRY_STATUS(statusOf(rocksdb::Checkpoint::Create(_db.get(), &raw), "checkpoint"));
    std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
    // log_size_for_flush 0: the memtables are flushed, so that the copy does not depend on the
    // write-ahead log, which this engine does not sync under a replica set.
    TRY_STATUS(statusOf(checkpoint->CreateCheckpoint(dir, /*log_size_for_flush=*/0), "checkpoint"));
    return logIndex;
}

StatusWith<Checkpoint> createCheckpoint(Engine& engine, const fs::path& dir) {
    std::error_code ec;
    fs::create_directories(dir.parent_path(), ec);
    if (ec) return fsError("cannot create " + dir.parent_path().string(), ec);
    Checkpoint out;
    ASSIGN_OR_RETURN(out.logIndex, static_cast<RocksEngine&>(engine).createCheckpoint(dir));
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
        if (!entry.is_regular_file()) continue;
        out.files.push_back({entry.path().filename().string(), entry.file_size()});
    }
    if (ec) return fsError("cannot list " + dir.string(), ec);
    std::sort(out.files.begin(), out.files.end(),
              [](const CheckpointFile& a, const CheckpointFile& b) { return a.name < b.name; });
    return out;
}

Status markSyncedCopyComplete(const fs::path& dbpath) {
    const fs::path copy = dbpath / kSyncedCopyDir;
    TRY_STATUS(syncDirectory(copy));
    return writeMarker(copy / kSyncedCopyComplete);
}

StatusWith<bool> installSyncedCopy(const fs::path& dbpath, const std::vector<std::string>& keep) {
    std::error_code ec;
    // Checkpoints served by an earlier run of this process: their readers are gone.
    fs::remove_all(dbpath / kSyncSourceDir, ec);
    if (ec) return fsError("cannot remove " + (dbpath / kSyncSourceDir).string(), ec);
    const fs::path copy = dbpath / kSyncedCopyDir;
    if (!fs::exists(copy)) return false;
    if (!fs::exists(copy / kSyncedCopyComplete)) {
        fs::remove_all(copy, ec);  // cut short: the next sync starts over
        if (ec) return fsError("cannot remove " + copy.string(), ec);
        return false;
    }
    // 1. The old database goes (every entry of dbpath that is not kept).
    if (!fs::exists(copy / kOldRemoved)) {
        std::vector<fs::path> old;
        for (const fs::directory_entry& entry : fs::directory_iterator(dbpath, ec)) {
            const std::string name = entry.path().filename().string();
            if (name == kSyncedCopyDir || name == kSyncSourceDir ||
                std::find(keep.begin(), keep.end(), name) != keep.end()) {
                continue;
            }
            old.push_back(entry.path());
        }
        if (ec) return fsError("cannot list " + dbpath.string(), ec);
        for (const fs::path& p : old) {
            fs::remove_all(p, ec);
            if (ec) return fsError("cannot remove " + p.string(), ec);
        }
        TRY_STATUS(syncDirectory(dbpath));
        TRY_STATUS(writeMarker(copy / kOldRemoved));
    }
    // 2. The copy's files move in (a file already moved by an interrupted run is not there).
    std::vector<fs::path> files;
    for (const fs::directory_entry& entry : fs::directory_iterator(copy, ec)) {
        const std::string name = entry.path().filename().string();
        if (name == kSyncedCopyComplete || name == kOldRemoved) continue;
        files.push_back(entry.path());
    }
    if (ec) return fsError("cannot list " + copy.string(), ec);
    for (const fs::path& p : files) {
        fs::rename(p, dbpath / p.filename(), ec);
        if (ec) return fsError("cannot move " + p.string(), ec);
    }
    TRY_STATUS(syncDirectory(dbpath));
    // 3. Its folder goes, the markers last.
    fs::remove_all(copy, ec);
    if (ec) return fsError("cannot remove " + copy.string(), ec);
    TRY_STATUS(syncDirectory(dbpath));
    return true;
}

}  // namespace tessera::storage
