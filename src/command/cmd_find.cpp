#include "command/collation_util.h"
#include "command/crud_commands.h"
#include "command/cursor_manager.h"
#include "command/exec/find_request.h"
#include "command/exec/query_executor.h"
#include "command/view_reads.h"
#include "storage/engine.h"

namespace tessera::command {
namespace {

// find → {cursor: {firstBatch, id, ns}}. A missing collection is an empty result (id 0).
class FindCommand final : public Command {
  public:
    std::string_view name() const override { return "find"; }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(exec::FindRequest req, exec::parseFindRequest(request, request.body));
        std::string ns = request.db + "." + req.coll;
        storage::Engine& engine = *opCtx.service->engine;
        auto snapshot = engine.snapshot();
        storage::CollectionPtr coll = engine.getCollection(ns);
        bool missing = coll == nullptr;
        ASSIGN_OR_RETURN(req.query.collator,
                         resolveCollation(req.collationArg.firstElement(), coll.get()));
        if (isViewCollection(coll)) return runFindOnView(opCtx, req, ns, reply);
        ASSIGN_OR_RETURN(auto exec,
                         exec::buildQueryExecutor(std::move(snapshot), coll, ns, req.query));

        std::optional<int64_t> batchSize = req.batchSize;
        if (!batchSize) {
            batchSize =
                req.singleBatch && req.query.limit ? *req.query.limit : kDefaultFirstBatchSize;
        }
        bson::BsonArrayBuilder batch;
        bool exhausted = false;
        TRY_STATUS(fillBatch(opCtx, *exec, batchSize, batch, &exhausted));
        int64_t cursorId = 0;
        if (!exhausted && !req.singleBatch && !missing) {
            cursorId = opCtx.service->cursors->registerCursor(ns, std::move(exec),
                                                              req.noCursorTimeout, opCtx.lsid);
        }
        exec::appendCursor(reply, "firstBatch", batch, cursorId, ns);
        return Status::OK();
    }
};

}  // namespace

std::unique_ptr<Command> makeFindCommand() { return std::make_unique<FindCommand>(); }

}  // namespace tessera::command
