// movePrimary on shards: the new primary copies the unsharded collections of a database from the
// old one (_shardsvrCloneDatabase); the old one drops its copies after the commit
// (_shardsvrDropUnshardedCollections).

#include "base/log.h"
#include "command/registry.h"
#include "net/remote_client.h"
#include "shard/command_util.h"
#include "shard/direct_client.h"
#include "shard/range_ops.h"

namespace tessera::shard {
namespace {

using command::CommandRequest;
using command::OperationContext;

constexpr std::chrono::minutes kCloneRequestTimeout{5};

StatusWith<std::string> dbArgument(const CommandRequest& request, std::string_view command) {
    bson::BsonElement target = request.firstElement();
    if (target.type() != bson::BsonType::String || target.stringValue().empty()) {
        return Status(ErrorCodes::TypeMismatch, std::string(command) + " takes a database name");
    }
    std::string db(target.stringValue());
    if (db == "admin" || db == "config" || db == "local") {
        return Status(ErrorCodes::InvalidOptions, "cannot move database " + db);
    }
    return db;
}

// Whether ns is sharded, by freshly reloaded placement.
StatusWith<bool> isSharded(ShardMetadata& md, const std::string& ns) {
    TRY_STATUS(md.refreshCollection(ns));
    ASSIGN_OR_RETURN(auto table, md.collection(ns));
    return table != nullptr;
}

// Copies every document of db.coll from `host` (find + getMore) into the local collection.
StatusWith<int64_t> copyDocuments(command::ServiceContext& service, net::RemoteClient& client,
                                  const std::string& host, const std::string& db,
                                  const std::string& coll) {
    bson::BsonBuilder find;
    find.append("find", coll);
    find.appendInt64("batchSize", 10000);
    ASSIGN_OR_RETURN(bson::BsonObj reply,
                     client.runCommand(host, db, find.obj(), kCloneRequestTimeout));
    TRY_STATUS(net::replyStatus(reply));
    int64_t cursorId = 0, copied = 0, skipped = 0;
    std::vector<bson::BsonObj> docs = cursorBatch(reply, "firstBatch", &cursorId);
    for (;;) {
        ASSIGN_OR_RETURN(int64_t n,
                         insertDocuments(*service.engine, db + "." + coll, docs, &skipped));
        copied += n;
        if (cursorId == 0) break;
        bson::BsonBuilder more;
        more.appendInt64("getMore", cursorId);
        more.append("collection", coll);
        more.appendInt64("batchSize", 10000);
        ASSIGN_OR_RETURN(reply, client.runCommand(host, db, more.obj(), kCloneRequestTimeout));
        TRY_STATUS(net::replyStatus(reply));
        docs = cursorBatch(reply, "nextBatch", &cursorId);
    }
    return copied;
}

// {_shardsvrCloneDatabase: db, from: host} → {clonedCollections: [names]}.
class CloneDatabaseCommand final : public ShardCommand {
  public:
    std::string_view name() const override { return "_shardsvrCloneDatabase"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(ShardingState * state, shardingStateOf(opCtx));
        ASSIGN_OR_RETURN(auto md, shardMetadataOf(opCtx));
        ASSIGN_OR_RETURN(std::string db, dbArgument(request, name()));
        ASSIGN_OR_RETURN(std::string from, stringArg(request.body, "from", name()));
        command::ServiceContext& service = *opCtx.service;
        net::RemoteClient& client = state->remoteClient();

        bson::BsonBuilder lc;
        lc.append("listCollections", 1);
        ASSIGN_OR_RETURN(bson::BsonObj lcReply, client.runCommand(from, db, lc.obj()));
        TRY_STATUS(net::replyStatus(lcReply));
        bson::BsonArrayBuilder cloned;
        std::vector<bson::BsonObj> views;
        for (const bson::BsonObj& info : cursorBatch(lcReply, "firstBatch")) {
            if (info["name"].type() != bson::BsonType::String) continue;
            std::string coll(info["name"].stringValue());
            if (coll.starts_with("system.")) continue;
            std::string type = info["type"].type() == bson::BsonType::String
                                   ? std::string(info["type"].stringValue())
                                   : "collection";
            if (type == "view") {
                views.push_back(info);
                continue;
            }
            std::string ns = db + "." + coll;
            ASSIGN_OR_RETURN(bool sharded, isSharded(*md, ns));
            if (sharded) continue;
            // A stale local copy (an earlier, aborted movePrimary) is replaced.
            if (service.engine->getCollection(ns)) {
                bson::BsonBuilder drop;
                drop.append("drop", coll);
                TRY_STATUS(runLocalCommand(service, db, drop.obj()).getStatus());
            }
            TRY_STATUS(createCollectionLike(service, client, from, db, coll));
            ASSIGN_OR_RETURN(int64_t n, copyDocuments(service, client, from, db, coll));
            log::info(
                "SHARDING", 22040, "Cloned a collection",
                "{\"ns\":\"" + log::jsonEscape(ns) + "\",\"docs\":" + std::to_string(n) + "}");
            cloned.append(coll);
        }
        for (const bson::BsonObj& info : views) {
            bson::BsonBuilder create;
            create.append("create", info["name"].stringValue());
            if (info["options"].isObject()) {
                for (bson::BsonElement e : info["options"].objValue()) create.appendElement(e);
            }
            auto created = runLocalCommand(service, db, create.obj());
            if (!created.isOK() && !created.getStatus().is(ErrorCodes::NamespaceExists)) {
                return created.getStatus();
            }
            cloned.append(info["name"].stringValue());
        }
        reply.appendArray("clonedCollections", cloned.arr());
        return Status::OK();
    }
};

// {_shardsvrDropUnshardedCollections: db}: drops the local unsharded collections (and views) of
// db — the old primary after movePrimary committed. Sharded collections' chunks stay.
class DropUnshardedCollectionsCommand final : public ShardCommand {
  public:
    std::string_view name() const override { return "_shardsvrDropUnshardedCollections"; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder&) override {
        ASSIGN_OR_RETURN(auto md, shardMetadataOf(opCtx));
        ASSIGN_OR_RETURN(std::string db, dbArgument(request, name()));
        command::ServiceContext& service = *opCtx.service;
        bson::BsonBuilder lc;
        lc.append("listCollections", 1);
        ASSIGN_OR_RETURN(bson::BsonObj lcReply, runLocalCommand(service, db, lc.obj()));
        for (const bson::BsonObj& info : cursorBatch(lcReply, "firstBatch")) {
            if (info["name"].type() != bson::BsonType::String) continue;
            std::string coll(info["name"].stringValue());
            if (coll.starts_with("system.")) continue;
            bool view = info["type"].type() == bson::BsonType::String &&
                        info["type"].stringValue() == "view";
            if (!view) {
                ASSIGN_OR_RETURN(bool sharded, isSharded(*md, db + "." + coll));
                if (sharded) continue;
            }
            bson::BsonBuilder drop;
            drop.append("drop", coll);
            auto dropped = runLocalCommand(service, db, drop.obj());
            if (!dropped.isOK() && !dropped.getStatus().is(ErrorCodes::NamespaceNotFound)) {
                return dropped.getStatus();
            }
        }
        return Status::OK();
    }
};

}  // namespace

void registerShardDatabaseCommands(command::CommandRegistry& registry) {
    registry.add(std::make_unique<CloneDatabaseCommand>());
    registry.add(std::make_unique<DropUnshardedCollectionsCommand>());
}

}  // namespace tessera::shard
