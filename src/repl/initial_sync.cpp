#include "repl/initial_sync.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <system_error>
#include <thread>

#include "base/error_codes.h"
#include "base/log.h"
#include "bson/bson_builder.h"
#include "net/remote_client.h"
#include "storage/synced_copy.h"

namespace tessera::repl {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kComponent = "REPL";
constexpr int64_t kReadBytes = 4 << 20;  // one _replSyncRead
constexpr auto kExchangeTimeout = std::chrono::seconds(60);

Status writeAll(int fd, std::string_view data) {
    while (!data.empty()) {
        ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return Status(ErrorCodes::InternalError, "cannot write the copy");
        data.remove_prefix(static_cast<size_t>(n));
    }
    return Status::OK();
}

StatusWith<bson::BsonObj> runAt(net::RemoteClient& client, const std::string& host,
                                const bson::BsonObj& cmd) {
    auto reply = client.runCommand(host, "admin", cmd, kExchangeTimeout);
    if (!reply.isOK()) return reply.getStatus();
    TRY_STATUS(net::replyStatus(reply.getValue()));
    return reply;
}

}  // namespace

InitialSync::InitialSync(Options options) : _options(std::move(options)) {}

std::optional<InitialSyncProgress> InitialSync::progress() const {
    MutexLock lk(_mutex);
    return _progress;
}

Status InitialSync::run(LogIndex needed, std::string_view preferred,
                        const std::vector<std::string>& members) {
    {
        MutexLock lk(_mutex);
        _progress = InitialSyncProgress{};
        _progress->neededIndex = needed;
        _progress->startedAt = std::chrono::system_clock::now();
    }
    std::vector<std::string> sources;
    if (!preferred.empty() && preferred != _options.self) sources.emplace_back(preferred);
    for (const auto* list : {&_options.members, &members}) {
        for (const std::string& m : *list) {
            if (m != _options.self &&
                std::find(sources.begin(), sources.end(), m) == sources.end()) {
                sources.push_back(m);
            }
        }
    }
    log::info(kComponent, 4300113,
              "Initial sync: this member's log lacks entries the group "
              "no longer keeps; copying a member's data",
              "{\"neededIndex\":" + std::to_string(needed) + "}");
    const auto giveUpAt = std::chrono::steady_clock::now() + _options.giveUpAfter;
    Status last(ErrorCodes::HostUnreachable, "no member to copy from");
    while (!_stopping.load()) {
        for (const std::string& source : sources) {
            if (_stopping.load()) break;
            update([&](InitialSyncProgress& p) {
                p.source = source;
                ++p.attempts;
            });
            last = copyFrom(source, needed);
            if (last.isOK()) {
                log::info(kComponent, 4300114, "Initial sync: the copy is complete",
                          "{\"source\":\"" + log::jsonEscape(source) + "\"}");
                return Status::OK();
            }
            update([&](InitialSyncProgress& p) { p.lastError = last.toString(); });
            log::warning(kComponent, 4300115, "Initial sync: copying from a member failed",
                         "{\"source\":\"" + log::jsonEscape(source) + "\",\"error\":\"" +
                             log::jsonEscape(last.toString()) + "\"}");
        }
        if (std::chrono::steady_clock::now() >= giveUpAt) break;
        std::this_thread::sleep_for(_options.retryDelay);
    }
    {
        MutexLock lk(_mutex);
        _progress.reset();
    }
    if (_stopping.load()) return Status(ErrorCodes::InterruptedAtShutdown, "initial sync stopped");
    return last;
}

namespace {

// What _replSyncStart answered: the copy's id, the log index it has applied, its files.
struct SourceCopy {
    std::string id;
    LogIndex logIndex = 0;
    struct File {
        std::string name;
        uint64_t size = 0;
    };
    std::vector<File> files;
    uint64_t bytes = 0;
};

StatusWith<SourceCopy> parseSourceCopy(bson::BsonView reply) {
    SourceCopy copy;
    bson::BsonElement id = reply["id"], logIndex = reply["logIndex"], files = reply["files"];
    if (id.type() != bson::BsonType::String || !logIndex.isNumber() || !files.isArray()) {
        return Status(ErrorCodes::ProtocolError, "_replSyncStart answered out of shape");
    }
    copy.id = std::string(id.stringValue());
    copy.logIndex = static_cast<LogIndex>(logIndex.numberLong());
    for (bson::BsonElement e : files.objValue()) {
        bson::BsonElement name = e.isObject() ? e.objValue()["name"] : bson::BsonElement();
        bson::BsonElement size = e.isObject() ? e.objValue()["size"] : bson::BsonElement();
        // A plain file name only: the copy is written inside its own folder.
        if (name.type() != bson::BsonType::String || !size.isNumber() || size.numberLong() < 0 ||
            name.stringValue().empty() || name.stringValue().find('/') != std::string_view::npos ||
            name.stringValue() == "." || name.stringValue() == "..") {
            return Status(ErrorCodes::ProtocolError, "_replSyncStart listed a file out of shape");
        }
        copy.files.push_back(
            {std::string(name.stringValue()), static_cast<uint64_t>(size.numberLong())});
        copy.bytes += copy.files.back().size;
    }
    return copy;
}

}  // namespace

