// Sharding admin commands of the router (mongodb-surface.md §2): each is translated to the
// config server's _configsvr* command (src/cluster/README.md), and the router's cached placement
// that the operation changed is invalidated after success.

#include <chrono>
#include <set>

#include "bson/bson_builder.h"
#include "cluster/catalog_refresh.h"
#include "command/registry.h"
#include "router/placement_announcements.h"
#include "router/router_commands.h"
#include "router/router_util.h"

namespace tessera::router {

using bson::BsonBuilder;
using bson::BsonObj;
using bson::BsonType;
using bson::BsonView;
using command::CommandRequest;
using command::OperationContext;

namespace {

StatusWith<std::string> stringArgument(const CommandRequest& request, std::string_view field) {
    auto e = request.body[field];
    if (e.type() != BsonType::String || e.stringValue().empty()) {
        return Status(ErrorCodes::TypeMismatch, "BSON field '" + std::string(request.commandName) +
                                                    "." + std::string(field) +
                                                    "' is missing or not a non-empty string");
    }
    return std::string(e.stringValue());
}

// enableSharding: db, primaryShard? → _configsvrCreateDatabase. Reply {}.
Status enableSharding(OperationContext& opCtx, const CommandRequest& request, BsonBuilder&) {
    TRY_STATUS(checkKnownFields(request, {"primaryShard"}));
    auto first = request.firstElement();
    if (first.type() != BsonType::String || first.stringValue().empty()) {
        return Status(ErrorCodes::InvalidNamespace, "enableSharding requires a database name");
    }
    std::string db(first.stringValue());
    if (db.find('.') != std::string::npos) {
        return Status(ErrorCodes::InvalidNamespace, "invalid db name specified: " + db);
    }
    Router& router = Router::get(opCtx);
    BsonBuilder cmd;
    cmd.append("_configsvrCreateDatabase", db);
    if (auto p = request.body["primaryShard"]; p.type() == BsonType::String) {
        cmd.append("primaryShard", p.stringValue());
    }
    auto r = runConfigsvrCommand(router, cmd.obj());
    router.catalog().invalidateDatabase(db);
    return r.getStatus();
}

// shardCollection: ns, key, unique?, numInitialChunks?, collation? → {collectionsharded: ns}.
Status shardCollection(OperationContext& opCtx, const CommandRequest& request, BsonBuilder& reply) {
    TRY_STATUS(checkKnownFields(
        request, {"key", "unique", "numInitialChunks", "collation", "presplitHashedZones",
                  "implicitlyCreateIndex", "enforceUniquenessCheck", "timeseries"}));
    if (request.body["presplitHashedZones"].trueValue()) {
        return Status(ErrorCodes::InvalidOptions,
                      "presplitHashedZones needs zones, which this Tessera version does not "
                      "support");
    }
    if (request.body.hasField("timeseries")) {
        return Status(ErrorCodes::NotImplemented,
                      "time-series collections are not supported by this Tessera version");
    }
    if (auto e = request.body["enforceUniquenessCheck"]; !e.eoo() && !e.trueValue()) {
        return Status(ErrorCodes::InvalidOptions,
                      "enforceUniquenessCheck: false is not supported: a unique shard key is "
                      "always enforced by its unique index");
    }
    ASSIGN_OR_RETURN(std::string ns, nsArgument(request));
    auto key = request.body["key"];
    if (!key.isObject()) {
        return Status(ErrorCodes::TypeMismatch,
                      "BSON field 'shardCollection.key' is missing but a required field");
    }
    Router& router = Router::get(opCtx);
    BsonBuilder cmd;
    cmd.append("_configsvrShardCollection", ns).append("key", key.objValue());
    cmd.appendBool("unique", request.body["unique"].trueValue());
    if (auto n = request.body["numInitialChunks"]; n.isNumber()) {
        cmd.appendInt64("numInitialChunks", n.numberLong());
    }
    if (auto c = request.body["collation"]; c.isObject()) cmd.append("collation", c.objValue());
    if (auto i = request.body["implicitlyCreateIndex"]; !i.eoo()) {
        cmd.appendBool("implicitlyCreateIndex", i.trueValue());
    }
    auto r = runConfigsvrCommand(router, cmd.obj());
    router.catalog().invalidateCollection(ns);
    if (!r.isOK()) {
        // Created a database on the way, maybe.
        router.catalog().invalidateDatabase(ns.substr(0, ns.find('.')));
        return r.getStatus();
    }
    reply.append("collectionsharded", ns);
    return Status::OK();
}

// The chunk-level commands change placement within one generation: the next lookup refreshes
// incrementally.
void noteChunksChanged(Router& router, const std::string& ns) {
    router.catalog().onStaleShardVersion(ns, std::nullopt);
}

// split: ns, middle | find | bounds → _configsvrSplitChunk.
Status split(OperationContext& opCtx, const CommandRequest& request, BsonBuilder&) {
    TRY_STATUS(checkKnownFields(request, {"middle", "find", "bounds"}));
    ASSIGN_OR_RETURN(std::string ns, nsArgument(request));
    int given = request.body.hasField("middle") + request.body.hasField("find") +
                request.body.hasField("bounds");
    if (given != 1) {
        return Status(ErrorCodes::InvalidOptions,
                      "Only one of 'find', 'middle' or 'bounds' must be specified");
    }
    Router& router = Router::get(opCtx);
    BsonBuilder cmd;
    cmd.append("_configsvrSplitChunk", ns);
    for (auto f : {"middle", "find", "bounds"}) {
        if (auto e = request.body[f]; !e.eoo()) cmd.appendElement(e);
    }
    auto r = runConfigsvrCommand(router, cmd.obj());
    noteChunksChanged(router, ns);
    return r.getStatus();
}

// mergeChunks: ns, bounds → _configsvrMergeChunks.
Status mergeChunks(OperationContext& opCtx, const CommandRequest& request, BsonBuilder&) {
    TRY_STATUS(checkKnownFields(request, {"bounds"}));
    ASSIGN_OR_RETURN(std::string ns, nsArgument(request));
    auto bounds = request.body["bounds"];
    if (!bounds.isArray()) {
        return Status(ErrorCodes::TypeMismatch, "mergeChunks requires 'bounds' as an array");
    }
    Router& router = Router::get(opCtx);
    BsonBuilder cmd;
    cmd.append("_configsvrMergeChunks", ns).appendElement(bounds);
    auto r = runConfigsvrCommand(router, cmd.obj());
    noteChunksChanged(router, ns);
    return r.getStatus();
}

// Sends _configsvrMoveRange and notes the placement change.
Status moveRangeOnConfig(Router& router, const std::string& ns, const BsonObj& cmd) {
    auto r =
        router.client().runCommand(router.configHost(), "admin", cmd, std::chrono::minutes(30));
    noteChunksChanged(router, ns);
    if (!r.isOK()) return r.getStatus();
    return net::replyStatus(r.getValue());
}

// moveChunk: ns, find | bounds, to → the chunk's [min, max) → _configsvrMoveRange. {millis}.
Status moveChunk(OperationContext& opCtx, const CommandRequest& request, BsonBuilder& reply) {
    // _secondaryThrottle: there are no secondaries to wait for; forceJumbo: no chunk is jumbo;
    // the donor deletes the range at once either way, _waitForDelete waits for it.
    TRY_STATUS(
        checkKnownFields(request, {"find", "bounds", "to", "_waitForDelete", "waitForDelete",
                                   "_secondaryThrottle", "secondaryThrottle", "forceJumbo"}));
    auto start = std::chrono::steady_clock::now();
    ASSIGN_OR_RETURN(std::string ns, nsArgument(request));
    ASSIGN_OR_RETURN(std::string to, stringArgument(request, "to"));
    auto find = request.body["find"];
    auto bounds = request.body["bounds"];
    if (find.eoo() == bounds.eoo()) {
        return Status(ErrorCodes::InvalidOptions, "need to specify either 'find' or 'bounds'");
    }
    Router& router = Router::get(opCtx);
    // The chunk is looked up in fresh placement (another router may have split it), as mongos's
    // getCollectionRoutingInfoWithRefresh.
    noteChunksChanged(router, ns);
    ASSIGN_OR_RETURN(auto info, router.catalog().getCollectionRoutingInfo(ns));
    if (!info.isSharded()) {
        return Status(ErrorCodes::NamespaceNotSharded, "ns: " + ns + " is not sharded");
    }
    const auto& table = *info.table;
    BsonObj key;
    if (!find.eoo()) {
        if (!find.isObject()) return Status(ErrorCodes::TypeMismatch, "'find' must be an object");
        if (table.shardKeyPattern().isHashed()) {
            return Status(ErrorCodes::InvalidOptions,
                          "Cannot use 'find' with a hashed shard key; use 'bounds'");
        }
        ASSIGN_OR_RETURN(key, table.shardKeyPattern().extractShardKeyFromQuery(find.objValue()));
        if (key.isEmpty()) {
            return Status(ErrorCodes::InvalidOptions,
                          "no shard key found in chunk query " + find.toString(false));
        }
    } else {
        if (!bounds.isArray() || bounds.objValue().nFields() != 2 ||
            !bounds.objValue()["0"].isObject() || !bounds.objValue()["1"].isObject()) {
            return Status(ErrorCodes::InvalidOptions,
                          "Specify either 'find' or 'bounds' as [min, max]");
        }
        key = bounds.objValue()["0"].objValue().copy();
    }
    TRY_STATUS(table.shardKeyPattern().validateKey(key));
    const placement::Chunk& chunk = table.findChunk(key);
    if (!bounds.eoo()) {
        // The bounds name one chunk exactly, or nothing is moved (MongoDB's 656452): moving the
        // chunk that merely contains bounds[0] would move data the caller did not name.
        BsonObj max = bounds.objValue()["1"].objValue().copy();
        TRY_STATUS(table.shardKeyPattern().validateKey(max));
        const auto& pattern = table.shardKeyPattern();
        if (pattern.encodeKey(chunk.min) != pattern.encodeKey(key) ||
            pattern.encodeKey(chunk.max) != pattern.encodeKey(max)) {
            return Status(656452, "no chunk found with the shard key bounds [" + key.toJson() +
                                      ", " + max.toJson() + ")");
        }
    }

    BsonBuilder cmd;
    cmd.append("_configsvrMoveRange", ns)
        .append("min", chunk.min)
        .append("max", chunk.max)
        .append("toShard", to);
    bool waitForDelete =
        request.body["_waitForDelete"].trueValue() || request.body["waitForDelete"].trueValue();
    cmd.appendBool("waitForDelete", waitForDelete);
    TRY_STATUS(moveRangeOnConfig(router, ns, cmd.obj()));
    reply.appendInt64("millis", std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::steady_clock::now() - start)
                                    .count());
    return Status::OK();
}

// moveRange: ns, toShard, min?, max? → _configsvrMoveRange.
Status moveRange(OperationContext& opCtx, const CommandRequest& request, BsonBuilder&) {
    TRY_STATUS(
        checkKnownFields(request, {"min", "max", "toShard", "waitForDelete", "_waitForDelete",
                                   "forceJumbo", "secondaryThrottle", "_secondaryThrottle"}));
    ASSIGN_OR_RETURN(std::string ns, nsArgument(request));
    ASSIGN_OR_RETURN(std::string to, stringArgument(request, "toShard"));
    auto min = request.body["min"];
    auto max = request.body["max"];
    if (min.eoo() && max.eoo()) {
        return Status(ErrorCodes::InvalidOptions, "At least one of 'min' or 'max' is required");
    }
    Router& router = Router::get(opCtx);
    BsonBuilder cmd;
    cmd.append("_configsvrMoveRange", ns);
    if (!min.eoo()) cmd.appendElement(min);
    if (!max.eoo()) cmd.appendElement(max);
    cmd.append("toShard", to);
    cmd.appendBool("waitForDelete", request.body["waitForDelete"].trueValue() ||
                                        request.body["_waitForDelete"].trueValue());
    if (auto f = request.body["forceJumbo"]; !f.eoo()) cmd.appendElement(f);
    return moveRangeOnConfig(router, ns, cmd.obj());
}

// movePrimary: db, to → _configsvrMovePrimary.
Status movePrimary(OperationContext& opCtx, const CommandRequest& request, BsonBuilder&) {
    TRY_STATUS(checkKnownFields(request, {"to"}));
    auto first = request.firstElement();
    if (first.type() != BsonType::String || first.stringValue().empty()) {
        return Status(ErrorCodes::InvalidNamespace, "movePrimary requires a database name");
    }
    std::string db(first.stringValue());
    ASSIGN_OR_RETURN(std::string to, stringArgument(request, "to"));
    Router& router = Router::get(opCtx);
    BsonBuilder cmd;
    cmd.append("_configsvrMovePrimary", db).append("to", to);
    auto r = router.client().runCommand(router.configHost(), "admin", cmd.obj(),
                                        std::chrono::minutes(30));
    router.catalog().invalidateDatabase(db);
    if (!r.isOK()) return r.getStatus();
    return net::replyStatus(r.getValue());
}

// addShard: "h:p" | "rs/h:p,...", name? → _configsvrAddShard. {shardAdded}.
Status addShard(OperationContext& opCtx, const CommandRequest& request, BsonBuilder& reply) {
    TRY_STATUS(checkKnownFields(request, {"name"}));
    auto first = request.firstElement();
    if (first.type() != BsonType::String || first.stringValue().empty()) {
        return Status(ErrorCodes::BadValue, "addShard requires a host string");
    }
    std::string host(first.stringValue());  // "h:p", or a replica set "rs/h1:p,h2:p"
    Router& router = Router::get(opCtx);
    BsonBuilder cmd;
    cmd.append("_configsvrAddShard", host);
    if (auto n = request.body["name"]; n.type() == BsonType::String) cmd.appendElement(n);
    auto r = runConfigsvrCommand(router, cmd.obj());
    router.shards().invalidate();
    if (!r.isOK()) return r.getStatus();
    auto added = r.getValue()["shardAdded"];
    if (!added.eoo()) reply.appendElement(added);
    return Status::OK();
}

// listShards: {shards: [config.shards docs]}, read as the catalog is (cluster::findAll: at the
// config service's primary, or a member that answers when it has none).
Status listShards(OperationContext& opCtx, const CommandRequest& request, BsonBuilder& reply) {
    TRY_STATUS(checkKnownFields(request, {"filter"}));
    Router& router = Router::get(opCtx);
    BsonBuilder sort;
    sort.appendInt32("_id", 1);
    bson::BsonElement filter = request.body["filter"];
    ASSIGN_OR_RETURN(
        std::vector<BsonObj> shards,
        cluster::findAll(router.client(), router.configHost(), "config", "shards",
                         filter.isObject() ? filter.objValue() : bson::BsonView(), sort.obj(),
                         /*primaryPreferred=*/true));
    reply.startArray("shards");
    size_t i = 0;
    for (const BsonObj& shard : shards) reply.append(std::to_string(i++), shard);
    reply.end();
    return Status::OK();
}

// getShardMap: {map, hosts, connStrings}.
Status getShardMap(OperationContext& opCtx, const CommandRequest& request, BsonBuilder& reply) {
    TRY_STATUS(checkKnownFields(request, {}));
    Router& router = Router::get(opCtx);
    ASSIGN_OR_RETURN(auto shards, router.shards().allShards(true));
    reply.startObject("map");
    for (const auto& s : shards) reply.append(s.id, s.host);
    reply.append("config", router.configHost());
    reply.end();
    reply.startObject("hosts");
    for (const auto& s : shards) reply.append(s.host, s.id);
    reply.append(router.configHost(), "config");
    reply.end();
    reply.startObject("connStrings");
    for (const auto& s : shards) reply.append(s.host, s.id);
    reply.append(router.configHost(), "config");
    reply.end();
    return Status::OK();
}

}  // namespace

