// The range migration commands of a shard (src/cluster/README.md "Migration"): the donor serves
// its range (_shardsvrReadRange), the recipient pulls it (_shardsvrReceiveRange), and either
// side deletes what it does not own afterwards (_shardsvrDeleteRange).

#include <set>

#include "base/log.h"
#include "command/registry.h"
#include "net/remote_client.h"
#include "shard/command_util.h"
#include "shard/direct_client.h"
#include "shard/range_ops.h"
#include "storage/engine.h"

namespace tessera::shard {
namespace {

using command::CommandRequest;
using command::OperationContext;

constexpr int64_t kDefaultBatchBytes = 4 << 20;
constexpr std::chrono::minutes kCloneRequestTimeout{5};

class ShardCommand : public command::Command {
  public:
    bool adminOnly() const override { return true; }
};

struct RangeArgs {
    std::string ns;
    std::string db, coll;
    std::shared_ptr<const placement::RoutingTable> table;
    ShardKeyRange range;
};

// ns (the first element), min, max; the collection must be sharded in this shard's placement
// (refreshed first when `refresh`).
StatusWith<RangeArgs> parseRangeArgs(OperationContext& opCtx, const CommandRequest& request,
                                     std::string_view command, bool refresh) {
    ASSIGN_OR_RETURN(auto md, shardMetadataOf(opCtx));
    bson::BsonElement target = request.firstElement();
    if (target.type() != bson::BsonType::String) {
        return Status(ErrorCodes::TypeMismatch, std::string(command) + " takes a namespace");
    }
    RangeArgs args{std::string(target.stringValue()), "", "", nullptr, {}};
    auto dot = args.ns.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == args.ns.size()) {
        return Status(ErrorCodes::InvalidNamespace, "Invalid namespace: " + args.ns);
    }
    args.db = args.ns.substr(0, dot);
    args.coll = args.ns.substr(dot + 1);
    if (refresh) TRY_STATUS(md->refreshCollection(args.ns));
    ASSIGN_OR_RETURN(args.table, md->collection(args.ns));
    if (!args.table) {
        return Status(ErrorCodes::NamespaceNotSharded, args.ns + " is not sharded");
    }
    ASSIGN_OR_RETURN(bson::BsonView min, objectArg(request.body, "min", command));
    ASSIGN_OR_RETURN(bson::BsonView max, objectArg(request.body, "max", command));
    ASSIGN_OR_RETURN(args.range, ShardKeyRange::make(args.table->shardKeyPattern(), min, max));
    return args;
}

// {_shardsvrReadRange: ns, min, max, afterId?, afterKey?, batchBytes?}
//   → {docs, lastId, lastKey?, done}.
// lastKey (BinData 0: the last record key) is present when the collection is clustered by the
// shard key; the next page passes it back as afterKey and starts with one seek.
class ReadRangeCommand final : public ShardCommand {
  public:
    std::string_view name() const override { return "_shardsvrReadRange"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(RangeArgs args, parseRangeArgs(opCtx, request, name(), false));
        int64_t batchBytes = kDefaultBatchBytes;
        if (bson::BsonElement b = request.body["batchBytes"]; !b.eoo()) {
            if (!b.isNumber() || b.numberLong() <= 0) {
                return Status(ErrorCodes::BadValue, "batchBytes must be a positive number");
            }
            batchBytes = std::min<int64_t>(b.numberLong(), 8 << 20);
        }
        std::string_view afterKey;
        if (bson::BsonElement k = request.body["afterKey"]; !k.eoo()) {
            if (k.type() != bson::BsonType::BinData) {
                return Status(ErrorCodes::TypeMismatch, "afterKey must be BinData");
            }
            afterKey = k.binaryValue().data;
        }
        storage::Engine& engine = *opCtx.service->engine;
        auto snapshot = engine.snapshot();
        storage::CollectionPtr coll = engine.getCollection(args.ns);
        RangePage page;
        if (coll) {
            page = readRangePage(*snapshot, *coll, args.table->shardKeyPattern(), args.range,
                                 request.body["afterId"], afterKey, batchBytes);
        } else {
            page.done = true;
        }
        bson::BsonArrayBuilder docs;
        for (const bson::BsonObj& d : page.docs) docs.append(d);
        reply.appendArray("docs", docs.arr());
        if (page.lastId) {
            reply.appendElementAs(page.lastId->firstElement(), "lastId");
        } else if (bson::BsonElement after = request.body["afterId"]; !after.eoo()) {
            reply.appendElementAs(after, "lastId");
        } else {
            reply.appendNull("lastId");
        }
        if (page.lastKey) {
            reply.appendBinary("lastKey", 0, *page.lastKey);
        } else if (!afterKey.empty()) {
            reply.appendBinary("lastKey", 0, afterKey);
        }
        reply.append("done", page.done);
        return Status::OK();
    }
};

// {_shardsvrReceiveRange: ns, min, max, fromShard, fromHost} → {docsCloned, bytesCloned}.
class ReceiveRangeCommand final : public ShardCommand {
  public:
    std::string_view name() const override { return "_shardsvrReceiveRange"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(ShardingState * state, shardingStateOf(opCtx));
        ASSIGN_OR_RETURN(RangeArgs args, parseRangeArgs(opCtx, request, name(), true));
        ASSIGN_OR_RETURN(std::string fromHost, stringArg(request.body, "fromHost", name()));
        command::ServiceContext& service = *opCtx.service;
        net::RemoteClient& client = state->remoteClient();
        TRY_STATUS(createCollectionLike(service, client, fromHost, args.db, args.coll));
        // Stored like the donor's: clustered by the shard key (a no-op when it is already).
        TRY_STATUS(
            service.engine->clusterCollection(args.ns, args.table->shardKeyPattern().toBson()));

        // Leftovers of an earlier attempt in this range are orphans: clear them first.
        // (Ownership by the same table the range was validated against, never "unknown".)
        ASSIGN_OR_RETURN(auto md, shardMetadataOf(opCtx));
        ChunkOwnershipFilter filter(args.table, md->shardId());
        ASSIGN_OR_RETURN(int64_t cleared,
                         deleteUnownedInRange(*service.engine, args.ns,
                                              args.table->shardKeyPattern(), args.range, &filter));
        (void)cleared;

        int64_t docsCloned = 0, bytesCloned = 0, skipped = 0;
        // {afterId: <value>, afterKey?: <BinData>} once a page returned a lastId (lastKey).
        bson::BsonObj after;
        for (;;) {
            TRY_STATUS(opCtx.checkForInterrupt());
            bson::BsonBuilder rr;
            rr.append("_shardsvrReadRange", args.ns);
            rr.append("min", args.range.min());
            rr.append("max", args.range.max());
            for (bson::BsonElement e : after.view()) rr.appendElement(e);
            ASSIGN_OR_RETURN(bson::BsonObj page,
                             client.runCommand(fromHost, "admin", rr.obj(), kCloneRequestTimeout));
            TRY_STATUS(net::replyStatus(page));
            std::vector<bson::BsonObj> docs;
            if (page["docs"].type() == bson::BsonType::Array) {
                for (bson::BsonElement d : page["docs"].objValue()) {
                    if (!d.isObject()) continue;
                    docs.push_back(d.objValue().copy());
                    bytesCloned += static_cast<int64_t>(docs.back().size());
                }
            }
            ASSIGN_OR_RETURN(int64_t inserted,
                             insertDocuments(*service.engine, args.ns, docs, &skipped));
            docsCloned += inserted;
            if (page["done"].trueValue()) break;
            bson::BsonElement lastId = page["lastId"];
            if (lastId.eoo() || lastId.isNull()) break;
            bson::BsonBuilder a;
            a.appendElementAs(lastId, "afterId");
            if (bson::BsonElement lastKey = page["lastKey"];
                lastKey.type() == bson::BsonType::BinData) {
                a.appendElementAs(lastKey, "afterKey");
            }
            after = a.obj();
        }
        reply.appendNumber("docsCloned", docsCloned);
        reply.appendNumber("bytesCloned", bytesCloned);
        return Status::OK();
    }
};

// {_shardsvrDeleteRange: ns, min, max} → {deleted}: the stored documents of the range this shard
// does not own, by its freshly reloaded placement.
class DeleteRangeCommand final : public ShardCommand {
  public:
    std::string_view name() const override { return "_shardsvrDeleteRange"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(RangeArgs args, parseRangeArgs(opCtx, request, name(), true));
        ASSIGN_OR_RETURN(auto md, shardMetadataOf(opCtx));
        ChunkOwnershipFilter filter(args.table, md->shardId());
        ASSIGN_OR_RETURN(int64_t deleted,
                         deleteUnownedInRange(*opCtx.service->engine, args.ns,
                                              args.table->shardKeyPattern(), args.range, &filter));
        reply.appendNumber("deleted", deleted);
        return Status::OK();
    }
};

}  // namespace

