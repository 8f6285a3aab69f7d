// The _configsvr* commands (src/cluster/README.md "On the config server"): argument parsing and
// reply shapes; the work is in ConfigServerImpl.
#include <functional>

#include "bson/bson_builder.h"
#include "command/registry.h"
#include "config/config_server.h"
#include "config/config_server_impl.h"

namespace tessera::config {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using bson::BsonView;
using command::CommandRequest;
using command::OperationContext;

namespace {

using Handler = std::function<Status(ConfigServerImpl&, const CommandRequest&, BsonBuilder&)>;

class ConfigCommand : public command::Command {
  public:
    ConfigCommand(std::string name, Handler handler)
        : _name(std::move(name)), _handler(std::move(handler)) {}
    std::string_view name() const override { return _name; }
    bool adminOnly() const override { return true; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(ConfigServerImpl * impl, configServerImpl(opCtx));
        return _handler(*impl, request, reply);
    }

  private:
    std::string _name;
    Handler _handler;
};

StatusWith<std::string> stringArg(const CommandRequest& req, std::string_view name) {
    BsonElement e = req.body[name];
    if (e.type() != BsonType::String) {
        return Status(
            ErrorCodes::TypeMismatch,
            "'" + std::string(name) + "' must be a string for " + std::string(req.commandName));
    }
    return std::string(e.stringValue());
}

std::optional<std::string> optString(const CommandRequest& req, std::string_view name) {
    BsonElement e = req.body[name];
    if (e.type() != BsonType::String) return std::nullopt;
    return std::string(e.stringValue());
}

std::optional<BsonObj> optObject(const CommandRequest& req, std::string_view name) {
    BsonElement e = req.body[name];
    if (!e.isObject()) return std::nullopt;
    return e.objValue().copy();
}

std::string firstString(const CommandRequest& req) {
    BsonElement e = req.firstElement();
    return e.type() == BsonType::String ? std::string(e.stringValue()) : std::string();
}

Status requireFirstString(const CommandRequest& req, std::string& out) {
    out = firstString(req);
    if (out.empty()) {
        return Status(ErrorCodes::TypeMismatch,
                      std::string(req.commandName) + " requires a string argument");
    }
    return Status::OK();
}

Status addShard(ConfigServerImpl& cs, const CommandRequest& req, BsonBuilder& reply) {
    std::string host;
    TRY_STATUS(requireFirstString(req, host));
    // "rs/h1:p,h2:p": Tessera shards are single nodes; take the first host of the seed list.
    size_t slash = host.find('/');
    if (slash != std::string::npos) host = host.substr(slash + 1);
    size_t comma = host.find(',');
    if (comma != std::string::npos) host = host.substr(0, comma);
    ASSIGN_OR_RETURN(std::string name, cs.addShard(host, optString(req, "name")));
    reply.appendString("shardAdded", name);
    return Status::OK();
}

Status createDatabase(ConfigServerImpl& cs, const CommandRequest& req, BsonBuilder& reply) {
    std::string db;
    TRY_STATUS(requireFirstString(req, db));
    ASSIGN_OR_RETURN(BsonObj doc, cs.createDatabase(db, optString(req, "primaryShard")));
    reply.appendObject("database", doc);
    return Status::OK();
}

Status shardCollection(ConfigServerImpl& cs, const CommandRequest& req, BsonBuilder& reply) {
    std::string ns;
    TRY_STATUS(requireFirstString(req, ns));
    auto key = optObject(req, "key");
    if (!key) return Status(ErrorCodes::BadValue, "shardCollection requires a 'key' document");
    BsonElement collation = req.body["collation"];
    if (collation.isObject() && !collation.objValue().isEmpty()) {
        BsonElement locale = collation.objValue()["locale"];
        if (locale.type() != BsonType::String || locale.stringValue() != "simple") {
            return Status(ErrorCodes::BadValue,
                          "The collation for shardCollection must be {locale: 'simple'}");
        }
    }
    int numInitialChunks = 0;
    if (req.body["numInitialChunks"].isNumber()) {
        numInitialChunks = req.body["numInitialChunks"].numberInt();
    }
    bool simpleCollation = collation.isObject() && !collation.objValue().isEmpty();
    bool implicitlyCreateIndex =
        req.body["implicitlyCreateIndex"].eoo() || req.body["implicitlyCreateIndex"].trueValue();
    TRY_STATUS(cs.shardCollection(ns, *key, req.body["unique"].trueValue(), numInitialChunks,
                                  simpleCollation, implicitlyCreateIndex));
    reply.appendString("collectionsharded", ns);
    return Status::OK();
}

Status splitChunk(ConfigServerImpl& cs, const CommandRequest& req, BsonBuilder&) {
    std::string ns;
    TRY_STATUS(requireFirstString(req, ns));
    return cs.splitChunk(ns, req.body);
}

Status mergeChunks(ConfigServerImpl& cs, const CommandRequest& req, BsonBuilder&) {
    std::string ns;
    TRY_STATUS(requireFirstString(req, ns));
    BsonElement bounds = req.body["bounds"];
    if (!bounds.isArray() || bounds.objValue().nFields() != 2) {
        return Status(ErrorCodes::BadValue, "mergeChunks requires bounds: [min, max]");
    }
    auto it = bounds.objValue().begin();
    BsonElement lo = *it++;
    BsonElement hi = *it;
    if (!lo.isObject() || !hi.isObject()) {
        return Status(ErrorCodes::BadValue, "mergeChunks bounds must be two documents");
    }
    return cs.mergeChunks(ns, lo.objValue(), hi.objValue());
}

Status moveRange(ConfigServerImpl& cs, const CommandRequest& req, BsonBuilder&) {
    std::string ns;
    TRY_STATUS(requireFirstString(req, ns));
    auto to = optString(req, "toShard");
    if (!to) to = optString(req, "to");
    if (!to) return Status(ErrorCodes::BadValue, "moveRange requires 'toShard'");
    bool waitForDelete =
        req.body["waitForDelete"].trueValue() || req.body["_waitForDelete"].trueValue();
    return cs.moveRange(ns, optObject(req, "min"), optObject(req, "max"), *to, waitForDelete);
}

Status movePrimary(ConfigServerImpl& cs, const CommandRequest& req, BsonBuilder&) {
    std::string db;
    TRY_STATUS(requireFirstString(req, db));
    ASSIGN_OR_RETURN(std::string to, stringArg(req, "to"));
    return cs.movePrimary(db, to);
}

Status dropCollection(ConfigServerImpl& cs, const CommandRequest& req, BsonBuilder& reply) {
    std::string ns;
    TRY_STATUS(requireFirstString(req, ns));
    return cs.dropCollection(ns, reply);
}

Status dropDatabase(ConfigServerImpl& cs, const CommandRequest& req, BsonBuilder& reply) {
    std::string db;
    TRY_STATUS(requireFirstString(req, db));
    return cs.dropDatabase(db, reply);
}

}  // namespace

void registerConfigServerCommands(command::CommandRegistry& registry) {
    auto add = [&](std::string name, Handler h) {
        registry.add(std::make_unique<ConfigCommand>(std::move(name), std::move(h)));
    };
    add("_configsvrAddShard", addShard);
    add("_configsvrCreateDatabase", createDatabase);
    add("_configsvrShardCollection", shardCollection);
    add("_configsvrSplitChunk", splitChunk);
    add("_configsvrMergeChunks", mergeChunks);
    add("_configsvrMoveRange", moveRange);
    add("_configsvrMovePrimary", movePrimary);
    add("_configsvrDropCollection", dropCollection);
    add("_configsvrDropDatabase", dropDatabase);
    add("_configsvrBalancerStart", [](ConfigServerImpl& cs, const CommandRequest&, BsonBuilder&) {
        return cs.setBalancerMode(true);
    });
    add("_configsvrBalancerStop", [](ConfigServerImpl& cs, const CommandRequest&, BsonBuilder&) {
        return cs.setBalancerMode(false);
    });
    add("_configsvrBalancerStatus",
        [](ConfigServerImpl& cs, const CommandRequest&, BsonBuilder& reply) {
            ASSIGN_OR_RETURN(BsonObj status, cs.balancerStatus());
            reply.appendElements(status);
            return Status::OK();
        });
    // Draining and removal: {<command>: shardId}.
    auto shardArg = [](const CommandRequest& req) -> StatusWith<std::string> {
        if (req.firstElement().type() != bson::BsonType::String ||
            req.firstElement().stringValue().empty()) {
            return Status(ErrorCodes::TypeMismatch, "the command takes a shard id");
        }
        return std::string(req.firstElement().stringValue());
    };
    add("_configsvrStartShardDraining",
        [shardArg](ConfigServerImpl& cs, const CommandRequest& req, BsonBuilder&) {
            ASSIGN_OR_RETURN(std::string shard, shardArg(req));
            return cs.setShardDraining(shard, true);
        });
    add("_configsvrStopShardDraining",
        [shardArg](ConfigServerImpl& cs, const CommandRequest& req, BsonBuilder&) {
            ASSIGN_OR_RETURN(std::string shard, shardArg(req));
            return cs.setShardDraining(shard, false);
        });
    add("_configsvrShardDrainingStatus",
        [shardArg](ConfigServerImpl& cs, const CommandRequest& req, BsonBuilder& reply) {
            ASSIGN_OR_RETURN(std::string shard, shardArg(req));
            ASSIGN_OR_RETURN(BsonObj status, cs.shardDrainingStatus(shard));
            reply.appendElements(status);
            return Status::OK();
        });
    add("_configsvrCommitShardRemoval",
        [shardArg](ConfigServerImpl& cs, const CommandRequest& req, BsonBuilder&) {
            ASSIGN_OR_RETURN(std::string shard, shardArg(req));
            return cs.commitShardRemoval(shard);
        });
    add("_configsvrRemoveShard",
        [shardArg](ConfigServerImpl& cs, const CommandRequest& req, BsonBuilder& reply) {
            ASSIGN_OR_RETURN(std::string shard, shardArg(req));
            ASSIGN_OR_RETURN(BsonObj status, cs.removeShard(shard));
            reply.appendElements(status);
            return Status::OK();
        });
    // Zones: {_configsvrAddShardToZone | _configsvrRemoveShardFromZone: shard, zone} and
    // {_configsvrUpdateZoneKeyRange: ns, min, max, zone: string | null}.
    for (bool addZone : {true, false}) {
        add(addZone ? "_configsvrAddShardToZone" : "_configsvrRemoveShardFromZone",
            [shardArg, addZone](ConfigServerImpl& cs, const CommandRequest& req, BsonBuilder&) {
                ASSIGN_OR_RETURN(std::string shard, shardArg(req));
                if (req.body["zone"].type() != bson::BsonType::String) {
                    return Status(ErrorCodes::TypeMismatch, "zone must be a string");
                }
                return cs.updateShardZone(shard, std::string(req.body["zone"].stringValue()),
                                          addZone);
            });
    }
    add("_configsvrUpdateZoneKeyRange",
        [](ConfigServerImpl& cs, const CommandRequest& req, BsonBuilder&) {
            if (req.firstElement().type() != bson::BsonType::String) {
                return Status(ErrorCodes::TypeMismatch, "updateZoneKeyRange takes a namespace");
            }
            if (!req.body["min"].isObject() || !req.body["max"].isObject()) {
                return Status(ErrorCodes::TypeMismatch, "min and max must be objects");
            }
            bson::BsonElement z = req.body["zone"];
            std::optional<std::string> zone;
            if (z.type() == bson::BsonType::String) {
                zone = std::string(z.stringValue());
            } else if (!z.isNull()) {
                return Status(ErrorCodes::TypeMismatch, "zone must be a string or null");
            }
            return cs.updateZoneKeyRange(std::string(req.firstElement().stringValue()),
                                         req.body["min"].objValue().copy(),
                                         req.body["max"].objValue().copy(), zone);
        });
    // {_configsvrRefineCollectionShardKey: ns, key}.
    add("_configsvrRefineCollectionShardKey", [](ConfigServerImpl& cs, const CommandRequest& req,
                                                 BsonBuilder&) {
        if (req.firstElement().type() != bson::BsonType::String) {
            return Status(ErrorCodes::TypeMismatch, "refineCollectionShardKey takes a namespace");
        }
        if (!req.body["key"].isObject()) {
            return Status(ErrorCodes::TypeMismatch, "refineCollectionShardKey needs key: {...}");
        }
        return cs.refineCollectionShardKey(std::string(req.firstElement().stringValue()),
                                           req.body["key"].objValue());
    });
    // {_configsvrClearJumboFlag: ns, find? | bounds?: [min, max]}.
    add("_configsvrClearJumboFlag",
        [](ConfigServerImpl& cs, const CommandRequest& req, BsonBuilder&) {
            if (req.firstElement().type() != bson::BsonType::String) {
                return Status(ErrorCodes::TypeMismatch, "clearJumboFlag takes a namespace");
            }
            std::optional<BsonObj> find;
            std::optional<std::pair<BsonObj, BsonObj>> bounds;
            if (req.body["find"].isObject()) find = req.body["find"].objValue().copy();
            if (req.body["bounds"].isArray()) {
                std::vector<BsonObj> b;
                for (bson::BsonElement e : req.body["bounds"].objValue()) {
                    if (e.isObject()) b.push_back(e.objValue().copy());
                }
                if (b.size() != 2) {
                    return Status(ErrorCodes::BadValue, "bounds must be [min, max]");
                }
                bounds = std::pair{b[0], b[1]};
            }
            if (find.has_value() == bounds.has_value()) {
                return Status(ErrorCodes::BadValue,
                              "clearJumboFlag takes exactly one of find and bounds");
            }
            return cs.clearJumboFlag(std::string(req.firstElement().stringValue()), find, bounds);
        });
    // {_configsvrConfigureCollectionBalancing: ns, chunkSize?: MB (0 = the cluster's),
    //  enableAutoMerger?: bool}.
    add("_configsvrConfigureCollectionBalancing",
        [](ConfigServerImpl& cs, const CommandRequest& req, BsonBuilder&) {
            if (req.firstElement().type() != bson::BsonType::String) {
                return Status(ErrorCodes::TypeMismatch,
                              "configureCollectionBalancing takes a namespace");
            }
            std::optional<int64_t> chunkSizeMB;
            if (bson::BsonElement c = req.body["chunkSize"]; !c.eoo()) {
                if (!c.isNumber() || c.numberLong() < 0 || c.numberLong() > 1024) {
                    return Status(ErrorCodes::BadValue,
                                  "chunkSize must be a number of MB from 1 to 1024 (0: the "
                                  "cluster's chunk size)");
                }
                chunkSizeMB = c.numberLong();
            }
            std::optional<bool> autoMerge;
            if (bson::BsonElement m = req.body["enableAutoMerger"]; !m.eoo()) {
                if (m.type() != bson::BsonType::Bool) {
                    return Status(ErrorCodes::TypeMismatch, "enableAutoMerger must be a boolean");
                }
                autoMerge = m.boolValue();
            }
            return cs.configureCollectionBalancing(std::string(req.firstElement().stringValue()),
                                                   chunkSizeMB, autoMerge);
        });
    // {_configsvrBalancerCollectionStatus: ns} → MongoDB's balancerCollectionStatus reply.
    add("_configsvrBalancerCollectionStatus",
        [](ConfigServerImpl& cs, const CommandRequest& req, BsonBuilder& reply) {
            if (req.firstElement().type() != bson::BsonType::String) {
                return Status(ErrorCodes::TypeMismatch,
                              "balancerCollectionStatus takes a namespace string");
            }
            ASSIGN_OR_RETURN(BsonObj status, cs.balancerCollectionStatus(
                                                 std::string(req.firstElement().stringValue())));
            reply.appendElements(status);
            return Status::OK();
        });
}

}  // namespace tessera::config
