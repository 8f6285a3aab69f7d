// DDL and catalog commands of the router (README.md "What goes where"): unsharded collections and
// database-level commands go to the database primary with databaseVersion; commands on a sharded
// collection go to every shard that owns chunks (plus the primary, which holds the collection
// since shardCollection); drops of sharded collections and databases go through the config
// server's coordinators.

#include <algorithm>
#include <map>
#include <set>

#include "bson/bson_builder.h"
#include "command/registry.h"
#include "router/router_commands.h"
#include "router/router_util.h"
#include "router/transaction_router.h"

namespace tessera::router {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonType;
using bson::BsonView;
using command::CommandRequest;
using command::OperationContext;

namespace {

constexpr int kAllInOneBatch = 1 << 30;

// Runs `body` on the primary of ns's database (ns "db" or "db.$cmd" for database-level
// commands), retried on stale versions.
StatusWith<ShardResponse> runOnDbPrimary(OperationContext& opCtx, Router& router,
                                         const std::string& ns, const BsonObj& body,
                                         bool createDb) {
    RoutedOptions options;
    options.createDbIfMissing = createDb;
    ASSIGN_OR_RETURN(
        auto responses,
        runRouted(
            opCtx, router, ns,
            [&](const CollectionRoutingInfo& info) -> StatusWith<std::vector<ShardRequest>> {
                return std::vector<ShardRequest>{
                    {info.db.primary, attachVersion(body, info, info.db.primary)}};
            },
            options));
    return responses.front();
}

// The shards a command on a sharded collection goes to: the owners of chunks and the primary.
std::vector<ShardId> ownersAndPrimary(const CollectionRoutingInfo& info) {
    std::set<ShardId> shards;
    if (info.isSharded()) {
        for (auto& s : info.table->shards()) shards.insert(s);
    }
    shards.insert(info.db.primary);
    return {shards.begin(), shards.end()};
}

// Which shards a command on a collection goes to when it is sharded.
enum class ShardedTargets {
    kOwnersAndPrimary,  // the shards that hold its data
    kEveryShard,        // also shards that held chunks before (they keep an empty copy)
};

// Runs `body` on the primary when ns is unsharded, else on `targets`. Stale retried.
StatusWith<std::vector<ShardResponse>> runOnCollectionShards(
    OperationContext& opCtx, Router& router, const std::string& ns, const BsonObj& body,
    bool createDb, bool* sharded = nullptr,
    ShardedTargets targets = ShardedTargets::kOwnersAndPrimary) {
    RoutedOptions options;
    options.createDbIfMissing = createDb;
    return runRouted(
        opCtx, router, ns,
        [&](const CollectionRoutingInfo& info) -> StatusWith<std::vector<ShardRequest>> {
            if (sharded) *sharded = info.isSharded();
            std::vector<ShardId> ids = ownersAndPrimary(info);
            if (info.isSharded() && targets == ShardedTargets::kEveryShard) {
                ASSIGN_OR_RETURN(auto all, router.shards().allShards());
                for (const auto& s : all) {
                    if (std::find(ids.begin(), ids.end(), s.id) == ids.end()) ids.push_back(s.id);
                }
            }
            std::vector<ShardRequest> requests;
            for (const auto& s : ids) requests.push_back({s, attachVersion(body, info, s)});
            return requests;
        },
        options);
}

// The first error of `responses`, relayed; OK when every shard succeeded.
Status firstError(OperationContext& opCtx, const std::vector<ShardResponse>& responses) {
    for (const auto& r : responses) {
        if (!r.status.isOK()) return r.status.withContext("shard " + r.shard);
        if (!r.reply["ok"].trueValue()) {
            BsonBuilder ignored;
            return relayRemoteReply(opCtx, r.reply, ignored);
        }
    }
    return Status::OK();
}

// Replies of several shards as {raw: {host: reply}} after the first reply's own fields.
Status mergeMultiShardReplies(OperationContext& opCtx, const std::vector<ShardResponse>& responses,
                              BsonBuilder& reply) {
    TRY_STATUS(firstError(opCtx, responses));
    if (responses.size() == 1) return relayRemoteReply(opCtx, responses[0].reply, reply);
    BsonBuilder first;
    TRY_STATUS(relayRemoteReply(opCtx, responses[0].reply, first));
    reply.appendElements(first.obj());
    if (!reply.hasField("raw")) {
        reply.startObject("raw");
        for (const auto& r : responses) reply.append(r.host, r.reply);
        reply.end();
    }
    return Status::OK();
}

// A cursor-returning catalog command (listCollections/listIndexes) asks the shard for one batch
// with everything: router-side getMore cannot reach a shard's catalog cursor.
BsonObj withSingleBatch(BsonView body) {
    BsonBuilder b;
    for (auto e : body) {
        if (e.fieldName() == "cursor") continue;
        b.appendElement(e);
    }
    b.startObject("cursor").appendInt32("batchSize", kAllInOneBatch).end();
    return b.obj();
}

void appendEmptyCursor(BsonBuilder& reply, const std::string& ns) {
    reply.startObject("cursor")
        .appendInt64("id", 0)
        .append("ns", ns)
        .startArray("firstBatch")
        .end()
        .end();
}

Status create(OperationContext& opCtx, const CommandRequest& request, BsonBuilder& reply) {
    ASSIGN_OR_RETURN(std::string ns, commandNamespace(request));
    TRY_STATUS(
        checkTransactionMayCreate(opCtx, ns));  // in a transaction: MongoDB's read-concern rule
    Router& router = Router::get(opCtx);
    ASSIGN_OR_RETURN(auto r, runOnDbPrimary(opCtx, router, ns, forwardableBody(request), true));
    TRY_STATUS(r.status);
    return relayRemoteReply(opCtx, r.reply, reply);
}

Status drop(OperationContext& opCtx, const CommandRequest& request, BsonBuilder& reply) {
    ASSIGN_OR_RETURN(std::string ns, commandNamespace(request));
    Router& router = Router::get(opCtx);
    auto info = router.catalog().getCollectionRoutingInfo(ns);
    if (info.getStatus().is(ErrorCodes::NamespaceNotFound)) return Status::OK();  // no database
    TRY_STATUS(info.getStatus());
    if (!info.getValue().isSharded()) {
        BsonObj body = forwardableBody(request);
        bool becameSharded = false;
        auto r =
            runRouted(opCtx, router, ns,
                      [&](const CollectionRoutingInfo& i) -> StatusWith<std::vector<ShardRequest>> {
                          becameSharded = i.isSharded();
                          if (becameSharded) return std::vector<ShardRequest>{};
                          return std::vector<ShardRequest>{
                              {i.db.primary, attachVersion(body, i, i.db.primary)}};
                      });
        TRY_STATUS(r.getStatus());
        if (!becameSharded) {
            const ShardResponse& resp = r.getValue().front();
            TRY_STATUS(resp.status);
            // Dropping a collection that does not exist is not an error (MongoDB 7.0+).
            if (net::replyStatus(resp.reply).is(ErrorCodes::NamespaceNotFound)) {
                return Status::OK();
            }
            return relayRemoteReply(opCtx, resp.reply, reply);
        }
    }
    BsonBuilder cmd;
    cmd.append("_configsvrDropCollection", ns);
    auto r = runConfigsvrCommand(router, cmd.obj());
    router.catalog().invalidateCollection(ns);
    TRY_STATUS(r.getStatus());
    reply.append("ns", ns);
    return Status::OK();
}

Status dropDatabase(OperationContext& opCtx, const CommandRequest& request, BsonBuilder& reply) {
    if (request.db == "admin" || request.db == "config" || request.db == "local") {
        return Status(ErrorCodes::IllegalOperation,
                      "Cannot drop the '" + request.db + "' database through a router");
    }
    Router& router = Router::get(opCtx);
    BsonBuilder cmd;
    cmd.append("_configsvrDropDatabase", request.db);
    auto r = router.client().runCommand(router.configHost(), "admin", cmd.obj(),
                                        std::chrono::minutes(10));
    router.catalog().invalidateDatabase(request.db);
    TRY_STATUS(r.getStatus());
    TRY_STATUS(net::replyStatus(r.getValue()));
    reply.append("dropped", request.db);
    return Status::OK();
}

Status listCollections(OperationContext& opCtx, const CommandRequest& request, BsonBuilder& reply) {
    Router& router = Router::get(opCtx);
    auto r = runOnDbPrimary(opCtx, router, request.db + ".$cmd",
                            withSingleBatch(forwardableBody(request)), false);
    if (r.getStatus().is(ErrorCodes::NamespaceNotFound)) {
        appendEmptyCursor(reply, request.db + ".$cmd.listCollections");
        return Status::OK();
    }
    TRY_STATUS(r.getStatus());
    TRY_STATUS(r.getValue().status);
    return relayRemoteReply(opCtx, r.getValue().reply, reply);
}

Status listIndexes(OperationContext& opCtx, const CommandRequest& request, BsonBuilder& reply) {
    ASSIGN_OR_RETURN(std::string ns, commandNamespace(request));
    Router& router = Router::get(opCtx);
    BsonObj body = withSingleBatch(forwardableBody(request));
    auto responses =
        runRouted(opCtx, router, ns,
                  [&](const CollectionRoutingInfo& info) -> StatusWith<std::vector<ShardRequest>> {
                      ShardId target = info.db.primary;
                      if (info.isSharded()) {
                          auto owners = info.table->shards();
                          bool primaryOwns = false;
                          for (auto& s : owners) primaryOwns |= s == info.db.primary;
                          if (!primaryOwns && !owners.empty()) target = owners.front();
                      }
                      return std::vector<ShardRequest>{{target, attachVersion(body, info, target)}};
                  });
    if (responses.getStatus().is(ErrorCodes::NamespaceNotFound)) {
        return Status(ErrorCodes::NamespaceNotFound, "ns does not exist: " + ns);
    }
    TRY_STATUS(responses.getStatus());
    TRY_STATUS(responses.getValue().front().status);
    return relayRemoteReply(opCtx, responses.getValue().front().reply, reply);
}

// The unique indexes a createIndexes asks for that a sharded collection cannot enforce (each
// shard is unique on its own only): MongoDB's CannotCreateIndex (67), before any shard is asked.
Status checkUniqueIndexesAgainstShardKey(Router& router, const std::string& ns,
                                         const CommandRequest& request) {
    bson::BsonElement indexes = request.body["indexes"];
    if (!indexes.isArray()) return Status::OK();  // the shard reports it
    auto info = router.catalog().getCollectionRoutingInfo(ns);
    if (!info.isOK() || !info.getValue().isSharded()) return Status::OK();
    const placement::ShardKeyPattern& pattern = info.getValue().table->shardKeyPattern();
    for (bson::BsonElement spec : indexes.objValue()) {
        if (!spec.isObject() || !spec.objValue()["unique"].trueValue()) continue;
        bson::BsonElement key = spec.objValue()["key"];
        if (!key.isObject() || pattern.isUniqueIndexCompatible(key.objValue())) continue;
        return Status(ErrorCodes::CannotCreateIndex,
                      "cannot create unique index over " + key.objValue().toJson() +
                          " with shard key pattern " + pattern.toBson().toJson() +
                          ": uniqueness can be maintained only when the shard key is a prefix of "
                          "the index (global unique indexes are not supported yet)");
    }
    return Status::OK();
}

// createIndexes: the primary when unsharded, else the shards holding data (a shard that
// receives its first chunk later gets the donor's indexes with it). collMod / dropIndexes:
// every shard of a sharded collection, so that a shard holding an old empty copy (it gave its
// chunks away) is not left with a stale validator or index; shards without the collection
// answer NamespaceNotFound, which only counts when no shard has it.
CommandFn collectionWideCommand(bool createDb) {
    return [createDb](OperationContext& opCtx, const CommandRequest& request,
                      BsonBuilder& reply) -> Status {
        ASSIGN_OR_RETURN(std::string ns, commandNamespace(request));
        Router& router = Router::get(opCtx);
        const bool create = request.commandName == "createIndexes";
        if (create) TRY_STATUS(checkTransactionMayCreate(opCtx, ns));
        if (create) TRY_STATUS(checkUniqueIndexesAgainstShardKey(router, ns, request));
        bool sharded = false;
        ASSIGN_OR_RETURN(
            auto responses,
            runOnCollectionShards(
                opCtx, router, ns, forwardableBody(request), createDb, &sharded,
                create ? ShardedTargets::kOwnersAndPrimary : ShardedTargets::kEveryShard));
        if (sharded && !create) {
            std::vector<ShardResponse> holding;
            for (ShardResponse& r : responses) {
                bool missing =
                    r.status.isOK() && !r.reply["ok"].trueValue() &&
                    r.reply["code"].numberInt() == static_cast<int>(ErrorCodes::NamespaceNotFound);
                if (!missing) holding.push_back(std::move(r));
            }
            if (!holding.empty()) {
                responses = std::move(holding);
            } else if (responses.size() > 1) {
                responses.erase(responses.begin() + 1, responses.end());
            }
        }
        return mergeMultiShardReplies(opCtx, responses, reply);
    };
}

// Sums the numeric fields `fields` of the replies into `reply`.
void sumFields(const std::vector<ShardResponse>& responses,
               std::initializer_list<std::string_view> fields, BsonBuilder& reply) {
    for (auto f : fields) {
        double total = 0;
        bool integral = true;
        bool any = false;
        for (const auto& r : responses) {
            auto e = r.reply[f];
            if (!e.isNumber()) continue;
            any = true;
            integral &= e.type() != BsonType::Double;
            total += e.numberDouble();
        }
        if (!any) continue;
        if (integral) {
            reply.appendInt64(f, static_cast<int64_t>(total));
        } else {
            reply.appendDouble(f, total);
        }
    }
}

Status dbStats(OperationContext& opCtx, const CommandRequest& request, BsonBuilder& reply) {
    Router& router = Router::get(opCtx);
    ASSIGN_OR_RETURN(auto shards, router.shards().allShards());
    BsonObj body = forwardableBody(request);
    std::vector<ShardRequest> requests;
    for (const auto& s : shards) requests.push_back({s.id, body});
    auto responses = sendToShards(opCtx, router, request.db, requests);
    TRY_STATUS(firstError(opCtx, responses));
    reply.startObject("raw");
    for (const auto& r : responses) reply.append(r.host, r.reply);
    reply.end();
    reply.append("db", request.db);
    sumFields(responses,
              {"collections", "views", "objects", "dataSize", "storageSize", "indexes", "indexSize",
               "totalSize"},
              reply);
    int64_t objects = 0;
    double dataSize = 0;
    for (const auto& r : responses) {
        objects += r.reply["objects"].numberLong();
        dataSize += r.reply["dataSize"].numberDouble();
    }
    reply.appendDouble("avgObjSize", objects ? dataSize / objects : 0.0);
    auto scale = request.body["scale"];
    reply.appendInt64("scaleFactor", scale.isNumber() ? scale.numberLong() : 1);
    if (!responses.empty()) {
        for (auto f : {"fsUsedSize", "fsTotalSize"}) {
            if (auto e = responses.front().reply[f]; !e.eoo()) reply.appendElement(e);
        }
    }
    return Status::OK();
}

Status collStats(OperationContext& opCtx, const CommandRequest& request, BsonBuilder& reply) {
    ASSIGN_OR_RETURN(std::string ns, commandNamespace(request));
    Router& router = Router::get(opCtx);
    bool sharded = false;
    ASSIGN_OR_RETURN(
        auto responses,
        runOnCollectionShards(opCtx, router, ns, forwardableBody(request), false, &sharded));
    TRY_STATUS(firstError(opCtx, responses));
    if (!sharded) {
        reply.appendBool("sharded", false);
        reply.append("primary", responses.front().shard);
        BsonBuilder fields;
        TRY_STATUS(relayRemoteReply(opCtx, responses.front().reply, fields));
        for (auto e : fields.obj()) {
            if (e.fieldName() != "sharded" && e.fieldName() != "primary") reply.appendElement(e);
        }
        return Status::OK();
    }
    reply.appendBool("sharded", true);
    reply.append("ns", ns);
    sumFields(responses, {"count", "size", "storageSize", "totalIndexSize", "totalSize"}, reply);
    int64_t nindexes = 0;  // the same indexes on every shard: not a sum
    for (const auto& r : responses) {
        nindexes = std::max(nindexes, r.reply["nindexes"].numberLong());
    }
    reply.appendInt64("nindexes", nindexes);
    int64_t count = 0;
    double size = 0;
    std::map<std::string, double> indexSizes;
    for (const auto& r : responses) {
        count += r.reply["count"].numberLong();
        size += r.reply["size"].numberDouble();
        if (auto is = r.reply["indexSizes"]; is.isObject()) {
            for (auto e : is.objValue()) indexSizes[std::string(e.fieldName())] += e.numberDouble();
        }
    }
    reply.appendDouble("avgObjSize", count ? size / count : 0.0);
    reply.startObject("indexSizes");
    for (auto& [name, s] : indexSizes) reply.appendInt64(name, static_cast<int64_t>(s));
    reply.end();
    if (auto info = router.catalog().getCollectionRoutingInfo(ns);
        info.isOK() && info.getValue().isSharded()) {
        reply.appendInt64("nchunks", static_cast<int64_t>(info.getValue().table->numChunks()));
    }
    reply.startObject("shards");
    for (const auto& r : responses) reply.append(r.shard, r.reply);
    reply.end();
    return Status::OK();
}

// listDatabases: the union over every shard (sizes summed), plus the config server's `config`
// and `admin` entries.
Status listDatabases(OperationContext& opCtx, const CommandRequest& request, BsonBuilder& reply) {
    Router& router = Router::get(opCtx);
    ASSIGN_OR_RETURN(auto shards, router.shards().allShards());
    BsonObj body = withoutFields(forwardableBody(request), {"nameOnly"});
    std::vector<ShardRequest> requests;
    for (const auto& s : shards) requests.push_back({s.id, body});
    requests.push_back({"config", body});
    auto responses = sendToShards(opCtx, router, "admin", requests);
    TRY_STATUS(firstError(opCtx, responses));
    struct Entry {
        int64_t size = 0;
        bool empty = true;
    };
    std::map<std::string, Entry> dbs;
    for (size_t i = 0; i < responses.size(); ++i) {
        bool fromConfig = i + 1 == responses.size();
        auto list = responses[i].reply["databases"];
        if (!list.isArray()) continue;
        for (auto e : list.objValue()) {
            if (!e.isObject()) continue;
            BsonView d = e.objValue();
            std::string name(d["name"].stringValue());
            bool internal = name == "admin" || name == "config" || name == "local";
            if (internal != fromConfig || name == "local") continue;
            Entry& entry = dbs[name];
            entry.size += d["sizeOnDisk"].numberLong();
            entry.empty &= d["empty"].trueValue();
        }
    }
    bool nameOnly = request.body["nameOnly"].trueValue();
    int64_t total = 0;
    reply.startArray("databases");
    size_t i = 0;
    for (auto& [name, entry] : dbs) {
        reply.startObject(std::to_string(i++)).append("name", name);
        if (!nameOnly) {
            reply.appendInt64("sizeOnDisk", entry.size).appendBool("empty", entry.empty);
        }
        reply.end();
        total += entry.size;
    }
    reply.end();
    if (!nameOnly) {
        reply.appendInt64("totalSize", total);
        reply.appendInt64("totalSizeMb", total >> 20);
    }
    return Status::OK();
}

// renameCollection (admin): unsharded collections within one database, run on its primary.
Status renameCollection(OperationContext& opCtx, const CommandRequest& request,
                        BsonBuilder& reply) {
    ASSIGN_OR_RETURN(std::string from, nsArgument(request));
    auto toElem = request.body["to"];
    if (toElem.type() != BsonType::String) {
        return Status(ErrorCodes::TypeMismatch, "'to' must be of type String");
    }
    std::string to(toElem.stringValue());
    if (from.substr(0, from.find('.')) != to.substr(0, to.find('.'))) {
        return Status(ErrorCodes::IllegalOperation,
                      "Source and destination collections must be on the same database.");
    }
    Router& router = Router::get(opCtx);
    ASSIGN_OR_RETURN(auto src, router.catalog().getCollectionRoutingInfo(from));
    ASSIGN_OR_RETURN(auto dst, router.catalog().getCollectionRoutingInfo(to));
    if (src.isSharded() || dst.isSharded()) {
        return Status(ErrorCodes::IllegalOperation,
                      "renameCollection of a sharded collection is not supported");
    }
    auto responses =
        sendToShards(opCtx, router, "admin", {{src.db.primary, forwardableBody(request)}});
    TRY_STATUS(responses.front().status);
    router.catalog().invalidateCollection(from);
    router.catalog().invalidateCollection(to);
    return relayRemoteReply(opCtx, responses.front().reply, reply);
}

}  // namespace

void registerRouterDdlCommands(command::CommandRegistry& registry) {
    registry.add(makeRouterCommand("create", {}, false, create));
    registry.add(makeRouterCommand("drop", {}, false, drop));
    registry.add(makeRouterCommand("dropDatabase", {}, false, dropDatabase));
    registry.add(makeRouterCommand("listCollections", {}, false, listCollections));
    registry.add(makeRouterCommand("listIndexes", {}, false, listIndexes));
    registry.add(makeRouterCommand("createIndexes", {}, false, collectionWideCommand(true)));
    registry.add(
        makeRouterCommand("dropIndexes", {"deleteIndexes"}, false, collectionWideCommand(false)));
    registry.add(makeRouterCommand("collMod", {}, false, collectionWideCommand(false)));
    registry.add(makeRouterCommand("dbStats", {"dbstats"}, false, dbStats));
    registry.add(makeRouterCommand("collStats", {"collstats"}, false, collStats));
    registry.add(makeRouterCommand("listDatabases", {}, true, listDatabases));
    registry.add(makeRouterCommand("renameCollection", {}, true, renameCollection));
}

}  // namespace tessera::router