namespace {

// The option fields collMod can change on an existing collection.
constexpr std::string_view kModifiableOptions[] = {"validator", "validationLevel",
                                                   "validationAction"};

bool sameElement(bson::BsonElement a, bson::BsonElement b) {
    if (a.eoo() || b.eoo()) return a.eoo() == b.eoo();
    bson::BsonBuilder x, y;
    x.appendElementAs(a, "v");
    y.appendElementAs(b, "v");
    return x.obj().binaryEqual(y.obj());
}

// Makes the existing local collection's validator and validation settings those of the donor.
Status alignOptions(command::ServiceContext& service, const std::string& db,
                    const std::string& coll, bson::BsonView donorOptions,
                    bson::BsonView localOptions) {
    if (!sameElement(donorOptions["collation"], localOptions["collation"])) {
        return Status(ErrorCodes::InvalidOptions,
                      "this shard holds " + db + "." + coll +
                          " with another default collation than the donor's; it is a leftover of "
                          "an older collection of that name: drop it on this shard, then retry");
    }
    bson::BsonBuilder mod;
    mod.append("collMod", coll);
    bool differs = false;
    for (std::string_view field : kModifiableOptions) {
        bson::BsonElement want = donorOptions[field];
        if (sameElement(want, localOptions[field])) continue;
        differs = true;
        if (!want.eoo()) {
            mod.appendElement(want);
        } else if (field == "validator") {
            mod.startObject("validator").end();  // none
        } else if (field == "validationLevel") {
            mod.append("validationLevel", "strict");
        } else {
            mod.append("validationAction", "error");
        }
    }
    if (!differs) return Status::OK();
    return runLocalCommand(service, db, mod.obj()).getStatus();
}

}  // namespace