StatusWith<std::vector<BsonObj>> clusterCurrentOp(Router& router, BsonView shardCommand) {
    ASSIGN_OR_RETURN(auto shards, router.shards().allShards(true));
    // The config server too: its coordinators (DDL, migrations, refine) in progress.
    shards.push_back({"config", router.configHost()});
    std::vector<BsonObj> ops;
    for (const auto& shard : shards) {
        auto r =
            router.client().runCommand(shard.host, "admin", shardCommand, std::chrono::seconds(30));
        if (!r.isOK()) return r.getStatus().withContext("currentOp on " + shard.id + ": ");
        TRY_STATUS(net::replyStatus(r.getValue()));
        bson::BsonElement inprog = r.getValue()["inprog"];
        if (inprog.type() != BsonType::Array) continue;
        for (bson::BsonElement op : inprog.objValue()) {
            if (!op.isObject()) continue;
            BsonBuilder b;
            b.append("shard", shard.id);
            for (bson::BsonElement e : op.objValue()) {
                // MongoDB's form through a router: "<shard>:<opid>", what killOp takes there.
                if (e.fieldName() == "opid" && e.isNumber()) {
                    b.append("opid", shard.id + ":" + std::to_string(e.numberLong()));
                } else {
                    b.appendElement(e);
                }
            }
            ops.push_back(b.obj());
        }
    }
    return ops;
}

