// The serving side of a replica set member's initial sync (repl/sync_source.h, src/repl/README.md
// "Initial sync"): internal commands a member too far behind the group's log sends to a healthy
// member to copy its database's files. Served by any member (a secondary too); answered with
// NoReplicationEnabled (76) by a process without --replSet.
//   {_replSyncStart: 1} → {id, logIndex, files: [{name, size}]}
//   {_replSyncRead: id, file, offset, length} → {data: BinData} (fewer bytes at the file's end)
//   {_replSyncEnd: id} → {} (the copy is removed)

#include "command/command_args.h"
#include "command/registry.h"
#include "repl/replica_set.h"

namespace tessera::command {
namespace {

StatusWith<repl::SyncSource*> syncSourceOf(const OperationContext& opCtx) {
    if (!opCtx.service || !opCtx.service->replicaSet) {
        return Status(ErrorCodes::NoReplicationEnabled, "not running with --replSet");
    }
    return &opCtx.service->replicaSet->syncSource();
}

class ReplSyncStartCommand : public Command {
  public:
    std::string_view name() const override { return "_replSyncStart"; }
    bool adminOnly() const override { return true; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        static const CommandArgsSpec spec{"_replSyncStart", ArgKind::kAny, {}};
        TRY_STATUS(CommandArgs::parse(spec, request).getStatus());
        ASSIGN_OR_RETURN(repl::SyncSource * source, syncSourceOf(opCtx));
        ASSIGN_OR_RETURN(repl::SyncSource::Copy copy, source->start());
        reply.append("id", copy.id);
        reply.appendInt64("logIndex", static_cast<int64_t>(copy.checkpoint.logIndex));
        bson::BsonBuilder& files = reply.startArray("files");
        int i = 0;
        for (const storage::CheckpointFile& f : copy.checkpoint.files) {
            files.startObject(std::to_string(i++))
                .append("name", f.name)
                .appendInt64("size", static_cast<int64_t>(f.size))
                .end();
        }
        files.end();
        return Status::OK();
    }
};

class ReplSyncReadCommand : public Command {
  public:
    std::string_view name() const override { return "_replSyncRead"; }
    bool adminOnly() const override { return true; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        static const CommandArgsSpec spec{"_replSyncRead",
                                          ArgKind::kNonEmptyString,
                                          {{"file", ArgKind::kNonEmptyString, true},
                                           {"offset", ArgKind::kNumber, true},
                                           {"length", ArgKind::kNumber, true}}};
        ASSIGN_OR_RETURN(CommandArgs args, CommandArgs::parse(spec, request));
        ASSIGN_OR_RETURN(repl::SyncSource * source, syncSourceOf(opCtx));
        const int64_t offset = args["offset"].numberLong();
        const int64_t length = args["length"].numberLong();
        if (offset < 0 || length <= 0) {
            return Status(ErrorCodes::BadValue,
                          "_replSyncRead takes an offset ≥ 0 and a length > 0");
        }
        ASSIGN_OR_RETURN(std::string data, source->read(args.target(), *args.optString("file"),
                                                        static_cast<uint64_t>(offset),
                                                        static_cast<uint64_t>(length)));
        reply.appendBinary("data", 0, data);
        return Status::OK();
    }
};

class ReplSyncEndCommand : public Command {
  public:
    std::string_view name() const override { return "_replSyncEnd"; }
    bool adminOnly() const override { return true; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder&) override {
        static const CommandArgsSpec spec{"_replSyncEnd", ArgKind::kNonEmptyString, {}};
        ASSIGN_OR_RETURN(CommandArgs args, CommandArgs::parse(spec, request));
        ASSIGN_OR_RETURN(repl::SyncSource * source, syncSourceOf(opCtx));
        source->end(args.target());
        return Status::OK();
    }
};

}  // namespace

void registerInitialSyncCommands(CommandRegistry& registry) {
    registry.add(std::make_unique<ReplSyncStartCommand>());
    registry.add(std::make_unique<ReplSyncReadCommand>());
    registry.add(std::make_unique<ReplSyncEndCommand>());
}

}  // namespace tessera::command
