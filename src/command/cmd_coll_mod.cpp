// collMod: changes a collection's validation options.

#include <algorithm>
#include <array>

#include "command/crud_commands.h"
#include "command/document_validation.h"
#include "command/generic_args.h"
#include "command/reply_util.h"
#include "storage/engine.h"

namespace tessera::command {
namespace {

// collMod: {collMod: "c", validator?, validationLevel?, validationAction?} → {}. Index
// modifications (hidden, expireAfterSeconds, unique), views and capped/time-series changes are
// NotImplemented (238); unknown fields are refused (40415), as MongoDB's IDL does.
class CollModCommand final : public Command {
  public:
    std::string_view name() const override { return "collMod"; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(std::string collName, collectionName(request.firstElement(), "collMod"));
        static constexpr std::array<std::string_view, 11> kNotYet = {"index",
                                                                     "expireAfterSeconds",
                                                                     "viewOn",
                                                                     "pipeline",
                                                                     "timeseries",
                                                                     "cappedSize",
                                                                     "cappedMax",
                                                                     "changeStreamPreAndPostImages",
                                                                     "dryRun",
                                                                     "clusteredIndex",
                                                                     "recordIdsReplicated"};
        bson::BsonElement validator, level, action;
        for (bson::BsonElement e : request.body) {
            std::string_view f = e.fieldName();
            if (f == "collMod" || isGenericArgument(f)) continue;
            if (f == "validator") {
                validator = e;
            } else if (f == "validationLevel") {
                level = e;
            } else if (f == "validationAction") {
                action = e;
            } else if (std::find(kNotYet.begin(), kNotYet.end(), f) != kNotYet.end()) {
                return Status(ErrorCodes::NotImplemented,
                              "collMod option '" + std::string(f) + "' is not supported yet");
            } else {
                return Status(40415,
                              "BSON field 'collMod." + std::string(f) + "' is an unknown field.");
            }
        }
        TRY_STATUS(checkValidationOptions(request.db, validator, level, action));

        std::string ns = request.db + "." + collName;
        storage::Engine& engine = *opCtx.service->engine;
        storage::CollectionPtr coll = engine.getCollection(ns);
        if (!coll) return Status(ErrorCodes::NamespaceNotFound, "ns does not exist: " + ns);
        if (!validator && !level && !action) return Status::OK();

        bson::BsonBuilder options;
        for (bson::BsonElement e : coll->options) {
            std::string_view f = e.fieldName();
            if ((f == "validator" && validator) || (f == "validationLevel" && level) ||
                (f == "validationAction" && action)) {
                continue;
            }
            options.appendElement(e);
        }
        if (validator) options.appendElement(validator);
        if (level) options.appendElement(level);
        if (action) options.appendElement(action);
        (void)reply;
        return engine.setCollectionOptions(ns, options.obj());
    }
};

}  // namespace

std::unique_ptr<Command> makeCollModCommand() { return std::make_unique<CollModCommand>(); }

}  // namespace tessera::command