namespace {

// currentOp: {currentOp: 1, <filter>...} → {inprog}: every shard's operations in progress (today
// the migrations and range deletions, src/shard/README.md), each with `shard`; the filter fields
// are passed to the shards, which match them.
Status currentOp(OperationContext& opCtx, const CommandRequest& request, BsonBuilder& reply) {
    ASSIGN_OR_RETURN(std::vector<BsonObj> ops,
                     clusterCurrentOp(Router::get(opCtx), forwardableBody(request)));
    reply.startArray("inprog");
    for (size_t i = 0; i < ops.size(); ++i) reply.appendObject(std::to_string(i), ops[i]);
    reply.end();
    return Status::OK();
}

// flushRouterConfig: 1 | "db" | "db.coll" → {flushed: true}.
Status flushRouterConfig(OperationContext& opCtx, const CommandRequest& request,
                         BsonBuilder& reply) {
    TRY_STATUS(checkKnownFields(request, {}));
    Router& router = Router::get(opCtx);
    auto first = request.firstElement();
    if (first.type() == BsonType::String && !first.stringValue().empty()) {
        std::string_view arg = first.stringValue();
        if (arg.find('.') == std::string_view::npos) {
            router.catalog().invalidateDatabase(arg);
        } else {
            router.catalog().invalidateCollection(arg);
        }
    } else {
        router.catalog().invalidateAll();
    }
    reply.appendBool("flushed", true);
    return Status::OK();
}

// The names of a string array argument `field` (absent: none).
StatusWith<std::set<std::string>> namesArgument(const CommandRequest& request,
                                                std::string_view field) {
    std::set<std::string> names;
    bson::BsonElement e = request.body[field];
    if (e.eoo()) return names;
    if (e.type() != BsonType::Array) {
        return Status(ErrorCodes::TypeMismatch, "BSON field '" + std::string(request.commandName) +
                                                    "." + std::string(field) +
                                                    "' is the wrong type, expected type 'array'");
    }
    for (bson::BsonElement n : e.objValue()) {
        if (n.type() != BsonType::String || n.stringValue().empty()) {
            return Status(ErrorCodes::TypeMismatch, "'" + std::string(request.commandName) + "." +
                                                        std::string(field) +
                                                        "' holds non-empty strings");
        }
        names.emplace(n.stringValue());
    }
    return names;
}

// _routerPlacementChanged: 1, databases: [db...], collections: ["db.coll"...] — the config
// service's push after a placement commit (placement_announcements.h): the cached entries are
// refreshed in the background; the reply does not wait for them.
Status routerPlacementChanged(OperationContext& opCtx, const CommandRequest& request,
                              BsonBuilder&) {
    TRY_STATUS(checkKnownFields(request, {"databases", "collections"}));
    cluster::PlacementChanges changes;
    ASSIGN_OR_RETURN(changes.databases, namesArgument(request, "databases"));
    ASSIGN_OR_RETURN(changes.collections, namesArgument(request, "collections"));
    for (const std::string& ns : changes.collections) {
        size_t dot = ns.find('.');
        if (dot == std::string::npos || dot == 0 || dot + 1 == ns.size()) {
            return Status(ErrorCodes::InvalidNamespace, "invalid namespace '" + ns + "'");
        }
    }
    Router::get(opCtx).announcements().announce(changes);
    return Status::OK();
}

// getShardVersion: ns, fullMetadata? → the router's cached version.
Status getShardVersion(OperationContext& opCtx, const CommandRequest& request, BsonBuilder& reply) {
    TRY_STATUS(checkKnownFields(request, {"fullMetadata"}));
    ASSIGN_OR_RETURN(std::string ns, nsArgument(request));
    Router& router = Router::get(opCtx);
    auto found = router.catalog().getCollectionRoutingInfo(ns);
    if (!found.isOK() && !found.getStatus().is(ErrorCodes::NamespaceNotFound)) {
        return found.getStatus();
    }
    if (!found.isOK() || !found.getValue().isSharded()) {
        return Status(ErrorCodes::NamespaceNotSharded, "Collection " + ns + " is not sharded.");
    }
    const auto& info = found.getValue();
    const auto& v = info.table->collectionVersion();
    reply.appendTimestamp("version", v.placement().value);
    reply.append("versionEpoch", v.epoch());
    reply.appendTimestamp("versionTimestamp", v.timestamp().value);
    if (request.body["fullMetadata"].trueValue()) {
        reply.startArray("chunks");
        const auto& map = info.table->chunkMap();
        for (size_t i = 0; i < map.size(); ++i) {
            reply.startArray(std::to_string(i))
                .append("0", map.chunk(i).min)
                .append("1", map.chunk(i).max)
                .end();
        }
        reply.end();
    }
    return Status::OK();
}

// balancerStart / balancerStop / balancerStatus → _configsvrBalancer*, reply relayed.
CommandFn balancerCommand(std::string configsvrName) {
    return [configsvrName](OperationContext& opCtx, const CommandRequest& request,
                           BsonBuilder& reply) {
        TRY_STATUS(checkKnownFields(request, {}));
        Router& router = Router::get(opCtx);
        BsonBuilder cmd;
        cmd.appendInt32(configsvrName, 1);
        ASSIGN_OR_RETURN(BsonObj r, runOnConfig(router, "admin", cmd.obj()));
        return relayRemoteReply(opCtx, r, reply);
    };
}

// startShardDraining / stopShardDraining / shardDrainingStatus / commitShardRemoval /
// removeShard: <shardId> → _configsvr<Name>, reply relayed.
CommandFn shardRemovalCommand(std::string configsvrName) {
    return [configsvrName](OperationContext& opCtx, const CommandRequest& request,
                           BsonBuilder& reply) {
        TRY_STATUS(checkKnownFields(request, {}));
        bson::BsonElement shard = request.firstElement();
        if (shard.type() != BsonType::String || shard.stringValue().empty()) {
            return Status(ErrorCodes::TypeMismatch,
                          std::string(request.commandName) + " takes a shard id string");
        }
        BsonBuilder cmd;
        cmd.append(configsvrName, shard.stringValue());
        ASSIGN_OR_RETURN(BsonObj r, runOnConfig(Router::get(opCtx), "admin", cmd.obj()));
        return relayRemoteReply(opCtx, r, reply);
    };
}

// addShardToZone / removeShardFromZone: <shard>, zone → _configsvr<Name>.
CommandFn shardZoneCommand(std::string configsvrName) {
    return [configsvrName](OperationContext& opCtx, const CommandRequest& request,
                           BsonBuilder& reply) {
        TRY_STATUS(checkKnownFields(request, {"zone"}));
        bson::BsonElement shard = request.firstElement();
        if (shard.type() != BsonType::String || shard.stringValue().empty()) {
            return Status(ErrorCodes::TypeMismatch,
                          std::string(request.commandName) + " takes a shard id string");
        }
        if (request.body["zone"].type() != BsonType::String) {
            return Status(ErrorCodes::TypeMismatch, "zone must be a string");
        }
        BsonBuilder cmd;
        cmd.append(configsvrName, shard.stringValue());
        cmd.appendElement(request.body["zone"]);
        ASSIGN_OR_RETURN(BsonObj r, runOnConfig(Router::get(opCtx), "admin", cmd.obj()));
        return relayRemoteReply(opCtx, r, reply);
    };
}

// updateZoneKeyRange: ns, min, max, zone (string | null) → _configsvrUpdateZoneKeyRange.
Status updateZoneKeyRange(OperationContext& opCtx, const CommandRequest& request,
                          BsonBuilder& reply) {
    TRY_STATUS(checkKnownFields(request, {"min", "max", "zone"}));
    ASSIGN_OR_RETURN(std::string ns, nsArgument(request));
    if (!request.body["min"].isObject() || !request.body["max"].isObject()) {
        return Status(ErrorCodes::TypeMismatch, "updateZoneKeyRange needs min and max objects");
    }
    bson::BsonElement zone = request.body["zone"];
    if (zone.type() != BsonType::String && !zone.isNull()) {
        return Status(ErrorCodes::TypeMismatch, "zone must be a string or null");
    }
    BsonBuilder cmd;
    cmd.append("_configsvrUpdateZoneKeyRange", ns);
    cmd.appendElement(request.body["min"]);
    cmd.appendElement(request.body["max"]);
    cmd.appendElement(zone);
    ASSIGN_OR_RETURN(BsonObj r, runOnConfig(Router::get(opCtx), "admin", cmd.obj()));
    return relayRemoteReply(opCtx, r, reply);
}

// refineCollectionShardKey: ns, key → _configsvrRefineCollectionShardKey; then this router's
// cached placement of ns is dropped (its generation changed).
Status refineCollectionShardKey(OperationContext& opCtx, const CommandRequest& request,
                                BsonBuilder& reply) {
    TRY_STATUS(checkKnownFields(request, {"key"}));
    ASSIGN_OR_RETURN(std::string ns, nsArgument(request));
    if (!request.body["key"].isObject()) {
        return Status(ErrorCodes::TypeMismatch, "refineCollectionShardKey needs key: {...}");
    }
    Router& router = Router::get(opCtx);
    BsonBuilder cmd;
    cmd.append("_configsvrRefineCollectionShardKey", ns);
    cmd.appendElement(request.body["key"]);
    ASSIGN_OR_RETURN(BsonObj r, runOnConfig(router, "admin", cmd.obj()));
    router.catalog().invalidateCollection(ns);
    return relayRemoteReply(opCtx, r, reply);
}

// clearJumboFlag: ns, find | bounds → _configsvrClearJumboFlag.
Status clearJumboFlag(OperationContext& opCtx, const CommandRequest& request, BsonBuilder& reply) {
    TRY_STATUS(checkKnownFields(request, {"find", "bounds"}));
    ASSIGN_OR_RETURN(std::string ns, nsArgument(request));
    BsonBuilder cmd;
    cmd.append("_configsvrClearJumboFlag", ns);
    if (!request.body["find"].eoo()) {
        if (!request.body["find"].isObject()) {
            return Status(ErrorCodes::TypeMismatch, "find must be an object");
        }
        cmd.appendElement(request.body["find"]);
    }
    if (!request.body["bounds"].eoo()) {
        if (!request.body["bounds"].isArray()) {
            return Status(ErrorCodes::TypeMismatch, "bounds must be an array [min, max]");
        }
        cmd.appendElement(request.body["bounds"]);
    }
    ASSIGN_OR_RETURN(BsonObj r, runOnConfig(Router::get(opCtx), "admin", cmd.obj()));
    return relayRemoteReply(opCtx, r, reply);
}

// configureCollectionBalancing: ns, chunkSize (MB), enableAutoMerger, defragmentCollection.
// Tessera has no defragmentation (the auto-merger and the balancer keep chunks proportional to
// the data all the time): asking for it is refused, turning it off is what is (and stays) so.
Status configureCollectionBalancing(OperationContext& opCtx, const CommandRequest& request,
                                    BsonBuilder& reply) {
    TRY_STATUS(
        checkKnownFields(request, {"chunkSize", "defragmentCollection", "enableAutoMerger"}));
    ASSIGN_OR_RETURN(std::string ns, nsArgument(request));
    if (request.body["defragmentCollection"].trueValue()) {
        return Status(ErrorCodes::IllegalOperation,
                      "configureCollectionBalancing: defragmentCollection is not supported by "
                      "Tessera (the auto-merger merges small neighbouring chunks in every "
                      "balancer round); only chunkSize and enableAutoMerger can be set");
    }
    BsonBuilder cmd;
    cmd.append("_configsvrConfigureCollectionBalancing", ns);
    if (!request.body["chunkSize"].eoo()) cmd.appendElement(request.body["chunkSize"]);
    if (!request.body["enableAutoMerger"].eoo()) {
        cmd.appendElement(request.body["enableAutoMerger"]);
    }
    ASSIGN_OR_RETURN(BsonObj r, runOnConfig(Router::get(opCtx), "admin", cmd.obj()));
    return relayRemoteReply(opCtx, r, reply);
}

// balancerCollectionStatus: "db.c" → _configsvrBalancerCollectionStatus, reply relayed.
Status balancerCollectionStatus(OperationContext& opCtx, const CommandRequest& request,
                                BsonBuilder& reply) {
    TRY_STATUS(checkKnownFields(request, {}));
    ASSIGN_OR_RETURN(std::string ns, nsArgument(request));
    Router& router = Router::get(opCtx);
    BsonBuilder cmd;
    cmd.append("_configsvrBalancerCollectionStatus", ns);
    ASSIGN_OR_RETURN(BsonObj r, runOnConfig(router, "admin", cmd.obj()));
    return relayRemoteReply(opCtx, r, reply);
}

}  // namespace

