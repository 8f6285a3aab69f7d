#include "repl/storage_replica.h"

#include <cstdlib>
#include <random>

#include "base/error_codes.h"
#include "base/log.h"

namespace tessera::repl {

namespace {

// origin member (8) | its incarnation (8) | its sequence (8), big-endian; then the batch
constexpr size_t kHeader = 24;

void put64(std::string& out, uint64_t v) {
    for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>(v >> (8 * i)));
}

uint64_t get64(std::string_view in) {
    uint64_t v = 0;
    for (size_t i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
    return v;
}

}  // namespace

StorageReplica::StorageReplica(storage::Engine& engine, MemberId self, std::string address)
    : _engine(engine), _self(self), _address(std::move(address)), _incarnation([] {
          std::random_device random;
          return (uint64_t{random()} << 32) | random();
      }()) {
    auto index = storage::committedLogIndex(_engine);
    if (!index.isOK()) {
        log::error("REPL", 4300020, "Cannot read the applied log index; the member stops",
                   "{\"error\":\"" + log::jsonEscape(index.getStatus().toString()) + "\"}");
        std::abort();
    }
    _applied.store(index.getValue());
}

void StorageReplica::attach(Group* group) {
    MutexLock lk(_mutex);
    _group = group;
}

Status StorageReplica::commit(std::string_view batch) {
    std::string entry;
    entry.reserve(kHeader + batch.size());
    uint64_t sequence;
    Group* group;
    {
        MutexLock lk(_mutex);
        if (_group == nullptr) {
            return Status(ErrorCodes::NotWritablePrimary, "this member takes no part in a group");
        }
        group = _group;
        sequence = ++_nextSequence;
        _waiting[sequence];
    }
    put64(entry, _self);
    put64(entry, _incarnation);
    put64(entry, sequence);
    entry.append(batch);
    group->propose(std::move(entry), [this, sequence](StatusWith<LogIndex> result) {
        if (result.isOK()) return;  // apply() answered the writer
        MutexLock lk(_mutex);
        auto it = _waiting.find(sequence);
        if (it == _waiting.end()) return;
        // From here on, if the entry commits after all, it is applied from elsewhere.
        it->second.done = true;
        it->second.outcome = result.getStatus();
        it->second.finished.notify_one();
    });
    UniqueLock lk(_mutex);
    Waiter& waiter = _waiting[sequence];
    waiter.finished.wait(lk, [&]() REQUIRES(_mutex) { return waiter.done; });
    Status outcome = waiter.outcome;
    _waiting.erase(sequence);
    lk.unlock();
    if (outcome.is(ErrorCodes::InterruptedDueToReplStateChange) && _onLeadershipLost) {
        _onLeadershipLost();
    }
    return outcome;
}

LogIndex StorageReplica::appliedIndex() const { return _applied.load(); }

void StorageReplica::apply(LogIndex index, std::string_view entry) {
    if (entry.size() < kHeader) {
        log::error("REPL", 4300021, "A committed log entry is malformed; the member stops",
                   "{\"index\":" + std::to_string(index) + "}");
        std::abort();
    }
    uint64_t origin = get64(entry.substr(0, 8));
    uint64_t incarnation = get64(entry.substr(8, 8));
    uint64_t sequence = get64(entry.substr(16, 8));
    std::string_view batch = entry.substr(kHeader);
    bool ours = false;
    {
        MutexLock lk(_mutex);
        if (origin == _self && incarnation == _incarnation) {
            auto it = _waiting.find(sequence);
            ours = it != _waiting.end() && !it->second.done;
        }
    }
    Status applied = storage::applyCommitted(_engine, batch, index, /*fromElsewhere=*/!ours);
    if (!applied.isOK()) {
        // Every member applies the same entries: one that cannot has a broken disk. It stops,
        // and comes back through its log.
        log::error("REPL", 4300022, "A committed log entry cannot be applied; the member stops",
                   "{\"index\":" + std::to_string(index) + ",\"error\":\"" +
                       log::jsonEscape(applied.toString()) + "\"}");
        std::abort();
    }
    _applied.store(index);
    if (ours) {
        MutexLock lk(_mutex);
        Waiter& waiter = _waiting[sequence];
        waiter.done = true;
        waiter.outcome = Status::OK();
        waiter.finished.notify_one();
    }
}

std::string StorageReplica::snapshot(LogIndex index) {
    // The entries up to `index` are about to leave the log: their batches must be durable in
    // the engine's own files first (its WAL is written without sync while the log is the
    // journal).
    Status synced = _engine.syncWal();
    if (!synced.isOK()) {
        log::error("REPL", 4300023, "Cannot make the applied state durable; the member stops",
                   "{\"error\":\"" + log::jsonEscape(synced.toString()) + "\"}");
        std::abort();
    }
    // What a member that needs this snapshot copies its data from: this member (it sends only
    // snapshots it took itself).
    return _address;
}

Status StorageReplica::restore(LogIndex index, std::string_view snapshot) {
    // This member's own snapshot, loaded when the group starts: everything up to `index` is in
    // the engine already (snapshot() made it durable before the log dropped it).
    if (index <= appliedIndex()) return Status::OK();
    // A member whose log lacks entries the others no longer keep: it needs a copy of a healthy
    // member's data (initial sync, README.md "Initial sync").
    if (!_catchUp) {
        log::error("REPL", 4300024,
                   "This member is too far behind the group's log and cannot copy another "
                   "member's data",
                   "{\"snapshotIndex\":" + std::to_string(index) + "}");
        return Status(ErrorCodes::NotImplemented, "this member cannot run an initial sync");
    }
    return _catchUp(index, snapshot);
}

}  // namespace tessera::repl
