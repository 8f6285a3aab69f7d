// The _configsvr* commands (src/cluster/README.md "On the config server"): each declares its
// arguments once (command/command_args.h), so that every request is checked — its namespace,
// database or shard id, the type of each field, no unknown field — before the work in
// ConfigServerImpl takes a lock or reads the catalog.
#include <functional>

#include "bson/bson_builder.h"
#include "command/command_args.h"
#include "command/current_op.h"
#include "command/registry.h"
#include "config/config_server.h"
#include "config/config_server_impl.h"
#include "placement/split_policy.h"

namespace tessera::config {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using bson::BsonView;
using command::ArgKind;
using command::CommandArgs;
using command::CommandArgsSpec;
using command::CommandRequest;
using command::OperationContext;

namespace {

using Handler = std::function<Status(ConfigServerImpl&, const CommandArgs&, BsonBuilder&)>;

class ConfigCommand : public command::Command {
  public:
    ConfigCommand(CommandArgsSpec spec, Handler handler)
        : _spec(std::move(spec)), _handler(std::move(handler)) {}
    std::string_view name() const override { return _spec.command; }
    bool adminOnly() const override { return true; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(CommandArgs args, CommandArgs::parse(_spec, request));
        ASSIGN_OR_RETURN(ConfigServerImpl * impl, configServerImpl(opCtx));
        try {
            return _handler(*impl, args, reply);
        } catch (...) {
            return statusFromCurrentException(_spec.command);
        }
    }