// Makes the local `ns` like the donor's: created with the donor's options if missing, else its
// validator and validation settings aligned (a shard that held the collection before may have
// missed a collMod); the donor's indexes created, and indexes the donor no longer has dropped,
// so that every shard holding the collection's data enforces exactly the donor's indexes.
Status createCollectionLike(command::ServiceContext& service, net::RemoteClient& client,
                            const std::string& donorHost, const std::string& db,
                            const std::string& coll) {
    bson::BsonBuilder lc;
    lc.append("listCollections", 1);
    lc.startObject("filter").append("name", coll).end();
    ASSIGN_OR_RETURN(bson::BsonObj lcReply, client.runCommand(donorHost, db, lc.obj()));
    TRY_STATUS(net::replyStatus(lcReply));
    std::vector<bson::BsonObj> colls = cursorBatch(lcReply, "firstBatch");
    bson::BsonView options;
    if (!colls.empty() && colls[0]["options"].isObject()) options = colls[0]["options"].objValue();

    const std::string ns = db + "." + coll;
    if (storage::CollectionPtr local = service.engine->getCollection(ns)) {
        TRY_STATUS(alignOptions(service, db, coll, options, local->options));
    } else {
        bson::BsonBuilder create;
        create.append("create", coll);
        for (bson::BsonElement e : options) {
            if (e.fieldName() != "uuid") create.appendElement(e);
        }
        auto created = runLocalCommand(service, db, create.obj());
        if (!created.isOK() && !created.getStatus().is(ErrorCodes::NamespaceExists)) {
            return created.getStatus();
        }
    }
    bson::BsonBuilder li;
    li.append("listIndexes", coll);
    ASSIGN_OR_RETURN(bson::BsonObj liReply, client.runCommand(donorHost, db, li.obj()));
    TRY_STATUS(net::replyStatus(liReply));
    bson::BsonArrayBuilder specs;
    std::set<std::string, std::less<>> donorNames;
    for (const bson::BsonObj& spec : cursorBatch(liReply, "firstBatch")) {
        if (spec["name"].type() != bson::BsonType::String) continue;
        donorNames.emplace(spec["name"].stringValue());
        if (spec["name"].stringValue() == "_id_") continue;
        bson::BsonBuilder s;
        for (bson::BsonElement e : spec) {
            if (e.fieldName() != "ns") s.appendElement(e);
        }
        specs.append(s.obj());
    }
    if (storage::CollectionPtr local = service.engine->getCollection(ns)) {
        for (const storage::IndexSpec& index : local->indexes) {
            if (index.isIdIndex() || donorNames.count(index.name)) continue;
            bson::BsonBuilder drop;
            drop.append("dropIndexes", coll).append("index", index.name);
            TRY_STATUS(runLocalCommand(service, db, drop.obj()).getStatus());
            log::info("SHARDING", 22031, "Dropped an index the donor does not have",
                      "{\"ns\":\"" + log::jsonEscape(ns) + "\",\"index\":\"" +
                          log::jsonEscape(index.name) + "\"}");
        }
    }
    if (specs.count() == 0) return Status::OK();
    bson::BsonBuilder ci;
    ci.append("createIndexes", coll);
    ci.appendArray("indexes", specs.arr());
    auto indexed = runLocalCommand(service, db, ci.obj());
    if (!indexed.isOK()) {
        log::warning("SHARDING", 22030, "Could not create the donor's indexes",
                     "{\"ns\":\"" + log::jsonEscape(ns) + "\",\"error\":\"" +
                         log::jsonEscape(indexed.getStatus().toString()) + "\"}");
        return indexed.getStatus();
    }
    return Status::OK();
}

void registerShardMigrationCommands(command::CommandRegistry& registry) {
    registry.add(std::make_unique<ReadRangeCommand>());
    registry.add(std::make_unique<ReceiveRangeCommand>());
    registry.add(std::make_unique<DeleteRangeCommand>());
}

}  // namespace tessera::shard
