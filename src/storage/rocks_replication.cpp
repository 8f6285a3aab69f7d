// The engine's side of replication (replication.h): writing through a commit log, and applying
// committed batches — another member's included, whose catalog and count changes the engine
// follows in memory.
#include <rocksdb/write_batch.h>

#include "storage/catalog_codec.h"
#include "storage/key_format.h"
#include "storage/replication.h"
#include "storage/rocks_engine.h"

namespace tessera::storage {

namespace {

constexpr std::string_view kCommittedLogIndexKey = "m:committedLogIndex";

RocksEngine& rocks(Engine& engine) { return static_cast<RocksEngine&>(engine); }
const RocksEngine& rocks(const Engine& engine) { return static_cast<const RocksEngine&>(engine); }

std::optional<uint64_t> collIdOf(const rocksdb::Slice& key, char kind) {
    if (key.size() != 9 || key[0] != kind) return std::nullopt;
    return keys::readBigEndian64(std::string_view(key.data() + 1, 8));
}

// Reads the catalog changes of a batch, in order, without applying them.
class CatalogChangeReader final : public rocksdb::WriteBatch::Handler {
  public:
    explicit CatalogChangeReader(uint32_t catalogCf) : _catalogCf(catalogCf) {}

    std::vector<RocksEngine::FollowedChange> changes;
    Status failure = Status::OK();

    rocksdb::Status PutCF(uint32_t cf, const rocksdb::Slice& key,
                          const rocksdb::Slice& value) override {
        if (cf != _catalogCf) return rocksdb::Status::OK();
        if (auto id = collIdOf(key, 'c')) {
            auto decoded = decodeCollectionInfo(bson::BsonView(value.data()));
            if (!decoded.isOK()) {
                failure = decoded.getStatus();
                return rocksdb::Status::Corruption(failure.toString());
            }
            changes.push_back(RocksEngine::FollowedChange::publish(
                std::make_shared<const CollectionInfo>(std::move(decoded.getValue()))));
        } else if (auto id = collIdOf(key, 'n'); id && value.size() == 24) {
            changes.push_back(RocksEngine::FollowedChange::countsOf(*id, value.ToString(), false));
        } else if (key.ToStringView() == keys::kNextCollectionIdKey && value.size() == 8) {
            changes.push_back(
                RocksEngine::FollowedChange::nextId(keys::readBigEndian64(value.ToStringView())));
        }
        return rocksdb::Status::OK();
    }
    rocksdb::Status DeleteCF(uint32_t cf, const rocksdb::Slice& key) override {
        if (cf != _catalogCf) return rocksdb::Status::OK();
        if (auto id = collIdOf(key, 'c')) changes.push_back(RocksEngine::FollowedChange::drop(*id));
        return rocksdb::Status::OK();
    }
    rocksdb::Status SingleDeleteCF(uint32_t cf, const rocksdb::Slice& key) override {
        return DeleteCF(cf, key);
    }
    rocksdb::Status MergeCF(uint32_t cf, const rocksdb::Slice& key,
                            const rocksdb::Slice& value) override {
        if (cf != _catalogCf) return rocksdb::Status::OK();
        if (auto id = collIdOf(key, 'n'); id && value.size() == 24) {
            changes.push_back(RocksEngine::FollowedChange::countsOf(*id, value.ToString(), true));
        }
        return rocksdb::Status::OK();
    }
    rocksdb::Status DeleteRangeCF(uint32_t, const rocksdb::Slice&, const rocksdb::Slice&) override {
        return rocksdb::Status::OK();
    }
    void LogData(const rocksdb::Slice&) override {}

