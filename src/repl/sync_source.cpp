#include "repl/sync_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <system_error>

#include "base/error_codes.h"
#include "base/failpoint.h"
#include "base/log.h"

namespace tessera::repl {

namespace fs = std::filesystem;

// Holds every _replSyncRead while on: the reading member stays in its initial sync (tests look
// at its progress meanwhile).
TESSERA_FAIL_POINT_DEFINE(initialSyncSourceHangBeforeRead);

SyncSource::SyncSource(storage::Engine& engine, fs::path dbpath)
    : _engine(engine), _dir(dbpath.empty() ? fs::path() : dbpath / storage::kSyncSourceDir) {}

SyncSource::~SyncSource() {
    if (_dir.empty()) return;
    std::error_code ec;
    fs::remove_all(_dir, ec);
}

fs::path SyncSource::dirOf(const std::string& id) const { return _dir / id; }

void SyncSource::removeIdle() {
    const auto now = std::chrono::steady_clock::now();
    for (auto it = _served.begin(); it != _served.end();) {
        if (now - it->second.lastUse < kIdleLimit) {
            ++it;
            continue;
        }
        std::error_code ec;
        fs::remove_all(dirOf(it->first), ec);
        log::info("REPL", 4300111, "Removed an initial sync copy nobody read",
                  "{\"id\":\"" + it->first + "\"}");
        it = _served.erase(it);
    }
}

StatusWith<SyncSource::Copy> SyncSource::start() {
    if (_dir.empty()) {
        return Status(ErrorCodes::IllegalOperation,
                      "this member has no dbpath to serve a copy from");
    }
    std::string id;
    {
        MutexLock lk(_mutex);
        removeIdle();
        if (_served.size() >= kMaxCopies) {
            return Status(ErrorCodes::ExceededMemoryLimit, "this member already serves " +
                                                               std::to_string(kMaxCopies) +
                                                               " initial sync copies");
        }
        // Unique across this process's runs too: a reader of an earlier run's copy finds none.
        std::random_device random;
        id = std::to_string(++_next) + "-" + std::to_string(random());
        _served[id] = Served{{}, std::chrono::steady_clock::now()};
    }
    StatusWith<storage::Checkpoint> made = storage::createCheckpoint(_engine, dirOf(id));
    MutexLock lk(_mutex);
    if (!made.isOK()) {
        _served.erase(id);
        std::error_code ec;
        fs::remove_all(dirOf(id), ec);
        return made.getStatus();
    }
    Served& served = _served[id];
    served.checkpoint = made.getValue();
    served.lastUse = std::chrono::steady_clock::now();
    uint64_t bytes = 0;
    for (const auto& f : served.checkpoint.files) bytes += f.size;
    log::info("REPL", 4300112, "Serving an initial sync copy",
              "{\"id\":\"" + id + "\",\"logIndex\":" + std::to_string(served.checkpoint.logIndex) +
                  ",\"files\":" + std::to_string(served.checkpoint.files.size()) +
                  ",\"bytes\":" + std::to_string(bytes) + "}");
    return Copy{id, served.checkpoint};
}

StatusWith<std::string> SyncSource::read(const std::string& id, const std::string& file,
                                         uint64_t offset, uint64_t length) {
    {
        MutexLock lk(_mutex);
        auto it = _served.find(id);
        if (it == _served.end()) {
            return Status(ErrorCodes::NoSuchKey, "no initial sync copy " + id + " is served here");
        }
        const auto& files = it->second.checkpoint.files;
        if (std::none_of(files.begin(), files.end(),
                         [&](const storage::CheckpointFile& f) { return f.name == file; })) {
            return Status(ErrorCodes::NoSuchKey,
                          "initial sync copy " + id + " has no file '" + file + "'");
        }
        it->second.lastUse = std::chrono::steady_clock::now();
    }
    pauseWhileActive(initialSyncSourceHangBeforeRead, "REPL", 4300119, std::chrono::seconds(50));
    length = std::min(length, kMaxReadBytes);
    const fs::path path = dirOf(id) / file;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status(ErrorCodes::InternalError, "cannot open " + path.string());
    std::string out(length, '\0');
    size_t got = 0;
    while (got < length) {
        ssize_t n = ::pread(fd, out.data() + got, length - got, static_cast<off_t>(offset + got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            ::close(fd);
            return Status(ErrorCodes::InternalError, "cannot read " + path.string());
        }
        if (n == 0) break;
        got += static_cast<size_t>(n);
    }
    ::close(fd);
    out.resize(got);
    return out;
}

void SyncSource::end(const std::string& id) {
    MutexLock lk(_mutex);
    if (_served.erase(id) == 0) return;
    std::error_code ec;
    fs::remove_all(dirOf(id), ec);
}

}  // namespace tessera::repl