Status InitialSync::copyFile(net::RemoteClient& client, const std::string& source,
                             const std::string& id, const std::string& name, uint64_t size,
                             const fs::path& to) {
    int fd = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Status(ErrorCodes::InternalError, "cannot create " + to.string());
    Status copied = Status::OK();
    for (uint64_t offset = 0; copied.isOK() && offset < size;) {
        if (_stopping.load()) {
            copied = Status(ErrorCodes::InterruptedAtShutdown, "initial sync stopped");
            break;
        }
        auto chunk = runAt(client, source,
                           bson::BsonBuilder()
                               .append("_replSyncRead", id)
                               .append("file", name)
                               .appendInt64("offset", static_cast<int64_t>(offset))
                               .appendInt64("length", kReadBytes)
                               .obj());
        if (!chunk.isOK()) {
            copied = chunk.getStatus();
            break;
        }
        bson::BsonElement data = chunk.getValue()["data"];
        if (data.type() != bson::BsonType::BinData || data.binaryValue().data.empty()) {
            copied = Status(ErrorCodes::ProtocolError, name + " ended early at the source");
            break;
        }
        copied = writeAll(fd, data.binaryValue().data);
        offset += data.binaryValue().data.size();
        update([&](InitialSyncProgress& p) { p.bytesCopied += data.binaryValue().data.size(); });
    }
    if (copied.isOK() && ::fsync(fd) != 0) {
        copied = Status(ErrorCodes::InternalError, "cannot sync " + to.string());
    }
    ::close(fd);
    return copied;
}

Status InitialSync::copyFrom(const std::string& source, LogIndex needed) {
    net::RemoteClient client;
    ASSIGN_OR_RETURN(bson::BsonObj started,
                     runAt(client, source, bson::BsonBuilder().append("_replSyncStart", 1).obj()));
    auto parsed = parseSourceCopy(started);
    if (!parsed.isOK()) return parsed.getStatus();
    const SourceCopy& copy = parsed.getValue();
    // Whatever happens next, the source removes its copy (it would after kIdleLimit anyway).
    struct EndCopy {
        net::RemoteClient& client;
        const std::string& source;
        const std::string& id;
        ~EndCopy() {
            (void)client.runCommand(source, "admin",
                                    bson::BsonBuilder().append("_replSyncEnd", id).obj(),
                                    kExchangeTimeout);
        }
    } endCopy{client, source, copy.id};
    if (copy.logIndex < needed) {
        return Status(ErrorCodes::SnapshotUnavailable, source + "'s data has applied the log to " +
                                                           std::to_string(copy.logIndex) +
                                                           ", short of " + std::to_string(needed));
    }
    update([&](InitialSyncProgress& p) {
        p.copyIndex = copy.logIndex;
        p.files = copy.files.size();
        p.filesCopied = 0;
        p.totalBytes = copy.bytes;
        p.bytesCopied = 0;
    });
    const fs::path dir = _options.dbpath / storage::kSyncedCopyDir;
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(dir, ec);
    if (ec) return Status(ErrorCodes::InternalError, "cannot create " + dir.string());
    for (const SourceCopy::File& file : copy.files) {
        Status copied = copyFile(client, source, copy.id, file.name, file.size, dir / file.name);
        if (!copied.isOK()) {
            fs::remove_all(dir, ec);
            return copied;
        }
        update([&](InitialSyncProgress& p) { ++p.filesCopied; });
        log::info(kComponent, 4300116, "Initial sync: copied a file",
                  "{\"file\":\"" + log::jsonEscape(file.name) +
                      "\",\"bytes\":" + std::to_string(file.size) + "}");
    }
    return storage::markSyncedCopyComplete(_options.dbpath);
}

}  // namespace tessera::repl