  private:
    uint32_t _catalogCf;
};

}  // namespace

void setCommitLog(Engine& engine, CommitLog* log) { rocks(engine).setCommitLog(log); }

Status applyCommitted(Engine& engine, std::string_view batch, uint64_t logIndex,
                      bool fromElsewhere) {
    return rocks(engine).applyCommitted(batch, logIndex, fromElsewhere);
}

StatusWith<uint64_t> committedLogIndex(const Engine& engine) {
    return rocks(engine).committedLogIndex();
}

Status RocksEngine::statusOf(const rocksdb::Status& s, std::string_view context) {
    if (s.ok()) return Status::OK();
    Status refused = writeFailure(s);
    if (refused.code() != static_cast<int>(ErrorCodes::InternalError)) {
        return Status(refused.code(), std::string(context) + ": " + refused.reason());
    }
    return Status(ErrorCodes::InternalError, std::string(context) + ": " + s.ToString());
}

// write() carries a commit log's refusal as Aborted("tessera <code>", reason).
Status RocksEngine::writeFailure(const rocksdb::Status& written) {
    constexpr std::string_view kPrefix = "tessera ";
    std::string_view state = written.getState() ? std::string_view(written.getState()) : "";
    if (written.IsAborted() && state.substr(0, kPrefix.size()) == kPrefix) {
        // "tessera <code>: <reason>" (rocksdb::Status joins its two messages with ": ").
        std::string_view rest = state.substr(kPrefix.size());
        size_t colon = rest.find(": ");
        int code = 0;
        for (char c : rest.substr(0, colon)) {
            if (c < '0' || c > '9') {
                code = 0;
                break;
            }
            code = code * 10 + (c - '0');
        }
        if (code != 0 && colon != std::string_view::npos) {
            return Status(static_cast<ErrorCodes>(code), std::string(rest.substr(colon + 2)));
        }
    }
    return Status(ErrorCodes::InternalError, "storage write failed: " + written.ToString());
}

Status RocksEngine::applyCommitted(std::string_view data, uint64_t logIndex, bool fromElsewhere) {
    rocksdb::WriteBatch batch{std::string(data)};
    std::vector<FollowedChange> changes;
    if (fromElsewhere) {
        CatalogChangeReader reader(_catalog->GetID());
        rocksdb::Status read = batch.Iterate(&reader);
        if (!reader.failure.isOK()) return reader.failure;
        if (!read.ok()) {
            return Status(ErrorCodes::InternalError,
                          "a committed batch cannot be read: " + read.ToString());
        }
        changes = std::move(reader.changes);
    }
    std::string index;
    keys::appendBigEndian64(index, logIndex);
    rocksdb::Status s = batch.Put(_catalog, kCommittedLogIndexKey, index);
    rocksdb::WriteOptions wo;  // not synced: the group's log is the journal
    if (s.ok()) s = writeDirect(wo, &batch);
    if (!s.ok()) {
        return Status(ErrorCodes::InternalError,
                      "a committed batch cannot be written: " + s.ToString());
    }
    follow(changes);
    return Status::OK();
}

StatusWith<uint64_t> RocksEngine::committedLogIndex() const {
    std::string value;
    rocksdb::Status s = _db->Get(rocksdb::ReadOptions(), _catalog, kCommittedLogIndexKey, &value);
    if (s.IsNotFound()) return uint64_t{0};
    if (!s.ok() || value.size() != 8) {
        return Status(ErrorCodes::InternalError,
                      "cannot read the committed log index: " + s.ToString());
    }
    return keys::readBigEndian64(value);
}

void RocksEngine::follow(const std::vector<FollowedChange>& changes) {
    Timestamp newest;
    {
        MutexLock lock(_catalogMutex);
        for (const FollowedChange& change : changes) {
            switch (change.kind) {
                case FollowedChange::Kind::kPublish: {
                    const CollectionPtr& info = change.info;
                    auto old = _byId.find(info->id);
                    if (old != _byId.end() && old->second->ns() != info->ns()) {
                        _byNs.erase(old->second->ns());  // a rename
                    }
                    _byNs[info->ns()] = info;
                    _byId[info->id] = info;
                    if (!_states.count(info->id))
                        _states[info->id] = std::make_shared<CollectionState>();
                    _nextCollectionId = std::max(_nextCollectionId, info->id + 1);
                    break;
                }
                case FollowedChange::Kind::kDrop: {
                    auto old = _byId.find(change.id);
                    if (old != _byId.end()) {
                        // Only if the namespace still names this id (a rename may have reused it).
                        auto byNs = _byNs.find(old->second->ns());
                        if (byNs != _byNs.end() && byNs->second->id == change.id) _byNs.erase(byNs);
                        _byId.erase(old);
                    }
                    _states.erase(change.id);
                    break;
                }
                case FollowedChange::Kind::kCounts: {
                    std::string_view v(change.value);
                    auto count = static_cast<int64_t>(keys::readBigEndian64(v.substr(0, 8)));
                    auto size = static_cast<int64_t>(keys::readBigEndian64(v.substr(8, 8)));
                    newest = std::max(newest, Timestamp{keys::readBigEndian64(v.substr(16, 8))});
                    auto& state = _states[change.id];
                    if (!state) state = std::make_shared<CollectionState>();
                    if (change.delta) {
                        state->count.fetch_add(count);
                        state->dataSize.fetch_add(size);
                    } else {
                        state->count.store(count);
                        state->dataSize.store(size);
                    }
                    break;
                }
                case FollowedChange::Kind::kNextId:
                    _nextCollectionId = std::max(_nextCollectionId, change.id);
                    break;
            }
        }
    }
    // Timestamps keep increasing past everything applied: this member may lead next. Its newest
    // commit (hello's lastWrite, rs.status() optimes) is the newest it applied.
    if (newest.value != 0) {
        _clock->advanceTo(newest);
        _visibility.observeApplied(newest);
    }
}

}  // namespace tessera::storage
