#include "shard/migration_source.h"

#include <algorithm>

#include "base/mutex.h"
#include "bson/bson_builder.h"
#include "keystring/keystring.h"

namespace tessera::shard {

MigrationSource::MigrationSource(std::string id, std::string ns, std::string toShard,
                                 placement::ShardKeyPattern pattern, ShardKeyRange range)
    : _id(std::move(id)),
      _ns(std::move(ns)),
      _toShard(std::move(toShard)),
      _pattern(std::move(pattern)),
      _range(std::move(range)) {}

void MigrationSource::setSnapshot(std::unique_ptr<storage::ReadSnapshot> snapshot) {
    _snapshot = std::move(snapshot);
}

void MigrationSource::observe(bson::BsonView before, bson::BsonView after) {
    bson::BsonView doc = !after.isEmpty() ? after : before;
    bool inRange = (!before.isEmpty() && _range.containsDoc(_pattern, before)) ||
                   (!after.isEmpty() && _range.containsDoc(_pattern, after));
    if (!inRange) return;
    bson::BsonElement id = doc.getField("_id");
    if (id.eoo()) return;
    std::string key = keystring::encodeValue(id);
    MutexLock lk(_mutex);
    if (_changed.count(key)) return;
    bson::BsonBuilder b;
    b.appendElementAs(id, "_id");
    _changed.emplace(std::move(key), b.obj());
}

std::vector<bson::BsonObj> MigrationSource::takeChanged(size_t max) {
    MutexLock lk(_mutex);
    std::vector<bson::BsonObj> out;
    while (!_changed.empty() && out.size() < max) {
        auto it = _changed.begin();
        out.push_back(std::move(it->second));
        _changed.erase(it);
    }
    return out;
}

void MigrationSource::putBack(const std::vector<bson::BsonObj>& ids) {
    MutexLock lk(_mutex);
    for (const bson::BsonObj& id : ids) {
        _changed.emplace(keystring::encodeValue(id.firstElement()), id);
    }
}

size_t MigrationSource::backlog() const {
    MutexLock lk(_mutex);
    return _changed.size();
}

Status ChangeCapture::add(std::shared_ptr<MigrationSource> source) {
    ExclusiveLock lk(_mutex);
    for (const auto& s : _sources) {
        if (s->ns() == source->ns()) {
            return Status(ErrorCodes::ConflictingOperationInProgress,
                          "a migration of " + source->ns() + " out of this shard (" + s->id() +
                              ") is already in progress");
        }
    }
    _sources.push_back(std::move(source));
    _count.store(static_cast<int>(_sources.size()), std::memory_order_seq_cst);
    return Status::OK();
}

void ChangeCapture::remove(const std::string& id) {
    ExclusiveLock lk(_mutex);
    std::erase_if(_sources, [&](const auto& s) { return s->id() == id; });
    _count.store(static_cast<int>(_sources.size()), std::memory_order_seq_cst);
}

std::shared_ptr<MigrationSource> ChangeCapture::get(const std::string& id) const {
    SharedLock lk(_mutex);
    for (const auto& s : _sources) {
        if (s->id() == id) return s;
    }
    return nullptr;
}

std::vector<std::shared_ptr<MigrationSource>> ChangeCapture::list() const {
    SharedLock lk(_mutex);
    return _sources;
}

void ChangeCapture::onWrite(const storage::CollectionInfo& coll, Op, bson::BsonView before,
                            bson::BsonView after,
                            std::vector<std::pair<std::string, std::string>>*) {
    // seq_cst pairs with add(): a write whose commit timestamp was taken after the source's
    // snapshot timestamp sees the source here.
    if (_count.load(std::memory_order_seq_cst) == 0) return;
    SharedLock lk(_mutex);
    for (const auto& s : _sources) {
        if (s->ns().size() == coll.db.size() + 1 + coll.name.size() && s->ns() == coll.ns()) {
            s->observe(before, after);
        }
    }
}

}  // namespace tessera::shard
