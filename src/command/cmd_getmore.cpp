#include "command/crud_commands.h"
#include "command/cursor_manager.h"
#include "command/exec/find_request.h"
#include "command/reply_util.h"
#include "command/transaction_ddl.h"
#include "storage/engine.h"

namespace tessera::command {
namespace {

StatusWith<int64_t> cursorIdArgument(const bson::BsonElement& e, std::string_view command) {
    if (e.type() == bson::BsonType::Int64 || e.type() == bson::BsonType::Int32) {
        return e.numberLong();
    }
    return Status(ErrorCodes::TypeMismatch,
                  "BSON field '" + std::string(command) + "." + std::string(e.fieldName()) +
                      "' is the wrong type '" + std::string(bson::typeName(e.type())) +
                      "', expected type 'long'");
}

// getMore: {getMore: Long(id), collection, batchSize?, maxTimeMS?} → {cursor: {nextBatch, id, ns}}.
// An exhausted cursor (or one whose execution failed) is deleted and reported with id 0.
class GetMoreCommand final : public Command {
  public:
    std::string_view name() const override { return "getMore"; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(int64_t id, cursorIdArgument(request.firstElement(), "getMore"));
        bson::BsonElement collElem = request.body["collection"];
        if (collElem.eoo()) {
            return Status(40414,
                          "BSON field 'getMore.collection' is missing but a required "
                          "field");
        }
        ASSIGN_OR_RETURN(std::string coll, collectionName(collElem, "getMore"));
        ASSIGN_OR_RETURN(auto batchSize,
                         exec::nonNegativeArgument(request.body, "batchSize", "getMore"));
        if (batchSize && *batchSize == 0) batchSize.reset();
        std::string ns = request.db + "." + coll;

        ASSIGN_OR_RETURN(PinnedCursor cursor, opCtx.service->cursors->pin(id, ns));
        if (const std::optional<CursorSource>& source = cursor->source) {
            // As find looked it up: a collection created by the cursor's transaction counts.
            storage::CollectionPtr now = lookupCollection(opCtx, source->ns);
            if (!now || now->uuid != source->uuid) {
                cursor.markExhausted();
                return Status(ErrorCodes::QueryPlanKilled,
                              "PlanExecutor error during getMore :: caused by :: collection " +
                                  source->ns +
                                  (now ? " was dropped and created again" : " was dropped") +
                                  " (or renamed) since the cursor opened");
            }
        }
        bson::BsonArrayBuilder batch;
        bool exhausted = false;
        Status s = fillBatch(opCtx, *cursor->exec, batchSize, batch, &exhausted);
        if (!s.isOK()) {
            cursor.markExhausted();
            return s;
        }
        cursor->nReturned += static_cast<int64_t>(batch.count());
        if (exhausted) cursor.markExhausted();
        exec::appendCursor(reply, "nextBatch", batch, exhausted ? 0 : id, ns);
        return Status::OK();
    }
};

// killCursors: {killCursors: coll, cursors: [Long]} →
// {cursorsKilled, cursorsNotFound, cursorsAlive, cursorsUnknown}.
class KillCursorsCommand final : public Command {
  public:
    std::string_view name() const override { return "killCursors"; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(std::string coll, collectionName(request.firstElement(), "killCursors"));
        bson::BsonElement cursors = request.body["cursors"];
        if (cursors.eoo()) {
            return Status(40414,
                          "BSON field 'killCursors.cursors' is missing but a required "
                          "field");
        }
        TRY_STATUS(expectType(cursors, bson::BsonType::Array, "killCursors"));
        std::vector<int64_t> ids;
        for (auto e : cursors.objValue()) {
            ASSIGN_OR_RETURN(int64_t id, cursorIdArgument(e, "killCursors.cursors"));
            ids.push_back(id);
        }
        std::string ns = request.db + "." + coll;
        bson::BsonArrayBuilder killed, notFound;
        for (int64_t id : ids) {
            if (opCtx.service->cursors->kill(id, ns) == CursorManager::KillResult::kKilled) {
                killed.append(id);
            } else {
                notFound.append(id);
            }
        }
        reply.appendArray("cursorsKilled", killed.arr());
        reply.appendArray("cursorsNotFound", notFound.arr());
        reply.appendArray("cursorsAlive", bson::BsonArrayBuilder().arr());
        reply.appendArray("cursorsUnknown", bson::BsonArrayBuilder().arr());
        return Status::OK();
    }
};

}  // namespace

std::unique_ptr<Command> makeGetMoreCommand() { return std::make_unique<GetMoreCommand>(); }
std::unique_ptr<Command> makeKillCursorsCommand() { return std::make_unique<KillCursorsCommand>(); }

}  // namespace tessera::command
