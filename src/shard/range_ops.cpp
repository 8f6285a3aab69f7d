#include "shard/range_ops.h"

#include "base/log.h"
#include "bson/bson_builder.h"
#include "bson/compare.h"
#include "keystring/keystring.h"
#include "shard/tracked_ranges.h"
#include "storage/cluster_key.h"
#include "storage/collection_writer.h"

namespace tessera::shard {

StatusWith<ShardKeyRange> ShardKeyRange::make(const placement::ShardKeyPattern& pattern,
                                              bson::BsonView min, bson::BsonView max) {
    TRY_STATUS(pattern.validateKey(min));
    TRY_STATUS(pattern.validateKey(max));
    ShardKeyRange r;
    r._min = min.copy();
    r._max = max.copy();
    r._encMin = pattern.encodeKey(min);
    r._encMax = pattern.encodeKey(max);
    if (!(r._encMin < r._encMax)) {
        return Status(ErrorCodes::BadValue,
                      "range min " + min.toJson() + " must be less than max " + max.toJson());
    }
    r._maxIsGlobal = r._encMax == pattern.encodeKey(pattern.globalMax());
    return r;
}

bool ShardKeyRange::containsEncoded(const std::string& key) const {
    if (key < _encMin) return false;
    return key < _encMax || (_maxIsGlobal && key == _encMax);
}

bool ShardKeyRange::containsDoc(const placement::ShardKeyPattern& pattern,
                                bson::BsonView doc) const {
    auto key = pattern.extractShardKeyFromDoc(doc);
    if (!key.isOK()) return false;
    return containsEncoded(pattern.encodeKey(key.getValue()));
}

bool isClusteredBy(const storage::CollectionInfo& coll, const placement::ShardKeyPattern& pattern) {
    auto normalized = storage::normalizeClusterKey(pattern.toBson());
    return normalized.isOK() && bson::compareObjects(normalized.getValue(), coll.clusterKey) == 0;
}

storage::KeyRange recordKeyRange(const ShardKeyRange& range) {
    storage::KeyRange keys;
    keys.low = range.encodedMin();  // inclusive: every record key starting with it
    if (!range.maxIsGlobal()) {     // the global max is inclusive: to the end
        keys.high = range.encodedMax();
        keys.highInclusive = false;
    }
    return keys;
}

namespace {

RangePage readClusteredPage(storage::ReadSnapshot& snapshot, const storage::CollectionInfo& coll,
                            const ShardKeyRange& range, std::string_view afterKey,
                            int64_t batchBytes) {
    RangePage page;
    storage::KeyRange keys = recordKeyRange(range);
    if (!afterKey.empty() && afterKey >= keys.low) {
        keys.low = std::string(afterKey);
        keys.lowInclusive = false;
    }
    auto cursor = snapshot.scanRange(coll, keys);
    std::optional<storage::Record> last;
    bool more = false;
    while (auto rec = cursor->next()) {
        if (page.bytes >= batchBytes) {
            more = true;
            break;
        }
        page.bytes += static_cast<int64_t>(rec->doc.size());
        page.docs.push_back(rec->doc);
        last = std::move(rec);
    }
    if (last) {
        bson::BsonBuilder b;
        b.appendElementAs(last->doc.view()["_id"], "_id");
        page.lastId = b.obj();
        page.lastKey = std::move(last->recordKey);
    }
    page.done = !more;
    return page;
}

}  // namespace

RangePage readRangePage(storage::ReadSnapshot& snapshot, const storage::CollectionInfo& coll,
                        const placement::ShardKeyPattern& pattern, const ShardKeyRange& range,
                        const bson::BsonElement& afterId, std::string_view afterKey,
                        int64_t batchBytes) {
    // A caller that pages by _id (afterId without afterKey) keeps paging by _id.
    if (isClusteredBy(coll, pattern) && (afterId.eoo() || !afterKey.empty())) {
        return readClusteredPage(snapshot, coll, range, afterKey, batchBytes);
    }
    RangePage page;
    // The _id_ index gives _id order in every layout: a page starts right after the previous
    // page's last _id instead of rescanning the collection from its start (which made a
    // migration quadratic in the collection size).
    storage::KeyRange keys;
    if (!afterId.eoo()) {
        keys.low = keystring::encodeValue(afterId);
        keys.lowInclusive = false;
    }
    auto cursor = snapshot.indexScan(coll, coll.indexes.front(), keys);
    std::optional<bson::BsonObj> last;
    bool more = false;
    while (auto entry = cursor->next()) {
        if (page.bytes >= batchBytes) {
            more = true;
            break;
        }
        auto doc = snapshot.findByRecordKey(coll, entry->recordKey);
        if (!doc) continue;
        if (range.containsDoc(pattern, *doc)) {
            page.bytes += static_cast<int64_t>(doc->size());
            page.docs.push_back(*doc);
        }
        last = std::move(doc);
    }
    if (last) {
        bson::BsonBuilder b;
        b.appendElementAs(last->view()["_id"], "_id");
        page.lastId = b.obj();
    }
    page.done = !more;
    return page;
}

StatusWith<int64_t> deleteUnownedInRange(storage::Engine& engine, std::string_view ns,
                                         const placement::ShardKeyPattern& pattern,
                                         const ShardKeyRange& range,
                                         const command::OwnershipFilter* filter,
                                         TrackedRanges* tracked) {
    storage::CollectionPtr coll = engine.getCollection(ns);
    if (!coll) return int64_t{0};
    // The range read at one snapshot, removed in batches of 2048 (each one storage batch, with
    // a writer of its own, so DDL is not held back for the whole range): the version removed
    // is the one read, still unowned — removeBatch skips a record changed since, which is read
    // again and decided again.
    constexpr size_t kBatch = 2048;
    int64_t deleted = 0;
    auto removeBatch = [&](std::vector<storage::Record> records,
                           const storage::WriteUnit* unit) -> Status {
        ASSIGN_OR_RETURN(auto writer, engine.writer(coll, unit));
        for (int attempt = 0; !records.empty(); ++attempt) {
            if (attempt > 100) {
                return Status(ErrorCodes::WriteConflict, "range deletion kept conflicting");
            }
            int64_t skipped = 0;
            ASSIGN_OR_RETURN(int64_t n,
                             writer->removeBatch(records, storage::WriteOptions{}, &skipped));
            deleted += n;
            std::vector<storage::Record> again;
            if (skipped > 0) {
                for (storage::Record& rec : records) {
                    std::optional<bson::BsonObj> now = writer->current(rec.recordKey);
                    if (!now || (filter && filter->owns(*now))) {
                        continue;  // removed now, or owned: not ours to delete
                    }
                    again.push_back({std::move(rec.recordKey), std::move(*now)});
                }
            }
            records = std::move(again);
        }
        return Status::OK();
    };
    auto flush = [&](std::vector<storage::Record> records) -> Status {
        if (records.empty()) return Status::OK();
        if (!tracked) return removeBatch(std::move(records), nullptr);
        return tracked->write(
            [&](const storage::WriteUnit& unit) { return removeBatch(std::move(records), &unit); });
    };
    auto snapshot = engine.snapshot();
    bool contiguous = isClusteredBy(*coll, pattern);
    auto cursor =
        contiguous ? snapshot->scanRange(*coll, recordKeyRange(range)) : snapshot->scan(*coll);
    std::vector<storage::Record> batch;
    while (auto rec = cursor->next()) {
        if (!contiguous && !range.containsDoc(pattern, rec->doc)) continue;
        if (filter && filter->owns(rec->doc)) continue;
        batch.push_back(std::move(*rec));
        if (batch.size() == kBatch) {
            TRY_STATUS(flush(std::move(batch)));
            batch.clear();
        }
    }
    TRY_STATUS(flush(std::move(batch)));
    return deleted;
}

StatusWith<int64_t> insertDocuments(storage::Engine& engine, std::string_view ns,
                                    const std::vector<bson::BsonObj>& docs, int64_t* skipped,
                                    const storage::WriteUnit* unit) {
    return insertDocuments(engine, ns, std::vector<bson::BsonView>(docs.begin(), docs.end()),
                           skipped, unit);
}

StatusWith<int64_t> insertDocuments(storage::Engine& engine, std::string_view ns,
                                    const std::vector<bson::BsonView>& docs, int64_t* skipped,
                                    const storage::WriteUnit* unit) {
    storage::CollectionPtr coll = engine.getCollection(ns);
    if (!coll) {
        return Status(ErrorCodes::NamespaceNotFound,
                      "collection " + std::string(ns) + " does not exist");
    }
    if (docs.empty()) return int64_t{0};
    ASSIGN_OR_RETURN(auto writer, engine.writer(coll, unit));
    int64_t skippedHere = 0;
    ASSIGN_OR_RETURN(int64_t inserted,
                     writer->insertBatch(docs, storage::WriteOptions{}, &skippedHere));
    if (skippedHere > 0) {
        log::warning("SHARDING", 22020, "Skipped received documents whose _id exists already",
                     "{\"ns\":\"" + log::jsonEscape(ns) +
                         "\",\"skipped\":" + std::to_string(skippedHere) + "}");
    }
    if (skipped) *skipped += skippedHere;
    return inserted;
}

}  // namespace tessera::shard