  private:
    CommandArgsSpec _spec;
    Handler _handler;
};

// [min, max] of a `bounds` argument: two documents.
StatusWith<std::pair<BsonObj, BsonObj>> boundsArg(const CommandArgs& args,
                                                  std::string_view command) {
    std::vector<BsonObj> b;
    for (BsonElement e : args["bounds"].objValue()) {
        if (!e.isObject()) break;
        b.push_back(e.objValue().copy());
    }
    if (b.size() != 2 || args["bounds"].objValue().nFields() != 2) {
        return Status(ErrorCodes::BadValue,
                      std::string(command) + ": bounds must be two shard keys [min, max]");
    }
    return std::pair{b[0], b[1]};
}

Status addShard(ConfigServerImpl& cs, const CommandArgs& args, BsonBuilder& reply) {
    // "h:p" (one process) or "rs/h1:p,h2:p" (a replica set, reached at its primary).
    ASSIGN_OR_RETURN(std::string name, cs.addShard(args.target(), args.optString("name")));
    reply.appendString("shardAdded", name);
    return Status::OK();
}

Status createDatabase(ConfigServerImpl& cs, const CommandArgs& args, BsonBuilder& reply) {
    ASSIGN_OR_RETURN(BsonObj doc, cs.createDatabase(args.target(), args.optString("primaryShard")));
    reply.appendObject("database", doc);
    return Status::OK();
}

Status shardCollection(ConfigServerImpl& cs, const CommandArgs& args, BsonBuilder& reply) {
    BsonElement collation = args["collation"];
    if (collation.isObject() && !collation.objValue().isEmpty()) {
        BsonElement locale = collation.objValue()["locale"];
        if (locale.type() != BsonType::String || locale.stringValue() != "simple") {
            return Status(ErrorCodes::BadValue,
                          "The collation for shardCollection must be {locale: 'simple'}");
        }
    }
    int numInitialChunks = 0;
    if (BsonElement n = args["numInitialChunks"]; n.isNumber()) {
        // The shard count bounds it further where the chunks are made (split_policy.h).
        TRY_STATUS(placement::checkNumInitialChunks(n.numberLong(), 0));
        numInitialChunks = static_cast<int>(n.numberLong());
    }
    bool simpleCollation = collation.isObject() && !collation.objValue().isEmpty();
    bool implicitlyCreateIndex =
        !args.has("implicitlyCreateIndex") || args.flag("implicitlyCreateIndex");
    TRY_STATUS(cs.shardCollection(args.target(), args["key"].objValue(), args.flag("unique"),
                                  numInitialChunks, simpleCollation, implicitlyCreateIndex));
    reply.appendString("collectionsharded", args.target());
    return Status::OK();
}

Status splitChunk(ConfigServerImpl& cs, const CommandArgs& args, BsonBuilder&) {
    // Which of middle, find and bounds, and the bounds' shape: splitChunk decides.
    return cs.splitChunk(args.target(), args.body());
}

Status mergeChunks(ConfigServerImpl& cs, const CommandArgs& args, BsonBuilder&) {
    ASSIGN_OR_RETURN(auto bounds, boundsArg(args, "mergeChunks"));
    return cs.mergeChunks(args.target(), bounds.first, bounds.second);
}

Status moveRange(ConfigServerImpl& cs, const CommandArgs& args, BsonBuilder&) {
    auto to = args.optString("toShard");
    if (!to) to = args.optString("to");
    if (!to) {
        return Status(40414,
                      "BSON field '_configsvrMoveRange.toShard' is missing but a required "
                      "field");
    }
    if (!args.has("min") && !args.has("max")) {
        return Status(ErrorCodes::InvalidOptions, "At least one of 'min' or 'max' is required");
    }
    bool waitForDelete = args.flag("waitForDelete") || args.flag("_waitForDelete");
    return cs.moveRange(args.target(), args.optObject("min"), args.optObject("max"), *to,
                        waitForDelete);
}

Status clearJumboFlag(ConfigServerImpl& cs, const CommandArgs& args, BsonBuilder&) {
    if (args.has("find") == args.has("bounds")) {
        return Status(ErrorCodes::BadValue, "clearJumboFlag takes exactly one of find and bounds");
    }
    std::optional<std::pair<BsonObj, BsonObj>> bounds;
    if (args.has("bounds")) {
        ASSIGN_OR_RETURN(bounds, boundsArg(args, "clearJumboFlag"));
    }
    return cs.clearJumboFlag(args.target(), args.optObject("find"), bounds);
}

Status configureCollectionBalancing(ConfigServerImpl& cs, const CommandArgs& args, BsonBuilder&) {
    std::optional<int64_t> chunkSizeMB;
    if (BsonElement c = args["chunkSize"]; !c.eoo()) {
        if (c.numberLong() < 0 || c.numberLong() > 1024) {
            return Status(ErrorCodes::BadValue,
                          "chunkSize must be a number of MB from 1 to 1024 (0: the cluster's "
                          "chunk size)");
        }
        chunkSizeMB = c.numberLong();
    }
    std::optional<bool> autoMerge;
    if (BsonElement m = args["enableAutoMerger"]; !m.eoo()) autoMerge = m.boolValue();
    return cs.configureCollectionBalancing(args.target(), chunkSizeMB, autoMerge);
}

Status updateZoneKeyRange(ConfigServerImpl& cs, const CommandArgs& args, BsonBuilder&) {
    std::optional<std::string> zone = args.optString("zone");  // null: remove the range
    return cs.updateZoneKeyRange(args.target(), args["min"].objValue().copy(),
                                 args["max"].objValue().copy(), zone);
}

// currentOp on the config server: its coordinators in progress (their phase, attempts and last
// error), with the command's filter rules (command/current_op.h).
class ConfigCurrentOpCommand final : public command::Command {
  public:
    std::string_view name() const override { return "currentOp"; }
    bool adminOnly() const override { return true; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(ConfigServerImpl * impl, configServerImpl(opCtx));
        ASSIGN_OR_RETURN(command::CurrentOpFilter filter, command::CurrentOpFilter::parse(request));
        bson::BsonArrayBuilder inprog;
        for (BsonObj& op : impl->coordinatorCurrentOps()) {
            if (filter.wants(op)) inprog.append(op);
        }
        reply.appendArray("inprog", inprog.arr());
        return Status::OK();
    }
};

// A handler that appends what the impl returns.
template <typename Fn>
Handler replying(Fn fn) {
    return [fn](ConfigServerImpl& cs, const CommandArgs& args, BsonBuilder& reply) -> Status {
        ASSIGN_OR_RETURN(BsonObj out, fn(cs, args));
        reply.appendElements(out);
        return Status::OK();
    };
}

}  // namespace

void registerConfigServerCommands(command::CommandRegistry& registry) {
    registry.add(std::make_unique<ConfigCurrentOpCommand>());
    auto add = [&](CommandArgsSpec spec, Handler h) {
        registry.add(std::make_unique<ConfigCommand>(std::move(spec), std::move(h)));
    };
    constexpr ArgKind kNs = ArgKind::kNamespace;
    constexpr ArgKind kDb = ArgKind::kDatabase;
    constexpr ArgKind kId = ArgKind::kNonEmptyString;
    constexpr ArgKind kObj = ArgKind::kObject;
    constexpr ArgKind kArr = ArgKind::kArray;
    constexpr ArgKind kBool = ArgKind::kBool;

    add({"_configsvrAddShard", kId, {{"name", kId}}}, addShard);
    add({"_configsvrCreateDatabase", kDb, {{"primaryShard", kId}}}, createDatabase);
    add({"_configsvrShardCollection",
         kNs,
         {{"key", kObj, true},
          {"unique", ArgKind::kBoolOrNumber},
          {"numInitialChunks", ArgKind::kNumber},
          {"collation", kObj},
          {"implicitlyCreateIndex", kBool}}},
        shardCollection);
    add({"_configsvrSplitChunk", kNs, {{"middle", kObj}, {"find", kObj}, {"bounds", kArr}}},
        splitChunk);
    add({"_configsvrMergeChunks", kNs, {{"bounds", kArr, true}}}, mergeChunks);
    add({"_configsvrMoveRange",
         kNs,
         {{"min", kObj},
          {"max", kObj},
          {"toShard", kId},
          {"to", kId},
          {"waitForDelete", ArgKind::kBoolOrNumber},
          {"_waitForDelete", ArgKind::kBoolOrNumber},
          // Tessera moves a range of any size: forcing a jumbo one is what it does anyway.
          {"forceJumbo", ArgKind::kAny}}},
        moveRange);
    add({"_configsvrMovePrimary", kDb, {{"to", kId, true}}},
        [](ConfigServerImpl& cs, const CommandArgs& args, BsonBuilder&) {
            return cs.movePrimary(args.target(), *args.optString("to"));
        });
    add({"_configsvrDropCollection", kNs, {}},
        [](ConfigServerImpl& cs, const CommandArgs& args, BsonBuilder& reply) {
            return cs.dropCollection(args.target(), reply);
        });
    add({"_configsvrDropDatabase", kDb, {}},
        [](ConfigServerImpl& cs, const CommandArgs& args, BsonBuilder& reply) {
            return cs.dropDatabase(args.target(), reply);
        });
    add({"_configsvrBalancerStart", ArgKind::kAny, {}},
        [](ConfigServerImpl& cs, const CommandArgs&, BsonBuilder&) {
            return cs.setBalancerMode(true);
        });
    add({"_configsvrBalancerStop", ArgKind::kAny, {}},
        [](ConfigServerImpl& cs, const CommandArgs&, BsonBuilder&) {
            return cs.setBalancerMode(false);
        });
    add({"_configsvrBalancerStatus", ArgKind::kAny, {}},
        replying([](ConfigServerImpl& cs, const CommandArgs&) { return cs.balancerStatus(); }));
    // Draining and removal: {<command>: shardId}.
    add({"_configsvrStartShardDraining", kId, {}},
        [](ConfigServerImpl& cs, const CommandArgs& args, BsonBuilder&) {
            return cs.setShardDraining(args.target(), true);
        });
    add({"_configsvrStopShardDraining", kId, {}},
        [](ConfigServerImpl& cs, const CommandArgs& args, BsonBuilder&) {
            return cs.setShardDraining(args.target(), false);
        });
    add({"_configsvrShardDrainingStatus", kId, {}},
        replying([](ConfigServerImpl& cs, const CommandArgs& args) {
            return cs.shardDrainingStatus(args.target());
        }));
    add({"_configsvrCommitShardRemoval", kId, {}},
        [](ConfigServerImpl& cs, const CommandArgs& args, BsonBuilder&) {
            return cs.commitShardRemoval(args.target());
        });
    add({"_configsvrRemoveShard", kId, {}},
        replying([](ConfigServerImpl& cs, const CommandArgs& args) {
            return cs.removeShard(args.target());
        }));
    // Zones: {_configsvrAddShardToZone | _configsvrRemoveShardFromZone: shard, zone} and
    // {_configsvrUpdateZoneKeyRange: ns, min, max, zone: string | null}.
    for (bool addZone : {true, false}) {
        add({addZone ? "_configsvrAddShardToZone" : "_configsvrRemoveShardFromZone",
             kId,
             {{"zone", kId, true}}},
            [addZone](ConfigServerImpl& cs, const CommandArgs& args, BsonBuilder&) {
                return cs.updateShardZone(args.target(), *args.optString("zone"), addZone);
            });
    }
    add({"_configsvrUpdateZoneKeyRange",
         kNs,
         {{"min", kObj, true}, {"max", kObj, true}, {"zone", ArgKind::kStringOrNull, true}}},
        updateZoneKeyRange);
    add({"_configsvrRefineCollectionShardKey", kNs, {{"key", kObj, true}}},
        [](ConfigServerImpl& cs, const CommandArgs& args, BsonBuilder&) {
            return cs.refineCollectionShardKey(args.target(), args["key"].objValue());
        });
    add({"_configsvrClearJumboFlag", kNs, {{"find", kObj}, {"bounds", kArr}}}, clearJumboFlag);
    // {_configsvrConfigureCollectionBalancing: ns, chunkSize?: MB (0 = the cluster's),
    //  enableAutoMerger?: bool}.
    add({"_configsvrConfigureCollectionBalancing",
         kNs,
         {{"chunkSize", ArgKind::kNumber}, {"enableAutoMerger", kBool}}},
        configureCollectionBalancing);
    // {_configsvrBalancerCollectionStatus: ns} → MongoDB's balancerCollectionStatus reply.
    add({"_configsvrBalancerCollectionStatus", kNs, {}},
        replying([](ConfigServerImpl& cs, const CommandArgs& args) {
            return cs.balancerCollectionStatus(args.target());
        }));
}

}  // namespace tessera::config
