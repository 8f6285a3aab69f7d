#include "command/collation_util.h"
#include "command/crud_commands.h"
#include "command/cursor_manager.h"
#include "command/exec/find_request.h"
#include "command/exec/query_executor.h"
#include "command/transaction_ddl.h"
#include "command/view_reads.h"
#include "command/write_ops_util.h"
#include "storage/engine.h"

namespace tessera::command {
namespace {

// find → {cursor: {firstBatch, id, ns}}. A missing collection is an empty result (id 0).
class FindCommand final : public Command {
  public:
    std::string_view name() const override { return "find"; }
    // A lookup by `_id` (bounded: one key of the unique `_id` index), or a find of one document
    // (limit 1: findOne, a router's read phase of a write without shard key; bounded by
    // ExecContext::kInlineWorkBudget, past which the pool runs it again), on a collection, not a
    // tailable cursor.
    bool runsInline(const ServiceContext& service, const CommandRequest& request) const override {
        bson::BsonView body = request.body;
        bson::BsonElement limit = body["limit"];
        const bool one =
            limit.isNumber() && (limit.numberDouble() == 1 || limit.numberDouble() == -1);
        return !body["tailable"].trueValue() && !body["awaitData"].trueValue() &&
               (one || filterPinsId(body["filter"])) &&
               isExistingCollection(service, request.db, request.firstElement());
    }

    Status run(OperationContext& opCtx, const CommandRequest& request,
               bson::BsonBuilder& reply) override {
        ASSIGN_OR_RETURN(exec::FindRequest req, exec::parseFindRequest(request, request.body));
        std::string ns = request.db + "." + req.coll;
        auto snapshot = opCtx.snapshot();
        storage::CollectionPtr coll = lookupCollection(opCtx, ns);
        bool missing = coll == nullptr;
        ASSIGN_OR_RETURN(req.query.collator,
                         resolveCollation(req.collationArg.firstElement(), coll.get()));
        if (isViewCollection(coll)) return runFindOnView(opCtx, req, ns, reply);
        if (std::optional<bson::BsonElement> id = exec::pointLookupId(req.query); id && coll) {
            // At most one document: a single batch, no cursor.
            ASSIGN_OR_RETURN(std::optional<bson::BsonObj> doc,
                             exec::runPointLookup(opCtx, *snapshot, *coll, ns, *id));
            bson::BsonArrayBuilder batch;
            if (doc) batch.append(doc->view());
            exec::appendCursor(reply, "firstBatch", batch, 0, ns, opCtx.readAtClusterTime);
            return Status::OK();
        }
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
            cursorId = opCtx.service->cursors->registerCursor(
                ns, std::move(exec), req.noCursorTimeout, opCtx.lsid, CursorSource{ns, coll->uuid});
        }
        exec::appendCursor(reply, "firstBatch", batch, cursorId, ns, opCtx.readAtClusterTime);
        return Status::OK();
    }
};

}  // namespace

std::unique_ptr<Command> makeFindCommand() { return std::make_unique<FindCommand>(); }

}  // namespace tessera::command
