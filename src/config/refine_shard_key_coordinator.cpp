// The refineCollectionShardKey coordinator (README.md "Refining a shard key"): the new chunks
// under a new uuid (invisible), the one config.collections document that switches readers to
// them, then the old chunks deleted and the zones' bounds extended. Resumed, it finishes when
// config.collections names the new uuid and is undone otherwise.
#include "config/refine_shard_key_coordinator.h"

#include "base/log.h"
#include "bson/bson_builder.h"
#include "config/config_server_impl.h"

namespace tessera::config {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonView;

TESSERA_FAIL_POINT_DEFINE(refineShardKeyHangAfterNewChunks);
TESSERA_FAIL_POINT_DEFINE(refineShardKeyHangAfterCommit);

namespace {

BsonObj uuidQuery(const placement::Uuid& uuid) {
    BsonBuilder q;
    appendUuid(q, "uuid", uuid);
    return q.obj();
}

}  // namespace

RefineShardKeyCoordinator::RefineShardKeyCoordinator(ConfigServerImpl& config, BsonObj doc,
                                                     std::optional<Live> live)
    : Coordinator(config),
      _doc(std::move(doc)),
      _id(_doc["_id"].stringValue()),
      _ns(_doc["ns"].stringValue()),
      _live(std::move(live)) {}

Status RefineShardKeyCoordinator::run() {
    invariant(_live.has_value());
    const std::string& ns = _ns;
    const placement::ShardKeyPattern& newPattern = _live->newPattern;
    const CollectionRecord& next = _live->next;
    for (const ChunkRecord& c : _live->oldChunks) {
        ChunkRecord r = c;
        r.id = bson::ObjectId::generate();
        ASSIGN_OR_RETURN(r.min, newPattern.extendRangeBound(c.min));
        ASSIGN_OR_RETURN(r.max, newPattern.extendRangeBound(c.max));
        r.jumbo = false;
        TRY_STATUS(_config.writeChunk(r, next.uuid, /*insert=*/true));
    }
    _config.pauseWhileSet(refineShardKeyHangAfterNewChunks);
    _config.coordinatorStep(kType);
    ASSIGN_OR_RETURN(auto current, _config.local().findOne("collections", idQuery(ns)));
    if (!current) return Status(ErrorCodes::NamespaceNotSharded, ns + " is not sharded");
    // The new identity and key; every other field (noBalance, per-collection balancer
    // settings) as it was.
    const BsonObj made = makeCollectionDoc(next);
    BsonBuilder entry;
    for (const bson::BsonElement& e : made) {
        if (e.fieldName() != "noBalance") entry.appendElement(e);
    }
    for (const bson::BsonElement& e : *current) {
        if (!made.hasField(e.fieldName()) || e.fieldName() == "noBalance") {
            entry.appendElement(e);
        }
    }
    TRY_STATUS(_config.local().update("collections", idQuery(ns), entry.obj()).getStatus());
    _config.pauseWhileSet(refineShardKeyHangAfterCommit);
    ASSIGN_OR_RETURN(CoordinatorOutcome outcome, finish());
    if (outcome != CoordinatorOutcome::kFinished) {
        return Status(ErrorCodes::ConflictingOperationInProgress,
                      "refineCollectionShardKey of " + ns + " did not commit");
    }
    return Status::OK();
}

StatusWith<CoordinatorOutcome> RefineShardKeyCoordinator::recover() { return finish(); }

StatusWith<CoordinatorOutcome> RefineShardKeyCoordinator::finish() {
    const BsonObj& state = _doc;
    _config.coordinatorStep(kType);
    std::string ns(state["ns"].stringValue());
    ASSIGN_OR_RETURN(placement::Uuid oldUuid, uuidFromElement(state["oldUuid"]));
    ASSIGN_OR_RETURN(placement::Uuid newUuid, uuidFromElement(state["newUuid"]));
    ASSIGN_OR_RETURN(auto entry, _config.local().findOne("collections", idQuery(ns)));
    bool committed = false;
    if (entry) {
        auto uuid = uuidFromElement((*entry)["uuid"]);
        committed = uuid.isOK() && uuid.getValue() == newUuid;
    }
    if (!committed) {
        // Interrupted before the switch: the new chunks were never visible.
        TRY_STATUS(_config.local().remove("chunks", uuidQuery(newUuid)).getStatus());
        TRY_STATUS(forget());
        return CoordinatorOutcome::kAborted;
    }
    TRY_STATUS(_config.local().remove("chunks", uuidQuery(oldUuid)).getStatus());
    // Zone ranges are bounds of the key too: extended the same way (idempotent: a full bound is
    // kept as it is).
    ASSIGN_OR_RETURN(placement::ShardKeyPattern pattern,
                     placement::ShardKeyPattern::parse((*entry)["key"].objValue()));
    BsonBuilder tq;
    tq.appendString("ns", ns);
    ASSIGN_OR_RETURN(std::vector<BsonObj> tags, _config.local().find("tags", tq.obj()));
    for (const BsonObj& t : tags) {
        auto min = pattern.extendRangeBound(t["min"].objValue());
        auto max = pattern.extendRangeBound(t["max"].objValue());
        if (!min.isOK() || !max.isOK()) {
            log::warning("SHARDING", 9151, "A zone range is not a prefix of the refined key; left",
                         "{\"ns\":\"" + log::jsonEscape(ns) + "\",\"range\":" + t.toJson() + "}");
            continue;
        }
        BsonBuilder set;
        set.startObject("$set")
            .appendObject("min", min.getValue())
            .appendObject("max", max.getValue())
            .end();
        BsonBuilder id;
        id.appendElementAs(t["_id"], "_id");  // an ObjectId (updateZoneKeyRange), or any value
        TRY_STATUS(_config.local().update("tags", id.obj(), set.obj(), false).getStatus());
    }
    TRY_STATUS(forget());
    return CoordinatorOutcome::kFinished;
}

void RefineShardKeyCoordinator::abandon(const BestEffort& step) {
    const BsonObj& doc = _doc;
    // No shard holds anything for a refine: the catalog names one uuid, whose chunks are the
    // placement; the other uuid's chunks are removed (invisible either way), the zones keep
    // their bounds (the balancer extends a prefix bound when it reads it).
    step("remove the chunks of the uuid the catalog does not name", [&]() -> Status {
        ASSIGN_OR_RETURN(placement::Uuid oldUuid, uuidFromElement(doc["oldUuid"]));
        ASSIGN_OR_RETURN(placement::Uuid newUuid, uuidFromElement(doc["newUuid"]));
        ASSIGN_OR_RETURN(auto entry,
                         _config.local().findOne("collections", idQuery(doc["ns"].stringValue())));
        if (!entry) return Status::OK();
        ASSIGN_OR_RETURN(placement::Uuid current, uuidFromElement((*entry)["uuid"]));
        if (current == newUuid)
            return _config.local().remove("chunks", uuidQuery(oldUuid)).getStatus();
        if (current == oldUuid)
            return _config.local().remove("chunks", uuidQuery(newUuid)).getStatus();
        return Status::OK();
    });
}

}  // namespace tessera::config
