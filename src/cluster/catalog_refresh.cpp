#include "cluster/catalog_refresh.h"

#include "bson/bson_builder.h"
#include "cluster/catalog_cache.h"

namespace tessera::cluster {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonType;
using bson::BsonView;
using placement::ChunkVersion;
using placement::RoutingTable;

namespace {

Status badDoc(std::string_view what, BsonView doc) {
    return Status(ErrorCodes::FailedToParse, std::string("malformed config.") + std::string(what) +
                                                 " document: " + doc.toJson());
}

std::string_view uuidBytes(const placement::Uuid& uuid) {
    return {reinterpret_cast<const char*>(uuid.data()), uuid.size()};
}

}  // namespace

StatusWith<CollectionDocInfo> parseCollectionDoc(BsonView doc) {
    CollectionDocInfo info;
    auto id = doc["_id"];
    auto epoch = doc["lastmodEpoch"];
    auto ts = doc["timestamp"];
    auto uuid = doc["uuid"];
    auto key = doc["key"];
    if (id.type() != BsonType::String || epoch.type() != BsonType::ObjectId ||
        ts.type() != BsonType::Timestamp || uuid.type() != BsonType::BinData || !key.isObject()) {
        return badDoc("collections", doc);
    }
    auto bin = uuid.binaryValue();
    if (bin.data.size() != info.uuid.size()) return badDoc("collections", doc);
    std::copy(bin.data.begin(), bin.data.end(), info.uuid.begin());
    info.ns = std::string(id.stringValue());
    info.gen = {epoch.oidValue(), Timestamp{ts.timestampValue()}};
    info.key = key.objValue().copy();
    info.unique = doc["unique"].trueValue();
    return info;
}

StatusWith<RefreshPlan> planCollectionRefresh(const RoutingTable* cached,
                                              const std::optional<BsonObj>& collDoc,
                                              bool forceFull) {
    RefreshPlan plan;
    if (!collDoc) return plan;  // unsharded
    ASSIGN_OR_RETURN(auto coll, parseCollectionDoc(*collDoc));
    if (cached && !forceFull && cached->generation() == coll.gen) {
        plan.kind = RefreshKind::kIncremental;
        plan.since = cached->collectionVersion();
    } else {
        plan.kind = RefreshKind::kFull;
    }
    plan.coll = std::move(coll);
    return plan;
}

BsonObj chunksFilter(const RefreshPlan& plan) {
    BsonBuilder b;
    if (plan.coll) b.appendBinary("uuid", 4, uuidBytes(plan.coll->uuid));
    if (plan.kind == RefreshKind::kIncremental) {
        b.startObject("lastmod").appendTimestamp("$gt", plan.since.placement().value).end();
    }
    return b.obj();
}

StatusWith<std::shared_ptr<const RoutingTable>> applyRefresh(
    const std::shared_ptr<const RoutingTable>& cached, const RefreshPlan& plan,
    const std::vector<BsonObj>& chunkDocs) {
    if (plan.kind == RefreshKind::kUnsharded) return std::shared_ptr<const RoutingTable>();
    invariant(plan.coll.has_value());
    std::vector<placement::Chunk> chunks;
    chunks.reserve(chunkDocs.size());
    for (const auto& doc : chunkDocs) {
        ASSIGN_OR_RETURN(auto chunk, parseChunkDoc(doc, plan.coll->gen));
        chunks.push_back(std::move(chunk));
    }
    if (plan.kind == RefreshKind::kIncremental) {
        invariant(cached != nullptr);
        if (chunks.empty()) return cached;
        return cached->makeUpdated(std::move(chunks));
    }
    if (chunks.empty()) {
        // The collection entry is written before its chunks (shardCollection in progress), or
        // the collection was dropped between the two reads: read again.
        return Status(ErrorCodes::ConflictingOperationInProgress,
                      "no chunks yet for sharded collection " + plan.coll->ns);
    }
    ASSIGN_OR_RETURN(auto pattern, placement::ShardKeyPattern::parse(plan.coll->key));
    return RoutingTable::make(plan.coll->ns, std::move(pattern), plan.coll->gen, std::move(chunks),
                              plan.coll->unique);
}

bool needsShardVersionRefresh(const RoutingTable* cached,
                              const std::optional<ChunkVersion>& wanted) {
    if (!cached || !wanted || !wanted->isSet()) return true;
    const ChunkVersion& have = cached->collectionVersion();
    if (!have.isSameGeneration(*wanted)) return true;
    return have.isOlderThan(*wanted);
}

bool needsDatabaseVersionRefresh(const std::optional<placement::DatabaseVersion>& cached,
                                 const std::optional<placement::DatabaseVersion>& wanted) {
    if (!cached || !wanted) return true;
    if (!cached->isSameDatabase(*wanted)) return true;
    return cached->lastMod() < wanted->lastMod();
}

namespace {

void appendPrimaryPreferred(BsonBuilder& b) {
    b.startObject("$readPreference").append("mode", "primaryPreferred").end();
}

}  // namespace

BsonObj findCommand(std::string_view coll, BsonView filter, BsonView sort, bool primaryPreferred) {
    BsonBuilder find;
    find.append("find", coll).append("filter", filter);
    if (!sort.isEmpty()) find.append("sort", sort);
    find.appendInt32("batchSize", 100000);
    if (primaryPreferred) appendPrimaryPreferred(find);
    return find.obj();
}

StatusWith<std::vector<BsonObj>> findAllFrom(net::RemoteClient& client, const std::string& host,
                                             std::string_view db, std::string_view coll,
                                             BsonObj reply, bool primaryPreferred) {
    std::vector<BsonObj> out;
    for (;;) {
        TRY_STATUS(net::replyStatus(reply));
        if (!reply["cursor"].isObject()) {
            return Status(ErrorCodes::FailedToParse,
                          "find reply without cursor: " + reply.toJson());
        }
        BsonView cursor = reply["cursor"].objValue();
        auto batch = cursor["firstBatch"];
        if (batch.eoo()) batch = cursor["nextBatch"];
        if (batch.isArray()) {
            for (auto e : batch.objValue()) out.push_back(e.objValue().copy());
        }
        int64_t id = cursor["id"].numberLong();
        if (id == 0) break;
        BsonBuilder more;
        more.appendInt64("getMore", id).append("collection", coll).appendInt32("batchSize", 100000);
        if (primaryPreferred) appendPrimaryPreferred(more);
        ASSIGN_OR_RETURN(reply, client.runCommand(host, db, more.obj()));
    }
    return out;
}

StatusWith<std::vector<BsonObj>> findAll(net::RemoteClient& client, const std::string& host,
                                         std::string_view db, std::string_view coll,
                                         BsonView filter, BsonView sort, bool primaryPreferred) {
    std::string servedBy;  // the member holding the cursor, for its getMores
    ASSIGN_OR_RETURN(BsonObj reply,
                     client.runCommand(host, db, findCommand(coll, filter, sort, primaryPreferred),
                                       {}, &servedBy));
    return findAllFrom(client, servedBy, db, coll, std::move(reply), primaryPreferred);
}

}  // namespace tessera::cluster