void registerRouterAdminCommands(command::CommandRegistry& registry) {
    registry.add(makeRouterCommand("enableSharding", {"enablesharding"}, true, enableSharding));
    registry.add(makeRouterCommand("shardCollection", {"shardcollection"}, true, shardCollection));
    registry.add(makeRouterCommand("split", {}, true, split));
    registry.add(makeRouterCommand("mergeChunks", {}, true, mergeChunks));
    registry.add(makeRouterCommand("moveChunk", {"movechunk"}, true, moveChunk));
    registry.add(makeRouterCommand("moveRange", {}, true, moveRange));
    registry.add(makeRouterCommand("movePrimary", {"moveprimary"}, true, movePrimary));
    registry.add(makeRouterCommand("addShard", {"addshard"}, true, addShard));
    registry.add(makeRouterCommand("listShards", {"listshards"}, true, listShards));
    registry.add(makeRouterCommand("currentOp", {}, true, currentOp));
    registry.add(makeRouterCommand("getShardMap", {}, true, getShardMap));
    registry.add(
        makeRouterCommand("flushRouterConfig", {"flushrouterconfig"}, true, flushRouterConfig));
    registry.add(makeRouterCommand("getShardVersion", {"getshardversion"}, true, getShardVersion));
    registry.add(makeRouterCommand("_routerPlacementChanged", {}, true, routerPlacementChanged));
    registry.add(
        makeRouterCommand("balancerStart", {}, true, balancerCommand("_configsvrBalancerStart")));
    registry.add(
        makeRouterCommand("balancerStop", {}, true, balancerCommand("_configsvrBalancerStop")));
    registry.add(
        makeRouterCommand("balancerStatus", {}, true, balancerCommand("_configsvrBalancerStatus")));
    registry.add(makeRouterCommand("balancerCollectionStatus", {}, true, balancerCollectionStatus));
    registry.add(makeRouterCommand("refineCollectionShardKey", {}, true, refineCollectionShardKey));
    registry.add(makeRouterCommand("clearJumboFlag", {}, true, clearJumboFlag));
    registry.add(
        makeRouterCommand("configureCollectionBalancing", {}, true, configureCollectionBalancing));
    for (auto [name, configsvr] :
         {std::pair{"startShardDraining", "_configsvrStartShardDraining"},
          std::pair{"stopShardDraining", "_configsvrStopShardDraining"},
          std::pair{"shardDrainingStatus", "_configsvrShardDrainingStatus"},
          std::pair{"commitShardRemoval", "_configsvrCommitShardRemoval"},
          std::pair{"removeShard", "_configsvrRemoveShard"}}) {
        registry.add(makeRouterCommand(name, {}, true, shardRemovalCommand(configsvr)));
    }
    registry.add(makeRouterCommand("addShardToZone", {}, true,
                                   shardZoneCommand("_configsvrAddShardToZone")));
    registry.add(makeRouterCommand("removeShardFromZone", {}, true,
                                   shardZoneCommand("_configsvrRemoveShardFromZone")));
    registry.add(makeRouterCommand("updateZoneKeyRange", {}, true, updateZoneKeyRange));
}

}  // namespace tessera::router
