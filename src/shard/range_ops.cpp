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
    // Collect first (a snapshot), then remove in small writer batches so that the collection's
    // write lock is not held for the whole scan.
    std::vector<std::string> keys;
    {
        auto snapshot = engine.snapshot();
        bool contiguous = isClusteredBy(*coll, pattern);
        auto cursor =
            contiguous ? snapshot->scanRange(*coll, recordKeyRange(range)) : snapshot->scan(*coll);
        while (auto rec = cursor->next()) {
            if (!contiguous && !range.containsDoc(pattern, rec->doc)) continue;
            if (filter && filter->owns(rec->doc)) continue;
            keys.push_back(std::move(rec->recordKey));
        }
    }
    int64_t deleted = 0;
    constexpr size_t kBatch = 2048;
    auto removeBatch = [&](size_t i, const storage::WriteUnit* unit) -> Status {
        ASSIGN_OR_RETURN(auto writer, engine.writer(coll, unit));
        // The versions removed are the ones stored now, still unowned (first writer wins: a
        // record changed in between is skipped by removeBatch and looked at again).
        std::vector<size_t> todo;
        for (size_t j = i; j < std::min(keys.size(), i + kBatch); ++j) todo.push_back(j);
        for (int attempt = 0; !todo.empty(); ++attempt) {
            if (attempt > 100) {
                return Status(ErrorCodes::WriteConflict, "range deletion kept conflicting");
            }
            std::vector<storage::Record> records;
            std::vector<size_t> of;
            for (size_t j : todo) {
                std::optional<bson::BsonObj> doc = writer->current(keys[j]);
                if (!doc || (filter && filter->owns(*doc))) continue;
                records.push_back({keys[j], std::move(*doc)});
                of.push_back(j);
            }
            int64_t skipped = 0;
            ASSIGN_OR_RETURN(int64_t n,
                             writer->removeBatch(records, storage::WriteOptions{}, &skipped));
            deleted += n;
            todo.clear();
            if (skipped > 0) {
                for (size_t k = 0; k < records.size(); ++k) {
                    if (writer->current(keys[of[k]])) todo.push_back(of[k]);
                }
            }
        }
        return Status::OK();
    };
    for (size_t i = 0; i < keys.size(); i += kBatch) {
        if (tracked) {
            TRY_STATUS(tracked->write(
                [&](const storage::WriteUnit& unit) { return removeBatch(i, &unit); }));
        } else {
            TRY_STATUS(removeBatch(i, nullptr));
        }
    }
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
