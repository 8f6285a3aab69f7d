// fsync: flush every pending write to the data files (MongoDB's admin command, without `lock`).

#include "command/registry.h"
#include "command/reply_util.h"
#include "storage/engine.h"

namespace tessera::command {
namespace {

class FsyncCommand : public Command {
  public:
    std::string_view name() const override { return "fsync"; }
    bool adminOnly() const override { return true; }
    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(bool lock, boolArgument(request.body["lock"], "fsync"));
        if (lock) {
            // Locking out writes is for file-copy backups, which a RocksDB data directory cannot
            // be taken by while background compactions rewrite its files.
            return Status(ErrorCodes::NotImplemented,
                          "fsync with lock: true is not supported; run fsync without lock to "
                          "flush pending writes to the data files");
        }
        TRY_STATUS(opCtx.service->engine->flush());
        reply.appendInt32("numFiles", 1);  // MongoDB reports 1 for its single storage engine
        return Status::OK();
    }
};

}  // namespace

void registerFsyncCommand(CommandRegistry& registry) {
    registry.add(std::make_unique<FsyncCommand>());
}

}  // namespace tessera::command
